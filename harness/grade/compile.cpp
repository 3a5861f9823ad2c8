#include "compile.h"

#include "intake.h"
#include "labkit/fingerprint.h"
#include "labkit/protocol.h"
#include "process.h"
#include "score.h"
#include "text.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace grade {

namespace {

namespace protocol = labkit::protocol;

constexpr int build_time_limit_seconds = 300;
constexpr std::size_t build_log_shown_bytes = 5000;

std::string tail(const std::string& text, std::size_t bytes) {
  return text.size() <= bytes ? text : "[...]\n" + text.substr(text.size() - bytes);
}

// What one compiled module is made of: the lab's own (module.so), or one of its `modules:`.
struct ModuleSources {
  std::vector<std::string> files, nvcc_flags, libraries, forbidden;
  std::string output;  // its file name in the lab's work folder
};

ModuleSources lab_module(const LabSpec& lab) {
  return {lab.module_files(), lab.nvcc_flags, lab.link_libraries, lab.forbidden, "module.so"};
}

// Beside one of `modules:` that did not compile: what its cases say instead of running
// (labkit::why_ranks_cannot_run reads it).
fs::path failed_marker(const fs::path& lab_work, const ModuleSources& module) {
  return lab_work / (module.output + ".failed");
}

// The lab's own module, and each of `modules:` whose loader this build has. Where it has
// none (the kit found no MPI), a module left by an earlier build goes, so the checks see none.
std::vector<ModuleSources> modules_to_build(const LabSpec& lab, const Toolchain& tc, const fs::path& lab_work) {
  std::vector<ModuleSources> modules = {lab_module(lab)};
  for (const ExtraModule& extra : lab.modules) {
    ModuleSources sources{extra.files, extra.nvcc_flags, {}, extra.forbidden, "module-" + extra.name + ".so"};
    std::error_code ignored;
    if (fs::exists(fs::path(tc.build_root) / "labs" / extra.loader)) {
      modules.push_back(sources);
    } else {
      fs::remove(lab_work / sources.output, ignored);
      fs::remove(failed_marker(lab_work, sources), ignored);
    }
  }
  return modules;
}

// Stages only the declared student files, so a submission's own copy of the contract header
// is never used.
void stage_student_files(const LabSpec& lab, const std::string& student_dir, const fs::path& lab_work) {
  const fs::path staged = lab_work / "src";
  fs::remove_all(staged);
  fs::create_directories(staged);
  for (const std::string& file : required_files(lab, student_dir))
    fs::copy_file(fs::path(student_dir) / file, staged / file, fs::copy_options::overwrite_existing);
}

// A compiler's messages as a student may read them: the student's files by their own names
// (histogram.cu, not the staged copy's path), the kit's from its root (labs/01-histogram/...),
// and nothing of the grading machine's folders. nvcc's temporary files, which a link error
// names, carry its process id ("/tmp/tmpxft_00007aec_00000000-23_sgemm.o"): they lose it, so
// that grading the same files twice (here and on Slurm) gives the same messages.
std::string without_grader_paths(std::string log, const Toolchain& tc, const fs::path& lab_work) {
  for (const std::string& prefix : {(lab_work / "src").string() + "/", lab_work.string() + "/",
                                    (fs::path(tc.build_root) / "").string(), (fs::path(tc.source_root) / "").string()})
    if (prefix.size() > 1)  // never "/" alone: an unset root
      for (std::size_t at; (at = log.find(prefix)) != std::string::npos;) log.replace(at, prefix.size(), "");
  static const std::regex temporary_file(R"((/tmp/)?tmpxft_[0-9a-f]+_[0-9a-f]+-)");
  return std::regex_replace(log, temporary_file, "tmpxft-");
}

// The functions of C linkage a module exports (nm -D): what the runner looks up by name. The
// compiler's own (`__cudaRegisterLinkedBinary...`) are left out. Empty when nm cannot read it.
std::set<std::string> exported_functions(const fs::path& module, const fs::path& lab_work) {
  const ChildRequest request{{"nm", "-D", "--defined-only", module.string()}, {}, {protocol::env::secret},
                             (lab_work / "nm.log").string(), {}, false, {}};
  const ChildOutcome outcome = run_child(request, {60, 60});
  std::set<std::string> names;
  if (outcome.exit_code != 0) return names;
  std::istringstream lines(outcome.output_tail);
  for (std::string address, type, name; lines >> address >> type >> name;)
    if (type == "T" && name.rfind("_Z", 0) != 0 && name.rfind("__", 0) != 0) names.insert(name);
  return names;
}

// The lab's functions, the reference solution's module's exports, that the student's module
// lacks: "histogram" (or "dot and argmax"). Empty when it has them all, or when this build has
// no reference module to compare with.
std::string missing_functions(const LabSpec& lab, const ModuleSources& module, const Toolchain& tc,
                              const fs::path& lab_work) {
  const std::string suffix = module.output.substr(std::string("module").size());  // ".so", "-mpi.so"
  const fs::path reference = fs::path(tc.build_root) / "labs" / ("lab-" + lab.dir + "-solution" + suffix);
  if (!fs::exists(reference)) return {};
  const std::set<std::string> expected = exported_functions(reference, lab_work);
  const std::set<std::string> found = exported_functions(lab_work / module.output, lab_work);
  std::vector<std::string> missing;
  for (const std::string& name : expected)
    if (!found.count(name)) missing.push_back(name);
  return joined(missing, " and ");
}

// Beside a module that compiled: what it was compiled from (module_inputs).
fs::path inputs_marker(const fs::path& lab_work, const ModuleSources& module) {
  return lab_work / (module.output + ".inputs");
}

// The lab's folder, which the staged files may include from (its rubric and prose aside):
// hashed once per lab and process, as every lab-submission of a batch asks again (from the
// builders' several threads).
std::uint64_t lab_folder_hash(const LabSpec& lab, const Toolchain& tc) {
  static std::mutex mutex;
  static std::map<std::string, std::uint64_t> hashes;
  const std::lock_guard lock(mutex);
  const auto known = hashes.find(lab.dir);
  if (known != hashes.end()) return known->second;
  std::error_code ignored;
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(fs::path(tc.source_root) / "labs" / lab.dir, ignored))
    if (entry.is_regular_file() && entry.path().filename() != "lab.yaml" && entry.path().extension() != ".md")
      files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return hashes[lab.dir] = labkit::hash_files(files);
}

// What a module's code depends on: the compiler (its file's size and time: a toolkit
// installed over it changes them), the compiler's arguments, the staged files and the lab's
// folder.
std::string module_inputs(const std::vector<std::string>& argv, const LabSpec& lab, const Toolchain& tc,
                          const fs::path& lab_work, const ModuleSources& module) {
  std::error_code ignored;
  const fs::path compiler = fs::canonical(tc.nvcc, ignored);
  std::string identity = compiler.string() + " " + std::to_string(fs::file_size(compiler, ignored)) + " " +
                         std::to_string(fs::last_write_time(compiler, ignored).time_since_epoch().count()) + " " +
                         labkit::hex(lab_folder_hash(lab, tc));
  for (const std::string& argument : argv) identity += "\n" + argument;
  std::vector<std::string> files;
  for (const std::string& file : module.files) files.push_back((lab_work / "src" / file).string());
  return labkit::hex(labkit::hash_files(files, labkit::hash_bytes(identity)));
}

// Compiles staged files into a module the runner (or a program it starts) loads. A module
// compiled from the same inputs before (a lab-submission graded again: --fresh, or after its
// rubric changed) is kept instead: nvcc would write the same file, at seconds to a minute of a
// core per module; `kept` says so.
bool build_module(const LabSpec& lab, const ModuleSources& module, const Toolchain& tc, const fs::path& lab_work,
                  std::string& log, bool& kept) {
  const fs::path staged = lab_work / "src";
  std::vector<std::string> argv = {tc.nvcc, "-shared", "-Xcompiler", "-fPIC", "-O3"};
  argv.insert(argv.end(), tc.cuda_flags.begin(), tc.cuda_flags.end());
  argv.insert(argv.end(), module.nvcc_flags.begin(), module.nvcc_flags.end());  // lab.yaml `build:`
  argv.push_back("-I" + (fs::path(tc.source_root) / "labs" / lab.dir).string());
  for (const std::string& file : module.files) argv.push_back((staged / file).string());
  for (const std::string& library : module.libraries) argv.push_back("-l" + library);
  // A function declared and never defined fails here, not only once a GPU loads the module.
  // Not for `modules:`: their programs provide libraries (NCCL) when they load them.
  if (module.output == "module.so") argv.insert(argv.end(), {"-Xlinker", "--no-undefined"});
  argv.insert(argv.end(), {"-o", (lab_work / module.output).string()});

  const std::string inputs = module_inputs(argv, lab, tc, lab_work, module);
  kept = fs::exists(lab_work / module.output) && labkit::file_bytes(inputs_marker(lab_work, module).string()) == inputs;
  if (!kept) {
    std::error_code ignored;
    fs::remove(inputs_marker(lab_work, module), ignored);
    const std::string log_name = module.output == "module.so" ? "build.log" : "build-" + module.output + ".log";
    ChildRequest request{argv, {}, {protocol::env::secret}, (lab_work / log_name).string(), {}, false, {}};
    const ChildOutcome outcome = run_child(request, {build_time_limit_seconds, 2 * build_time_limit_seconds});
    log = without_grader_paths(tail(outcome.output_tail, build_log_shown_bytes), tc, lab_work);
    if (outcome.timed_out) log = "the compiler " + outcome.describe() + "\n" + log;
    if (outcome.exit_code != 0 || outcome.timed_out) return false;
    std::ofstream(inputs_marker(lab_work, module)) << inputs;
  }
  if (const std::string missing = missing_functions(lab, module, tc, lab_work); !missing.empty()) {
    log = "your files compiled, but do not define " + missing +
          ", which the lab's header declares: a function renamed, never written, or an empty file?\n";
    return false;
  }
  return true;
}

// The lab's own module must compile, or nothing is graded: false, with the compiler's
// messages in `log`. One of `modules:` that does not compile costs only its own cases (lab 13's
// part 2 must not take part 1 with it): its module is removed, a marker says why, and its
// messages go in `log`, which stays empty when everything compiled (warnings are not shown).
// The student's files are staged already. `all_kept`: every module was kept from an earlier build.
bool build_modules(const LabSpec& lab, const Toolchain& tc, const fs::path& lab_work, std::string& log,
                   bool& all_kept) {
  const std::vector<ModuleSources> modules = modules_to_build(lab, tc, lab_work);
  if (!build_module(lab, modules.front(), tc, lab_work, log, all_kept)) return false;
  log.clear();
  for (auto module = modules.begin() + 1; module != modules.end(); ++module) {
    std::error_code ignored;
    fs::remove(failed_marker(lab_work, *module), ignored);
    const std::string files = joined(module->files, ", ");
    if (!fs::exists(lab_work / "src" / module->files.front())) {
      fs::remove(lab_work / module->output, ignored);
      std::ofstream(failed_marker(lab_work, *module)) << files + " was not handed in";
      log += "note: " + files + " was not handed in: its cases score nothing\n";
      continue;
    }
    std::string messages;
    bool kept = false;
    const bool built = build_module(lab, *module, tc, lab_work, messages, kept);
    all_kept = all_kept && kept;
    if (built) continue;
    fs::remove(lab_work / module->output, ignored);
    std::ofstream(failed_marker(lab_work, *module)) << files + " did not compile (the compiler's messages are in the report)";
    log += files + part_not_compiled + ":\n" + messages;
  }
  return true;
}

// Signs of a library in the staged sources (an include) or in the compiled module (its
// mangled namespace, or a link to it).
struct LibrarySigns {
  const char* name;
  std::regex include;
  std::vector<std::string> in_module;
};

const std::vector<LibrarySigns>& library_signs() {
  static const std::vector<LibrarySigns> signs = {
      {"cub", std::regex(R"(#\s*include\s*[<"]cub/)"), {"N3cub"}},
      // CUB's own templates instantiate Thrust internals, so Thrust is recognised by its include.
      {"thrust", std::regex(R"(#\s*include\s*[<"]thrust/)"), {}},
      {"cublas", std::regex(R"(#\s*include\s*[<"]cublas_)"), {"libcublas.so", "cublasSgemm", "cublasGemmEx"}},
      {"cublasLt", std::regex(R"(#\s*include\s*[<"]cublasLt)"), {"libcublasLt", "cublasLtMatmul"}},
      {"cutlass", std::regex(R"(#\s*include\s*[<"]cutlass/)"), {"N7cutlass"}},
      {"cute", std::regex(R"(#\s*include\s*[<"]cute/)"), {"N4cute"}},
      {"nccl", std::regex(R"(#\s*include\s*[<"]nccl)"), {"libnccl", "ncclAllReduce", "ncclReduceScatter", "ncclCommInit"}},
  };
  return signs;
}

// The first forbidden library a module's rubric names that the submission uses, with where
// it was seen; empty when none.
bool forbids(const ModuleSources& module, const LibrarySigns& library) {
  return std::find(module.forbidden.begin(), module.forbidden.end(), library.name) != module.forbidden.end();
}

// A forbidden library the module's staged sources include: it names the library the student
// chose (Thrust's code contains CUB's).
std::string forbidden_include(const ModuleSources& module, const fs::path& lab_work) {
  for (const LibrarySigns& library : library_signs())
    for (const std::string& file : module.files)
      if (forbids(module, library) &&
          std::regex_search(labkit::file_bytes((lab_work / "src" / file).string()), library.include))
        return std::string(library.name) + ", included in " + file;
  return {};
}

std::string forbidden_use(const ModuleSources& module, const fs::path& lab_work) {
  if (const std::string found = forbidden_include(module, lab_work); !found.empty()) return found;
  const std::string compiled = labkit::file_bytes((lab_work / module.output).string());
  for (const LibrarySigns& library : library_signs())
    for (const std::string& sign : library.in_module)
      if (forbids(module, library) && compiled.find(sign) != std::string::npos)
        return std::string(library.name) + ", seen in the compiled code (" + sign + ")";
  return {};
}

std::string forbidden_note(const std::string& found) {
  return "uses a forbidden library, " + found + "; this lab teaches that kernel, so write it yourself";
}

// Stages the student's files, then looks for a forbidden library the lab's own module
// includes. One decides the verdict whether the files compile or not (it says more than the
// link error it may cause: cublasSgemm, never linked), so they are not compiled: CUB or Thrust
// would cost nvcc most of a minute.
std::string stage_and_find_forbidden_include(const LabSpec& lab, const std::string& student_dir,
                                             const Toolchain& tc, const fs::path& lab_work) {
  stage_student_files(lab, student_dir, lab_work);
  return forbidden_include(modules_to_build(lab, tc, lab_work).front(), lab_work);
}

std::string forbidden_use(const LabSpec& lab, const Toolchain& tc, const fs::path& lab_work) {
  for (const ModuleSources& module : modules_to_build(lab, tc, lab_work)) {
    if (!fs::exists(lab_work / module.output)) continue;  // did not compile: it never runs
    if (const std::string found = forbidden_use(module, lab_work); !found.empty()) return found;
  }
  return {};
}

}  // namespace

// The shared libraries of the rubric's forbidden ones, as the host's memory map names them:
// the runner stops any call after which one of them is mapped.
std::vector<std::string> forbidden_library_files(const LabSpec& lab) {
  static const std::map<std::string, std::string> files = {{"cublas", "libcublas"}, {"cublasLt", "libcublasLt"}, {"nccl", "libnccl"}};
  std::vector<std::string> list;
  for (const std::string& name : lab.forbidden)
    if (files.count(name)) list.push_back(files.at(name));
  return list;
}

// What a lab's reference timings depend on, by source: the harness, the lab's checks and
// rubric, its reference solution, its dataset, and the compiler flags. A rebuild of the same
// sources keeps the calibration cache; any edit starts it over.
std::string kit_fingerprint(const LabSpec& lab, const Toolchain& tc) {
  std::vector<std::string> files;
  const fs::path root(tc.source_root);
  for (const fs::path& folder : {root / "harness" / "src", root / "harness" / "include" / "labkit", root / "labs" / lab.dir,
                                 root / "solutions" / lab.dir})
    for (const auto& entry : fs::recursive_directory_iterator(folder))
      if (entry.is_regular_file()) files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  files.push_back(lab.dataset);
  std::string flags;
  for (const std::string& flag : tc.cuda_flags) flags += flag + " ";
  return labkit::hex(labkit::hash_bytes(flags, labkit::hash_files(files)));
}

bool build_lab(const LabJob& job, const Toolchain& toolchain, LabResult& result) {
  const LabSpec& lab = *job.lab;
  result = LabResult{lab.id, lab.name, lab.title};
  fs::create_directories(job.work_dir);
  if (job.student_dir.empty()) {
    result.status = LabStatus::missing_files;
    result.note = not_found_note(lab);
  } else if (const std::string refused = student_files_problem(job.student_dir, required_files(lab, job.student_dir));
             !refused.empty()) {
    result.status = LabStatus::missing_files;
    result.note = refused + " (lab not graded)";
  } else if (const std::string included =
                 stage_and_find_forbidden_include(lab, job.student_dir, toolchain, job.work_dir);
             !included.empty()) {
    result.status = LabStatus::forbidden;
    result.note = forbidden_note(included);
  } else if (!build_modules(lab, toolchain, job.work_dir, result.build_log, result.build_kept)) {
    result.status = LabStatus::build_failed;
    result.note = "your files did not build: the messages below say why";
  } else if (const std::string found = forbidden_use(lab, toolchain, job.work_dir); !found.empty()) {
    result.status = LabStatus::forbidden;
    result.note = forbidden_note(found);
  }
  if (!job.copies_note.empty()) result.build_log = "note: " + job.copies_note + "\n" + result.build_log;
  if (result.status == LabStatus::graded) {
    result.note = job.copies_note;  // kept unless the run has more to say
    return true;
  }
  score_unrun(lab, result);
  return false;
}

}  // namespace grade
