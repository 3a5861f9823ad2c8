// Grading a class on a Slurm cluster (`grade all --submissions DIR --slurm`): the login node
// compiles every lab-submission (the kit is built by ./grade before this runs), a job array
// per GPU count runs the compiled ones, a shard of them per task, and a job that depends on
// the arrays writes the usual gradebook from the saved results (`grade collect DIR` does the
// same by hand). Everything goes through the files `grade all --submissions` already keeps:
// work_dir/WHO/LAB/result.json, so a re-run submits only what has no saved result.
// docs/slurm.md gives the setup and the shared-filesystem assumptions.
#pragma once

#include "batch.h"
#include "catalog.h"
#include "job.h"
#include "model.h"

#include <string>
#include <vector>

namespace grade::slurm {

struct SlurmOptions {
  std::string partition;                    // empty: the cluster's default partition
  std::string gres = "gpu:1";               // per task; its count is scaled to a lab's GPUs; "none": no gres
  int array_limit = 0;                      // tasks of an array running at once (0: no limit)
  int shard_size = 4;                       // lab-submissions per task
  int cpus_per_task = 2;
  std::vector<std::string> sbatch_options;  // passed as they are ("--account=X", "--qos=Y")
};

// One compiled lab-submission waiting for a GPU.
struct PendingRun {
  std::string who;
  std::string lab_dir;  // "01-histogram"
  int gpus = 1;
  int time_limit_seconds = 300;
};

// One job array: the lab-submissions that need `gpus` GPUs, cut into shards (one per task).
struct ArrayPlan {
  std::string name;  // "gpus-1"
  int gpus = 1;
  std::vector<std::vector<PendingRun>> shards;
  int time_limit_minutes = 0;  // the longest shard's worst case
};

// Groups runs by the GPUs they need (in that order), in shards of at most shard_size runs,
// keeping the given order (submission by submission) within a group.
std::vector<ArrayPlan> plan_arrays(const std::vector<PendingRun>& pending, int shard_size);

// The --gres request for a lab that needs `gpus` GPUs: "gpu:1" → "gpu:2", "gpu:a100:1" →
// "gpu:a100:2", "gpu" → "gpu:2"; empty for "none" or "".
std::string gres_for(const std::string& gres, int gpus);

// A word the shell reads back as the same string.
std::string shell_quote(const std::string& word);

// What the job scripts need to know besides the plan.
struct ScriptContext {
  std::string grade_binary;    // build/harness/grade/labkit-grade: the tasks never run ./grade (no builds)
  std::string submissions_dir;
  std::string out_dir;
  std::string slurm_dir;       // out_dir/slurm: plan, secret, scripts, logs (mode 0700)
  std::string job_name;
  std::vector<std::string> grading_args;  // --seed, --no-performance, --secret-file...: as the submit had them
  std::vector<std::string> lab_keys;      // the labs the gradebook has (empty: all)
};

std::string array_script(const ArrayPlan& array, const SlurmOptions& options, const ScriptContext& context);
std::string collect_script(const SlurmOptions& options, const ScriptContext& context);

// The submit step, on the login node. Compiles what has no saved result (--jobs in parallel),
// saves the build failures' results, writes the plan, the secret (0600) and the scripts under
// out_dir/slurm, and submits the arrays and the collect job. Returns the lab-submissions
// submitted: 0 when every one has a saved result (nothing is submitted; collect now).
struct SubmitRequest {
  std::vector<Submission> submissions;
  std::vector<LabSpec> labs;
  Toolchain toolchain;
  BatchOptions batch;
  SlurmOptions slurm;
  ScriptContext context;  // slurm_dir and job_name are filled in by submit
  std::string secret;     // the instructor's secret (its value: written to the 0600 file only)
};
std::size_t submit(SubmitRequest request);

// One array task: runs the compiled lab-submissions of shard `task` of array `array_name` in
// the plan, saving each result as it finishes; those already saved are skipped. Returns the
// exit status: 0, or 1 when some could not run (not compiled for these options: submit again).
int run_task(const std::string& plan_file, const std::string& array_name, int task,
             const std::vector<Submission>& submissions, const std::vector<LabSpec>& catalog,
             const Toolchain& toolchain, const BatchOptions& options);

// The reports from saved results only: nothing is compiled or run. A lab-submission without a
// saved result for these inputs and options is "not run", with a note saying whether it has
// none yet or one for other inputs (another secret, seed or options). Throws BadInput, so that
// nothing is written, when no saved result is for these inputs but some are for others.
std::vector<Report> collect(const std::vector<Submission>& submissions, const std::vector<LabSpec>& labs,
                            const Toolchain& toolchain, const BatchOptions& options);

}  // namespace grade::slurm
