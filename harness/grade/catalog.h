// The labs the kit has: every folder labs/NN-name/ that holds a lab.yaml. This is the one
// reader of lab.yaml; the build asks it too (labs/meson.build, through lab_catalog.cpp).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace grade {

struct PerformanceRubric {
  std::string case_name;
  double points = 0;
  double zero_credit_ratio = 0;
  double full_credit_ratio = 1;
  std::string about;  // `about:`, what the case times, for the README's rubric table (may be empty)
};

// `modules:` in lab.yaml: student files compiled apart from the lab's module, each into one
// of its own (module-NAME.so beside module.so), for a program other than the lab's host to
// load (lab 13's MPI ranks). Each has its own build flags and forbidden libraries, and is built
// only where the kit built the program that loads it.
struct ExtraModule {
  std::string name;                        // "mpi"
  std::vector<std::string> files;          // also in student_files
  std::string loader;                      // that program, in the build's labs/ folder
  // `loader_libraries:` what the kit links into that program where the build finds it (NCCL
  // for lab 13's ranks: loaded before the rank's sandbox closes, so a submission calls it
  // without linking it).
  std::vector<std::string> loader_libraries;
  std::vector<std::string> nvcc_flags;     // `build: {nvcc_flags: [...]}`
  std::vector<std::string> forbidden;
};

struct LabSpec {
  std::string dir;   // "01-histogram"
  std::string id;    // "01"
  std::string name;  // "histogram"
  std::string title;
  std::string dataset;                     // path to the dataset file
  std::string folder;                      // the lab's folder in the kit: its student files are the starters
  std::vector<std::string> student_files;  // relative to the lab folder
  std::vector<std::string> forbidden;      // library names: "cub", "thrust", "cublas"
  int time_limit_seconds = 300;
  std::string min_compute_capability = "7.5";  // `requires:` in lab.yaml
  int min_gpus = 1;
  // `build:` in lab.yaml: what compiling a submission needs beyond the kit's flags, e.g.
  // {nvcc_flags: [-rdc=true], link: [cudadevrt]} for dynamic parallelism.
  std::vector<std::string> nvcc_flags;      // added to the nvcc command line
  std::vector<std::string> link_libraries;  // linked as -l<name>, after the sources
  double correctness_points = 0;
  std::vector<PerformanceRubric> performance;
  // `sanitize:` in lab.yaml: the compute-sanitizer tools run on failing cases. memcheck for
  // every lab; racecheck and synccheck where the lab teaches shared memory and __syncthreads.
  std::vector<std::string> sanitize_tools = {"memcheck"};
  std::vector<ExtraModule> modules;

  // What the kit builds from the lab's folder (labs/meson.build):
  std::string contract;                         // `contract:` the header of the functions a student writes
  std::vector<std::string> contract_functions;  // the `extern "C"` functions it declares, in order
  std::string checks;                           // the one test_*.cu: the lab's runner
  std::string bench;                            // bench_*.cu, or empty: the lab's benchmark
  // `kit_libraries:` what the kit's own checks and benchmark link beyond the harness (the
  // library anchor they time the reference against), by program; never the host or a module.
  std::vector<std::string> checks_libraries, bench_libraries;

  // The student files of the lab's own module: those no extra module takes.
  std::vector<std::string> module_files() const;
};

// All labs under source_root/labs, in folder order. Throws with the file's name on a bad rubric.
std::vector<LabSpec> load_catalog(const std::string& source_root);

// The points a lab is worth: its correctness points and every performance case's.
double max_points(const LabSpec& lab);

// The catalog as JSON, one object per lab (`grade --list --json`): what scripts and the build
// read instead of parsing lab.yaml themselves.
nlohmann::json catalog_json(const std::vector<LabSpec>& labs);

// The same JSON as KEY=VALUE lines, the form Meson can read: `labs=01-histogram ...`, then one
// line per field, `01-histogram.checks=test_histogram.cu`; an array of names is joined by
// spaces, an object's fields get its key as a prefix (`01-histogram.kit_libraries.bench`), and
// an array of objects is keyed by each one's "name" (`13-allreduce.modules.mpi.files`, with
// `13-allreduce.modules=mpi`).
std::string catalog_key_values(const nlohmann::json& catalog);

// The functions a contract header declares `extern "C"`, in order, read past comments.
// Throws when it declares none or uses an `extern "C" {` block, whose functions would go unseen.
std::vector<std::string> contract_functions(const std::string& header);

// "01", "1", "histogram", "01-histogram" or its folder ("labs/01-histogram/") → the lab;
// throws BadInput (bad_input.h) listing the labs when none match.
const LabSpec& find_lab(const std::vector<LabSpec>& labs, const std::string& key);

}  // namespace grade
