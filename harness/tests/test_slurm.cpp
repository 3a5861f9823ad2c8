// The Slurm path's planning and job scripts, without Slurm: shards, GPU requests, quoting, and
// the secret kept out of every script (harness/tests/slurm-ci-test.sh runs it on a real Slurm).
#include "slurm.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace {

std::vector<grade::slurm::PendingRun> runs(int count, int gpus, int time_limit_seconds = 300) {
  std::vector<grade::slurm::PendingRun> pending;
  for (int i = 0; i < count; ++i)
    pending.push_back({"student" + std::to_string(i), "01-histogram", gpus, time_limit_seconds});
  return pending;
}

grade::slurm::ScriptContext context() {
  return {"/kit/build/harness/grade/labkit-grade", "/shared/class", "/shared/out", "/shared/out/slurm",
          "labkit-grade-0123abcd", {"--seed", "0", "--secret-file", "/shared/out/slurm/secret"}, {}};
}

std::size_t count(const std::string& text, const std::string& word) {
  std::size_t n = 0;
  for (std::size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_SUITE("slurm") {
  TEST_CASE("shards hold at most shard_size runs, in order, every run exactly once") {
    for (int total : {1, 7, 8, 9, 65}) {
      for (int shard_size : {1, 4, 100}) {
        const auto arrays = grade::slurm::plan_arrays(runs(total, 1), shard_size);
        REQUIRE(arrays.size() == 1);
        const auto& shards = arrays[0].shards;
        CHECK(shards.size() == std::size_t((total + shard_size - 1) / shard_size));
        int next = 0;
        for (const auto& shard : shards) {
          CHECK(!shard.empty());
          CHECK(shard.size() <= std::size_t(shard_size));
          for (const auto& run : shard) CHECK(run.who == "student" + std::to_string(next++));
        }
        CHECK(next == total);
      }
    }
  }

  TEST_CASE("runs that need more GPUs go to an array of their own") {
    auto pending = runs(3, 1);
    const auto two = runs(2, 2);
    pending.insert(pending.begin() + 1, two.begin(), two.end());
    const auto arrays = grade::slurm::plan_arrays(pending, 4);
    REQUIRE(arrays.size() == 2);
    CHECK(arrays[0].gpus == 1);
    CHECK(arrays[0].name == "gpus-1");
    CHECK(arrays[0].shards.at(0).size() == 3);
    CHECK(arrays[1].gpus == 2);
    CHECK(arrays[1].shards.at(0).size() == 2);
  }

  TEST_CASE("a task's time limit covers its longest shard's worst case") {
    const auto arrays = grade::slurm::plan_arrays(runs(5, 1, 300), 4);
    // Four runs of 2 x 300 s + 120 s each, plus a minute: 49 minutes.
    CHECK(arrays.at(0).time_limit_minutes == 49);
  }

  TEST_CASE("an empty plan has no arrays, and a shard size below 1 means 1") {
    CHECK(grade::slurm::plan_arrays({}, 4).empty());
    CHECK(grade::slurm::plan_arrays(runs(3, 1), 0).at(0).shards.size() == 3);
  }

  TEST_CASE("the gres request is scaled to the GPUs a lab needs") {
    CHECK(grade::slurm::gres_for("gpu:1", 1) == "gpu:1");
    CHECK(grade::slurm::gres_for("gpu:1", 4) == "gpu:4");
    CHECK(grade::slurm::gres_for("gpu:a100:1", 2) == "gpu:a100:2");
    CHECK(grade::slurm::gres_for("gpu", 2) == "gpu:2");
    CHECK(grade::slurm::gres_for("gpu:h100", 2) == "gpu:h100:2");
    CHECK(grade::slurm::gres_for("none", 2).empty());
    CHECK(grade::slurm::gres_for("", 2).empty());
  }

  TEST_CASE("shell quoting round-trips spaces and quotes") {
    CHECK(grade::slurm::shell_quote("/plain/path-1.sh") == "/plain/path-1.sh");
    CHECK(grade::slurm::shell_quote("a b") == "'a b'");
    CHECK(grade::slurm::shell_quote("it's") == "'it'\\''s'");
    CHECK(grade::slurm::shell_quote("$HOME") == "'$HOME'");
    CHECK(grade::slurm::shell_quote("") == "''");
  }

  TEST_CASE("an array's script asks for its GPUs, runs the built grader, and names the secret's file only") {
    grade::slurm::SlurmOptions options;
    options.partition = "gpu-short";
    options.array_limit = 8;
    options.sbatch_options = {"--account=cs101"};
    auto pending = runs(9, 2);
    const auto arrays = grade::slurm::plan_arrays(pending, 4);
    const std::string script = grade::slurm::array_script(arrays.at(0), options, context());
    CHECK(script.rfind("#!/bin/bash\n", 0) == 0);
    CHECK(script.find("#SBATCH --array=0-2%8\n") != std::string::npos);
    CHECK(script.find("#SBATCH --gres=gpu:2\n") != std::string::npos);
    CHECK(script.find("#SBATCH --partition=gpu-short\n") != std::string::npos);
    CHECK(script.find("#SBATCH --account=cs101\n") != std::string::npos);
    CHECK(script.find("#SBATCH --job-name=labkit-grade-0123abcd\n") != std::string::npos);
    CHECK(script.find("#SBATCH --output=/shared/out/slurm/logs/gpus-2-%A_%a.log\n") != std::string::npos);
    CHECK(script.find("/kit/build/harness/grade/labkit-grade slurm-task /shared/out/slurm/plan.json gpus-2 "
                      "\"$SLURM_ARRAY_TASK_ID\" --submissions /shared/class --out /shared/out --seed 0 "
                      "--secret-file /shared/out/slurm/secret\n") != std::string::npos);
    CHECK(script.find("./grade") == std::string::npos);  // tasks never build the kit
    CHECK(script.find("LABKIT_SECRET") == std::string::npos);
    CHECK(count(script, "export TMPDIR=") == 1);  // per-task scratch on local disk
  }

  TEST_CASE("gres none leaves the GPU request out; the collect script runs collect on the same options") {
    grade::slurm::SlurmOptions options;
    options.gres = "none";
    auto ctx = context();
    ctx.lab_keys = {"01", "02"};
    const std::string script = grade::slurm::array_script(grade::slurm::plan_arrays(runs(1, 1), 4).at(0), options, ctx);
    CHECK(script.find("--gres") == std::string::npos);
    CHECK(script.find("#SBATCH --array=0-0\n") != std::string::npos);
    const std::string collect = grade::slurm::collect_script(options, ctx);
    CHECK(collect.find("--array") == std::string::npos);
    CHECK(collect.find("--gres") == std::string::npos);
    CHECK(collect.find("/kit/build/harness/grade/labkit-grade collect /shared/class 01 02 --out /shared/out --seed 0 "
                       "--secret-file /shared/out/slurm/secret\n") != std::string::npos);
  }
}
