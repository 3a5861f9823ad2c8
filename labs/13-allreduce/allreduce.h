// Lab 13 contract. Do not edit: the grader compiles your allreduce.cu and collectives.cu against
// its own copy.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

// The most GPUs the contract can name: a pointer array cannot cross into the grader's
// process, so the contract takes one pointer per GPU.
constexpr int allreduce_max_gpus = 8;

// In-place sum all-reduce of `n` floats over `gpus` GPUs (1 <= gpus <= 8). d_dataK lives on
// GPU K for K < gpus; the pointers from d_data<gpus> on are null. When the work finishes,
// every d_dataK[i] holds d_data0[i] + ... + d_data<gpus-1>[i] as the buffers held them at
// the call, and all GPUs hold the same bits. Any order of summation is accepted.
//
// `stream` is a stream of GPU 0, the current device at the call. Work on other GPUs may run
// on streams of your own; the call is done when the work on every GPU is done. You may keep
// streams, events and scratch buffers between calls (n changes from call to call), and you
// may enable peer access; the d_dataK buffers are already open to every peer GPU.
extern "C" void ring_allreduce(float* d_data0, float* d_data1, float* d_data2, float* d_data3,
                               float* d_data4, float* d_data5, float* d_data6, float* d_data7,
                               int gpus, size_t n, cudaStream_t stream);

// Part 3 (collectives.cu): the all-reduce's two halves as functions of their own, with
// ring_allreduce's arguments and rules (GPUs, pointers, `stream`, state kept between calls,
// peer access). The n floats are cut into `gpus` slices, one per GPU: with
// per = ceil(n / gpus), slice K is [min(K * per, n), min((K + 1) * per, n)). When n is not a
// multiple of gpus the last slices are shorter and may be empty: n = 5 on 4 GPUs gives [0, 2),
// [2, 4), [4, 5) and [5, 5); n = 1 on 2 GPUs gives [0, 1) and [1, 1). Memory outside [0, n) of
// every d_dataK is left alone.
//
// Order: your work starts after the work already on `stream`, and work enqueued on `stream`
// after the call starts after all of yours, on every GPU (record an event on `stream` and make
// your streams wait for it; record an event at the end of each of your streams and make
// `stream` wait for each). The checks call ring_reduce_scatter and then ring_allgather on the
// same stream, with nothing between them, and expect the all-reduce.

// In-place sum reduce-scatter: when the work finishes, slice K of d_dataK holds, for every
// K < gpus, the sum over all GPUs of slice K as the buffers held it at the call (any order of
// summation). The rest of [0, n) of each buffer may hold anything afterwards (partial sums).
extern "C" void ring_reduce_scatter(float* d_data0, float* d_data1, float* d_data2, float* d_data3,
                                    float* d_data4, float* d_data5, float* d_data6, float* d_data7,
                                    int gpus, size_t n, cudaStream_t stream);

// In-place all-gather: GPU K contributes slice K of d_dataK. When the work finishes, slice K of
// every d_dataJ holds GPU K's slice K as it was at the call, bit for bit, for every J and K.
extern "C" void ring_allgather(float* d_data0, float* d_data1, float* d_data2, float* d_data3,
                               float* d_data4, float* d_data5, float* d_data6, float* d_data7,
                               int gpus, size_t n, cudaStream_t stream);
