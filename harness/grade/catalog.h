// The labs the kit has, read from each labs/NN-name/lab.yaml.
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
};

// `modules:` in lab.yaml: student files compiled apart from the lab's module, each into one
// of its own (module-NAME.so beside module.so), for a program other than the lab's host to
// load (lab 13's MPI ranks). Each has its own build flags and forbidden libraries, and is built
// only where the kit built the program that loads it.
struct ExtraModule {
  std::string name;                        // "mpi"
  std::vector<std::string> files;          // also in student_files
  std::string loader;                      // that program, in the build's labs/ folder
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

// "01", "1", "histogram", "01-histogram" or its folder ("labs/01-histogram/") → the lab;
// throws BadInput (bad_input.h) listing the labs when none match.
const LabSpec& find_lab(const std::vector<LabSpec>& labs, const std::string& key);

}  // namespace grade
