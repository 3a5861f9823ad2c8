#include "batch.h"

#include "bad_input.h"
#include "grader.h"
#include "intake.h"
#include "labkit/fingerprint.h"
#include "process.h"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;
using nlohmann::json;

namespace grade {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

using labkit::hash_bytes;

}  // namespace

// What a saved result depends on: the student's files, the lab's checks, reference, dataset
// and rubric, and the grading options. Any change means grading again.
std::string result_fingerprint(const LabJob& job, const Toolchain& tc, const GradeOptions& options) {
  const LabSpec& lab = *job.lab;
  const fs::path build_labs = fs::path(tc.build_root) / "labs";
  // Everything that changes a saved result: the seed, timing on or off, sanitizer runs.
  std::uint64_t h = hash_bytes(std::to_string(options.seed) + (options.performance ? "+perf" : "-perf") +
                               "+sanitize" + std::to_string(int(options.sanitize)));
  for (const fs::path& kit_file :
       {build_labs / ("lab-" + lab.dir + "-runner"), build_labs / ("lab-" + lab.dir + "-solution.so"),
        fs::path(lab.dataset), fs::path(tc.source_root) / "labs" / lab.dir / "lab.yaml"})
    h = hash_bytes(labkit::file_bytes(kit_file.string()), h);
  // Refused files are not read: a link may lead outside the submission, a pipe would block.
  const std::vector<std::string> files = job.student_dir.empty() ? lab.student_files : required_files(lab, job.student_dir);
  const std::string refused = job.student_dir.empty() ? "missing" : student_files_problem(job.student_dir, files);
  for (const std::string& file : files)
    h = hash_bytes(!refused.empty() ? refused : file + labkit::file_bytes((fs::path(job.student_dir) / file).string()), h);
  return labkit::hex(h);
}

std::string batch_work_dir(const std::string& build_root, const std::string& out_dir) {
  fs::path out = fs::weakly_canonical(fs::absolute(out_dir));
  if (out.filename().empty()) out = out.parent_path();  // "reports/" ends in a slash
  const std::string key = labkit::hex(hash_bytes(out.string())).substr(0, 8);
  return (fs::path(build_root) / "grade" / "batch" / (out.filename().string() + "-" + key)).string();
}

bool result_saved(const std::string& path) { return fs::exists(path); }

bool load_saved_result(const std::string& path, const std::string& fingerprint, LabResult& result) {
  std::ifstream in(path);
  if (!in) return false;
  const json saved = json::parse(in, nullptr, false);
  if (saved.is_discarded() || saved.value("fingerprint", "") != fingerprint) return false;
  result = lab_from_json(saved["result"]);
  return true;
}

void save_result(const std::string& path, const std::string& fingerprint, const LabResult& result) {
  // Interrupted: a compiler or run killed halfway decided nothing, and a resumed batch (or a
  // Slurm task run again) would reuse the result as the student's.
  if (children_stopped()) return;
  const json saved = {{"fingerprint", fingerprint}, {"result", to_json(result)}};
  // Logs are cut to their tail, maybe inside a character (an accented name in a path).
  std::ofstream(path + ".tmp") << json_text(saved, -1);
  fs::rename(path + ".tmp", path);  // whole or not at all, even if interrupted
}

LabJob job_for(const LabSpec& lab, const Submission& submission, const BatchOptions& options) {
  const std::string student_dir = find_student_dir(lab, submission.base);
  return {&lab, submission.who, student_dir, (fs::path(options.work_dir) / submission.who / lab.dir).string(),
          student_dir.empty() ? "" : copies_left_out(lab, submission.base, student_dir)};
}

bool reusable(const LabResult& result) {
  return result.status != LabStatus::not_run && result.status != LabStatus::kit_fault;
}

namespace {

struct Slot {
  LabJob job;
  std::string fingerprint;
  LabResult result;
  bool done = false;
};

std::string saved_result_path(const Slot& slot) { return saved_result_file(slot.job.work_dir); }

bool load_saved(Slot& slot) {
  LabResult saved;
  if (!load_saved_result(saved_result_path(slot), slot.fingerprint, saved) || !reusable(saved)) return false;
  slot.result = saved;
  return true;
}

void save(const Slot& slot) { save_result(saved_result_path(slot), slot.fingerprint, slot.result); }

// A blocking queue of slot indices for the GPU workers.
class RunQueue {
public:
  void push(std::size_t slot) {
    { std::lock_guard lock(mutex_); items_.push_back(slot); }
    ready_.notify_one();
  }
  void close() {
    { std::lock_guard lock(mutex_); closed_ = true; }
    ready_.notify_all();
  }
  bool pop(std::size_t& slot) {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] { return closed_ || !items_.empty(); });
    if (items_.empty()) return false;
    slot = items_.front();
    items_.pop_front();
    return true;
  }

private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::size_t> items_;
  bool closed_ = false;
};

// Status lines: one per finished lab, and every 20 s what is in flight and for how long.
class Progress {
public:
  Progress(std::size_t total, bool enabled) : total_(total), enabled_(enabled), started_(Clock::now()) {}

  void begin(const std::string& what) {
    std::lock_guard lock(mutex_);
    in_flight_[what] = Clock::now();
  }
  // `last_stage`: this lab of this submission is done (graded, or stopped at its build).
  void finish(const std::string& what, const std::string& outcome, bool last_stage) {
    std::lock_guard lock(mutex_);
    const double took = in_flight_.count(what) ? seconds_since(in_flight_[what]) : 0;
    in_flight_.erase(what);
    slowest_.push_back({took, what});
    finished_ += last_stage;
    if (enabled_)
      std::fprintf(stderr, "[%zu/%zu %5.0f s] %s: %s (%.1f s)\n", finished_, total_, seconds_since(started_),
                   what.c_str(), outcome.c_str(), took);
  }
  void count_cached(const std::string& what) {
    std::lock_guard lock(mutex_);
    if (enabled_)
      std::fprintf(stderr, "[%zu/%zu] %s: unchanged since it was graded, result reused\n", ++finished_, total_,
                   what.c_str());
  }
  void report_in_flight() {
    std::lock_guard lock(mutex_);
    if (!enabled_ || in_flight_.empty()) return;
    std::ostringstream line;
    for (const auto& [what, since] : in_flight_) line << "  " << what << " " << int(seconds_since(since)) << " s";
    std::fprintf(stderr, "[%zu/%zu] in progress:%s\n", finished_, total_, line.str().c_str());
  }
  void summary() {
    std::lock_guard lock(mutex_);
    if (!enabled_ || slowest_.empty()) return;
    std::sort(slowest_.rbegin(), slowest_.rend());
    std::fprintf(stderr, "slowest:");
    for (std::size_t i = 0; i < std::min<std::size_t>(3, slowest_.size()); ++i)
      std::fprintf(stderr, "  %s %.1f s", slowest_[i].second.c_str(), slowest_[i].first);
    std::fprintf(stderr, "\n");
  }

private:
  std::mutex mutex_;
  std::size_t total_, finished_ = 0;
  bool enabled_;
  Clock::time_point started_;
  std::map<std::string, Clock::time_point> in_flight_;
  std::vector<std::pair<double, std::string>> slowest_;
};

// A lab that compiled keeps a build log only when one of its parts did not ("mpi_allreduce.cu
// did not compile (its cases are not run; ...)"): that part, named in the progress line.
std::string build_line(const LabResult& result) {
  const std::string built = result.build_kept ? "compiled earlier, kept" : "compiled";
  if (result.build_log.empty()) return built;
  return built + ", but " + result.build_log.substr(0, result.build_log.find(" ("));
}

// A lab not handed in reads as the gradebook names it, not as the "missing files" of a lab
// whose folder lacks one of several files.
std::string outcome_line(const LabResult& r, const LabSpec& lab) {
  return (not_handed_in(r, lab) ? std::string("not handed in") : to_string(r.status)) + ", " + points_line(r);
}

}  // namespace

static std::atomic<std::size_t> graded_count{0}, run_count{0};
std::size_t graded_this_run() { return graded_count; }
std::size_t ran_on_gpu_this_run() { return run_count; }

std::vector<Submission> find_submissions(const std::string& dir) {
  std::vector<Submission> submissions;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const std::string problem = submission_problem(entry.path());
    if (!problem.empty() && name.front() == '.') continue;  // .DS_Store, .gitignore: no one's submission
    submissions.push_back({name, entry.path().string(), problem});
  }
  std::sort(submissions.begin(), submissions.end(), [](const auto& a, const auto& b) { return a.who < b.who; });
  if (submissions.empty())
    throw BadInput("the submissions folder " + dir + " is empty: put each student's submission in a folder of its own there");
  return submissions;
}

std::string class_name(const std::string& dir) {
  fs::path folder = fs::absolute(dir).lexically_normal();
  if (folder.filename().empty()) folder = folder.parent_path();  // "class/" and "." end in a slash
  return folder.filename().string();
}

int count_gpus() {
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"); visible && *visible)
    return int(std::count(visible, visible + std::strlen(visible), ',')) + 1;
  int count = 0;
  if (FILE* pipe = popen("nvidia-smi -L 2>/dev/null", "r")) {
    char line[512];
    while (std::fgets(line, sizeof line, pipe)) count += std::strncmp(line, "GPU ", 4) == 0;
    pclose(pipe);
  }
  return std::max(count, 1);
}

// Correctness checks are mostly CPU work (inputs, references), so more labs at once keep the
// GPU busy between timings; but a timing lab's buffers (up to about 8 GiB, labs 06 and 07 at
// 2^28 elements) and the waiting labs' (a CUDA context and a case's buffers each) must fit.
// 12 GiB a run leaves room for both: six on an 80 GiB card, two on a 24 GiB one.
int runs_per_gpu_for_memory(long long smallest_gpu_mib) {
  constexpr long long mib_per_run = 12 * 1024;
  constexpr int most = 6, unknown = 3;
  if (smallest_gpu_mib <= 0) return unknown;
  return int(std::clamp<long long>(smallest_gpu_mib / mib_per_run, 1, most));
}

int default_runs_per_gpu() {
  long long smallest_mib = 0;
  if (FILE* pipe = popen("nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits 2>/dev/null", "r")) {
    char line[128];
    while (std::fgets(line, sizeof line, pipe)) {
      const long long mib = std::atoll(line);
      if (mib > 0 && (smallest_mib == 0 || mib < smallest_mib)) smallest_mib = mib;
    }
    pclose(pipe);
  }
  return runs_per_gpu_for_memory(smallest_mib);
}

void stop_children_on_interrupt() {
  static sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // inherited by every thread started after this
  std::thread([] {
    int received = 0;
    sigwait(&signals, &received);
    kill_all_children();
    std::fprintf(stderr, "\ngrade: interrupted; finished labs are saved: run the same command to resume\n");
    std::_Exit(130);
  }).detach();
}

void CheckingPlaces::take() {
  std::unique_lock lock(mutex_);
  freed_.wait(lock, [&] { return free_ > 0; });
  --free_;
}

void CheckingPlaces::give_back() {
  { std::lock_guard lock(mutex_); ++free_; }
  freed_.notify_one();
}

std::vector<Report> grade_batch(const std::vector<Submission>& submissions, const std::vector<LabSpec>& labs,
                                const Toolchain& toolchain, const BatchOptions& options) {
  graded_count = 0;  // the counts are this batch's
  run_count = 0;
  std::vector<Slot> slots;
  for (const Submission& s : submissions)
    for (const LabSpec& lab : labs) {
      if (!s.problem.empty()) {  // nothing to build: each lab says why, and is done already
        const LabResult refused = not_graded(lab, LabStatus::missing_files, s.problem + " (lab not graded)");
        slots.push_back({{&lab, s.who}, "", refused, true});
        continue;
      }
      const LabJob job = job_for(lab, s, options);
      slots.push_back({job, result_fingerprint(job, toolchain, options.grade)});
    }

  // Labs that need several GPUs run one at a time on all of them (their own queue), after
  // every one-GPU run has ended: a one-GPU run that spins or hangs on a GPU would otherwise
  // slow their checks past their time limit, so their verdict would depend on what else the
  // class handed in and on how many GPUs the machine has.
  const int gpu_count = std::max(1, options.gpu_count);
  auto needs_several = [](const Slot& slot) { return slot.job.lab->min_gpus > 1; };
  const bool several_gpu_labs = std::any_of(labs.begin(), labs.end(), [](const LabSpec& l) { return l.min_gpus > 1; });
  GradeOptions grading = options.grade;
  grading.gpu_count = gpu_count;
  if (options.runs_per_gpu > 1 || several_gpu_labs) grading.gpu_lock_dir = options.work_dir;
  Progress progress(slots.size(), options.progress);
  RunQueue run_queue, several_gpu_queue;
  std::atomic<std::size_t> next_build{0};
  auto label = [](const Slot& slot) { return slot.job.who + "/" + slot.job.lab->id; };

  auto builder = [&] {
    for (std::size_t i; (i = next_build++) < slots.size();) {
      Slot& slot = slots[i];
      if (slot.done) {
        progress.finish(label(slot), outcome_line(slot.result, *slot.job.lab), true);
        continue;
      }
      if (options.reuse_saved && load_saved(slot)) {
        slot.done = true;
        progress.count_cached(label(slot));
        continue;
      }
      progress.begin(label(slot) + " build");
      const bool built = build_lab(slot.job, toolchain, slot.result);
      progress.finish(label(slot) + " build", built ? build_line(slot.result) : outcome_line(slot.result, *slot.job.lab), !built);
      ++graded_count;
      if (built) {
        (needs_several(slot) ? several_gpu_queue : run_queue).push(i);
      } else {
        save(slot);
        slot.done = true;
      }
    }
  };
  const int places_per_gpu = std::max(1, options.runs_per_gpu);
  std::vector<std::unique_ptr<CheckingPlaces>> places;
  for (int g = 0; g < gpu_count; ++g) places.push_back(std::make_unique<CheckingPlaces>(places_per_gpu));
  // gpu < 0: every GPU of the batch, one lab at a time (no places to share).
  auto gpu_worker = [&](RunQueue& queue, int gpu) {
    for (std::size_t i; queue.pop(i);) {
      Slot& slot = slots[i];
      const std::string what = label(slot) + (gpu >= 0 ? " run on GPU " + std::to_string(gpu) : " run on all GPUs");
      CheckingPlaces* place = gpu >= 0 ? places[gpu].get() : nullptr;
      bool holding = place != nullptr;
      if (holding) place->take();
      auto leave_place = [&] {
        if (holding) place->give_back();
        holding = false;
      };
      progress.begin(what);
      run_lab(slot.job, toolchain, grading, gpu, slot.result, leave_place);
      leave_place();
      run_count += slot.result.status != LabStatus::not_run;  // without a GPU nothing ran
      save(slot);
      slot.done = true;
      progress.finish(what, outcome_line(slot.result, *slot.job.lab), true);
    }
  };

  std::atomic<bool> finished{false};
  std::thread ticker([&] {
    for (int tick = 0; !finished; ++tick) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      if (tick % 20 == 19) progress.report_in_flight();
    }
  });
  std::vector<std::thread> builders, gpus;
  for (int w = 0; w < std::max(1, options.build_workers); ++w) builders.emplace_back(builder);
  for (int w = 0; w < 2 * gpu_count * places_per_gpu; ++w)
    gpus.emplace_back(gpu_worker, std::ref(run_queue), w % gpu_count);
  for (auto& t : builders) t.join();
  run_queue.close();
  several_gpu_queue.close();
  for (auto& t : gpus) t.join();
  if (several_gpu_labs) gpu_worker(several_gpu_queue, -1);
  finished = true;
  ticker.join();
  progress.summary();

  std::vector<Report> reports;
  std::size_t i = 0;
  for (const Submission& s : submissions) {
    Report report{s.who, "student files"};
    for (std::size_t l = 0; l < labs.size(); ++l) report.labs.push_back(slots[i++].result);
    add_totals(report);
    reports.push_back(report);
  }
  return reports;
}

}  // namespace grade
