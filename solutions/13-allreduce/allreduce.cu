// Lab 13 reference: an all-reduce as a reduce-scatter followed by an all-gather, the two
// phases of collectives.cu (part 3's reference), each GPU reading its peers' buffers directly
// over NVLink (no copy engine, no staging buffer).
//
//   1. Reduce-scatter. GPU r reads slice r from every GPU, adds the values in GPU order 0, 1,
//      ..., and writes the sum into slice r of its own buffer.
//   2. All-gather. Once every GPU has finished phase 1 (cross-GPU events), GPU r copies
//      slice s from GPU s for every s != r.
//
// Each GPU receives (g-1)/g of the array in each phase: 2(g-1)/g of it in all, the least any
// all-reduce can move, and every link carries traffic in both directions at once. Every element
// is summed once, in the same order, so all GPUs end with the same bits. The call is one
// start, two phases and one finish: the phases run back to back on each GPU's stream, with
// only the barrier between them, instead of as two calls that each tie themselves to the
// caller's stream.
#include "allreduce.h"

// collectives.cu's phases (a student file includes only the contract, so they are declared
// here again). Each leaves device 0 current.
namespace peer_phases {
void start(int gpus, cudaStream_t stream);  // every GPU after the caller's stream and the last call
void reduce_scatter(float* const* data, int gpus, size_t n);
void barrier(int gpus);  // every GPU waits for every other GPU's work so far
void allgather(float* const* data, int gpus, size_t n);
void finish(int gpus, cudaStream_t stream);  // the caller's stream waits for every GPU
}  // namespace peer_phases

extern "C" void ring_allreduce(float* d_data0, float* d_data1, float* d_data2, float* d_data3,
                               float* d_data4, float* d_data5, float* d_data6, float* d_data7,
                               int gpus, size_t n, cudaStream_t stream) {
  float* data[allreduce_max_gpus] = {d_data0, d_data1, d_data2, d_data3, d_data4, d_data5, d_data6, d_data7};
  if (gpus < 2 || gpus > allreduce_max_gpus || n == 0) return;  // one GPU: its array is the sum
  peer_phases::start(gpus, stream);
  peer_phases::reduce_scatter(data, gpus, n);
  // Phase 2 on each GPU reads the other GPUs' finished slices, and overwrites slices of its
  // own buffer that they were reading in phase 1.
  peer_phases::barrier(gpus);
  peer_phases::allgather(data, gpus, n);
  peer_phases::finish(gpus, stream);
}
