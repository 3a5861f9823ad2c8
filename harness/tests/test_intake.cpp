// Taking students' files in: every kind of broken or hostile submission gets a message the
// student can act on, nothing outside a submission is ever read, and the rest is still graded.
#include "bad_input.h"
#include "batch.h"
#include "catalog.h"
#include "grader.h"
#include "intake.h"
#include "process.h"
#include "report/gradebook_csv.h"
#include "report/report_writer.h"
#include "labkit/rank_group.h"
#include "slurm.h"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <thread>

namespace fs = std::filesystem;

namespace {

// A fresh folder under /tmp, removed afterwards (links inside are removed, never their targets).
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) : path(fs::temp_directory_path() / ("labkit-test-intake-" + name)) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

void write(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text;
}

const fs::path kit_root = LABKIT_TEST_SOURCE_ROOT;

const grade::LabSpec& histogram_lab() {
  static const std::vector<grade::LabSpec> labs = grade::load_catalog(kit_root.string());
  return grade::find_lab(labs, "01");
}

// A toolchain that cannot compile anything: these tests must get their verdicts without nvcc.
grade::Toolchain no_compiler(const fs::path& build_root) {
  return {kit_root.string(), build_root.string(), "/nonexistent/nvcc", {}};
}

// A batch in `dir` (submissions under class/, work/ for its results) whose compiler is the
// shell script `script`, written to dir/name.
struct ScriptedBatch {
  grade::Toolchain toolchain;
  grade::BatchOptions options;
};
ScriptedBatch batch_compiling_with(const fs::path& dir, const std::string& name, const std::string& script) {
  write(dir / name, script);
  fs::permissions(dir / name, fs::perms::owner_all);
  ScriptedBatch batch{no_compiler(dir / "build"), {}};
  batch.toolchain.nvcc = (dir / name).string();
  batch.options.progress = false;
  batch.options.work_dir = (dir / "work").string();
  return batch;
}

// A stand-in for nvcc that fails on any file named `mpi_allreduce.cu` whose text says "broken",
// and otherwise writes the -o file: the build's verdicts without compiling anything.
fs::path fake_nvcc(const fs::path& dir) {
  const fs::path script = dir / "nvcc";
  write(script, "#!/bin/sh\n"
                "out=\n"
                "while [ $# -gt 0 ]; do\n"
                "  case \"$1\" in\n"
                "    -o) out=\"$2\"; shift ;;\n"
                "    *.cu) if read -r first < \"$1\" && [ \"$first\" = broken ]; then\n"
                "            echo \"$1(1): error: expected a declaration\" >&2; exit 2; fi ;;\n"
                "  esac\n"
                "  shift\n"
                "done\n"
                ": > \"$out\"\n");
  fs::permissions(script, fs::perms::owner_all);
  return script;
}

// Lab 13 with both parts handed in, part 2's file `mpi_text`, built by the stand-in with a build
// folder that has the MPI rank program.
// Lab 13 built from the two files' texts (no mpi_allreduce.cu when `mpi_text` is empty).
grade::LabResult build_lab_13(const fs::path& dir, const std::string& allreduce_text,
                              const std::optional<std::string>& mpi_text) {
  static const std::vector<grade::LabSpec> labs = grade::load_catalog(kit_root.string());
  const grade::LabSpec& lab = grade::find_lab(labs, "13");
  write(dir / "student" / "allreduce.cu", allreduce_text);
  write(dir / "student" / "collectives.cu", "ok\n");  // part 3, in the lab's own module with part 1
  if (mpi_text) write(dir / "student" / "mpi_allreduce.cu", *mpi_text);
  write(dir / "build" / "labs" / lab.modules.at(0).loader, "");
  const grade::Toolchain tc{kit_root.string(), (dir / "build").string(), fake_nvcc(dir).string(), {}};
  const grade::LabJob job{&lab, "alice", (dir / "student").string(), (dir / "work").string()};
  grade::LabResult result;
  grade::build_lab(job, tc, result);
  return result;
}

}  // namespace

TEST_SUITE("intake") {
  TEST_CASE("a plain file up to 1 MiB is taken") {
    TempDir dir("plain");
    write(dir.path / "histogram.cu", "__global__ void k() {}\n");
    CHECK(grade::student_file_problem(dir.path / "histogram.cu", "histogram.cu") == "");
    fs::resize_file(dir.path / "histogram.cu", grade::max_student_file_bytes);
    CHECK(grade::student_file_problem(dir.path / "histogram.cu", "histogram.cu") == "");
    CHECK(grade::student_files_problem(dir.path, {"histogram.cu"}) == "");
  }

  TEST_CASE("a missing file is named") {
    TempDir dir("missing");
    CHECK(grade::student_file_problem(dir.path / "histogram.cu", "histogram.cu") == "histogram.cu not found");
  }

  TEST_CASE("a symbolic link is refused, wherever it points, and never followed") {
    TempDir dir("link");
    write(dir.path / "mine.cu", "int x;\n");
    const std::string refusal = "histogram.cu is a symbolic link; hand in the file itself";
    for (const fs::path& target : {fs::path("/etc/passwd"), kit_root / "solutions" / "01-histogram" / "histogram.cu",
                                   fs::path("mine.cu"), fs::path("nowhere.cu")}) {
      CAPTURE(target);
      fs::remove(dir.path / "histogram.cu");
      fs::create_symlink(target, dir.path / "histogram.cu");
      CHECK(grade::student_file_problem(dir.path / "histogram.cu", "histogram.cu") == refusal);
      CHECK(grade::student_files_problem(dir.path, {"histogram.cu"}) == refusal);
    }
  }

  TEST_CASE("a file over 1 MiB is refused with its size") {
    TempDir dir("size");
    write(dir.path / "histogram.cu", "");
    fs::resize_file(dir.path / "histogram.cu", 3355443);  // 3.2 MiB, sparse
    CHECK(grade::student_file_problem(dir.path / "histogram.cu", "histogram.cu") ==
          "histogram.cu is 3.2 MiB; student files are limited to 1 MiB");
    fs::resize_file(dir.path / "histogram.cu", grade::max_student_file_bytes + 1);  // rounded up, not "1.0"
    CHECK(grade::student_file_problem(dir.path / "histogram.cu", "histogram.cu") ==
          "histogram.cu is 1.1 MiB; student files are limited to 1 MiB");
  }

  TEST_CASE("a folder, a pipe or a device where a file should be is refused without opening it") {
    TempDir dir("not-a-file");
    fs::create_directory(dir.path / "histogram.cu");
    CHECK(grade::student_file_problem(dir.path / "histogram.cu", "histogram.cu") ==
          "histogram.cu is a folder, not a file; hand in the file itself");
    REQUIRE(mkfifo((dir.path / "dot.cu").c_str(), 0644) == 0);  // opening it to read would block
    CHECK(grade::student_file_problem(dir.path / "dot.cu", "dot.cu") ==
          "dot.cu is a named pipe, not a file; hand in the file itself");
    CHECK(grade::student_file_problem("/dev/zero", "topk.cu") ==
          "topk.cu is a device, not a file; hand in the file itself");
  }

  TEST_CASE("an unreadable file is refused") {
    if (geteuid() == 0) {
      MESSAGE("skipped: root reads a file whatever its permissions");
      return;
    }
    TempDir dir("unreadable");
    write(dir.path / "histogram.cu", "int x;\n");
    fs::permissions(dir.path / "histogram.cu", fs::perms::none);
    CHECK(grade::student_file_problem(dir.path / "histogram.cu", "histogram.cu") ==
          "histogram.cu cannot be read (Permission denied); make it readable and hand it in again");
    fs::permissions(dir.path / "histogram.cu", fs::perms::owner_all);
  }

  TEST_CASE("two copies of a lab's files: the graded one is named, and the one left out") {
    const grade::LabSpec& lab = histogram_lab();
    TempDir base("copies");
    const std::string root = base.path.string();
    write(base.path / "labs" / lab.dir / "histogram.cu", "int x;\n");
    const std::string chosen = grade::find_student_dir(lab, root);
    CHECK(grade::copies_left_out(lab, root, chosen) == "");
    write(base.path / "histogram.cu", "int y;\n");
    CHECK(grade::find_student_dir(lab, root) == chosen);
    CHECK(grade::copies_left_out(lab, root, chosen) ==
          "your submission holds more than one copy of histogram.cu: graded the one in labs/01-histogram/, left out "
          "the copy in the top folder");
  }

  TEST_CASE("a clone of the kit with the work at the top: the starter left in labs/ is not graded") {
    const grade::LabSpec& lab = histogram_lab();
    TempDir base("stale-clone");
    const std::string root = base.path.string();
    fs::create_directories(base.path / "labs" / lab.dir);
    fs::copy_file(kit_root / "labs" / lab.dir / "histogram.cu", base.path / "labs" / lab.dir / "histogram.cu");
    write(base.path / "histogram.cu", "// the student's work\n");
    const std::string chosen = grade::find_student_dir(lab, root);
    CHECK(fs::path(chosen) == base.path / "");
    CHECK(grade::copies_left_out(lab, root, chosen) ==
          "your submission holds more than one copy of histogram.cu: graded the one in the top folder, left out the "
          "copy in labs/01-histogram/ (the kit's starter, unchanged)");
    // The starter alone is what was handed in: it is graded.
    fs::remove(base.path / "histogram.cu");
    CHECK(grade::find_student_dir(lab, root) == (base.path / "labs" / lab.dir).string());
  }

  TEST_CASE("a lab folder is found without looking through links") {
    const grade::LabSpec& lab = histogram_lab();
    TempDir base("find");
    const std::string root = base.path.string();
    CHECK(grade::find_student_dir(lab, root) == "");

    // A linked lab folder (to the kit's solutions!) comes back as the link, and is refused by name.
    fs::create_directories(base.path / "labs");
    fs::create_directory_symlink(kit_root / "solutions" / lab.dir, base.path / "labs" / lab.dir);
    CHECK(grade::find_student_dir(lab, root) == (base.path / "labs" / lab.dir).string());
    CHECK(grade::student_files_problem(grade::find_student_dir(lab, root), lab.student_files) ==
          "the folder 01-histogram is a symbolic link; hand in the folder itself, not a link to it");

    // A real folder that holds the files wins over the link.
    write(base.path / lab.dir / "histogram.cu", "int x;\n");
    CHECK(grade::find_student_dir(lab, root) == (base.path / lab.dir).string());

    // So does a linked file in a real folder: it is found, then refused precisely.
    fs::remove(base.path / lab.dir / "histogram.cu");
    fs::create_symlink("/etc/passwd", base.path / lab.dir / "histogram.cu");
    CHECK(grade::find_student_dir(lab, root) == (base.path / lab.dir).string());
    CHECK(grade::student_files_problem(base.path / lab.dir, lab.student_files) ==
          "histogram.cu is a symbolic link; hand in the file itself");

    // A linked `labs` folder is not looked through either.
    fs::remove_all(base.path / "labs");
    fs::remove_all(base.path / lab.dir);
    fs::create_directory_symlink(kit_root / "solutions", base.path / "labs");
    CHECK(grade::find_student_dir(lab, root) == (base.path / "labs").string());
    CHECK(grade::student_files_problem(base.path / "labs", lab.student_files) ==
          "the folder labs is a symbolic link; hand in the folder itself, not a link to it");
  }

  TEST_CASE("a lab of several files handed in in part: the missing ones are named, not 'not handed in'") {
    grade::LabSpec lab = histogram_lab();
    lab.student_files = {"part1.cu", "part2.cu", "part3.cu"};
    TempDir base("parts");
    const std::string root = base.path.string();
    CHECK(grade::find_student_dir(lab, root) == "");  // nothing of it: not handed in
    write(base.path / "labs" / lab.dir / "part1.cu", "int x;\n");
    const std::string found = grade::find_student_dir(lab, root);
    CHECK(found == (base.path / "labs" / lab.dir).string());
    CHECK(grade::student_files_problem(found, lab.student_files) ==
          "part2.cu and part3.cu not found; this lab grades part1.cu, part2.cu and part3.cu together");
    write(base.path / "labs" / lab.dir / "part3.cu", "int z;\n");
    CHECK(grade::student_files_problem(found, lab.student_files) ==
          "part2.cu not found; this lab grades part1.cu, part2.cu and part3.cu together");
    write(base.path / "part1.cu", "int y;\n");
    write(base.path / "part2.cu", "int y;\n");
    write(base.path / "part3.cu", "int y;\n");
    CHECK(fs::equivalent(grade::find_student_dir(lab, root), root));  // a place with all of them wins
  }

  TEST_CASE("build_lab refuses a linked file before compiling anything") {
    const grade::LabSpec& lab = histogram_lab();
    TempDir dir("build");
    fs::create_directories(dir.path / "student");
    fs::create_symlink(kit_root / "solutions" / lab.dir / "histogram.cu", dir.path / "student" / "histogram.cu");
    const grade::LabJob job{&lab, "mallory", (dir.path / "student").string(), (dir.path / "work").string()};
    grade::LabResult result;
    CHECK_FALSE(grade::build_lab(job, no_compiler(dir.path / "build"), result));
    CHECK(result.status == grade::LabStatus::missing_files);
    CHECK(result.note == "histogram.cu is a symbolic link; hand in the file itself (lab not graded)");
    CHECK_FALSE(fs::exists(dir.path / "work" / "src"));  // nothing staged, so nothing copied
    CHECK(result.points == 0);
    CHECK(result.max_points > 0);
  }

  TEST_CASE("a part of a lab that does not compile costs its own cases, not the lab") {
    TempDir dir("part-2-broken");
    const grade::LabResult result = build_lab_13(dir.path, "ok\n", "broken\n");
    CHECK(result.status == grade::LabStatus::graded);
    CHECK(result.build_log.find("mpi_allreduce.cu did not compile (its cases are not run; the rest of the lab is "
                                "graded)") == 0);
    CHECK(result.build_log.find("mpi_allreduce.cu(1): error: expected a declaration") != std::string::npos);
    CHECK(fs::exists(dir.path / "work" / "module.so"));
    CHECK_FALSE(fs::exists(dir.path / "work" / "module-mpi.so"));
    // What the MPI cases say instead of running.
    CHECK(labkit::why_ranks_cannot_run((dir.path / "build" / "labs" / "lab-13-allreduce-mpi-rank").string(),
                                       (dir.path / "work" / "module-mpi.so").string(), "/usr/bin/mpirun") ==
          "not run: mpi_allreduce.cu did not compile (the compiler's messages are in the report)");

    // Fixed and handed in again: the marker goes, and nothing is shown.
    const grade::LabResult fixed = build_lab_13(dir.path, "ok\n", "ok\n");
    CHECK(fixed.status == grade::LabStatus::graded);
    CHECK(fixed.build_log.empty());
    CHECK(fs::exists(dir.path / "work" / "module-mpi.so"));
    CHECK_FALSE(fs::exists(dir.path / "work" / "module-mpi.so.failed"));
  }

  TEST_CASE("a part of a lab not handed in costs its own cases, not the lab") {
    TempDir dir("part-2-missing");
    const grade::LabResult result = build_lab_13(dir.path, "ok\n", std::nullopt);
    CHECK(result.status == grade::LabStatus::graded);
    CHECK(result.build_log.find("note: mpi_allreduce.cu was not handed in: its cases score nothing") == 0);
    CHECK(fs::exists(dir.path / "work" / "module.so"));
    CHECK_FALSE(fs::exists(dir.path / "work" / "module-mpi.so"));
    CHECK(labkit::why_ranks_cannot_run((dir.path / "build" / "labs" / "lab-13-allreduce-mpi-rank").string(),
                                       (dir.path / "work" / "module-mpi.so").string(), "/usr/bin/mpirun") ==
          "not run: mpi_allreduce.cu was not handed in");
    // The lab's own files stay required; a part handed in is required whole.
    static const std::vector<grade::LabSpec> labs = grade::load_catalog(kit_root.string());
    const grade::LabSpec& lab = grade::find_lab(labs, "13");
    CHECK(grade::required_files(lab, dir.path / "student") == std::vector<std::string>{"allreduce.cu", "collectives.cu"});
    write(dir.path / "student" / "mpi_allreduce.cu", "ok\n");
    CHECK(grade::required_files(lab, dir.path / "student") == lab.student_files);
  }

  TEST_CASE("a module compiled from the same inputs is kept; a changed file is compiled again") {
    TempDir dir("compiled-once");
    // A stand-in for nvcc that counts its runs and writes the -o file.
    const fs::path runs = dir.path / "runs";
    const fs::path script = dir.path / "nvcc";
    write(script, "#!/bin/sh\necho run >> '" + runs.string() + "'\nwhile [ $# -gt 1 ]; do shift; done\n: > \"$1\"\n");
    fs::permissions(script, fs::perms::owner_all);
    const grade::LabSpec& lab = histogram_lab();
    const grade::Toolchain tc{kit_root.string(), (dir.path / "build").string(), script.string(), {}};
    const grade::LabJob job{&lab, "alice", (dir.path / "student").string(), (dir.path / "work").string()};
    bool kept = false;
    auto compiles = [&] {
      grade::LabResult result;
      CHECK(grade::build_lab(job, tc, result));
      kept = result.build_kept;
      std::ifstream counted(runs);
      return std::count(std::istreambuf_iterator<char>(counted), std::istreambuf_iterator<char>(), '\n');
    };
    write(dir.path / "student" / "histogram.cu", "int x;\n");
    CHECK(compiles() == 1);
    CHECK_FALSE(kept);
    CHECK(compiles() == 1);  // graded again from the same file: nvcc does not run
    CHECK(kept);             // and the progress line says so
    write(dir.path / "student" / "histogram.cu", "int y;\n");
    CHECK(compiles() == 2);
    CHECK_FALSE(kept);
    fs::remove(dir.path / "work" / "module.so");
    CHECK(compiles() == 3);  // nothing to keep
  }

  TEST_CASE("the lab's own module that does not compile fails the lab") {
    TempDir dir("part-1-broken");
    const grade::LabResult result = build_lab_13(dir.path, "broken\n", "ok\n");
    CHECK(result.status == grade::LabStatus::build_failed);
    CHECK(result.build_log.find("allreduce.cu(1): error") != std::string::npos);
    CHECK(result.points == 0);
  }

  TEST_CASE("a compiler's messages name the student's files, never the grading machine's folders") {
    const grade::LabSpec& lab = histogram_lab();
    TempDir dir("paths");
    write(dir.path / "student" / "histogram.cu", "int x\n");
    // A stand-in for nvcc that says what nvcc says: the path it was given of each file, and of
    // the kit's header through -I.
    write(dir.path / "nvcc", "#!/bin/sh\n"
                             "for a; do case \"$a\" in\n"
                             "  *.cu) echo \"$a(1): error: expected a ;\" ;;\n"
                             "  -I*) echo \"In file included from ${a#-I}/histogram.h:3\" ;;\n"
                             "esac; done\n"
                             "exit 1\n");
    fs::permissions(dir.path / "nvcc", fs::perms::owner_all);
    const grade::Toolchain toolchain{kit_root.string(), (dir.path / "build").string(), (dir.path / "nvcc").string(), {}};
    const grade::LabJob job{&lab, "alice", (dir.path / "student").string(), (dir.path / "work").string()};
    grade::LabResult result;
    CHECK_FALSE(grade::build_lab(job, toolchain, result));
    CHECK(result.status == grade::LabStatus::build_failed);
    CHECK(result.build_log.find("histogram.cu(1): error: expected a ;") != std::string::npos);
    CHECK(result.build_log.find("In file included from labs/" + lab.dir + "/histogram.h:3") != std::string::npos);
    CHECK(result.build_log.find(dir.path.string()) == std::string::npos);
    CHECK(result.build_log.find(kit_root.string()) == std::string::npos);
  }

  TEST_CASE("a module that compiles but lacks the lab's function, or calls one never defined, fails its build") {
    const grade::LabSpec& lab = histogram_lab();
    TempDir dir("undefined");
    // The host's C++ compiler stands in for nvcc: real shared objects for nm and the linker.
    write(dir.path / "nvcc", "#!/bin/sh\n"
                             "out=; files=; strict=\n"
                             "while [ $# -gt 0 ]; do case \"$1\" in\n"
                             "  -o) out=\"$2\"; shift ;;\n"
                             "  *.cu) files=\"$files $1\" ;;\n"
                             "  --no-undefined) strict=-Wl,--no-undefined ;;\n"
                             "esac; shift; done\n"
                             "exec c++ -shared -fPIC -x c++ $files $strict -o \"$out\"\n");
    fs::permissions(dir.path / "nvcc", fs::perms::owner_all);
    write(dir.path / "reference.cu", "extern \"C\" void histogram() {}\n");
    fs::create_directories(dir.path / "build" / "labs");
    REQUIRE(std::system(("c++ -shared -fPIC -x c++ " + (dir.path / "reference.cu").string() + " -o " +
                         (dir.path / "build" / "labs" / ("lab-" + lab.dir + "-solution.so")).string())
                            .c_str()) == 0);
    const grade::Toolchain toolchain{kit_root.string(), (dir.path / "build").string(), (dir.path / "nvcc").string(), {}};
    auto build = [&](const std::string& text) {
      write(dir.path / "student" / "histogram.cu", text);
      const grade::LabJob job{&lab, "alice", (dir.path / "student").string(), (dir.path / "work").string()};
      grade::LabResult result;
      grade::build_lab(job, toolchain, result);
      return result;
    };

    CHECK(build("extern \"C\" void histogram() {}\n").status == grade::LabStatus::graded);
    for (const std::string text : {"extern \"C\" void histogram_v2() {}\n", ""}) {
      const grade::LabResult renamed_or_empty = build(text);
      CHECK(renamed_or_empty.status == grade::LabStatus::build_failed);
      CHECK(renamed_or_empty.build_log.find("your files compiled, but do not define histogram, which the lab's "
                                            "header declares") == 0);
    }
    const grade::LabResult helper = build("int helper(int);\nextern \"C\" void histogram() { helper(1); }\n");
    CHECK(helper.status == grade::LabStatus::build_failed);
    CHECK(helper.build_log.find("undefined reference to `helper(int)'") != std::string::npos);
    // A forbidden library's call that never links is the library's use, not a build error.
    const grade::LabResult library = build("#include <cub/cub.cuh>\nint cub_call();\n"
                                           "extern \"C\" void histogram() { cub_call(); }\n");
    CHECK(library.status == grade::LabStatus::forbidden);
    CHECK(library.note.find("uses a forbidden library, cub, included in histogram.cu") == 0);
  }

  TEST_CASE("every entry of a submissions folder is a submission, folders or not") {
    TempDir dir("submissions");
    write(dir.path / "alice.zip", "PK\x03\x04");
    write(dir.path / ".DS_Store", "");
    fs::create_directories(dir.path / "José Núñez");
    fs::create_directories(dir.path / "bob smith");
    fs::create_directory_symlink(kit_root / "solutions", dir.path / "mallory");
    REQUIRE(mkfifo((dir.path / "pipe").c_str(), 0644) == 0);

    const auto submissions = grade::find_submissions(dir.path.string());
    REQUIRE(submissions.size() == 5);  // .DS_Store is no one's
    CHECK(submissions[0].who == "José Núñez");  // name order: bytes, so the capital J first
    CHECK(submissions[0].base == (dir.path / "José Núñez").string());
    CHECK(submissions[0].problem == "");
    CHECK(submissions[1].who == "alice.zip");
    CHECK(submissions[1].problem ==
          "this submission is a file, not a folder: unpack \"alice.zip\" into a folder named \"alice\" in its place");
    CHECK(submissions[2].who == "bob smith");
    CHECK(submissions[2].problem == "");
    CHECK(submissions[3].who == "mallory");
    CHECK(submissions[3].problem ==
          "this submission is a symbolic link, not a folder: links are never followed, so copy the folder itself in "
          "place of \"mallory\"");
    CHECK(submissions[4].who == "pipe");
    CHECK(submissions[4].problem ==
          "this submission is a named pipe, not a folder: put its files in a folder named \"pipe\"");
  }

  TEST_CASE("a batch says why each refused submission was not graded, and builds nothing for it") {
    const grade::LabSpec& lab = histogram_lab();
    TempDir dir("batch");
    write(dir.path / "class" / "alice.zip", "PK\x03\x04");
    fs::create_directories(dir.path / "class" / "José Núñez");
    fs::create_symlink(kit_root / "solutions" / lab.dir / "histogram.cu",
                       dir.path / "class" / "José Núñez" / "histogram.cu");
    grade::BatchOptions options;
    options.progress = false;
    options.work_dir = (dir.path / "work").string();

    const auto reports = grade::grade_batch(grade::find_submissions((dir.path / "class").string()), {lab},
                                            no_compiler(dir.path / "build"), options);
    REQUIRE(reports.size() == 2);
    CHECK(reports[0].who == "José Núñez");
    REQUIRE(reports[0].labs.size() == 1);
    CHECK(reports[0].labs[0].status == grade::LabStatus::missing_files);
    CHECK(reports[0].labs[0].note == "histogram.cu is a symbolic link; hand in the file itself (lab not graded)");
    CHECK(reports[1].who == "alice.zip");
    REQUIRE(reports[1].labs.size() == 1);
    CHECK(reports[1].labs[0].status == grade::LabStatus::missing_files);
    CHECK(reports[1].labs[0].note.find("this submission is a file, not a folder") == 0);
    for (const grade::Report& report : reports) {
      CHECK(report.points == 0);
      CHECK(report.max_points > 0);
      for (const grade::CaseResult& c : report.labs[0].cases) CHECK(c.message.find("no result: ") == 0);
    }
    CHECK_FALSE(fs::exists(dir.path / "work" / "alice.zip"));
    CHECK_FALSE(fs::exists(dir.path / "work" / "José Núñez" / lab.dir / "src"));
  }

  TEST_CASE("a compiler log cut in the middle of an accented name does not stop the batch") {
    const grade::LabSpec& lab = histogram_lab();
    TempDir dir("log");
    write(dir.path / "class" / "José Núñez" / "histogram.cu", "int x;\n");
    // A stand-in compiler whose log's tail starts inside a two-byte character: not valid UTF-8.
    const ScriptedBatch batch = batch_compiling_with(
        dir.path, "fake-nvcc", "#!/bin/sh\nfor i in $(seq 3000); do printf '\xc3\xa9'; done; echo; exit 1\n");

    const auto reports = grade::grade_batch(grade::find_submissions((dir.path / "class").string()), {lab},
                                            batch.toolchain, batch.options);
    REQUIRE(reports.size() == 1);
    CHECK(reports[0].labs[0].status == grade::LabStatus::build_failed);
    CHECK(fs::exists(dir.path / "work" / "José Núñez" / lab.dir / "result.json"));
  }

  TEST_CASE("labs checked at once per GPU: one per 12 GiB of its memory, from 1 to 6") {
    CHECK(grade::runs_per_gpu_for_memory(81559) == 6);   // H100 80GB HBM3
    CHECK(grade::runs_per_gpu_for_memory(143771) == 6);  // H200: no more than six
    CHECK(grade::runs_per_gpu_for_memory(40960) == 3);   // A100 40GB
    CHECK(grade::runs_per_gpu_for_memory(24576) == 2);
    CHECK(grade::runs_per_gpu_for_memory(8192) == 1);    // never none
    CHECK(grade::runs_per_gpu_for_memory(0) == 3);       // nvidia-smi could not tell
  }

  TEST_CASE("a checking place given back lets the next run start; none is made up") {
    grade::CheckingPlaces places(1);
    places.take();
    std::atomic<bool> second_started{false};
    std::thread next([&] {
      places.take();
      second_started = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK_FALSE(second_started);  // the only place is taken
    places.give_back();           // the first run now waits to time
    next.join();
    CHECK(second_started);
  }

  TEST_CASE("an interrupted batch saves no result for the lab it stopped halfway") {
    const grade::LabSpec& lab = histogram_lab();
    TempDir dir("interrupted");
    write(dir.path / "class" / "alice" / "histogram.cu", "int x;\n");
    // A compiler that is still at work when the batch is interrupted (Ctrl-C kills every child).
    const ScriptedBatch batch =
        batch_compiling_with(dir.path, "slow-nvcc", "#!/bin/sh\ntouch \"$0.started\"\nexec sleep 30\n");
    const auto submissions = grade::find_submissions((dir.path / "class").string());

    // In a process of its own: the stop is for good, as in a grader that is about to exit.
    const pid_t batching = fork();
    REQUIRE(batching >= 0);
    if (batching == 0) {
      std::thread interrupt([&] {
        while (!fs::exists(dir.path / "slow-nvcc.started")) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        grade::kill_all_children();
      });
      grade::grade_batch(submissions, {lab}, batch.toolchain, batch.options);
      interrupt.join();
      _exit(0);
    }
    int status = 0;
    REQUIRE(waitpid(batching, &status, 0) == batching);
    CHECK(WIFEXITED(status));
    CHECK(fs::exists(dir.path / "slow-nvcc.started"));
    // Saved, the killed compiler's "build failed" would be reused when the batch resumes.
    CHECK_FALSE(fs::exists(dir.path / "work" / "alice" / lab.dir / "result.json"));
  }

  TEST_CASE("a saved result is reused only when the student's files decided it, never when the machine did") {
    const grade::LabSpec& lab = histogram_lab();
    TempDir dir("resume");
    write(dir.path / "class" / "alice" / "histogram.cu", "int x;\n");
    const grade::Toolchain toolchain = no_compiler(dir.path / "build");  // grading again fails to build
    grade::BatchOptions options;
    options.progress = false;
    options.reuse_saved = true;
    options.work_dir = (dir.path / "work").string();
    const auto submissions = grade::find_submissions((dir.path / "class").string());
    const grade::LabJob job{&lab, "alice", grade::find_student_dir(lab, submissions[0].base),
                            (dir.path / "work" / "alice" / lab.dir).string()};
    const std::string fingerprint = grade::result_fingerprint(job, toolchain, options.grade);
    fs::create_directories(job.work_dir);

    SUBCASE("not run (no CUDA device): graded again") {
      grade::save_result(grade::saved_result_file(job.work_dir), fingerprint,
                         grade::not_graded(lab, grade::LabStatus::not_run, "not run: no CUDA GPU here (no NVIDIA driver is loaded on this machine)"));
      const auto reports = grade::grade_batch(submissions, {lab}, toolchain, options);
      CHECK(reports[0].labs[0].status == grade::LabStatus::build_failed);
      CHECK(grade::graded_this_run() == 1);
    }
    SUBCASE("a fault of the kit: graded again") {
      grade::save_result(grade::saved_result_file(job.work_dir), fingerprint,
                         grade::not_graded(lab, grade::LabStatus::kit_fault, "the lab's checks could not start"));
      const auto reports = grade::grade_batch(submissions, {lab}, toolchain, options);
      CHECK(reports[0].labs[0].status == grade::LabStatus::build_failed);
    }
    SUBCASE("the student's own outcome (a run that crashed): reused") {
      grade::save_result(grade::saved_result_file(job.work_dir), fingerprint,
                         grade::not_graded(lab, grade::LabStatus::run_failed, "the checks stopped early"));
      const auto reports = grade::grade_batch(submissions, {lab}, toolchain, options);
      CHECK(reports[0].labs[0].status == grade::LabStatus::run_failed);
      CHECK(grade::graded_this_run() == 0);
    }
  }

  TEST_CASE("saved results belong to the batch of one --out: a batch writing elsewhere never replaces them") {
    TempDir dir("work-dirs");
    const std::string build = (dir.path / "build").string();
    const std::string reports = (dir.path / "reports").string();
    const std::string work = grade::batch_work_dir(build, reports + "/class");
    CHECK(work == grade::batch_work_dir(build, reports + "/class/"));
    CHECK(work == grade::batch_work_dir(build, reports + "/other/../class"));
    CHECK(work != grade::batch_work_dir(build, (dir.path / "elsewhere" / "class").string()));
    CHECK(work != grade::batch_work_dir(build, reports + "/elsewhere"));
    CHECK(fs::path(work).parent_path() == fs::path(build) / "grade" / "batch");
    CHECK(fs::path(work).filename().string().rfind("class-", 0) == 0);
  }

  TEST_CASE("collect with another secret writes nothing; a result saved for other inputs says so") {
    const grade::LabSpec& lab = histogram_lab();
    TempDir dir("collect");
    write(dir.path / "class" / "alice" / "histogram.cu", "int x;\n");
    write(dir.path / "class" / "bob" / "histogram.cu", "int y;\n");
    const grade::Toolchain toolchain = no_compiler(dir.path / "build");
    grade::BatchOptions batch;
    batch.progress = false;
    batch.work_dir = (dir.path / "work").string();
    const auto submissions = grade::find_submissions((dir.path / "class").string());
    auto save_for = [&](const grade::Submission& submission, const grade::BatchOptions& options) {
      const grade::LabJob job = grade::job_for(lab, submission, options);
      fs::create_directories(job.work_dir);
      grade::save_result(grade::saved_result_file(job.work_dir), grade::result_fingerprint(job, toolchain, options.grade),
                         grade::not_graded(lab, grade::LabStatus::run_failed, "the checks stopped early"));
    };
    grade::BatchOptions other_secret = batch;
    other_secret.grade.seed = 42;

    save_for(submissions[0], batch);
    save_for(submissions[1], batch);
    for (const grade::Report& report : grade::slurm::collect(submissions, {lab}, toolchain, batch))
      CHECK(report.labs[0].status == grade::LabStatus::run_failed);
    CHECK_THROWS_AS(grade::slurm::collect(submissions, {lab}, toolchain, other_secret), grade::BadInput);

    save_for(submissions[1], other_secret);
    const auto reports = grade::slurm::collect(submissions, {lab}, toolchain, batch);
    CHECK(reports[0].labs[0].status == grade::LabStatus::run_failed);
    CHECK(reports[1].labs[0].status == grade::LabStatus::not_run);
    CHECK(reports[1].labs[0].note.find("graded with another secret, --seed or options") != std::string::npos);
  }

  TEST_CASE("an empty submissions folder is the user's mistake, named") {
    TempDir dir("empty-class");
    write(dir.path / ".DS_Store", "");  // no one's submission
    CHECK_THROWS_WITH_AS(grade::find_submissions(dir.path.string()),
                         ("the submissions folder " + dir.path.string() +
                          " is empty: put each student's submission in a folder of its own there").c_str(),
                         grade::BadInput);
  }

  TEST_CASE("a class's reports folder is named after its folder, with or without a trailing slash") {
    CHECK(grade::class_name("grading/class") == "class");
    CHECK(grade::class_name("grading/class/") == "class");
    CHECK(grade::class_name("class//") == "class");
    CHECK(grade::class_name("/tmp/class/.") == "class");
    CHECK(grade::class_name(".") == fs::current_path().filename().string());
  }

  TEST_CASE("names with spaces, accents, commas and quotes reach the gradebook and the report paths") {
    const grade::LabSpec& lab = histogram_lab();
    TempDir dir("exports");
    std::vector<grade::Report> reports;
    for (const std::string who : {"José Núñez", "Smith, \"Bo\"", "two\r\nlines", "Jos\xe9 (Latin-1)"}) {
      grade::Report report{who, "student files", {grade::not_graded(lab, grade::LabStatus::missing_files, "x")}};
      grade::add_totals(report);
      reports.push_back(report);
    }
    const std::string csv = grade::gradebook_csv(reports, {lab});
    CHECK(csv.find("\nJosé Núñez,0,") != std::string::npos);
    CHECK(csv.find("\n\"Smith, \"\"Bo\"\"\",0,") != std::string::npos);
    CHECK(csv.find("\n\"two\r\nlines\",0,") != std::string::npos);

    // The report files get safe names; the gradebook above keeps the folders' own.
    REQUIRE_NOTHROW(grade::write_batch_outputs(reports, {lab}, dir.path.string()));
    CHECK(fs::exists(dir.path / "students" / "Jose-Nunez.json"));
    CHECK(fs::exists(dir.path / "students" / "Jose-Nunez.md"));
    CHECK(fs::exists(dir.path / "handout" / "Jose-Nunez.html"));
    CHECK(fs::exists(dir.path / "gradescope" / lab.dir / "Jose-Nunez" / "results.json"));
    CHECK(fs::exists(dir.path / "prairielearn" / lab.dir / "Jose-Nunez" / "results.json"));
    CHECK(fs::exists(dir.path / "students" / "Smith-Bo.json"));
    CHECK(fs::exists(dir.path / "students" / "two-lines.json"));
    CHECK(fs::exists(dir.path / "gradescope" / lab.dir / "Jos-Latin-1" / "results.json"));
  }
}
