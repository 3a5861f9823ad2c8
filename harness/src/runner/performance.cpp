// Timing a case: the reference's time (from the calibration cache, or measured), the
// submission's under the grader's clock, and the record the grader scores.
#include "labkit/lab.h"

#include "labkit/defences.h"
#include "labkit/device.h"
#include "labkit/protocol.h"
#include "labkit/results.h"

#include "child_process.h"
#include "runner.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>

namespace labkit {

namespace {

using protocol::Outcome;
using runner::ClockStopped;
using runner::context_lost;
using runner::report_progress;
using runner::RunnerState;
using runner::seconds_running;
using runner::state;
using runner::stop_after_lost_context;

nlohmann::json timing_json(const TimingStats& t, double bytes_moved, double peak_gbps) {
  const double gbps = gigabytes_per_second(bytes_moved, t.ms.median);
  nlohmann::json json = {{"median_ms", t.ms.median},       {"min_ms", t.ms.min},
                         {"mean_ms", t.ms.mean},           {"stdev_ms", t.ms.stdev},
                         {"relative_error", t.ms.relative_error}, {"samples", t.ms.count},
                         {"gbps", gbps},                   {"percent_of_peak", 100.0 * gbps / peak_gbps},
                         {"sm_clock_mhz", t.sm_clock_mhz}, {"off_stream_work", t.off_stream_work}};
  if (t.remote)
    json.update({{"confirmed", t.confirmed},
                 {"reported_ms", t.reported_ms},
                 {"unexplained_ms", t.unexplained_ms},
                 {"unconfirmed_samples", t.unconfirmed_samples},
                 {"impossible_samples", t.impossible_samples},
                 {"empty_ceiling_ms", t.empty_ceiling_ms},
                 {"ceiled_empty_calls", t.ceiled_empty_calls},
                 {"stopped_after_ms", t.stopped_after_ms},
                 {"noise_relative_error", noise_relative_error(t.ms)}});
  return json;
}

// The kit's host with no submission loaded, on the timing CPU: it makes the empty calls.
HostProcess& empty_call_host() {
  static std::unique_ptr<HostProcess> probe;
  if (!probe) {
    probe = std::make_unique<HostProcess>(HostOptions{state().options.host, "", state().options.call_seconds});
    probe->pin_to_cpu(child::timing_cpu());
  }
  return *probe;
}

// An empty call spins no longer than this: what it measures, the round trip's overhead, is the
// same for any longer call, and spinning as long as a call of seconds (lab 12's) would add
// that much again to every sample.
constexpr double longest_empty_call_ms = 50;

// One honest call of `device_ms` (at most longest_empty_call_ms) through a host that runs no
// submission (a kernel that spins that long), timed the same way as the submission's
// (`host_clock`: the host wakes every device first, as it does for the call; `managed`: the
// rehearsal's managed inputs, which the host copies into managed memory before its kernel as
// the call's host copies the call's): returns the device time the host reported, which the
// timing loop subtracts from its own clock's view of the call (RoundTripProbe).
double empty_call_ms(double device_ms, bool host_clock, const std::vector<const void*>& managed) {
  HostProcess& probe = empty_call_host();
  wire::Request noop;
  noop.op = wire::Op::noop;
  noop.timed = 1;
  noop.host_clock = host_clock;
  noop.spin_ns = std::uint64_t(std::min(device_ms, longest_empty_call_ms) * 1e6);
  if (managed.size() > std::size_t(wire::max_arguments)) throw std::logic_error("too many managed inputs for one call");
  noop.argument_count = std::uint32_t(managed.size());
  for (std::size_t i = 0; i < managed.size(); ++i) noop.arguments[i] = encode_argument(managed[i]);
  return probe.request(noop).event_ms;
}

// The rubric's credit thresholds for a case, or null when it earns no speed points.
const protocol::Threshold* threshold_for(const std::string& case_name) {
  const auto& thresholds = state().options.thresholds;
  const auto found = std::find_if(thresholds.begin(), thresholds.end(),
                                  [&](const protocol::Threshold& t) { return t.case_name == case_name; });
  return found == thresholds.end() ? nullptr : &*found;
}

// A ratio this close to a threshold could land on either side of it with another
// measurement of the reference: a cached reference time is not good enough there.
bool near_threshold(const std::string& case_name, double ratio, double noise) {
  const protocol::Threshold* found = threshold_for(case_name);
  if (found == nullptr) return false;
  const double margin = noise + 0.05;
  for (double threshold : {found->zero_credit_ratio, found->full_credit_ratio})
    if (threshold > 0 && std::fabs(ratio / threshold - 1) <= margin) return true;
  return false;
}

// How long the submission's call is timed: until its median is known as well as the ratio's
// noise floor can use, or its case's points are (points_known); after 3 samples far past zero
// credit; and a call far past it is stopped (give_up_ms). The stops that read the case's
// credit hold only while the ratio's benefit of the doubt is capped (the robust-noise defence:
// their margins count on that cap) and every sample reads an input of its own (fresh inputs: a
// call on the same input again could learn it and speed up, so its first samples would not
// speak for the rest).
StoppingRule submission_rule(const std::string& case_name, double reference_ms) {
  StoppingRule rule;
  rule.target_relative_error = submission_target_relative_error();
  const protocol::Threshold* threshold = threshold_for(case_name);
  if (threshold == nullptr || !defence_enabled(Defence::robust_noise) || !defence_enabled(Defence::fresh_inputs))
    return rule;
  rule.credit = {reference_ms, threshold->zero_credit_ratio, threshold->full_credit_ratio, threshold->points};
  rule.beyond_credit_ms = beyond_credit_ms(reference_ms, threshold->zero_credit_ratio);
  rule.give_up_ms = give_up_ms(rule.beyond_credit_ms);
  return rule;
}

// The GPU's read bandwidth: from the calibration cache, else measured (about a second).
double peak_read_gbps() {
  Calibration& calibration = state().calibration;
  if (!state().options.calibrate)
    if (const auto cached = calibration.peak_read_gbps()) return *cached;
  const double measured = measured_read_bandwidth_gbps();
  calibration.store_peak_read_gbps(measured);
  return measured;
}

// A compute-bound case's work and the peak of the units that do it, under the key that
// names them (labkit::protocol::compute_peak reads it back).
nlohmann::json compute_peak_json(const Work& work) {
  const DeviceInfo& device = current_device();
  if (work.units == ComputeUnits::bf16_tensor_cores)
    return {{"flops", work.flops}, {"peak_bf16_tensor_gflops", device.peak_bf16_tensor_gflops}};
  return {{"flops", work.flops}, {"peak_fp32_gflops", device.peak_fp32_gflops}};
}

struct ReferenceTime {
  nlohmann::json json;  // timing_json's record
  std::string source;
  bool cached = false;
  double median_ms() const { return json.value("median_ms", 0.0); }
  double relative_error() const { return json.value("relative_error", 0.0); }
};

// From the first timed case on, the submission's host and the empty call's share one CPU that
// this process leaves to them (child::timing_cpu): measured without, the two hosts' wake-ups
// differed by up to 40 us per case, a gap the timing loop would charge the submission.
void share_timing_cpu() {
  static bool shared = false;
  const int cpu = child::timing_cpu();
  if (shared || cpu < 0) return;
  shared = true;
  child::leave_cpu(cpu);
  if (state().student) state().student->pin_to_cpu(cpu);
}

// Nothing of the submission's may run while the grader measures what it trusts (the
// reference's times, the empty call's ceiling): no process, no thread.
void end_submission_processes() {
  if (state().student) state().student->stop();
}

// Before each of the reference's and the library's samples: an empty kernel in the empty call's
// host, so that their calls, like a submission's, follow a switch from another context and a
// flush in their own (labkit/timing.h's WorkElsewhere).
void empty_kernel_elsewhere() {
  wire::Request empty;
  empty.op = wire::Op::noop;
  empty_call_host().request(empty);
}

ReferenceTime measure_reference(const PerfSubject& reference_side, double bytes_moved, double peak) {
  const TimingStats stats = time_call(reference_side.call, {}, empty_kernel_elsewhere);
  const std::string error = reference_side.check_output();
  REQUIRE_MESSAGE(error.empty(), "the reference solution is wrong: " << error);
  return {timing_json(stats, bytes_moved, peak), "measured in this run"};
}

// The library's time for the reports' "anchor" ({name, median_ms, ...}), or null when the
// case has no library or the library's answer was wrong (said on the log: a kit problem, not
// the student's, so it costs the case nothing).
nlohmann::json measure_library(const LibraryAnchor& library, double bytes_moved, double peak) {
  if (library.name.empty()) return nullptr;
  const TimingStats stats = time_call(library.subject.call, {}, empty_kernel_elsewhere);
  const auto& check = library.subject.check_output;
  if (const std::string error = check ? check() : ""; !error.empty()) {
    std::printf("warning: %s gave a wrong answer, so it is left out of the report: %s\n", library.name.c_str(),
                error.c_str());
    return nullptr;
  }
  nlohmann::json anchor = timing_json(stats, bytes_moved, peak);
  anchor["name"] = library.name;
  return anchor;
}

// The reference's time for a case, with the library's beside it under "library": from the
// calibration cache when it has the case, else measured now (and stored for the runs that
// follow), so a class pays for neither more than once.
ReferenceTime reference_time(const Case& c, const PerfSubject& reference_side, const LibraryAnchor& library,
                             double bytes_moved, double peak) {
  Calibration& calibration = state().calibration;
  if (!state().options.calibrate)
    if (const auto cached = calibration.reference(c.name)) {
      return {*cached,
              "calibration cache " + std::filesystem::path(calibration.path()).filename().string() + " (measured " +
                  cached->value("measured_at", std::string("earlier")) + ")",
              true};
    }
  end_submission_processes();
  ReferenceTime fresh = measure_reference(reference_side, bytes_moved, peak);
  if (nlohmann::json anchor = measure_library(library, bytes_moved, peak); !anchor.is_null())
    fresh.json["library"] = std::move(anchor);
  calibration.store(c.name, fresh.json);
  return fresh;
}

// This machine and this GPU ("node7 0000:19:00.0"): where an empty call's round trip runs.
const std::string& machine_and_gpu() {
  static const std::string place = [] {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    char bus_id[32] = {};
    cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, current_device().ordinal);
    return std::string(host) + " " + bus_id;
  }();
  return place;
}

// The case's empty-call ceiling on this machine and GPU: from the calibration cache when an
// earlier run measured it, else measured now with the submission's processes ended and kept
// there.
double empty_call_ceiling(const Case& c, const TimedCall& call, const RoundTripProbe& probe) {
  if (!defence_enabled(Defence::empty_call_ceiling)) return std::numeric_limits<double>::infinity();
  Calibration& calibration = state().calibration;
  if (const auto kept = calibration.empty_call_ceiling_ms(machine_and_gpu(), c.name)) return *kept;
  end_submission_processes();
  const ClockStopped measuring("measuring the empty call");
  const double ceiling = measure_empty_call_ceiling_ms(call, probe);
  if (std::isfinite(ceiling)) calibration.store_empty_call_ceiling_ms(machine_and_gpu(), c.name, ceiling);
  return ceiling;
}

void print_line(const Case& c, const nlohmann::json& record) {
  std::printf("[%7.2f s] %-24s reference %9.4f ms", seconds_running(), c.name.c_str(),
              record["reference"].value("median_ms", 0.0));
  if (record.contains("anchor"))
    std::printf("  %s %9.4f ms", record["anchor"]["name"].get<std::string>().c_str(),
                record["anchor"]["median_ms"].get<double>());
  if (record.contains("student"))
    std::printf("  yours %9.4f ms  %s  ratio %.2f", record["student"]["median_ms"].get<double>(),
                protocol::throughput(record, record["student"]).text().c_str(), record["ratio"].get<double>());
  std::printf("\n");
}

// `grade profile`: the student's side is called once, untimed, while a profiler watches the
// host process; the reference is profiled the same way, as the --student of another run.
void profile_once(const Case& c, const PerfSubject& student_side) {
  std::string error;
  try {
    const TimedCall& call = student_side.call;
    if (call.prepare) call.prepare(0);
    if (call.reveal) call.reveal(false);
    call.launch(nullptr);
    if (call.collect) call.collect(false);
    error = student_side.check_output();
  } catch (const std::exception& failure) {
    error = failure.what();
  }
  emit_result(protocol::ProfiledRecord{c.name, error.empty(), error});
  std::printf("[%7.2f s] %-24s profiled one call%s\n", seconds_running(), c.name.c_str(),
              error.empty() ? "" : (": " + error).c_str());
}

}  // namespace

void runner::start_empty_call_host() {
  try {
    empty_call_host().ensure_running();
  } catch (const std::exception& error) {  // the grader's own host: said here, and again at its first call
    std::printf("warning: the empty call's host did not start: %s\n", error.what());
  }
}

void measure_performance(const Case& c, Work work, const PerfSubject& student_side,
                         const PerfSubject& reference_side, const LibraryAnchor& library, const PerfHint& hint,
                         const PerfRequirement& requirement) {
  const double bytes_moved = work.bytes;
  RunnerState& s = state();
  if (!timing_wanted(c)) return;
  report_progress(c, s.options.profile ? "profiling" : "timing");
  if (s.options.profile) return profile_once(c, student_side);
  nlohmann::json record = {{"bytes", bytes_moved}};
  const double peak = peak_read_gbps();
  record["peak_read_gbps"] = peak;
  if (work.flops > 0) record.update(compute_peak_json(work));
  if (work.shown_flops > 0) record["flops_shown"] = work.shown_flops;
  share_timing_cpu();
  const double reference_started = seconds_running();
  ReferenceTime reference = [&] {
    const ClockStopped timing_reference("timing the reference");
    return reference_time(c, reference_side, library, bytes_moved, peak);
  }();
  std::printf("[%7.2f s] %-24s the reference's times (%s) in %.2f s\n", seconds_running(), c.name.c_str(),
              reference.cached ? "cached" : "measured", seconds_running() - reference_started);
  if (reference.json.contains("library")) {
    record["anchor"] = reference.json["library"];
    reference.json.erase("library");
  }
  record["reference"] = reference.json;
  record["reference_source"] = reference.source;
  if (s.options.calibrate) {
    emit_result(protocol::PerformanceRecord{c.name, Outcome::passed, "", record, true});
    print_line(c, record);
    return;
  }

  std::string student_error;
  try {
    TimedCall call = student_side.call;
    call.verify = student_side.check_output;
    // The submission's managed memory is reset in its process before each window, and the
    // empty call's in the empty call's host, so that both copy into memory in one state.
    call.stage = [lab_stage = call.stage, &s] {
      if (lab_stage) lab_stage();
      if (s.student) s.student->stage_managed();
      empty_call_host().stage_managed();
    };
    const double reference_ms = reference.median_ms();
    const auto managed = [&call] {
      return call.rehearsed_managed_inputs ? call.rehearsed_managed_inputs() : std::vector<const void*>{};
    };
    const RoundTripProbe probe = [reference_ms, &call, managed] {
      return empty_call_ms(reference_ms, call.host_clock, managed());
    };
    TimingStats student_time =
        time_submission_call(call, probe, empty_call_ceiling(c, call, probe), submission_rule(c.name, reference_ms));
    // Only reports taken as they are (the sample-confirmation defence off) can score no time at
    // all: a picosecond keeps every rate finite, and the floors judge it.
    student_time.ms.median = std::max(student_time.ms.median, 1e-9);
    std::printf("[%7.2f s] %-24s %zu samples: %.2f s preparing, %.2f s in the calls, %.2f s checking outputs\n",
                seconds_running(), c.name.c_str(), student_time.ms.count, student_time.preparing_seconds,
                student_time.calling_seconds, student_time.checking_seconds);
    if (student_time.stopped_after_ms > 0)
      std::printf("[%7.2f s] %-24s a call still ran after %.0f ms, far past the case's credit: stopped there\n",
                  seconds_running(), c.name.c_str(), student_time.stopped_after_ms);
    record["student"] = timing_json(student_time, bytes_moved, peak);
    if (hint) record["hint"] = hint(student_time.ms.median);
    if (requirement) record["lesson_missing"] = requirement(student_time.ms.median);
    record["ratio"] = reference.median_ms() / student_time.ms.median;
    const double noise = ratio_noise(noise_relative_error(student_time.ms), reference.relative_error());
    if (reference.cached && near_threshold(c.name, record["ratio"], noise)) {
      end_submission_processes();
      const ClockStopped timing_reference("timing the reference again");
      reference = measure_reference(reference_side, bytes_moved, peak);
      reference.source = "measured again in this run: the ratio sat near a threshold";
      record["reference"] = reference.json;
      record["reference_source"] = reference.source;
      record["ratio"] = reference.median_ms() / student_time.ms.median;
    }
  } catch (const std::exception& error) {
    student_error = error.what();
  }
  const bool lost = context_lost();
  record["output_ok"] = student_error.empty();
  emit_result(protocol::PerformanceRecord{c.name, student_error.empty() ? Outcome::passed : Outcome::failed,
                                          student_error, record});
  print_line(c, record);
  CHECK_MESSAGE(student_error.empty(), c.name << ": " << student_error);
  if (lost) stop_after_lost_context();
}

}  // namespace labkit
