// Lab 12 checks: every case is solved with gpus = 1 and with gpus = 2, and each answer is
// judged by its residual (and, for small n, against a double-precision solve on the host).
// Then the lesson, timed: a 2-GPU call earns speed points only when it is faster than the
// same submission's 1-GPU call (the work is split), and is timed against the chapter's
// elimination on one GPU and against the reference solution's 2-GPU call.
// Part 2 (cases marked `mpi`, after part 1's helpers): mpi_gauss_solve in two MPI ranks
// under mpirun, checked and timed against the reference's ranks. Part 3 (cases marked `peer`):
// time_peer_copy's measurement against the kit's own.
#include "chapter_gauss.cuh"
#include "gauss.h"
#include "peer_copies.cuh"

#include <labkit/lab.h>
#include <labkit/mpi_part.h>
#include <labkit/row_bands.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>

namespace {

using labkit::Case;
using labkit::DeviceBuffer;
constexpr double fp32_epsilon = 1.1920928955078125e-7;
constexpr uint32_t poison_bits = 0x01010101u * labkit::poison_byte;
constexpr int largest_host_solve = 1024;  // a double-precision O(n^3) solve on the host up to here
constexpr int largest_repeat = 4096;      // the 2-GPU call runs twice up to here, to catch races
// The 2-GPU call against the same submission's 1-GPU call, below which the timed cases give
// no speed points: a call that does not split its work shows 1.00 +- a few percent.
constexpr double least_split_speedup = 1.1;

// ---- inputs ----------------------------------------------------------------------------

// Runs body(begin, end) over the rows [0, n) on all cores.
template <class Body>
void for_row_ranges(int n, Body body) {
  const int workers = std::max(1, std::min(int(labkit::usable_cpus()), n / 64));
  if (workers == 1) return body(0, n);
  std::vector<std::thread> threads;
  const int chunk = (n + workers - 1) / workers;
  for (int w = 0; w < workers; ++w) threads.emplace_back(body, std::min(n, w * chunk), std::min(n, (w + 1) * chunk));
  for (std::thread& t : threads) t.join();
}

struct System {
  int n = 0;
  std::vector<float> a;  // n x n, row-major
  std::vector<float> b;
};

// The seed of the diagonal's random signs in a system drawn from `seed`.
uint64_t diagonal_sign_seed(uint64_t seed) { return labkit::splitmix64(seed ^ 0x51A7ull); }

// Off-diagonal entries from the case's distribution; each diagonal entry is then set to
// (1 + dominance) x the sum of its row's other magnitudes, plus 1, so the rows are strictly
// diagonally dominant. Case options: negative_diagonal (random signs on the diagonal),
// scale_rows (rows scaled by powers of two from 2^-12 to 2^12, exact in FP32). b = A x_true
// with x_true uniform in [-1, 1], summed in double.
System make_system(const Case& c, uint64_t seed_shift = 0) {
  System s;
  s.n = int(c.n);
  const size_t n = size_t(s.n);
  labkit::InputSpec spec = c.input;
  spec.seed += seed_shift;
  s.a = labkit::generate<float>(n * n, spec);
  const double dominance = c.number("dominance", 0.5);
  const bool negative_diagonal = c.integer("negative_diagonal", 0) != 0;
  const bool scale_rows = c.integer("scale_rows", 0) != 0;
  const uint64_t sign_seed = diagonal_sign_seed(spec.seed);
  for_row_ranges(s.n, [&](int begin, int end) {
    for (int i = begin; i < end; ++i) {
      float* row = &s.a[size_t(i) * n];
      double off_diagonal = 0;
      for (size_t j = 0; j < n; ++j)
        if (j != size_t(i)) off_diagonal += std::fabs(double(row[j]));
      float diagonal = float((1 + dominance) * off_diagonal + 1);
      if (negative_diagonal && (labkit::splitmix64(sign_seed + uint64_t(i)) & 1)) diagonal = -diagonal;
      row[i] = diagonal;
      if (scale_rows) {
        const float scale = std::ldexp(1.0f, (i * 7) % 25 - 12);
        for (size_t j = 0; j < n; ++j) row[j] *= scale;
      }
    }
  });
  labkit::InputSpec x_spec{labkit::Distribution::uniform, labkit::splitmix64(spec.seed ^ 0x5EEDull), -1, 1};
  const std::vector<float> x_true = labkit::generate<float>(n, x_spec);
  s.b.resize(n);
  for_row_ranges(s.n, [&](int begin, int end) {
    for (int i = begin; i < end; ++i) {
      double sum = 0;
      for (size_t j = 0; j < n; ++j) sum += double(s.a[size_t(i) * n + j]) * x_true[j];
      s.b[size_t(i)] = float(sum);
    }
  });
  return s;
}

// Gaussian elimination in double on the host (no pivoting: the rows are dominant).
std::vector<double> solve_on_host(const System& s) {
  const size_t n = size_t(s.n);
  std::vector<double> m(s.a.begin(), s.a.end()), x(s.b.begin(), s.b.end());
  for (size_t k = 0; k < n; ++k)
    for (size_t i = k + 1; i < n; ++i) {
      const double l = m[i * n + k] / m[k * n + k];
      for (size_t j = k + 1; j < n; ++j) m[i * n + j] -= l * m[k * n + j];
      x[i] -= l * x[k];
    }
  for (size_t k = n; k-- > 0;) {
    for (size_t j = k + 1; j < n; ++j) x[k] -= m[k * n + j] * x[j];
    x[k] /= m[k * n + k];
  }
  return x;
}

// ---- judging one answer ----------------------------------------------------------------

// ||b - A x||_inf / (||A||_inf ||x||_inf + ||b||_inf), in double, from each row's |b_i - (A x)_i|
// and sum of |a_ij|: scale-free, and for a backward-stable solve a small multiple of the precision.
double scaled_residual(const std::vector<double>& row_residual, const std::vector<double>& row_norm,
                       const std::vector<float>& x, const std::vector<float>& b) {
  double residual = 0, a_norm = 0, x_norm = 0, b_norm = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    residual = std::max(residual, row_residual[i]);
    a_norm = std::max(a_norm, row_norm[i]);
    x_norm = std::max(x_norm, std::fabs(double(x[i])));
    b_norm = std::max(b_norm, std::fabs(double(b[i])));
  }
  return residual / (a_norm * x_norm + b_norm);
}

double scaled_residual(const System& s, const std::vector<float>& x) {
  const size_t n = size_t(s.n);
  std::vector<double> row_residual(n), row_norm(n);
  for_row_ranges(s.n, [&](int begin, int end) {
    for (int i = begin; i < end; ++i) {
      double sum = 0, norm = 0;
      for (size_t j = 0; j < n; ++j) {
        const double a = s.a[size_t(i) * n + j];
        sum += a * x[j];
        norm += std::fabs(a);
      }
      row_residual[size_t(i)] = std::fabs(double(s.b[size_t(i)]) - sum);
      row_norm[size_t(i)] = norm;
    }
  });
  return scaled_residual(row_residual, row_norm, x, s.b);
}

// What FP32 elimination reaches, with a wide margin: errors grow like sqrt(n) x epsilon.
double residual_bound(int n) { return 50 * std::sqrt(double(n)) * fp32_epsilon; }

// The forward error that bound allows, through the condition number of a matrix whose rows
// are dominant by `dominance` (at most (2 + d) / d, row scaling aside), with a margin of 4.
double forward_error_bound(int n, double dominance) { return 4 * residual_bound(n) * (2 + dominance) / dominance; }

// A solve's rate, counting the 2n^3/3 operations of the elimination.
double solve_tflops(int n, double ms) { return 2.0 * double(n) * n * n / 3 / (ms * 1e-3) / 1e12; }

std::string show(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

// "" when x is right; otherwise what is wrong with it, in words.
std::string judge(const Case& c, const System& s, const std::vector<float>& x, const std::vector<double>& host_x) {
  size_t unwritten = 0, not_finite = 0, first_unwritten = 0, first_not_finite = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, &x[i], sizeof bits);
    if (bits == poison_bits && unwritten++ == 0) first_unwritten = i;
    if (!std::isfinite(x[i]) && not_finite++ == 0) first_not_finite = i;
  }
  if (unwritten > 0)
    return std::to_string(unwritten) + " of the " + std::to_string(x.size()) + " elements of x were never written (x[" +
           std::to_string(first_unwritten) + "] still holds the 0xA5 bytes the checks filled it with)";
  if (not_finite > 0)
    return std::to_string(not_finite) + " elements of x are NaN or infinite, the first x[" +
           std::to_string(first_not_finite) + "]: a division by a diagonal element that was never set, or a read "
           "of memory nobody wrote";
  const double residual = scaled_residual(s, x);
  if (!(residual <= residual_bound(s.n)))
    return "the residual ||b - Ax|| / (||A|| ||x|| + ||b||) is " + show(residual) + ", above the bound " +
           show(residual_bound(s.n)) + " for n = " + std::to_string(s.n) + " in FP32";
  if (host_x.empty()) return "";
  double error = 0, scale = 0;
  size_t worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double e = std::fabs(double(x[i]) - host_x[i]);
    if (e > error) error = e, worst = i;
    scale = std::max(scale, std::fabs(host_x[i]));
  }
  const double bound = forward_error_bound(s.n, c.number("dominance", 0.5));
  if (!(error <= bound * std::max(scale, 1e-30)))
    return "x[" + std::to_string(worst) + "] is " + show(x[worst]) + " but the solution has " + show(host_x[worst]) +
           " (a double-precision solve on the host)";
  return "";
}

// ---- calling the student's solver ------------------------------------------------------

struct DeviceSystem {
  explicit DeviceSystem(const System& s) : a(s.a.size(), 0), b(s.b.size(), 0), x(size_t(s.n), 0) {
    a.upload(s.a);
    b.upload(s.b);
  }
  DeviceBuffer<float> a, b, x;
};

// One call of the student's gauss_solve on `gpus` GPUs, x (a DeviceBuffer or a timed call's
// TimedOutput) poisoned first; returns its seconds by the host's clock (the host answers once
// every GPU's work has finished).
template <class Output>
double call_seconds(const float* a, const float* b, Output& x, int n, int gpus) {
  x.poison();
  labkit::synchronize_all_devices();
  const double ms = labkit::host_clock_ms(
      [&] { labkit::student<decltype(gauss_solve)>("gauss_solve")(a, b, x.data(), n, gpus, nullptr); });
  CUDA_CHECK_KERNELS(nullptr);
  return ms / 1e3;
}

std::vector<float> solve(DeviceSystem& d, int n, int gpus) {
  call_seconds(d.a.data(), d.b.data(), d.x, n, gpus);
  return d.x.download();
}

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

// Names the likely mistake from which GPU counts fail, and how.
std::string diagnose(const std::string& one_gpu, const std::string& two_gpus, bool changes_between_runs) {
  if (!one_gpu.empty() && !two_gpus.empty())
    return "wrong with gpus = 1 and with gpus = 2. With gpus = 1: " + one_gpu +
           ". The elimination or the back substitution is wrong on a single GPU already: check which rows and "
           "columns each step updates (b's column too), and that every step finishes before the next reads its "
           "pivot row";
  if (!one_gpu.empty())
    return "right with gpus = 2 but wrong with gpus = 1: " + one_gpu +
           ". gpus = 1 must work too, with every row on device 0";
  if (changes_between_runs)
    return "with gpus = 2 the answer changes from run to run (" + two_gpus +
           "): a race. A GPU reads a pivot row before its peer copy has arrived (hint: record an event after the "
           "cudaMemcpyPeerAsync on the owner's stream, and cudaStreamWaitEvent on every other GPU's stream before "
           "it eliminates with that row)";
  if (two_gpus.find("never written") != std::string::npos)
    return "right with gpus = 1, but with gpus = 2 " + two_gpus +
           ": x must be complete on GPU 0, including the unknowns of rows another GPU owns";
  return "right with gpus = 1 but wrong with gpus = 2: " + two_gpus +
         ". The pivot row was not made available on the other GPU, or was used before it arrived: when the owner "
         "of row k has finished it, copy it to every other GPU (cudaMemcpyPeerAsync) and make their streams wait "
         "on an event recorded after the copy. Check too that each GPU updates exactly the rows it owns";
}

void check_solve(const Case& c) {
  // Without a second GPU a 2-GPU call could only be run on one: never a pass. (`grade export`
  // still writes the system, drawn on the CPU.)
  const bool gpus_missing = labkit::device_count() < 2;
  const std::string why = "not run: this lab needs 2 GPUs, this machine has " + std::to_string(labkit::device_count());
  if (gpus_missing && labkit::export_dir().empty()) return labkit::not_run(c, why);
  const System s = make_system(c);
  const int n = s.n;
  const std::vector<double> host_x = n <= largest_host_solve ? solve_on_host(s) : std::vector<double>{};
  labkit::export_array(c, "a", s.a, {size_t(n), size_t(n)});
  labkit::export_array(c, "b", s.b);
  if (!host_x.empty()) labkit::export_array(c, "x_reference", host_x);
  if (gpus_missing) return labkit::not_run(c, why);

  const labkit::DeviceScope on_gpu0(0);
  DeviceSystem d(s);
  const std::vector<float> x1 = solve(d, n, 1);
  const std::vector<float> x2 = solve(d, n, 2);
  const bool changes_between_runs = n <= largest_repeat && !same_bits(solve(d, n, 2), x2);
  if (d.a.download() != s.a || d.b.download() != s.b) {
    labkit::verdict(c, false, "gauss_solve modified d_a or d_b: they are inputs and must come back unchanged "
                              "(copy A and b into memory of your own before eliminating)");
    return;
  }
  const std::string one_gpu = judge(c, s, x1, host_x), two_gpus = judge(c, s, x2, host_x);
  if (!one_gpu.empty() || !two_gpus.empty()) {
    labkit::verdict(c, false, diagnose(one_gpu, two_gpus, changes_between_runs));
    return;
  }
  labkit::verdict(c, true);
}

// ---- performance -----------------------------------------------------------------------
// Every timed call solves a system no earlier call has seen (labkit/fresh_input.h): A and b
// are drawn on GPU 0 before each sample, as make_system makes them but from a fresh seed, and
// revealed as the call's window opens; x is collected as it closes, and its residual against
// the system it was given is computed on the GPU, so checking a 14336 x 14336 system costs a
// read of A rather than a download of it.

constexpr int row_threads = 256;  // the kernels below give each row one block of this size

// No initialisers: the type of a __shared__ array.
struct RowSums {
  double dot;        // sum of a_j x_j
  double magnitude;  // sum of |a_j|
};

// The block's RowSums added up; the total is valid in thread 0 only.
__device__ RowSums block_total(RowSums mine) {
  __shared__ RowSums warp_totals[row_threads / 32];
  for (int offset = 16; offset > 0; offset /= 2) {
    mine.dot += __shfl_down_sync(0xffffffffu, mine.dot, offset);
    mine.magnitude += __shfl_down_sync(0xffffffffu, mine.magnitude, offset);
  }
  if (threadIdx.x % 32 == 0) warp_totals[threadIdx.x / 32] = mine;
  __syncthreads();
  RowSums total{0, 0};
  if (threadIdx.x == 0)
    for (const RowSums& warp : warp_totals) total.dot += warp.dot, total.magnitude += warp.magnitude;
  return total;
}

// One row's sums over its columns but `skip` (-1: none), in double, as the host's loops sum
// them; without x, `dot` stays 0.
__device__ RowSums row_sums(const float* row, const float* x, int n, int skip) {
  RowSums mine{0, 0};
  for (int j = threadIdx.x; j < n; j += row_threads) {
    if (j == skip) continue;
    const double a = row[j];
    if (x != nullptr) mine.dot += a * double(x[j]);
    mine.magnitude += fabs(a);
  }
  return block_total(mine);
}

// make_system's rows on the GPU, one block each: the diagonal set to (1 + dominance) x the
// sum of the row's other magnitudes, plus 1, its sign random when asked, then the whole row
// scaled when asked.
__global__ void make_rows_dominant_kernel(float* a, int n, double dominance, bool negative_diagonal,
                                          uint64_t sign_seed, bool scale_rows) {
  const int i = blockIdx.x;
  float* row = a + size_t(i) * size_t(n);
  const RowSums sums = row_sums(row, nullptr, n, i);  // every thread has read the row after this
  if (threadIdx.x == 0) {
    float diagonal = float((1 + dominance) * sums.magnitude + 1);
    if (negative_diagonal && (labkit::splitmix64(sign_seed + uint64_t(i)) & 1)) diagonal = -diagonal;
    row[i] = diagonal;
  }
  if (!scale_rows) return;
  __syncthreads();  // the diagonal is scaled with the rest of its row
  const float scale = ldexpf(1.0f, (i * 7) % 25 - 12);
  for (int j = threadIdx.x; j < n; j += row_threads) row[j] *= scale;
}

// b = A x, each row summed in double.
__global__ void multiply_kernel(const float* a, const float* x, float* b, int n) {
  const RowSums sums = row_sums(a + size_t(blockIdx.x) * size_t(n), x, n, -1);
  if (threadIdx.x == 0) b[blockIdx.x] = float(sums.dot);
}

// scaled_residual's terms: each row's |b_i - (A x)_i| and sum of |a_ij|, in double.
__global__ void residual_terms_kernel(const float* a, const float* b, const float* x, int n, double* row_residual,
                                      double* row_norm) {
  const int i = blockIdx.x;
  const RowSums sums = row_sums(a + size_t(i) * size_t(n), x, n, -1);
  if (threadIdx.x == 0) {
    row_residual[i] = fabs(double(b[i]) - sums.dot);
    row_norm[i] = sums.magnitude;
  }
}

// make_system's A for the case, from `seed`, on the current GPU.
void draw_matrix(const Case& c, float* a, uint64_t seed, cudaStream_t stream) {
  const int n = int(c.n);
  labkit::InputSpec spec = c.input;
  spec.seed = seed;
  labkit::generate_on_device(a, size_t(n) * size_t(n), spec, stream);
  make_rows_dominant_kernel<<<unsigned(n), row_threads, 0, stream>>>(
      a, n, c.number("dominance", 0.5), c.integer("negative_diagonal", 0) != 0, diagonal_sign_seed(seed),
      c.integer("scale_rows", 0) != 0);
  CUDA_CHECK(cudaGetLastError());
}

// make_system's b for the drawn A: A x_true, with x_true uniform in [-1, 1] from `seed`.
void draw_right_hand_side(const float* a, float* x_true, float* b, int n, uint64_t seed, cudaStream_t stream) {
  labkit::generate_on_device(x_true, size_t(n), labkit::InputSpec{labkit::Distribution::uniform, seed, -1, 1}, stream);
  multiply_kernel<<<unsigned(n), row_threads, 0, stream>>>(a, x_true, b, n);
  CUDA_CHECK(cudaGetLastError());
}

// A timed call's buffers, all on GPU 0: the system, drawn afresh for every call, the x the
// call writes, and the checks' scratch. b is drawn from A, so A is drawn first.
struct PerfInputs {
  explicit PerfInputs(const Case& c)
      : n(int(c.n)),
        a(size_t(c.n) * size_t(c.n),
          [&c](float* out, uint64_t seed, cudaStream_t stream) { draw_matrix(c, out, seed, stream); }, 0),
        b(c.n,
          [this](float* out, uint64_t seed, cudaStream_t stream) {
            draw_right_hand_side(a.drawn(), x_true.data(), out, n, seed, stream);
          },
          0),
        x(c.n, 0), x_true(c.n, 0), row_residual(c.n, 0), row_norm(c.n, 0) {}
  PerfInputs(const PerfInputs&) = delete;  // b's generator holds `this`
  PerfInputs& operator=(const PerfInputs&) = delete;

  // The timed call that runs `launch` on these buffers: before each sample A and b drawn, in
  // that order, and x poisoned; its window reveals A and b and collects x.
  labkit::TimedCall timed_call(std::function<void(cudaStream_t)> launch) {
    labkit::TimedCall call = labkit::timed_call(std::move(launch), {&a, &b}, {&x});
    call.host_clock = true;  // the work spans several GPUs and streams, or processes
    return call;
  }

  // Untimed, for a call made outside the timing loop: a new system where the call reads it.
  void draw_and_reveal() {
    a.draw();
    b.draw();
    a.reveal(false);
    b.reveal(false);
    labkit::synchronize_all_devices();
  }

  // The residual of the collected x against the system it was given; "" when within bound.
  std::string residual_problem() {
    const labkit::DeviceScope on_gpu0(0);
    residual_terms_kernel<<<unsigned(n), row_threads>>>(a.drawn(), b.drawn(), x.collected_data(), n,
                                                        row_residual.data(), row_norm.data());
    CUDA_CHECK_KERNELS(nullptr);
    const std::vector<float> solution = x.collected();
    // A NaN would slip through the residual's maxima.
    if (!std::all_of(solution.begin(), solution.end(), [](float value) { return std::isfinite(value); }))
      return "x holds NaN or infinite values";
    const double residual =
        scaled_residual(row_residual.download(), row_norm.download(), solution, b.download_drawn());
    return residual <= residual_bound(n) ? std::string()
                                         : "residual " + show(residual) + " above " + show(residual_bound(n));
  }

  int n;
  labkit::FreshInput<float> a, b;
  labkit::TimedOutput<float> x;
  DeviceBuffer<float> x_true;                   // b's generator's scratch
  DeviceBuffer<double> row_residual, row_norm;  // residual_problem's scratch
};

// A solver as a timed case calls it: the student's or the reference's gauss_solve, or the
// chapter's one-GPU elimination (which ignores gpus).
using Solver = std::function<void(const float* a, const float* b, float* x, int n, int gpus, cudaStream_t stream)>;

labkit::PerfSubject perf_subject(Solver solver, const Case& c, PerfInputs& inputs) {
  const int n = int(c.n), gpus = int(c.integer("gpus", 2));
  return {inputs.timed_call([solver, n, gpus, &inputs](cudaStream_t stream) {
            solver(inputs.a.data(), inputs.b.data(), inputs.x.data(), n, gpus, stream);
          }),
          [&inputs] { return inputs.residual_problem(); }};
}

// ---- the lesson: is the work split over the GPUs? ---------------------------------------

// The student's own 1-GPU and 2-GPU calls, each the fastest of two after a first call that
// pays for start-up, by the host's clock. Like a timed call, each solves a new system and its
// answer is checked: a call that knew the system, or skipped the work, would fake the split.
struct OwnSpeedup {
  int n = 0;  // the order of the systems it was measured on
  double one_gpu_ms = 0, two_gpu_ms = 0;
  std::string wrong_answer;  // the first call's problem, "" when every answer was right
  double factor() const { return one_gpu_ms / two_gpu_ms; }
};

OwnSpeedup measure_own_speedup(const Case& c, PerfInputs& inputs) {
  OwnSpeedup speedup;
  auto fastest_ms = [&](int gpus) {
    double best = 1e30;
    for (int call = 0; call < 3; ++call) {
      inputs.draw_and_reveal();
      const double seconds = call_seconds(inputs.a.data(), inputs.b.data(), inputs.x, int(c.n), gpus);
      inputs.x.collect(false);
      labkit::synchronize_all_devices();
      if (const std::string problem = inputs.residual_problem(); !problem.empty() && speedup.wrong_answer.empty())
        speedup.wrong_answer = "with gpus = " + std::to_string(gpus) + ", " + problem;
      if (call > 0) best = std::min(best, seconds * 1e3);
    }
    return best;
  };
  speedup.n = int(c.n);
  speedup.one_gpu_ms = fastest_ms(1);
  speedup.two_gpu_ms = fastest_ms(2);
  return speedup;
}

std::string describe(const OwnSpeedup& s) {
  return "with gpus = 2 your call took " + show(s.two_gpu_ms) + " ms and with gpus = 1 " + show(s.one_gpu_ms) +
         " ms at n = " + std::to_string(s.n) + ": a speed-up of " + show(s.factor()) + "x";
}

// Why a speed-up is small, from its size: none at all means one GPU did everything; some
// means the second GPU waits (an uneven split, or the host between the steps).
std::string why_little_speedup(const OwnSpeedup& s) {
  if (s.factor() < 1.05)
    return "the rows are not split over the GPUs: all the work lands on one GPU. Give each GPU its share of the "
           "rows and eliminate on every GPU at once";
  return "the second GPU spends much of the call waiting. Two usual causes: rows split in two contiguous halves "
         "(the GPU that owns the upper half has nothing left to eliminate once the pivot passes its rows, so the "
         "last half of the steps run on one GPU: deal the rows out in turn, row i on GPU i % gpus, or in small "
         "blocks), and the host in the per-step loop (a cudaDeviceSynchronize or a blocking copy per pivot: make "
         "the streams wait on events instead)";
}

// No speed points for a call whose work is not split: the timed cases' requirement.
labkit::PerfRequirement work_split_required(const OwnSpeedup& s) {
  return [s](double) {
    if (!s.wrong_answer.empty())
      return "a call that measured the split over the GPUs gave a wrong answer (" + s.wrong_answer +
             "), so the split is not known";
    return s.factor() >= least_split_speedup
               ? std::string()
               : describe(s) + ", below the " + show(least_split_speedup) + "x that shows the work split. " +
                     why_little_speedup(s);
  };
}

// Advice for a split that works but gains little, in a solver still as slow as the chapter's
// kernels: there the work is memory-bound and should nearly halve on two GPUs. A blocked
// solver (tens of TFLOP/s) gains less for another reason, the fixed cost of each block step
// (the reference's speed-up in the benchmark's output), and gets no such advice.
labkit::PerfHint uneven_split_hint(const OwnSpeedup& s, int n) {
  return [s, n](double student_ms) {
    const double tflops = solve_tflops(n, student_ms);
    const bool chapter_speed = tflops < 5;
    return chapter_speed && s.factor() >= least_split_speedup && s.factor() < 1.5
               ? describe(s) + ". " + why_little_speedup(s)
               : std::string();
  };
}

// Measured once, on the first timed case (the dataset lists the smallest first, n = 12288),
// and shared by the rest: a 1-GPU call as slow as the chapter's kernels takes about 3 s there
// on an H100 and would come near the 5 s a call may take at n = 14336.
const OwnSpeedup& own_speedup(const Case& c, PerfInputs& inputs) {
  static const OwnSpeedup measured = measure_own_speedup(c, inputs);
  return measured;
}

}  // namespace

// ---- part 2: mpi_gauss_solve, one process per GPU under mpirun -----------------------------
// Cases marked `mpi` run the student's mpi_gauss_solve in two MPI ranks, rank r on GPU r
// (labkit/rank_group.h): rank 0 gets the system in buffers on GPU 0, which the checks own and
// read back, the other rank only n. Each case is solved twice, on new systems in the same
// buffers, and judged as part 1 judges its answers.
namespace {

constexpr int part2_ranks = 2;  // one rank per GPU: the lab's two
const char* const gauss_rank_program = "lab-12-gauss-multi-gpu-mpi-rank";

// Which part a case belongs to: part 2's run in MPI ranks (labkit::runs_in_mpi_ranks), part 3's
// are marked `peer`, the rest are part 1's.
bool peer_case(const Case& c) { return c.integer("peer", 0) != 0; }
bool single_process_case(const Case& c) { return !labkit::runs_in_mpi_ranks(c) && !peer_case(c); }

labkit::MpiRanks& gauss_ranks() {
  static labkit::MpiRanks ranks(gauss_rank_program);
  return ranks;
}

// "" when part 2 can run here; else why not (no MPI first, as lab 13 says it, then GPUs).
std::string part2_unavailable(labkit::RankSide side) {
  if (std::string why = gauss_ranks().unavailable(side); !why.empty()) return why;
  if (labkit::device_count() < part2_ranks)
    return "not run: this lab needs 2 GPUs, this machine has " + std::to_string(labkit::device_count());
  return "";
}

// One call on every rank: rank 0 solves with the system at a, b and writes x; the others get
// null pointers and n. Returns our clock's time from the call to the end of every GPU's work.
double call_mpi_gauss(labkit::RankGroup& group, float* a, float* b, float* x, int n) {
  std::vector<labkit::wire::Request> requests;
  for (int rank = 0; rank < part2_ranks; ++rank) {
    const bool root = rank == 0;
    requests.push_back(labkit::call_request("mpi_gauss_solve", static_cast<const float*>(root ? a : nullptr),
                                            static_cast<const float*>(root ? b : nullptr), root ? x : nullptr, n));
  }
  return labkit::call_every_rank(group, std::move(requests));
}

// The bands a correct chapter-style split gives for n rows over the ranks, in words.
std::string describe_bands(int n) {
  const labkit::RowBands bands = labkit::row_bands(n, part2_ranks, n + 1);
  return "for n = " + std::to_string(n) + " over " + std::to_string(part2_ranks) + " ranks, bands of " +
         labkit::braced(bands.rows) + " rows: counts " + labkit::braced(bands.counts) + " and displacements " +
         labkit::braced(bands.displacements) + " floats of [A | b] (n + 1 floats a row)";
}

// Names the likely mistake of a wrong answer from rank 0.
std::string diagnose_mpi(int n, const std::string& problem) {
  if (problem.find("never written") != std::string::npos)
    return problem + ": x must be complete on rank 0's GPU, including the unknowns of rows the other ranks "
                     "eliminated (gather their rows to the root, or keep every broadcast pivot row there)";
  if (n % part2_ranks != 0)
    return problem + ". n = " + std::to_string(n) + " is not a multiple of the " + std::to_string(part2_ranks) +
           " ranks: the usual cause is MPI_Scatterv's or MPI_Gatherv's counts and displacements, which must "
           "cover every row once (" + describe_bands(n) +
           "). Each displacement is the sum of the counts before it, not the rank times its own count; and "
           "n / ranks rounds down, so equal bands of n / ranks rows miss the last n % ranks rows";
  return problem + ". Every rank must eliminate its rows with each pivot row above them, in order: row k comes "
                   "from the rank that owns it (MPI_Bcast with that rank as root, or MPI_Isend/MPI_Irecv), the "
                   "owner copies it to the host only after its stream has finished step k-1, and the receivers "
                   "copy it to their GPU only after MPI has delivered it (hint: cudaStreamSynchronize before "
                   "the MPI call, and never reuse a host buffer a pending copy still reads)";
}

// The case's two calls, each on a new system in the same buffers; "" when both are right.
std::string run_mpi_calls(const Case& c) {
  const labkit::DeviceScope on_gpu0(0);
  const int n = int(c.n);
  std::unique_ptr<DeviceSystem> d;
  for (int round = 0; round < 2; ++round) {
    const System s = make_system(c, uint64_t(round));
    if (!d) d = std::make_unique<DeviceSystem>(s);
    d->a.upload(s.a), d->b.upload(s.b), d->x.poison();
    try {
      call_mpi_gauss(gauss_ranks().group(labkit::RankSide::student, part2_ranks), d->a.data(), d->b.data(),
                     d->x.data(), n);
    } catch (const labkit::CudaError& error) {
      return error.what();
    }
    if (d->a.download() != s.a || d->b.download() != s.b)
      return "mpi_gauss_solve modified rank 0's d_a or d_b: they are inputs and must come back unchanged (copy "
             "them to the host, or into memory of your own, before eliminating)";
    const std::vector<double> host_x = n <= largest_host_solve ? solve_on_host(s) : std::vector<double>{};
    const std::string problem = judge(c, s, d->x.download(), host_x);
    if (problem.empty()) continue;
    if (round > 0)
      return "the first call was right, the second (a new system in the same buffers) was not: " + problem +
             " (hint: state kept from the earlier call, such as a band or a split made for the first system)";
    return diagnose_mpi(n, problem);
  }
  return "";
}

void check_mpi_solve(const Case& c) {
  if (const std::string why = part2_unavailable(labkit::RankSide::student); !why.empty()) {
    if (!labkit::export_dir().empty()) {  // grade export needs neither MPI nor a GPU
      const System s = make_system(c);
      labkit::export_array(c, "a", s.a, {size_t(s.n), size_t(s.n)});
      labkit::export_array(c, "b", s.b);
    }
    return labkit::not_run(c, why);
  }
  const std::string problem = run_mpi_calls(c);
  labkit::verdict(c, problem.empty(), problem);
}

// Both sides by our clock, from the call until every GPU is done: the ranks report no time of
// their own, so the student's figure is what "its process reported" and what our clock saw.
// Each call on a new system, revealed in rank 0's buffers, as part 1's timed calls.
labkit::PerfSubject mpi_perf_subject(labkit::RankSide side, const Case& c, PerfInputs& inputs) {
  const int n = int(c.n);
  labkit::TimedCall call = inputs.timed_call([side, n, &inputs](cudaStream_t) {
    const double ms = call_mpi_gauss(gauss_ranks().group(side, part2_ranks), inputs.a.data(), inputs.b.data(),
                                     inputs.x.data(), n);
    if (labkit::RemoteTiming* timing = labkit::current_remote_timing()) {
      ++timing->calls;
      timing->event_ms = timing->wall_ms = ms;
    }
  });
  call.prepare = [side, draw = call.prepare](int sample) {
    gauss_ranks().keep_only(side);
    draw(sample);
  };
  return {call, [&inputs] { return inputs.residual_problem(); }};
}

// One message and one host synchronisation per pivot, and a trailing matrix read once per
// pivot, hold the chapter's version far below the reference's rate. 2 TFLOP/s (counting
// 2n^3/3) is an estimate of where that design tops out on 2 H100s; not measured.
labkit::PerfHint mpi_hint(int n) {
  return [n](double student_ms) -> std::string {
    const double tflops = solve_tflops(n, student_ms);
    if (tflops >= 2) return "";
    char text[600];
    std::snprintf(text, sizeof text,
                  "%.2f TFLOP/s (2n^3/3 in %.1f ms), %.1f us per pivot: a message and a host synchronisation "
                  "per pivot, and every step reading the whole trailing matrix, cost more than the arithmetic. "
                  "Broadcast blocks of 64 finished rows (part 1's blocked update, one message per 64 pivots), "
                  "deal the row blocks out cyclically, and send the next block row with MPI_Isend/MPI_Irecv "
                  "while the GPUs run this step's update",
                  tflops, student_ms, student_ms * 1e3 / n);
    return text;
  };
}

}  // namespace

// ---- part 3: measuring the machine -----------------------------------------------------
// Cases marked `peer` ask the student's time_peer_copy for a large copy's time between two
// GPUs with peer access on or off, and compare it with the kit's own measurement of the same
// copy (peer_copies.cuh), taken just before and just after in this process, with peer access
// on and off, so that a wrong answer can be named: the copy staged when it should be direct,
// or a clock stopped before the copy ended.
namespace {

// How far a student's time may sit from the kit's and still be the same measurement: two
// processes timing one copy, a few percent apart, with room for a busy host.
constexpr double same_measurement_factor = 1.5;

// The kit's times for one copy, from its measurements before and after the student's.
struct TimeSpan {
  double low_us = 0, high_us = 0;  // both 0: not measured (no direct path for peer access on)
  void add(double us) {
    low_us = low_us == 0 ? us : std::min(low_us, us);
    high_us = std::max(high_us, us);
  }
  bool measured() const { return high_us > 0; }
  bool matches(double us) const {
    return measured() && us >= low_us / same_measurement_factor && us <= high_us * same_measurement_factor;
  }
};

struct KitCopyTimes {
  TimeSpan on, off;
  const TimeSpan& with(bool peer_on) const { return peer_on ? on : off; }
};

// With peer access on (where the GPUs have a direct path) and off.
void add_kit_measurement(KitCopyTimes& times, int from, int to, bool direct, size_t bytes, int repeats) {
  if (direct) {
    const peer_copies::PeerAccessScope access(from, to, true);
    times.on.add(peer_copies::peer_copy_ms(from, to, bytes, repeats) * 1e3);
  }
  const peer_copies::PeerAccessScope access(from, to, false);
  times.off.add(peer_copies::peer_copy_ms(from, to, bytes, repeats) * 1e3);
}

std::string copy_rate(double us, size_t bytes) { return show(double(bytes) / (us * 1e3)) + " GB/s"; }

// Names the likely mistake from where the student's time lies against the kit's two.
std::string diagnose_copy(bool on, double student_us, const KitCopyTimes& kit, size_t bytes) {
  const TimeSpan& expected = kit.with(on);
  const std::string measured = "you measured " + show(student_us) + " us (" + copy_rate(student_us, bytes) +
                               "), the kit " + show(expected.low_us) + "-" + show(expected.high_us) + " us (" +
                               copy_rate(expected.high_us, bytes) + ") with peer access " + (on ? "on" : "off");
  if (kit.with(!on).matches(student_us))
    return measured + (on ? ": as slow as the same copy with peer access off. Peer access was never enabled: "
                            "cudaDeviceEnablePeerAccess on each GPU for the other (after cudaDeviceCanAccessPeer)"
                          : ": as fast as the same copy with peer access on. Peer access was still enabled: "
                            "cudaDeviceDisablePeerAccess on each GPU for the other, then enable it again if it "
                            "was on when your call began");
  if (student_us < expected.low_us)
    return measured + ": faster than the link allows. The clock stopped before the copy ended: "
                      "cudaMemcpyPeerAsync returns once the copy is queued, so synchronise both GPUs (or wait "
                      "on an event recorded after the copy) before reading the clock";
  return measured + ": slower than the link. Look for copies that should not be counted (the first sets up the "
                    "path), allocation or peer-access setup inside the timed loop, or a mean that one slow copy "
                    "pulled up (take the median)";
}

void check_peer_copy(const Case& c) {
  if (labkit::device_count() < 2)
    return labkit::not_run(c, "not run: this lab needs 2 GPUs, this machine has " +
                                  std::to_string(labkit::device_count()));
  const int from = int(c.integer("from")), to = int(c.integer("to")), repeats = int(c.integer("repeats"));
  const bool on = c.integer("peer_access") != 0;
  const size_t bytes = c.n;
  const bool direct = peer_copies::direct_path(from, to) && peer_copies::direct_path(to, from);
  if (on && !direct)
    return labkit::not_run(c, "not run: GPUs " + std::to_string(from) + " and " + std::to_string(to) +
                                  " have no direct path here (cudaDeviceCanAccessPeer)");
  labkit::hold_gpu_alone();  // a verdict from times: no other lab's run on these GPUs meanwhile
  KitCopyTimes kit;
  add_kit_measurement(kit, from, to, direct, bytes, repeats);
  const double student_us =
      labkit::student<decltype(time_peer_copy)>("time_peer_copy")(from, to, on ? 1 : 0, bytes, repeats);
  add_kit_measurement(kit, from, to, direct, bytes, repeats);
  if (!(std::isfinite(student_us) && student_us > 0))
    return labkit::verdict(c, false, "time_peer_copy returned " + show(student_us) +
                                         ": a copy's time is a positive number of microseconds");
  if (kit.with(on).matches(student_us)) return labkit::verdict(c, true);
  labkit::verdict(c, false, diagnose_copy(on, student_us, kit, bytes));
}

}  // namespace

TEST_SUITE("correctness") {
  TEST_CASE("gauss_solve solves diagonally dominant systems on 1 and 2 GPUs") {
    labkit::for_each_correctness_case([](const Case& c) { check_solve(c); }, single_process_case);
  }

  TEST_CASE("mpi_gauss_solve, one process per GPU, solves diagonally dominant systems") {
    labkit::for_each_correctness_case(check_mpi_solve, labkit::runs_in_mpi_ranks);
    gauss_ranks().stop();
  }

  TEST_CASE("time_peer_copy measures what the kit measures, with peer access on and off") {
    labkit::for_each_correctness_case(check_peer_copy, peer_case);
  }
}

TEST_SUITE("performance") {
  // Every timed case: the student's 2-GPU call, scored only when it beats the student's own
  // 1-GPU call. A case with `against_chapter: 1` times it against the chapter's elimination on
  // one GPU (the kit's copy, chapter_gauss.cuh: the starter's speed), the others against the
  // reference solution's 2-GPU call.
  TEST_CASE("gauss_solve on 2 GPUs against one GPU and against the reference on 2 GPUs") {
    labkit::for_each_timed_case([&](const Case& c) {
      const labkit::DeviceScope on_gpu0(0);
      PerfInputs inputs(c);
      // Under a profiler the case is one untimed call: no split to judge, and six more solves
      // would each be profiled kernel by kernel.
      const OwnSpeedup speedup = labkit::profiling() ? OwnSpeedup{} : own_speedup(c, inputs);
      const int n = int(c.n);
      Solver against = labkit::reference<decltype(gauss_solve)>("gauss_solve");
      std::shared_ptr<chapter_gauss::OneGpuSolver> chapter;
      if (c.integer("against_chapter", 0) != 0) {
        chapter = std::make_shared<chapter_gauss::OneGpuSolver>(n);
        against = [chapter](const float* a, const float* b, float* x, int n, int, cudaStream_t s) {
          (*chapter)(a, b, x, n, s);
        };
      }
      // Bytes: A and b read once, x written once. The ratio is what is scored.
      const double bytes = (double(c.n) * double(c.n) + 2.0 * double(c.n)) * sizeof(float);
      labkit::measure_performance(c, bytes,
                                  perf_subject(labkit::student<decltype(gauss_solve)>("gauss_solve"), c, inputs),
                                  perf_subject(against, c, inputs), /*library=*/{},
                                  uneven_split_hint(speedup, n), work_split_required(speedup));
    }, single_process_case);
  }

  TEST_CASE("mpi_gauss_solve on 2 ranks against the reference on 2 ranks") {
    labkit::for_each_timed_case(
        [](const Case& c) {
          std::string why = part2_unavailable(labkit::RankSide::student);
          if (why.empty()) why = part2_unavailable(labkit::RankSide::reference);
          if (!why.empty()) return labkit::not_run(c, why);
          const labkit::DeviceScope on_gpu0(0);
          PerfInputs inputs(c);
          const double bytes = (double(c.n) * double(c.n) + 2.0 * double(c.n)) * sizeof(float);  // as part 1
          labkit::measure_performance(c, bytes, mpi_perf_subject(labkit::RankSide::student, c, inputs),
                                      mpi_perf_subject(labkit::RankSide::reference, c, inputs),
                                      /*library=*/{}, mpi_hint(int(c.n)));
          gauss_ranks().stop();  // before the inputs they mapped are freed
        },
        labkit::runs_in_mpi_ranks);
  }
}
