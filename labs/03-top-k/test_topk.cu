// Lab 03 checks: the student's topk against std::nth_element + std::sort on every dataset
// case, then its speed against the reference solution's on the performance cases. Part 2 (the
// cases with `memory: managed`): topk_managed on the same cases' shapes with the input in
// managed memory whose pages are on the host when each call starts (labkit/managed_memory.h),
// timed against the reference's topk_managed, with a hint that measures the kit's own call
// without a prefetch in the same run.
#include "cub_sort_topk.cuh"
#include "managed_topk.cuh"
#include "topk.h"

#include <labkit/device_compare.cuh>
#include <labkit/lab.h>
#include <labkit/managed_memory.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>

namespace {

using labkit::Case;
using labkit::DeviceBuffer;
using Values = std::vector<int32_t>;
constexpr int32_t poison_value = int32_t(0x01010101u * labkit::poison_byte);

// A case's k is a number, or "n" for the whole input.
int case_k(const Case& c) {
  const auto it = c.params.find("k");
  if (it != c.params.end() && it->second == "n") return int(c.n);
  return int(c.integer("k"));
}

// The k largest, largest first: what std::partial_sort with std::greater leaves in front. Each
// core keeps the k largest of its share of the input, and the answer is the k largest of those
// candidates: on one core a 2^28 input takes seconds, and the class waits for it.
Values cpu_topk(const Values& input, int k) {
  const auto largest_first = std::greater<int32_t>();
  const size_t keep = size_t(k);
  std::mutex candidates_lock;
  Values candidates;
  labkit::parallel_chunks(input.size(), [&](size_t begin, size_t end) {
    Values share(input.begin() + std::ptrdiff_t(begin), input.begin() + std::ptrdiff_t(end));
    if (share.size() > keep) {
      std::nth_element(share.begin(), share.begin() + std::ptrdiff_t(keep - 1), share.end(), largest_first);
      share.resize(keep);
    }
    const std::lock_guard<std::mutex> hold(candidates_lock);
    candidates.insert(candidates.end(), share.begin(), share.end());
  });
  std::nth_element(candidates.begin(), candidates.begin() + (k - 1), candidates.end(), largest_first);
  std::sort(candidates.begin(), candidates.begin() + k, largest_first);
  candidates.resize(keep);
  return candidates;
}

std::map<int32_t, size_t> multiplicities(const Values& values) {
  std::map<int32_t, size_t> counts;
  for (int32_t v : values) ++counts[v];
  return counts;
}

const char* const k_limit_hint = "hint: if this happens only above some k, what limits k: shared memory per block?";

// Names the likely mistake from the shape of the error.
std::string diagnose(const Values& expected, const Values& actual, int k) {
  if (std::all_of(actual.begin(), actual.end(), [](int32_t v) { return v == poison_value; }))
    return "d_out still holds what it held before the call (k = " + std::to_string(k) + "); " + k_limit_hint;
  Values sorted = actual;
  std::sort(sorted.begin(), sorted.end(), std::greater<int32_t>());
  if (sorted == expected) return "the right values in the wrong order: d_out must be sorted largest first";
  const auto want = multiplicities(expected), got = multiplicities(actual);
  const bool has_every_value = std::all_of(want.begin(), want.end(), [&](const auto& entry) {
    return got.count(entry.first) != 0;
  });
  const bool too_few_copies = std::any_of(want.begin(), want.end(), [&](const auto& entry) {
    const auto it = got.find(entry.first);
    return it != got.end() && it->second < entry.second;
  });
  if (has_every_value && too_few_copies)
    return "the right values but too few copies of some: duplicates are being dropped (equal values count "
           "separately: {7, 3, 7} with k = 2 gives {7, 7})";
  if (too_few_copies || !has_every_value)
    return "values of the top k are missing: duplicates are being dropped or some values never reach the "
           "final merge";
  return "wrong values: compare with std::partial_sort on a small input";
}

bool managed_case(const Case& c) {
  const auto it = c.params.find("memory");
  return it != c.params.end() && it->second == "managed";
}
bool device_case(const Case& c) { return !managed_case(c); }

// One correctness case of either part: part 1's input in device memory, part 2's in a
// ManagedBuffer, which the submission's process hands topk_managed as managed memory.
void check_topk(const Case& c) {
  const int k = case_k(c);
  const Values input = labkit::generate<int32_t>(c.n, c.input);
  const Values expected = cpu_topk(input, k);
  labkit::export_array(c, "input", input);
  labkit::export_array(c, "expected_topk", expected);

  const bool managed = managed_case(c);
  DeviceBuffer<int32_t> d_in;
  labkit::ManagedBuffer<int32_t> managed_in;
  if (managed)
    managed_in = labkit::ManagedBuffer<int32_t>(input);
  else
    d_in = DeviceBuffer<int32_t>(input);
  DeviceBuffer<int32_t> d_out{size_t(k)};
  d_out.poison();
  try {
    if (managed)
      labkit::student<decltype(topk_managed)>("topk_managed")(managed_in.data(), c.n, k, d_out.data(), nullptr);
    else
      labkit::student<decltype(topk)>("topk")(d_in.data(), c.n, k, d_out.data(), nullptr);
    CUDA_CHECK_KERNELS(nullptr);
  } catch (const labkit::CudaError& error) {
    labkit::verdict(c, false, std::string(error.what()) + " (k = " + std::to_string(k) + "); " + k_limit_hint);
    return;
  }
  const Values actual = d_out.download();
  if ((managed ? managed_in.copy() : d_in.download()) != input) {
    labkit::verdict(c, false, managed ? "managed_in was modified: topk_managed must leave its input as it found it"
                                      : "d_in was modified: topk must leave its input as it found it");
    return;
  }
  const labkit::Comparison comparison = labkit::compare_exact(expected, actual);
  labkit::verdict(c, comparison.ok(),
                  comparison.ok() ? "" : diagnose(expected, actual, k) + ". " +
                      comparison.describe([](size_t i) { return "d_out[" + std::to_string(i) + "]"; }));
}

// A timed call's buffers: an input drawn afresh in the case's distribution for every call
// (labkit/fresh_input.h), the k values it writes, and the reference's for the same input.
struct PerfBuffers {
  explicit PerfBuffers(const Case& c)
      : k(case_k(c)), input(c.n, c.input), out(size_t(k)), expected(size_t(k)), cub(c.n) {}
  int k;
  labkit::FreshInput<int32_t> input;
  labkit::TimedOutput<int32_t> out;
  DeviceBuffer<int32_t> expected;
  CubSortTopK cub;
};

labkit::PerfSubject perf_subject(labkit::Function<decltype(topk)> fn, const Case& c, PerfBuffers& b) {
  return {labkit::timed_call([fn, &c, &b](cudaStream_t stream) { fn(b.input.data(), c.n, b.k, b.out.data(), stream); },
                             {&b.input}, {&b.out}),
          [&c, &b] {
            labkit::reference<decltype(topk)>("topk")(b.input.drawn(), c.n, b.k, b.expected.data(), nullptr);
            return labkit::compare_exact_on_device(b.expected.data(), b.out.collected_data(), size_t(b.k)).describe();
          }};
}

// ---- part 2: managed memory ---------------------------------------------------------------

// A timed part 2 call's buffers: the input drawn afresh for every call and revealed in shared
// host memory, which the submission's process copies into managed memory of its own, reset
// (labkit/fresh_input.h); the same copy in this process for the reference's calls and the
// anchor's; the k values a call writes, and the reference's for the same input.
struct ManagedPerfBuffers {
  explicit ManagedPerfBuffers(const Case& c)
      : n(c.n), k(case_k(c)), input(c.n, c.input), out(size_t(k)), expected(size_t(k)),
        mirror(c.n * sizeof(int32_t)), copied(c.n) {}
  size_t n;
  int k;
  labkit::FreshManagedInput<int32_t> input;
  labkit::TimedOutput<int32_t> out;
  DeviceBuffer<int32_t> expected;
  labkit::ManagedMirror mirror;  // the input as this process's calls get it
  DeviceBuffer<int32_t> copied;  // the explicit copy's device memory
  const int32_t* managed() const { return static_cast<const int32_t*>(mirror.data()); }
};

std::string check_managed_output(ManagedPerfBuffers& b) {
  labkit::reference<decltype(topk)>("topk")(b.input.drawn(), b.n, b.k, b.expected.data(), nullptr);
  return labkit::compare_exact_on_device(b.expected.data(), b.out.collected_data(), size_t(b.k)).describe();
}

labkit::PerfSubject managed_student_subject(ManagedPerfBuffers& b) {
  const auto fn = labkit::Function<decltype(topk_managed)>(labkit::student<decltype(topk_managed)>("topk_managed"));
  return {labkit::timed_call([fn, &b](cudaStream_t stream) { fn(b.input.data(), b.n, b.k, b.out.data(), stream); },
                             {&b.input}, {&b.out}),
          [&b] { return check_managed_output(b); }};
}

// A call in this process on the input in managed memory of its own, reset before every sample
// and filled by the CPU after the reveal, as the submission's process does before its calls.
labkit::PerfSubject managed_local_subject(ManagedPerfBuffers& b, std::function<void(cudaStream_t)> launch) {
  labkit::TimedCall call = labkit::timed_call(std::move(launch), {&b.input}, {&b.out});
  call.stage = [&b] { b.mirror.reset(); };
  call.reveal = [&b, reveal = call.reveal](bool rehearsal) {
    reveal(rehearsal);
    labkit::synchronize_all_devices();  // the reveal's copy has landed before the CPU reads it
    b.mirror.fill(b.input.data());
  };
  return {call, [&b] { return check_managed_output(b); }};
}

// The fastest of `repeats` calls of the kit's on managed input fresh on the host, by the host's
// clock to the end of its work: for the hint, which compares the student's time with them.
template <class Call>
double fastest_managed_ms(ManagedPerfBuffers& b, int repeats, Call call) {
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    b.mirror.reset();
    b.mirror.fill(b.input.data());
    labkit::synchronize_all_devices();
    best = std::min(best, labkit::host_clock_ms([&] {
                      call(b.managed());
                      labkit::synchronize_all_devices();
                    }));
  }
  return best;
}

// Advice for a correct call that is about as slow as the top-k reading the input in place:
// `in_place_ms` is the kit's call without a prefetch (the reference's topk on the managed
// input), `prefetched_ms` the reference's topk_managed, both measured just before the case.
labkit::PerfHint first_touch_hint(double in_place_ms, double prefetched_ms) {
  return [in_place_ms, prefetched_ms](double student_ms) {
    if (in_place_ms <= 0 || student_ms < 0.6 * in_place_ms) return std::string();
    char measured[320];
    std::snprintf(measured, sizeof measured,
                  " (your call %.3f ms; the kit's top-k reading the input where it lies %.3f ms, with a prefetch "
                  "first %.3f ms, measured in this run)",
                  student_ms, in_place_ms, prefetched_ms);
    return std::string("your call takes about as long as a top-k that reads the managed input where it lies") +
           measured +
           ": the input's pages are in host memory when the call starts, so the kernel's first touch of each page "
           "faults and waits while the driver migrates it to the GPU (first-touch migration), a few pages at a "
           "time. Move the input before the kernel reads it: cudaMemPrefetchAsync to the device on the call's "
           "stream (CUDA 13: a cudaMemLocation of type cudaMemLocationTypeDevice), then your topk. Nsight Systems "
           "shows the faults (README, part 2)";
  };
}

void time_topk_managed(const Case& c) {
  ManagedPerfBuffers buffers(c);
  const auto reference = labkit::reference<decltype(topk_managed)>("topk_managed");
  const auto reference_topk = labkit::reference<decltype(topk)>("topk");
  // The hint's yardsticks; under a profiler the case is one untimed call and gets no hint.
  double in_place_ms = 0, prefetched_ms = 0;
  if (!labkit::profiling()) {
    buffers.input.draw();
    buffers.input.reveal(false);
    labkit::synchronize_all_devices();
    const int repeats = int(c.integer("repeats", 3));
    in_place_ms = fastest_managed_ms(buffers, repeats, [&](const int32_t* in) {
      reference_topk(in, buffers.n, buffers.k, buffers.out.data(), nullptr);
    });
    prefetched_ms = fastest_managed_ms(buffers, repeats, [&](const int32_t* in) {
      reference(in, buffers.n, buffers.k, buffers.out.data(), nullptr);
    });
  }
  const labkit::PerfSubject reference_side = managed_local_subject(buffers, [&buffers, reference](cudaStream_t stream) {
    reference(buffers.managed(), buffers.n, buffers.k, buffers.out.data(), stream);
  });
  const labkit::PerfSubject explicit_copy = managed_local_subject(buffers, [&buffers](cudaStream_t stream) {
    copy_then_topk(labkit::reference<decltype(topk)>("topk"), buffers.managed(), buffers.copied.data(), buffers.n,
                   buffers.k, buffers.out.data(), stream);
  });
  // The floor is one read of the input, as in part 1: n * 4 bytes.
  labkit::measure_performance(c, double(c.n) * sizeof(int32_t), managed_student_subject(buffers), reference_side,
                              {"cudaMemcpyAsync into device memory, then the reference's topk", explicit_copy},
                              first_touch_hint(in_place_ms, prefetched_ms));
}

}  // namespace

TEST_SUITE("correctness") {
  TEST_CASE("topk matches std::partial_sort") {
    labkit::for_each_correctness_case([](const Case& c) { check_topk(c); }, device_case);
  }
  TEST_CASE("topk_managed matches std::partial_sort on managed input") {
    labkit::for_each_correctness_case([](const Case& c) { check_topk(c); }, managed_case);
  }
}

TEST_SUITE("performance") {
  TEST_CASE("topk time against the reference") {
    labkit::for_each_timed_case([&](const Case& c) {
      PerfBuffers buffers(c);
      // The floor is one read of the input: n * 4 bytes.
      labkit::measure_performance(c, double(c.n) * sizeof(int32_t),
                                  perf_subject(labkit::student<decltype(topk)>("topk"), c, buffers),
                                  perf_subject(labkit::reference<decltype(topk)>("topk"), c, buffers),
                                  {"cub::DeviceRadixSort (full sort)", perf_subject(std::ref(buffers.cub), c, buffers)});
    }, device_case);
  }
  TEST_CASE("topk_managed time against the reference") {
    labkit::for_each_timed_case(time_topk_managed, managed_case);
  }
}
