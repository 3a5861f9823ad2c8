// Lab 13 contract. Do not edit: the grader compiles your allreduce.cu against its own copy.
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
