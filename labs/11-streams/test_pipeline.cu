// Lab 11 checks: the student's pipelined merge against the checks' own one-thread-per-pixel
// kernel (itself checked on the CPU) on every dataset case, with guards around the output and
// junk in the workspace that name the race or slip a wrong answer came from; then the speed
// against the reference solution's, with the three phases measured in the same run: a call
// that overlaps too little is told why and earns no speed points (correct, but not the lesson).
// Part 2 (cases with `steps`, after part 1's): mix_chain, checked against the CPU over three
// calls on the same buffers (new contents, then other sizes), so that a kept graph that replays
// stale data or the wrong arguments fails; timed against the kit's copy of the starter's
// per-step launches (chapter_chain.cuh).
#include "chapter_chain.cuh"
#include "pipeline.h"

#include <labkit/device_compare.cuh>
#include <labkit/lab.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <stdexcept>

namespace {

using labkit::Case;
using labkit::DeviceBuffer;
using labkit::HostBuffer;
using Pixels = std::vector<uint32_t>;

constexpr uint32_t host_poison = 0x01010101u * labkit::poison_byte;  // h_out before the call
// The workspace is filled with other bytes than h_out, so that an output which is junk says
// where it came from: d_out copied back before the kernel wrote it, or d_a/d_b read by the
// kernel before the copy in had landed.
constexpr int output_junk_byte = 0x5A;
constexpr uint32_t output_junk = 0x5A5A5A5Au;
constexpr int input_junk_byte = 0x3C;
constexpr uint32_t input_junk = 0x3C3C3C3Cu;
constexpr size_t guard_elements = 1024;  // poisoned h_out elements past n (and before, with an offset)
constexpr int threads_per_block = 256;

// ---- inputs and the expected output -------------------------------------------------------

struct Images {
  Pixels a, b;
};

// b is drawn like a, from another seed.
Images make_images(const Case& c, uint64_t seed_shift = 0) {
  labkit::InputSpec spec = c.input;
  spec.seed += seed_shift;
  Images images;
  images.a = labkit::generate<uint32_t>(c.n, spec);
  spec.seed = labkit::splitmix64(spec.seed ^ 0xB0B0B0B0ull);
  images.b = labkit::generate<uint32_t>(c.n, spec);
  return images;
}

int rounds_of(const Case& c) { return int(c.integer("rounds")); }

unsigned blocks_for(size_t n) { return unsigned((n + threads_per_block - 1) / threads_per_block); }

// The plainest correct kernel: one thread per pixel, no chunks, no streams.
__global__ void expected_merge_kernel(const uint32_t* a, const uint32_t* b, uint32_t* out, size_t n, int rounds) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = merge_element(a[i], b[i], rounds);
}

// The kernel above is checked against the CPU at the first and last pixels and at scattered
// ones: a full CPU pass would take seconds per case at 2000 rounds a pixel.
void cross_check_on_cpu(const Images& images, int rounds, const Pixels& expected) {
  const size_t n = expected.size();
  auto check = [&](size_t i) {
    if (merge_element(images.a[i], images.b[i], rounds) != expected[i])
      throw std::logic_error("kit fault: the checks' own kernel disagrees with the CPU at pixel " + std::to_string(i));
  };
  for (size_t i = 0; i < std::min<size_t>(n, 512); ++i) check(i);
  for (size_t i = n - std::min<size_t>(n, 512); i < n; ++i) check(i);
  for (uint64_t k = 0; k < 4096 && n > 0; ++k) check(size_t(labkit::splitmix64(k) % n));
}

Pixels expected_output(const Images& images, int rounds) {
  const size_t n = images.a.size();
  if (n == 0) return {};
  DeviceBuffer<uint32_t> a(images.a), b(images.b), out(n);
  expected_merge_kernel<<<blocks_for(n), threads_per_block>>>(a.data(), b.data(), out.data(), n, rounds);
  CUDA_CHECK_KERNELS(nullptr);
  Pixels expected = out.download();
  cross_check_on_cpu(images, rounds, expected);
  return expected;
}

// ---- the buffers a call gets --------------------------------------------------------------

// Pinned host images (shared with the submission's process), the output with poisoned guards
// on both sides, and the device workspace.
struct CallBuffers {
  CallBuffers(const Images& images, size_t offset)
      : n(images.a.size()),
        offset(offset),
        h_a(offset + n),
        h_b(offset + n),
        h_out(offset + n + guard_elements),
        d_a(n),
        d_b(n),
        d_out(n) {
    std::copy(images.a.begin(), images.a.end(), h_a.data() + offset);
    std::copy(images.b.begin(), images.b.end(), h_b.data() + offset);
  }

  // Junk in the workspace, poison in the whole output; HostBuffer::poison waits for the device
  // first, so the memsets are done before the call.
  void prepare() {
    CUDA_CHECK(cudaMemset(d_a.data(), input_junk_byte, d_a.bytes()));
    CUDA_CHECK(cudaMemset(d_b.data(), input_junk_byte, d_b.bytes()));
    CUDA_CHECK(cudaMemset(d_out.data(), output_junk_byte, d_out.bytes()));
    h_out.poison();
  }

  void call(const labkit::Function<decltype(merge_pipelined)>& fn, int rounds, cudaStream_t stream) {
    fn(h_a.data() + offset, h_b.data() + offset, h_out.data() + offset, n, rounds, d_a.data(), d_b.data(),
       d_out.data(), stream);
  }

  Pixels output() const { return Pixels(h_out.data() + offset, h_out.data() + offset + n); }

  size_t n, offset;
  HostBuffer<uint32_t> h_a, h_b, h_out;
  DeviceBuffer<uint32_t> d_a, d_b, d_out;
};

// ---- diagnosis ------------------------------------------------------------------------------

std::string index_text(size_t i) { return std::to_string(i); }

// "" when nothing outside h_out[0..n) was written.
std::string check_guards(const CallBuffers& buffers) {
  for (size_t i = 0; i < buffers.offset; ++i)
    if (buffers.h_out[i] != host_poison)
      return "wrote h_out[" + std::to_string(int64_t(i) - int64_t(buffers.offset)) +
             "], before the output's start: check the chunks' host offsets";
  for (size_t i = 0; i < guard_elements; ++i)
    if (buffers.h_out[buffers.offset + buffers.n + i] != host_poison)
      return "wrote h_out[" + std::to_string(buffers.n + i) + "], past the output's end (n = " +
             std::to_string(buffers.n) + "): the last chunk was copied back whole (hint: it holds only n minus "
             "its start elements; cudaMemcpyAsync takes bytes, count * sizeof(uint32_t))";
  return "";
}

// What the wrong pixels were: counts of each kind, and the first of each.
struct WrongPixels {
  size_t unwritten = 0, copied_back_early = 0, read_input_early = 0, other = 0;
  size_t first_unwritten = 0, first_copied_back_early = 0, first_read_input_early = 0, first_other = 0;
  bool all_unwritten_trailing = true;  // no right pixel after the first unwritten one
};

WrongPixels classify(const Images& images, int rounds, const Pixels& expected, const Pixels& actual) {
  WrongPixels w;
  const uint32_t both_inputs_junk = merge_element(input_junk, input_junk, rounds);
  bool seen_right_after_unwritten = false;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (actual[i] == expected[i]) {
      if (w.unwritten > 0) seen_right_after_unwritten = true;
      continue;
    }
    if (actual[i] == host_poison) {
      if (w.unwritten++ == 0) w.first_unwritten = i;
    } else if (actual[i] == output_junk) {
      if (w.copied_back_early++ == 0) w.first_copied_back_early = i;
    } else if (actual[i] == both_inputs_junk || actual[i] == merge_element(images.a[i], input_junk, rounds) ||
               actual[i] == merge_element(input_junk, images.b[i], rounds)) {
      if (w.read_input_early++ == 0) w.first_read_input_early = i;
    } else {
      if (w.other++ == 0) w.first_other = i;
    }
  }
  if (seen_right_after_unwritten) w.all_unwritten_trailing = false;
  return w;
}

// The likeliest mistake, from the most telling kind of wrong pixel.
std::string diagnose(const WrongPixels& w, size_t n) {
  if (w.copied_back_early > 0)
    return std::to_string(w.copied_back_early) + " pixels, the first at " + index_text(w.first_copied_back_early) +
           ", hold what d_out held before the kernel wrote it: they were copied back before their kernel had run. "
           "Work on different streams is not ordered: a chunk's copy out must be on the same stream as its kernel, "
           "or wait for it through an event (cudaEventRecord, then cudaStreamWaitEvent)";
  if (w.read_input_early > 0)
    return std::to_string(w.read_input_early) + " pixels, the first at " + index_text(w.first_read_input_early) +
           ", were merged from what d_a or d_b held before the call: the kernel ran before its chunk's copy in had "
           "landed. Put a chunk's copies in and its kernel on the same stream, or make the kernel's stream wait "
           "for the copy with an event";
  if (w.unwritten > 0 && w.all_unwritten_trailing)
    return "the last " + std::to_string(w.unwritten) + " of " + std::to_string(n) + " pixels (from " +
           index_text(w.first_unwritten) + " on) were never written: the last chunk, shorter than the others, "
           "was dropped (hint: the number of chunks is n / chunk rounded up, and the last one holds n minus its "
           "start)";
  if (w.unwritten > 0)
    return std::to_string(w.unwritten) + " pixels, the first at " + index_text(w.first_unwritten) +
           ", were never written, with right pixels after them: some chunk's copy out is missing, too short "
           "(elements given where cudaMemcpyAsync takes bytes?), or lands at the wrong offset";
  return std::to_string(w.other) + " pixels, the first at " + index_text(w.first_other) +
         ", are wrong and are neither poison nor junk: a chunk was merged from, or copied to, the wrong place "
         "(check that host and device offsets of a chunk agree, in elements on typed pointers), or merged with "
         "the wrong rounds";
}

// Checks inputs, guards and output after a call; "" when all is right.
std::string check_call(const Case& c, const Images& images, const Pixels& expected, const CallBuffers& buffers) {
  if (!std::equal(images.a.begin(), images.a.end(), buffers.h_a.data() + buffers.offset) ||
      !std::equal(images.b.begin(), images.b.end(), buffers.h_b.data() + buffers.offset))
    return "merge_pipelined changed h_a or h_b: the input images are const and must come back unchanged";
  const std::string guards = check_guards(buffers);
  if (!guards.empty()) return guards;
  const Pixels actual = buffers.output();
  const labkit::Comparison comparison = labkit::compare_exact(expected, actual);
  if (comparison.ok()) return "";
  return diagnose(classify(images, rounds_of(c), expected, actual), c.n) + ". " +
         comparison.describe([](size_t i) { return "pixel " + std::to_string(i); });
}

// ---- correctness ----------------------------------------------------------------------------

void check_merge(const Case& c) {
  const Images images = make_images(c);
  labkit::export_array(c, "a", images.a);  // before the GPU computes the expected output
  labkit::export_array(c, "b", images.b);
  const Pixels expected = expected_output(images, rounds_of(c));
  labkit::export_array(c, "expected_out", expected);

  CallBuffers buffers(images, size_t(c.integer("offset", 0)));
  const auto fn = labkit::Function<decltype(merge_pipelined)>(labkit::student<decltype(merge_pipelined)>("merge_pipelined"));
  buffers.prepare();
  buffers.call(fn, rounds_of(c), nullptr);  // the first call also pays for the student's setup
  const std::string error = check_call(c, images, expected, buffers);
  labkit::verdict(c, error.empty(), error);
}

// ---- performance ----------------------------------------------------------------------------

// A timed call's buffers (labkit/fresh_input.h): both images drawn afresh on the GPU for
// every call and revealed in the pinned buffers it reads, the pinned output it writes, and the
// device workspace.
struct PerfState {
  explicit PerfState(const Case& c)
      : n(c.n), rounds(rounds_of(c)), input(c.input), h_a(n, c.input), h_b(n, c.input), h_out(n), d_a(n), d_b(n),
        d_out(n), expected(n) {}

  // Every draw takes a fresh seed, so a case of the same size and distribution can reuse the
  // buffers with its own `rounds`: pinning five 256 MiB host buffers again for each case would
  // only add to the time the GPU is held alone for timing.
  bool fits(const Case& c) const {
    return c.n == n && c.input.kind() == input.kind();
  }

  // The one-thread-per-pixel kernel's output for the drawn images, in `expected`.
  const uint32_t* expected_for_drawn() {
    if (n > 0) expected_merge_kernel<<<blocks_for(n), threads_per_block>>>(h_a.drawn(), h_b.drawn(), expected.data(), n,
                                                                           rounds);
    CUDA_CHECK_KERNELS(nullptr);
    return expected.data();
  }

  size_t n;
  int rounds;
  labkit::InputSpec input;
  labkit::FreshHostInput<uint32_t> h_a, h_b;
  labkit::TimedHostOutput<uint32_t> h_out;
  DeviceBuffer<uint32_t> d_a, d_b, d_out;
  DeviceBuffer<uint32_t> expected;
};

// ---- overlap: the three phases against the whole call, the lab's required property ------------------------------------------

// The shortest of `repeats` runs of `body`, each timed by the host's clock up to the end of
// all device work: the fastest run is the one least disturbed by anything else on the machine.
template <class Body>
double fastest_ms(int repeats, Body body) {
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    labkit::synchronize_all_devices();
    best = std::min(best, labkit::host_clock_ms([&] {
                      body();
                      labkit::synchronize_all_devices();
                    }));
  }
  return best;
}

struct Phases {
  double copy_in_ms = 0, compute_ms = 0, copy_out_ms = 0;
  double serial_ms() const { return copy_in_ms + compute_ms + copy_out_ms; }
  double bound_ms() const { return std::max({copy_in_ms, compute_ms, copy_out_ms}); }
};

// Each phase over the whole job alone, on a stream of the checks' own, through the same
// buffers as the call: what a perfect pipeline would be limited by.
Phases measure_phases(PerfState& buffers, int repeats) {
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const int rounds = buffers.rounds;
  const size_t bytes = buffers.n * sizeof(uint32_t);
  const uint32_t* h_a = buffers.h_a.data();
  const uint32_t* h_b = buffers.h_b.data();
  uint32_t* h_out = buffers.h_out.data();
  Phases phases;
  phases.copy_in_ms = fastest_ms(repeats, [&] {
    CUDA_CHECK(cudaMemcpyAsync(buffers.d_a.data(), h_a, bytes, cudaMemcpyHostToDevice, stream));
    CUDA_CHECK(cudaMemcpyAsync(buffers.d_b.data(), h_b, bytes, cudaMemcpyHostToDevice, stream));
  });
  phases.compute_ms = fastest_ms(repeats, [&] {
    expected_merge_kernel<<<blocks_for(buffers.n), threads_per_block, 0, stream>>>(
        buffers.d_a.data(), buffers.d_b.data(), buffers.d_out.data(), buffers.n, rounds);
    CUDA_CHECK(cudaGetLastError());
  });
  phases.copy_out_ms = fastest_ms(repeats, [&] {
    CUDA_CHECK(cudaMemcpyAsync(h_out, buffers.d_out.data(), bytes, cudaMemcpyDeviceToHost, stream));
  });
  CUDA_CHECK(cudaStreamDestroy(stream));
  return phases;
}

std::string ms_text(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f ms", ms);
  return text;
}

// Names the likely cause when the call took about as long as its phases one after another,
// or longer.
std::string diagnose_no_overlap(const Phases& phases, double call_ms) {
  const double of_serial = call_ms / phases.serial_ms();
  const std::string measured =
      " (measured in this run: copies in " + ms_text(phases.copy_in_ms) + ", kernel over all pixels " +
      ms_text(phases.compute_ms) + ", copy out " + ms_text(phases.copy_out_ms) + "; one after another " +
      ms_text(phases.serial_ms()) + ", the slowest alone " + ms_text(phases.bound_ms()) + "; your call " +
      ms_text(call_ms) + ", the best of several). A pipeline keeps all three busy at once and takes little more "
      "than the slowest alone";
  char share[64];
  std::snprintf(share, sizeof share, "%.2f x", of_serial);
  if (of_serial > 1.3)
    return std::string("your call took ") + share + " the time of its three phases one after another, so its "
           "copies ran slower than the pinned copies measured here: copies through pageable memory (a staging "
           "buffer from malloc, new or std::vector) are staged by the driver, run at a fraction of the speed and "
           "block the host; so does cudaMemcpy without Async. Copy straight between h_a, h_b, h_out (pinned) and "
           "the workspace" + measured;
  return std::string("no overlap: your call took ") + share + " the time of its three phases one after another. "
         "Likely causes: one stream for everything (a stream runs its work in order, so nothing overlaps); the "
         "legacy default stream (stream 0 or nullptr), which waits for and blocks every other blocking stream "
         "(create yours with cudaStreamNonBlocking); a cudaStreamSynchronize or cudaDeviceSynchronize inside the "
         "chunk loop; a copy from pageable memory, which is synchronous; or too few chunks (with two, at most "
         "half can overlap)" + measured;
}

// The lab's lesson, required of every timed call: a call that took more than
// `max_fraction_of_serial` of its phases one after another overlapped too little (the
// starter takes all of it) and earns no speed points.
labkit::PerfRequirement overlap_required(const Case& c, const Phases& phases) {
  const double limit = c.number("max_fraction_of_serial", 0.85);
  return [phases, limit](double call_ms) {
    return call_ms > limit * phases.serial_ms() ? diagnose_no_overlap(phases, call_ms) : std::string();
  };
}

labkit::PerfSubject perf_subject(labkit::Function<decltype(merge_pipelined)> fn, PerfState& s) {
  labkit::TimedCall call = labkit::timed_call(
      [fn, &s](cudaStream_t stream) {
        fn(s.h_a.data(), s.h_b.data(), s.h_out.data(), s.n, s.rounds, s.d_a.data(), s.d_b.data(), s.d_out.data(),
           stream);
      },
      {&s.h_a, &s.h_b}, {&s.h_out});
  // The work spans several streams and copies through host memory: the host's clock up to
  // the end of all device work is the honest time.
  call.host_clock = true;
  return {call, [&s] {
            return labkit::compare_exact_on_device(s.expected_for_drawn(), s.h_out.collected_data(), s.n).describe();
          }};
}


// ---- part 2: a chain of small dependent steps ---------------------------------------------
// Cases with `steps` call mix_chain; the rest are part 1's.

bool chain_case(const Case& c) { return c.has("steps"); }
bool merge_case(const Case& c) { return !chain_case(c); }

int steps_of(const Case& c) { return int(c.integer("steps")); }

constexpr uint32_t work_junk = input_junk;  // d_work before a call: what a step read before it was written

// The chain on the CPU: chain_element with each step's offset computed once (a 64-bit division
// per element would make the largest cases take seconds), checked against chain_element itself
// at the ends of the array.
Pixels chain_on_cpu(Pixels x, int steps) {
  const size_t n = x.size();
  Pixels next(n);
  for (int step = 0; step < steps; ++step) {
    const size_t offset = chain_offset(step, n);
    for (size_t i = 0; i < n; ++i) {
      const size_t partner = i + offset >= n ? i + offset - n : i + offset;
      next[i] = chain_mix(x[i], x[partner], step);
    }
    for (size_t i : {size_t(0), n / 2, n - 1})
      if (i < n && next[i] != chain_element(x.data(), i, n, step))
        throw std::logic_error("kit fault: the checks' chain disagrees with chain_element at step " +
                               std::to_string(step));
    x.swap(next);
  }
  return x;
}

// One call's arguments: its input, its sizes.
struct ChainCall {
  Pixels input;
  size_t n;
  int steps;
  Pixels expected;
};

ChainCall chain_call(const Case& c, size_t n, int steps, uint64_t seed_shift) {
  labkit::InputSpec spec = c.input;
  spec.seed = labkit::splitmix64(spec.seed + seed_shift);
  ChainCall call{labkit::generate<uint32_t>(n, spec), n, steps, {}};
  call.expected = chain_on_cpu(call.input, steps);
  return call;
}

// The buffers every call of a case shares: d_in and d_work of the case's n, d_out with poisoned
// elements past its end.
struct ChainBuffers {
  explicit ChainBuffers(size_t n) : d_in(n), d_out(n + guard_elements), d_work(n) {}
  DeviceBuffer<uint32_t> d_in, d_out, d_work;
};

// What the call's output says of the likely mistake; `previous` is the answer the last call on
// these buffers gave (nullptr for the first call).
std::string diagnose_chain(const ChainCall& call, const Pixels& actual, const Pixels& work, const ChainCall* previous,
                           int call_number) {
  const size_t n = call.n;
  if (std::all_of(actual.begin(), actual.end(), [](uint32_t v) { return v == host_poison; }))
    return "d_out was never written";
  if (previous && previous->n == n && actual == previous->expected)
    return "d_out holds the previous call's answer (that call's input, on the same buffers): this call did not "
           "read d_in as it is now. A graph replays its launches with the addresses captured, and reads what those "
           "buffers hold when it runs; a copy of the input made while capturing, or an answer kept from an earlier "
           "call, goes stale";
  if (call.steps > 0 && actual == call.input)
    return "d_out holds d_in unchanged: no step ran";
  if (work.size() >= n && std::equal(call.expected.begin(), call.expected.end(), work.begin()))
    return "the answer is in d_work, not d_out: the steps alternate between the two, and the last must write "
           "d_out (start in d_out when steps is odd, in d_work when it is even)";
  if (call.steps > 0) {
    const Pixels one_fewer = chain_on_cpu(call.input, call.steps - 1);
    const Pixels one_more = chain_on_cpu(call.input, call.steps + 1);
    if (actual == one_fewer) return "d_out holds the answer of one step fewer: a step is missing (the loop's bound?)";
    if (actual == one_more) return "d_out holds the answer of one step more";
  }
  if (call_number == 3)
    return "the first two calls were right, but this one, with other sizes (n = " + std::to_string(n) +
           ", steps = " + std::to_string(call.steps) + ") on the same buffers, is wrong: what was kept from an "
           "earlier call (a graph captured for its arguments) was replayed for arguments it was not built for. Key "
           "what you keep on every argument the work depends on: the pointers, n and steps";
  size_t junk = 0;
  for (uint32_t v : actual) junk += v == work_junk || v == host_poison;
  if (junk > 0)
    return std::to_string(junk) + " elements hold poison or junk: a step read elements the step before had not "
           "written yet (a step reads all of the previous step's array, so it must wait for the whole step: one "
           "stream, a graph's edges, or a barrier across the whole grid)";
  return "the answer is wrong: check that each step reads the previous step's array and writes the other one, "
         "and passes its own step number";
}

// "" when the call left d_in as it was, wrote nothing past d_out[n) and the right answer in
// d_out[0..n).
std::string check_chain_call(const ChainCall& call, const ChainBuffers& buffers, const ChainCall* previous,
                             int call_number) {
  const Pixels in_after = buffers.d_in.download();
  if (!std::equal(call.input.begin(), call.input.end(), in_after.begin()))
    return "mix_chain changed d_in: the input is const and must come back unchanged";
  const Pixels out_after = buffers.d_out.download();
  for (size_t i = call.n; i < out_after.size(); ++i)
    if (out_after[i] != host_poison)
      return "wrote d_out[" + std::to_string(i) + "], past the output's end (n = " + std::to_string(call.n) + ")" +
             (call_number == 3 ? ": a graph kept for the earlier, larger n was replayed? Key what you keep on n and "
                                 "steps as well as the pointers"
                               : "");
  const Pixels actual(out_after.begin(), out_after.begin() + call.n);
  const labkit::Comparison comparison = labkit::compare_exact(call.expected, actual);
  if (comparison.ok()) return "";
  return diagnose_chain(call, actual, buffers.d_work.download(), previous, call_number) + ". " +
         comparison.describe([](size_t i) { return "element " + std::to_string(i); });
}

// Three calls on the same buffers: the case's input; new contents (a replay that does not read
// d_in afresh gives the first answer again); new contents with n less a third and one step
// fewer (one step where there were none), so that a graph kept for other arguments is caught.
void check_chain(const Case& c) {
  const size_t n = c.n;
  const int steps = steps_of(c);
  const ChainCall first = chain_call(c, n, steps, 0);
  labkit::export_array(c, "in", first.input);
  labkit::export_array(c, "expected_out", first.expected);
  const ChainCall second = chain_call(c, n, steps, 1);
  const ChainCall third = chain_call(c, n - n / 3, steps == 0 ? 1 : steps - 1, 2);

  ChainBuffers buffers(n);
  const auto fn = labkit::Function<decltype(mix_chain)>(labkit::student<decltype(mix_chain)>("mix_chain"));
  const ChainCall* previous = nullptr;
  int call_number = 0;
  for (const ChainCall* call : {&first, &second, &third}) {
    ++call_number;
    Pixels in = call->input;
    in.resize(n, input_junk);  // past a shorter call's n, d_in holds junk
    if (n > 0) CUDA_CHECK(cudaMemcpy(buffers.d_in.data(), in.data(), n * sizeof(uint32_t), cudaMemcpyHostToDevice));
    buffers.d_out.poison();
    CUDA_CHECK(cudaMemset(buffers.d_work.data(), input_junk_byte, buffers.d_work.bytes()));
    CUDA_CHECK(cudaDeviceSynchronize());
    fn(buffers.d_in.data(), buffers.d_out.data(), buffers.d_work.data(), call->n, call->steps, nullptr);
    const std::string error = check_chain_call(*call, buffers, previous, call_number);
    if (!error.empty()) {
      const char* which[] = {"", "", " (the second call, same buffers and sizes, new contents in d_in)",
                             " (the third call, same buffers, new contents, other sizes)"};
      return labkit::verdict(c, false, error + which[call_number]);
    }
    previous = call;
  }
  labkit::verdict(c, true);
}

// A timed call's buffers: d_in drawn afresh for every call (labkit/fresh_input.h), d_out
// collected at the end of its window, d_work plain workspace; and the per-step launches' answer
// on the drawn input, in the checks' own buffers.
struct ChainPerfState {
  explicit ChainPerfState(const Case& c)
      : n(c.n), steps(steps_of(c)), d_in(n, c.input), d_out(n), d_work(n), expected(n), expected_work(n) {}

  const uint32_t* expected_for_drawn() {
    CUDA_CHECK(chapter_chain::mix_chain_per_step(d_in.drawn(), expected.data(), expected_work.data(), n, steps,
                                                 nullptr));
    CUDA_CHECK_KERNELS(nullptr);
    return expected.data();
  }

  size_t n;
  int steps;
  labkit::FreshInput<uint32_t> d_in;
  labkit::TimedOutput<uint32_t> d_out;
  DeviceBuffer<uint32_t> d_work;
  DeviceBuffer<uint32_t> expected, expected_work;
};

using ChainFunction = labkit::Function<decltype(mix_chain)>;

labkit::PerfSubject chain_subject(ChainFunction fn, ChainPerfState& s) {
  labkit::TimedCall call = labkit::timed_call(
      [fn, &s](cudaStream_t stream) { fn(s.d_in.data(), s.d_out.data(), s.d_work.data(), s.n, s.steps, stream); },
      {&s.d_in}, {&s.d_out});
  return {call, [&s] {
            return labkit::compare_exact_on_device(s.expected_for_drawn(), s.d_out.collected_data(), s.n).describe();
          }};
}

// Advice for a correct chain that gains little over the launches one by one, or loses:
// `per_step_ms` is the kit's per-step launches on the same buffers, the fastest of a few calls
// by the host's clock, measured just before the case is timed.
labkit::PerfHint chain_hint(const ChainPerfState& s, double per_step_ms) {
  const int steps = s.steps;
  return [steps, per_step_ms](double student_ms) {
    const double speedup = per_step_ms / student_ms;
    if (speedup >= 1.25) return std::string();
    char measured[160];
    std::snprintf(measured, sizeof measured,
                  " (your call %.3f ms, %.2f us per step; one launch per step %.3f ms, measured in this run)",
                  student_ms, student_ms * 1e3 / std::max(steps, 1), per_step_ms);
    if (speedup < 0.8)
      return std::string("your call is slower than one kernel launch per step") + measured +
             ": capturing and instantiating a graph costs more than launching its kernels once, so a graph built "
             "in every call loses. Build it once, keep it in a static with the arguments it was built for, and "
             "only replay it (cudaGraphLaunch) while they stay the same";
    return std::string("your call takes about as long as one kernel launch per step") + measured +
           ". A step this small takes the GPU less time than the host needs to launch it, so the GPU waits for the "
           "host between steps. Capture the steps into a CUDA graph once (cudaStreamBeginCapture, the launches, "
           "cudaStreamEndCapture, cudaGraphInstantiate), keep it, and replay it with cudaGraphLaunch";
  };
}

void time_chain(const Case& c) {
  ChainPerfState state(c);
  // Bytes: the least any answer moves, the input read once and the output written once. The
  // steps between may stay in the L2 cache or in shared memory (a kernel that runs them all).
  const double bytes = 2.0 * sizeof(uint32_t) * double(c.n);
  // The per-step launches' time for the hint; under a profiler the case is one untimed call
  // and gets no hint.
  double per_step_ms = 0;
  if (!labkit::profiling()) {
    state.d_in.draw();
    state.d_in.reveal(false);
    per_step_ms = fastest_ms(int(c.integer("repeats", 3)), [&] {
      CUDA_CHECK(chapter_chain::mix_chain_per_step(state.d_in.data(), state.d_out.data(), state.d_work.data(),
                                                   state.n, state.steps, nullptr));
    });
  }
  const auto student_fn = ChainFunction(labkit::student<decltype(mix_chain)>("mix_chain"));
  const ChainFunction per_step = [](const uint32_t* in, uint32_t* out, uint32_t* work, size_t n, int steps,
                                    cudaStream_t stream) {
    CUDA_CHECK(chapter_chain::mix_chain_per_step(in, out, work, n, steps, stream));
  };
  labkit::measure_performance(c, bytes, chain_subject(student_fn, state), chain_subject(per_step, state),
                              /*library=*/{}, chain_hint(state, per_step_ms));
}

}  // namespace

TEST_SUITE("correctness") {
  TEST_CASE("merge_pipelined matches a one-thread-per-pixel kernel") {
    labkit::for_each_correctness_case([](const Case& c) { check_merge(c); }, merge_case);
  }
}

TEST_SUITE("correctness") {
  TEST_CASE("mix_chain matches the CPU, call after call on the same buffers") {
    labkit::for_each_correctness_case(check_chain, chain_case);
  }
}

TEST_SUITE("performance") {
  TEST_CASE("merge_pipelined time against the reference") {
    std::unique_ptr<PerfState> kept;
    labkit::for_each_timed_case([&](const Case& c) {
      if (!kept || !kept->fits(c)) {
        kept.reset();  // the old buffers go before the new ones are pinned
        kept = std::make_unique<PerfState>(c);
      }
      PerfState& state = *kept;
      state.rounds = rounds_of(c);
      // What crosses the host link: both images in, the merged image out.
      const double bytes_moved = 3.0 * sizeof(uint32_t) * double(c.n);
      const Phases phases = measure_phases(state, int(c.integer("repeats", 3)));
      labkit::measure_performance(
          c, bytes_moved, perf_subject(labkit::student<decltype(merge_pipelined)>("merge_pipelined"), state),
          perf_subject(labkit::reference<decltype(merge_pipelined)>("merge_pipelined"), state),
          /*library=*/{}, /*hint=*/{}, overlap_required(c, phases));
    }, merge_case);
  }

  TEST_CASE("mix_chain time against the per-step launches") {
    labkit::for_each_timed_case(time_chain, chain_case);
  }
}
