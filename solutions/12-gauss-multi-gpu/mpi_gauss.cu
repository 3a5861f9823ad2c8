// Lab 12, part 2 reference: blocked Gaussian elimination over MPI ranks, one GPU each, with
// every transfer staged through pinned host memory (this MPI is not CUDA-aware) and overlapped
// with the GPUs' work.
//
// What it does beyond the chapter (the starter with its displacements fixed), and why:
//   - Blocks of 64 pivots per message (part 1's lesson): the owner of block K factors its
//     64 x 64 diagonal block and turns its 64 rows into rows of U; one message carries all 64,
//     and the trailing update A22 -= L21 U12 is a matrix product of inner size 64. The chapter
//     sends n messages and reads the trailing matrix n times; this sends n / 64 and reads it
//     n / 64 times.
//   - Row blocks dealt out cyclically (block I on rank I % ranks) instead of contiguous bands:
//     every rank keeps its share of the shrinking trailing matrix to the last step.
//   - Look-ahead with MPI_Isend/MPI_Irecv: the owner of block K+1 first updates only that block,
//     factors it and copies it to the host, and only then queues the rest of step K's update;
//     while the GPU runs that update, the host sends block K+1 (MPI_Isend to each rank, which
//     has its MPI_Irecv posted already), and the receivers copy it to their GPU on a second
//     stream. The transfer of each block row hides behind the previous step's update.
//   - No gather: every finished block row reaches the root anyway (it is broadcast), so the
//     root holds all of U when elimination ends and back-substitutes by blocks of 64 on its GPU.
//   - The scatter is pipelined in blocks of 64 rows through four pinned slots: the root copies
//     block j+1 to the host while block j travels, and the receiver copies block j to its GPU
//     while block j+1 travels. The root's own blocks are device-to-device copies.
// The kernels are part 1's reference's (solutions/12-gauss-multi-gpu/gauss.cu): this file is
// compiled alone, as a student's is. Each rank keeps a full-size matrix [A | b] (row pitch `ld`)
// and updates only its own rows; received block rows land at their own place in it.
#include "mpi_gauss.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace {

constexpr int block_rows = 64;          // pivots per step, and rows per ownership block
constexpr int update_tile_cols = 128;   // trailing-matrix columns per update block
constexpr int update_threads = 256;     // 16 x 16 threads, each 4 rows x 8 columns
constexpr int column_threads = 128;
constexpr int row_threads = 256;

static_assert(update_threads == 16 * 16 && block_rows == 16 * 4 && update_tile_cols == 16 * 8,
              "the update kernel maps 16 x 16 threads of 4 rows x 8 columns onto a 64 x 128 tile");

// ---- kernels ----------------------------------------------------------------------------

// One block: LU of the diagonal block in shared memory, in place (L below the diagonal with
// an implicit unit diagonal, U on and above it).
__global__ void factor_diagonal_block_kernel(float* m, size_t ld, int k0, int bk) {
  __shared__ float d[block_rows][block_rows + 1];
  for (int e = threadIdx.x; e < bk * bk; e += blockDim.x) d[e / bk][e % bk] = m[(k0 + e / bk) * ld + k0 + e % bk];
  __syncthreads();
  for (int j = 0; j + 1 < bk; ++j) {
    for (int r = j + 1 + threadIdx.x; r < bk; r += blockDim.x) d[r][j] /= d[j][j];
    __syncthreads();
    const int size = bk - j - 1;
    for (int e = threadIdx.x; e < size * size; e += blockDim.x) {
      const int r = j + 1 + e / size, c = j + 1 + e % size;
      d[r][c] -= d[r][j] * d[j][c];
    }
    __syncthreads();
  }
  for (int e = threadIdx.x; e < bk * bk; e += blockDim.x) m[(k0 + e / bk) * ld + k0 + e % bk] = d[e / bk][e % bk];
}

// One thread per column right of the diagonal block (b included): applies L11^-1 to the
// column, so the block row becomes rows of U. The column lives in registers.
__global__ void __launch_bounds__(column_threads) eliminate_block_row_kernel(float* m, size_t ld, int n, int k0, int bk) {
  __shared__ float lower[block_rows][block_rows];
  for (int e = threadIdx.x; e < block_rows * block_rows; e += blockDim.x) {
    const int r = e / block_rows, c = e % block_rows;
    lower[r][c] = (r < bk && c < r) ? m[(k0 + r) * ld + k0 + c] : 0.f;
  }
  __syncthreads();
  const int col = k0 + bk + blockIdx.x * blockDim.x + threadIdx.x;
  if (col > n) return;
  float v[block_rows];
#pragma unroll
  for (int r = 0; r < block_rows; ++r) v[r] = r < bk ? m[(k0 + r) * ld + col] : 0.f;
#pragma unroll
  for (int j = 0; j < block_rows; ++j)
#pragma unroll
    for (int r = j + 1; r < block_rows; ++r) v[r] -= lower[r][j] * v[j];
#pragma unroll
  for (int r = 0; r < block_rows; ++r)
    if (r < bk) m[(k0 + r) * ld + col] = v[r];
}

// First global block of rows after `step` that `rank` owns, with blocks dealt cyclically.
__host__ __device__ int first_owned_block_after(int step, int rank, int ranks) {
  const int next = step + 1;
  return next + ((rank - next) % ranks + ranks) % ranks;
}

// One thread per trailing row of this rank: its multipliers l = a U11^-1 (a forward solve
// against the upper triangle), stored column-major in `mult` (mult[j * n + row]) so the
// update reads them coalesced.
__global__ void __launch_bounds__(block_rows) compute_multipliers_kernel(const float* m, size_t ld, int n, float* mult,
                                                                        int k0, int bk, int first_block, int ranks) {
  __shared__ float upper[block_rows][block_rows];
  for (int e = threadIdx.x; e < block_rows * block_rows; e += blockDim.x) {
    const int r = e / block_rows, c = e % block_rows;
    const bool inside = r < bk && c < bk;
    upper[r][c] = inside && c >= r ? m[(k0 + r) * ld + k0 + c] : (r == c ? 1.f : 0.f);
  }
  __syncthreads();
  const int row = (first_block + blockIdx.x * ranks) * block_rows + threadIdx.x;
  if (row >= n) return;
  float l[block_rows];
#pragma unroll
  for (int j = 0; j < block_rows; ++j) {
    float s = j < bk ? m[row * ld + k0 + j] : 0.f;
#pragma unroll
    for (int i = 0; i < j; ++i) s -= l[i] * upper[i][j];
    l[j] = s / upper[j][j];
  }
#pragma unroll
  for (int j = 0; j < block_rows; ++j)
    if (j < bk) mult[size_t(j) * n + row] = l[j];
}

// The trailing update A22 -= L21 U12 for one 64-row block of this rank and 128 columns
// (b included as column n). Inner size 64: both operands fit in shared memory at once.
__global__ void __launch_bounds__(update_threads) update_trailing_kernel(float* m, size_t ld, int n, const float* mult,
                                                                        int k0, int bk, int first_block, int ranks) {
  __shared__ __align__(16) float l_tile[block_rows][block_rows];        // [pivot][row in block]
  __shared__ __align__(16) float u_tile[block_rows][update_tile_cols];  // [pivot][column in tile]
  const int row0 = (first_block + blockIdx.y * ranks) * block_rows;
  const int col0 = k0 + bk + blockIdx.x * update_tile_cols;
  for (int e = threadIdx.x; e < block_rows * block_rows; e += update_threads) {
    const int j = e / block_rows, r = e % block_rows;
    l_tile[j][r] = (j < bk && row0 + r < n) ? mult[size_t(j) * n + row0 + r] : 0.f;
  }
  for (int e = threadIdx.x; e < block_rows * update_tile_cols; e += update_threads) {
    const int j = e / update_tile_cols, c = e % update_tile_cols;
    u_tile[j][c] = (j < bk && col0 + c <= n) ? m[(k0 + j) * ld + col0 + c] : 0.f;
  }
  __syncthreads();

  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  float acc[4][8] = {};
#pragma unroll 4
  for (int j = 0; j < block_rows; ++j) {
    const float4 l = *reinterpret_cast<const float4*>(&l_tile[j][ty * 4]);
    const float4 u0 = *reinterpret_cast<const float4*>(&u_tile[j][tx * 4]);
    const float4 u1 = *reinterpret_cast<const float4*>(&u_tile[j][64 + tx * 4]);
    const float lr[4] = {l.x, l.y, l.z, l.w};
    const float uc[8] = {u0.x, u0.y, u0.z, u0.w, u1.x, u1.y, u1.z, u1.w};
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int c = 0; c < 8; ++c) acc[r][c] += lr[r] * uc[c];
  }

#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int row = row0 + ty * 4 + r;
    if (row >= n) continue;
    float* out = m + row * ld;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int col = col0 + half * 64 + tx * 4;
      const float* a = &acc[r][half * 4];
      if (col + 3 <= n && (reinterpret_cast<size_t>(out + col) & 15) == 0) {
        float4 v = *reinterpret_cast<float4*>(out + col);
        v.x -= a[0], v.y -= a[1], v.z -= a[2], v.w -= a[3];
        *reinterpret_cast<float4*>(out + col) = v;
      } else {
        for (int c = 0; c < 4; ++c)
          if (col + c <= n) out[col + c] -= a[c];
      }
    }
  }
}

// Back substitution within one diagonal block: U11 x = c, one column of U at a time.
__global__ void solve_diagonal_block_kernel(const float* m, size_t ld, int n, float* x, int k0, int bk) {
  __shared__ float u[block_rows][block_rows + 1];
  __shared__ float c[block_rows];
  for (int e = threadIdx.x; e < bk * bk; e += blockDim.x) u[e / bk][e % bk] = m[(k0 + e / bk) * ld + k0 + e % bk];
  for (int r = threadIdx.x; r < bk; r += blockDim.x) c[r] = m[(k0 + r) * ld + n];
  __syncthreads();
  for (int r = bk - 1; r >= 0; --r) {
    const float xr = c[r] / u[r][r];
    __syncthreads();  // every thread has read c[r] before it is replaced
    for (int t = threadIdx.x; t <= r; t += blockDim.x) c[t] = t == r ? xr : c[t] - u[t][r] * xr;
    __syncthreads();
  }
  for (int r = threadIdx.x; r < bk; r += blockDim.x) x[k0 + r] = c[r];
}

// c_i -= U[i, block] x_block for every row above the block: one warp per row.
__global__ void update_right_hand_side_kernel(float* m, size_t ld, int n, const float* x, int k0, int bk) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (warp >= k0) return;
  const float* row = m + warp * ld + k0;
  float s = 0.f;
  for (int j = lane; j < bk; j += 32) s += row[j] * x[k0 + j];
  for (int offset = 16; offset > 0; offset /= 2) s += __shfl_down_sync(0xffffffffu, s, offset);
  if (lane == 0) m[warp * ld + n] -= s;
}

// ---- host side --------------------------------------------------------------------------

constexpr int staging_slots = 4;  // pinned buffers of one block of rows each

void report(cudaError_t status, const char* what) {
  if (status != cudaSuccess) std::fprintf(stderr, "mpi_gauss_solve: %s: %s\n", what, cudaGetErrorString(status));
}

// What a rank keeps between calls: made on first use, grown when a larger n comes.
struct RankState {
  cudaStream_t compute = nullptr;  // kernels, and copies out of this GPU
  cudaStream_t copy = nullptr;     // copies of received rows into this GPU, beside the kernels
  cudaEvent_t start = nullptr, done = nullptr, copied = nullptr;
  cudaEvent_t slot_free[staging_slots] = {};  // the slot's last copy (in or out) has finished
  float* slots[staging_slots] = {};          // pinned, block_rows x (n + 1) floats each
  float* matrix = nullptr;                   // n x ld: [A | b], this rank's rows and received ones
  float* multipliers = nullptr;              // block_rows x n
  size_t matrix_floats = 0, multiplier_floats = 0, slot_floats = 0;
};
RankState state;

void create_streams_and_events() {
  cudaStreamCreateWithFlags(&state.compute, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&state.copy, cudaStreamNonBlocking);
  for (cudaEvent_t* e : {&state.start, &state.done, &state.copied}) cudaEventCreateWithFlags(e, cudaEventDisableTiming);
  for (cudaEvent_t& e : state.slot_free) cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
}

// Device memory and pinned slots large enough for n; false when they cannot be had.
bool prepare(int n, size_t ld) {
  if (state.compute == nullptr) create_streams_and_events();
  const size_t matrix_floats = size_t(n) * ld, multiplier_floats = size_t(block_rows) * n;
  const size_t slot_floats = size_t(block_rows) * (n + 1);
  if (matrix_floats <= state.matrix_floats && slot_floats <= state.slot_floats) return true;
  cudaDeviceSynchronize();  // nothing of an earlier call may still use the old memory
  cudaFree(state.matrix);
  cudaFree(state.multipliers);
  for (float*& slot : state.slots) cudaFreeHost(slot), slot = nullptr;
  state.matrix = state.multipliers = nullptr;
  state.matrix_floats = state.multiplier_floats = state.slot_floats = 0;
  cudaError_t status = cudaMalloc(&state.matrix, matrix_floats * sizeof(float));
  if (status == cudaSuccess) status = cudaMalloc(&state.multipliers, multiplier_floats * sizeof(float));
  for (float*& slot : state.slots)
    if (status == cudaSuccess) status = cudaMallocHost(&slot, slot_floats * sizeof(float));
  report(status, "allocating the working matrix and the pinned slots");
  if (status != cudaSuccess) return false;
  state.matrix_floats = matrix_floats, state.multiplier_floats = multiplier_floats, state.slot_floats = slot_floats;
  return true;
}

struct Plan {
  int n = 0, rank = 0, ranks = 1, blocks = 0;
  size_t ld = 0;
  MPI_Comm comm = MPI_COMM_NULL;
  int owner(int block) const { return block % ranks; }
  int first_row(int block) const { return block * block_rows; }
  int rows_in(int block) const { return std::min(block_rows, n - block * block_rows); }
  // How many blocks after `step` this rank owns, starting at `first`.
  int owned_after(int step, int* first) const {
    *first = first_owned_block_after(step, rank, ranks);
    return *first < blocks ? (blocks - 1 - *first) / ranks + 1 : 0;
  }
};

// ---- distribution: the root's rows to their owners ---------------------------------------

// The root's own blocks: device-to-device copies of A's rows, and of b into column n.
void copy_own_blocks(const Plan& plan, const float* d_a, const float* d_b) {
  const size_t n = size_t(plan.n), pitch = plan.ld * sizeof(float);
  for (int block = 0; block < plan.blocks; block += plan.ranks) {
    const size_t r0 = size_t(plan.first_row(block));
    float* rows = state.matrix + r0 * plan.ld;
    report(cudaMemcpy2DAsync(rows, pitch, d_a + r0 * n, n * sizeof(float), n * sizeof(float), plan.rows_in(block),
                             cudaMemcpyDeviceToDevice, state.compute),
           "copying A's rows");
    report(cudaMemcpy2DAsync(rows + n, pitch, d_b + r0, sizeof(float), sizeof(float), plan.rows_in(block),
                             cudaMemcpyDeviceToDevice, state.compute),
           "copying b");
  }
}

// Block `block` of [A | b], as rows of n + 1 floats, into pinned slot s (on the root).
void stage_block(const Plan& plan, const float* d_a, const float* d_b, int block, int s) {
  const size_t n = size_t(plan.n), width = (n + 1) * sizeof(float), r0 = size_t(plan.first_row(block));
  report(cudaMemcpy2DAsync(state.slots[s], width, d_a + r0 * n, n * sizeof(float), n * sizeof(float),
                           plan.rows_in(block), cudaMemcpyDeviceToHost, state.compute),
         "staging A's rows");
  report(cudaMemcpy2DAsync(state.slots[s] + n, width, d_b + r0, sizeof(float), sizeof(float), plan.rows_in(block),
                           cudaMemcpyDeviceToHost, state.compute),
         "staging b");
  cudaEventRecord(state.slot_free[s], state.compute);
}

// The root sends every other rank its blocks, one message per block: block j+1 is copied to
// the host while block j travels (MPI_Isend), and a slot is reused only once its message left.
void send_other_blocks(const Plan& plan, const float* d_a, const float* d_b) {
  std::vector<int> blocks;
  for (int block = 0; block < plan.blocks; ++block)
    if (plan.owner(block) != 0) blocks.push_back(block);
  MPI_Request sends[staging_slots];
  std::fill(sends, sends + staging_slots, MPI_REQUEST_NULL);
  for (size_t j = 0; j < blocks.size(); ++j) {
    if (j == 0) stage_block(plan, d_a, d_b, blocks[0], 0);
    if (j + 1 < blocks.size()) {
      const int s = int((j + 1) % staging_slots);
      MPI_Wait(&sends[s], MPI_STATUS_IGNORE);
      stage_block(plan, d_a, d_b, blocks[j + 1], s);
    }
    const int s = int(j % staging_slots), block = blocks[j];
    cudaEventSynchronize(state.slot_free[s]);
    MPI_Isend(state.slots[s], plan.rows_in(block) * (plan.n + 1), MPI_FLOAT, plan.owner(block), block, plan.comm,
              &sends[s]);
  }
  MPI_Waitall(staging_slots, sends, MPI_STATUSES_IGNORE);
}

// Every other rank: its blocks from the root, each copied to its GPU on the copy stream while
// the next one travels.
void receive_own_blocks(const Plan& plan) {
  const size_t width = size_t(plan.n + 1) * sizeof(float);
  int j = 0;
  for (int block = plan.rank; block < plan.blocks; block += plan.ranks, ++j) {
    const int s = j % staging_slots;
    cudaEventSynchronize(state.slot_free[s]);
    MPI_Recv(state.slots[s], plan.rows_in(block) * (plan.n + 1), MPI_FLOAT, 0, block, plan.comm, MPI_STATUS_IGNORE);
    report(cudaMemcpy2DAsync(state.matrix + size_t(plan.first_row(block)) * plan.ld, plan.ld * sizeof(float),
                             state.slots[s], width, width, plan.rows_in(block), cudaMemcpyHostToDevice, state.copy),
           "copying received rows");
    cudaEventRecord(state.slot_free[s], state.copy);
  }
  cudaEventRecord(state.copied, state.copy);
  cudaStreamWaitEvent(state.compute, state.copied, 0);
}

// ---- elimination -------------------------------------------------------------------------

// The owner of block `step` turns its rows into rows of U (diagonal block factored, L11^-1
// applied to the rest of the block row); with other ranks, it copies them, from the diagonal
// on, into pinned slot step % staging_slots.
void factor_block_row(const Plan& plan, int step) {
  const int k0 = plan.first_row(step), bk = plan.rows_in(step);
  factor_diagonal_block_kernel<<<1, 256, 0, state.compute>>>(state.matrix, plan.ld, k0, bk);
  const int columns = plan.n + 1 - (k0 + bk);  // b's column at least
  eliminate_block_row_kernel<<<(columns + column_threads - 1) / column_threads, column_threads, 0, state.compute>>>(
      state.matrix, plan.ld, plan.n, k0, bk);
  if (plan.ranks == 1) return;
  const int s = step % staging_slots;
  const size_t width = size_t(plan.n + 1 - k0) * sizeof(float);
  report(cudaMemcpy2DAsync(state.slots[s], width, state.matrix + size_t(k0) * plan.ld + k0, plan.ld * sizeof(float),
                           width, bk, cudaMemcpyDeviceToHost, state.compute),
         "copying a block row to the host");
  cudaEventRecord(state.slot_free[s], state.compute);
}

int block_row_floats(const Plan& plan, int step) { return plan.rows_in(step) * (plan.n + 1 - plan.first_row(step)); }

// The owner: once the block row has reached the host, one MPI_Isend to each other rank.
void send_block_row(const Plan& plan, int step) {
  const int s = step % staging_slots;
  cudaEventSynchronize(state.slot_free[s]);
  std::vector<MPI_Request> sends;
  sends.reserve(size_t(plan.ranks));
  for (int r = 0; r < plan.ranks; ++r)
    if (r != plan.rank)
      MPI_Isend(state.slots[s], block_row_floats(plan, step), MPI_FLOAT, r, step, plan.comm,
                &sends.emplace_back(MPI_REQUEST_NULL));
  MPI_Waitall(int(sends.size()), sends.data(), MPI_STATUSES_IGNORE);
}

// The others post the receive before they queue their update, so it can land meanwhile...
void post_block_row_receive(const Plan& plan, int step, MPI_Request* request) {
  const int s = step % staging_slots;
  cudaEventSynchronize(state.slot_free[s]);  // the slot's last copy to the GPU has finished
  MPI_Irecv(state.slots[s], block_row_floats(plan, step), MPI_FLOAT, plan.owner(step), step, plan.comm, request);
}

// ...then copy it to its place in their matrix on the copy stream; the next kernels wait for it.
void finish_block_row_receive(const Plan& plan, int step, MPI_Request* request) {
  MPI_Wait(request, MPI_STATUS_IGNORE);
  const int s = step % staging_slots, k0 = plan.first_row(step);
  const size_t width = size_t(plan.n + 1 - k0) * sizeof(float);
  report(cudaMemcpy2DAsync(state.matrix + size_t(k0) * plan.ld + k0, plan.ld * sizeof(float), state.slots[s], width,
                           width, plan.rows_in(step), cudaMemcpyHostToDevice, state.copy),
         "copying a received block row");
  cudaEventRecord(state.slot_free[s], state.copy);
  cudaStreamWaitEvent(state.compute, state.slot_free[s], 0);
}

// Multipliers and trailing update, with block row `step`, of `count` of this rank's blocks
// from `first_block` on.
void update_blocks(const Plan& plan, int step, int first_block, int count) {
  if (count == 0) return;
  const int k0 = plan.first_row(step), bk = plan.rows_in(step);
  const int columns = plan.n + 1 - (k0 + bk);
  compute_multipliers_kernel<<<count, block_rows, 0, state.compute>>>(state.matrix, plan.ld, plan.n,
                                                                      state.multipliers, k0, bk, first_block,
                                                                      plan.ranks);
  const dim3 grid((columns + update_tile_cols - 1) / update_tile_cols, count);
  update_trailing_kernel<<<grid, update_threads, 0, state.compute>>>(state.matrix, plan.ld, plan.n, state.multipliers,
                                                                     k0, bk, first_block, plan.ranks);
}

// Block row 0 from its owner (the root) to everyone.
void exchange_first_block_row(const Plan& plan) {
  if (plan.owner(0) == plan.rank) factor_block_row(plan, 0);
  if (plan.ranks == 1) return;
  if (plan.owner(0) == plan.rank) return send_block_row(plan, 0);
  MPI_Request request = MPI_REQUEST_NULL;
  post_block_row_receive(plan, 0, &request);
  finish_block_row_receive(plan, 0, &request);
}

// Step by step, with look-ahead: the owner of the next block row brings it up to date and
// factors it first, so that it travels while the rest of this step's update runs.
void eliminate(const Plan& plan) {
  exchange_first_block_row(plan);
  for (int step = 0; step < plan.blocks; ++step) {
    const int next = step + 1;
    const bool more = next < plan.blocks, next_is_mine = more && plan.owner(next) == plan.rank;
    MPI_Request incoming = MPI_REQUEST_NULL;
    if (more && !next_is_mine) post_block_row_receive(plan, next, &incoming);
    if (next_is_mine) {
      update_blocks(plan, step, next, 1);
      factor_block_row(plan, next);
    }
    int first = 0;
    const int count = plan.owned_after(next_is_mine ? next : step, &first);
    update_blocks(plan, step, first, count);
    if (!more || plan.ranks == 1) continue;
    if (next_is_mine)
      send_block_row(plan, next);
    else
      finish_block_row_receive(plan, next, &incoming);
  }
}

// On the root, which has received every block row: x, block by block from the bottom.
void back_substitute(const Plan& plan, float* d_x) {
  for (int block = plan.blocks - 1; block >= 0; --block) {
    const int k0 = plan.first_row(block), bk = plan.rows_in(block);
    solve_diagonal_block_kernel<<<1, block_rows, 0, state.compute>>>(state.matrix, plan.ld, plan.n, d_x, k0, bk);
    if (k0 == 0) break;
    const int warps_per_block = row_threads / 32;
    update_right_hand_side_kernel<<<(k0 + warps_per_block - 1) / warps_per_block, row_threads, 0, state.compute>>>(
        state.matrix, plan.ld, plan.n, d_x, k0, bk);
  }
}

}  // namespace

extern "C" void mpi_gauss_solve(const float* d_a, const float* d_b, float* d_x, int n, MPI_Comm comm,
                                cudaStream_t stream) {
  if (n <= 0) return;
  Plan plan;
  plan.n = n;
  plan.comm = comm;
  MPI_Comm_rank(comm, &plan.rank);
  MPI_Comm_size(comm, &plan.ranks);
  plan.ld = (size_t(n) + 1 + 3) / 4 * 4;  // 16-byte rows for the update's float4 accesses
  plan.blocks = (n + block_rows - 1) / block_rows;
  if (!prepare(n, plan.ld)) MPI_Abort(comm, 1);  // the other ranks would wait for ever

  // Our streams start after the caller's work (the root's d_a and d_b are ready)...
  cudaEventRecord(state.start, stream);
  cudaStreamWaitEvent(state.compute, state.start, 0);
  cudaStreamWaitEvent(state.copy, state.start, 0);
  if (plan.rank == 0) {
    copy_own_blocks(plan, d_a, d_b);
    send_other_blocks(plan, d_a, d_b);
  } else {
    receive_own_blocks(plan);
  }
  eliminate(plan);
  if (plan.rank == 0) back_substitute(plan, d_x);

  // ...and the caller's stream continues after all of it.
  cudaEventRecord(state.done, state.compute);
  cudaEventRecord(state.copied, state.copy);
  cudaStreamWaitEvent(stream, state.done, 0);
  cudaStreamWaitEvent(stream, state.copied, 0);
}
