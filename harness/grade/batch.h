// Grading many submissions at once: compiles run in parallel on the CPU cores while each
// GPU runs one lab's checks at a time; results are saved as they come, so an interrupted
// batch resumes where it stopped and an unchanged submission is not graded again.
#pragma once

#include "catalog.h"
#include "job.h"
#include "model.h"

#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

namespace grade {

struct Submission {
  std::string who;      // the folder's name
  std::string base;     // the folder
  std::string problem;  // why it cannot be graded at all (a file, not a folder); empty when it can
};

// Each subfolder of `dir` is one student's submission, in name order. Any other entry (alice.zip,
// a symbolic link) is one too, with a problem, so that its student hears why nothing was graded;
// hidden files (.DS_Store) are left out.
// Throws BadInput (bad_input.h) when `dir` holds none.
std::vector<Submission> find_submissions(const std::string& dir);

// The class's name, for its reports' folder: the last part of `dir`, trailing slash or not
// ("class/" and "class" are both "class"; "." is the current folder's name).
std::string class_name(const std::string& dir);

// Where a batch keeps its work and saved results: a folder under the build's grade/batch/ per
// output folder (--out), named after it and told apart by a hash of its full path. A batch
// that writes elsewhere never reuses or replaces another's saved results, and a collect reads
// those of the batch whose files it writes again.
std::string batch_work_dir(const std::string& build_root, const std::string& out_dir);

struct BatchOptions {
  GradeOptions grade;
  int build_workers = 2;
  int gpu_count = 1;
  // Labs checked at once on one GPU (default_runs_per_gpu); timing still has the GPU alone. As
  // many again may wait for it to time: a run whose checks are done gives its place to the next.
  int runs_per_gpu = 3;
  std::string work_dir;  // per submission and lab: staged sources, module, logs, saved result
  bool progress = true;      // status lines on stderr
  bool reuse_saved = false;  // reuse a saved result whose inputs are all unchanged
};

// One lab of one submission, as the batch and Slurm grade it: where its files are and where
// its work goes.
LabJob job_for(const LabSpec& lab, const Submission& submission, const BatchOptions& options);

// Labs graded (not reused) by the last grade_batch, and those of them that compiled and ran
// their checks on a GPU: the batch rate's numerators.
std::size_t graded_this_run();
std::size_t ran_on_gpu_this_run();

std::vector<Report> grade_batch(const std::vector<Submission>& submissions,
                                const std::vector<LabSpec>& labs, const Toolchain& toolchain,
                                const BatchOptions& options);

// A lab-submission's saved result: work_dir/result.json, with the fingerprint of what it
// depends on (the student's files, the lab's checks, reference, dataset and rubric, the seed);
// the Slurm path (slurm.h) reads and writes the same files.
std::string result_fingerprint(const LabJob& job, const Toolchain& toolchain, const GradeOptions& options);
inline std::string saved_result_file(const std::string& work_dir) { return work_dir + "/result.json"; }
bool load_saved_result(const std::string& path, const std::string& fingerprint, LabResult& result);
// Whether a result is saved there for any inputs: one that load_saved_result does not take was
// graded with another secret, seed or options, or from files that have changed since.
bool result_saved(const std::string& path);
// Writes nothing once the grader has stopped its children (process.h: children_stopped).
void save_result(const std::string& path, const std::string& fingerprint, const LabResult& result);
// Whether a saved result may stand in for grading again. Not what the machine decided rather
// than the student's files (not run: no CUDA device, too few GPUs, a driver failure; a fault of
// the kit): the next run tries those again. They are still saved, for a Slurm collect to read.
bool reusable(const LabResult& result);

// Places for runs checking on one GPU. A run takes one before its checks and gives it back
// when it starts waiting to time (the GPU alone) or ends, whichever comes first: while it
// waits, the next lab checks in its place instead of the GPU standing idle behind the lock.
class CheckingPlaces {
public:
  explicit CheckingPlaces(int places) : free_(places) {}
  void take();
  void give_back();

private:
  std::mutex mutex_;
  std::condition_variable freed_;
  int free_;
};

// GPUs this machine has (nvidia-smi -L), or CUDA_VISIBLE_DEVICES' count when set; at least 1.
int count_gpus();

// Labs checked at once on each GPU unless --runs-per-gpu says: one per 12 GiB of the smallest
// GPU's memory (nvidia-smi's figure, in MiB; 0 when it cannot tell), from 1 to 6, and 3
// where the memory is unknown.
int runs_per_gpu_for_memory(long long smallest_gpu_mib);
int default_runs_per_gpu();

// Stops every running child process group and exits: Ctrl-C on a batch leaves nothing on the GPU.
void stop_children_on_interrupt();

}  // namespace grade
