// Every lab in the kit is complete and consistent: rubric, dataset, student files and their
// mirror in solutions/.
#include "catalog.h"
#include "labkit/dataset.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>

namespace fs = std::filesystem;

namespace {

void write(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text;
}

// A copy of the kit's labs/ holding lab 01 alone, as labs/01-histogram/.
fs::path kit_with_lab_01(const std::string& name) {
  const fs::path kit = fs::temp_directory_path() / ("labkit-test-catalog-" + name);
  fs::remove_all(kit);
  fs::create_directories(kit / "labs");
  fs::copy(fs::path(LABKIT_TEST_SOURCE_ROOT) / "labs" / "01-histogram", kit / "labs" / "01-histogram",
           fs::copy_options::recursive);
  return kit;
}

}  // namespace

TEST_SUITE("catalog") {
  TEST_CASE("every lab's rubric, dataset and files agree") {
    const auto labs = grade::load_catalog(LABKIT_TEST_SOURCE_ROOT);
    REQUIRE(!labs.empty());
    for (const grade::LabSpec& lab : labs) {
      CAPTURE(lab.dir);
      const labkit::Dataset dataset = labkit::load_dataset(lab.dataset);
      CHECK(!dataset.correctness.empty());
      CHECK(lab.correctness_points > 0);
      std::set<std::string> names;
      for (const auto& c : dataset.correctness) CHECK_MESSAGE(names.insert(c.name).second, "duplicate case " << c.name);
      std::set<std::string> performance_names;
      for (const auto& c : dataset.performance) performance_names.insert(c.name);
      for (const auto& p : lab.performance) {
        CHECK_MESSAGE(performance_names.count(p.case_name), "rubric names a case the dataset lacks: " << p.case_name);
        CHECK(p.zero_credit_ratio < p.full_credit_ratio);
      }
      for (const std::string& file : lab.student_files) {
        CHECK_MESSAGE(fs::exists(fs::path(LABKIT_TEST_SOURCE_ROOT) / "labs" / lab.dir / file), file);
        CHECK_MESSAGE(fs::exists(fs::path(LABKIT_TEST_SOURCE_ROOT) / "solutions" / lab.dir / file),
                      "solutions/ must mirror the student file " << file);
      }
      CHECK(fs::exists(fs::path(LABKIT_TEST_SOURCE_ROOT) / "labs" / lab.dir / "README.md"));
    }
  }

  // Apart from the performance cases' names, no rubric can name a benchmark case: a rubric
  // names performance cases only (above).
  TEST_CASE("the cases a lab's benchmark times have a name each") {
    for (const grade::LabSpec& lab : grade::load_catalog(LABKIT_TEST_SOURCE_ROOT)) {
      CAPTURE(lab.dir);
      std::set<std::string> names;
      for (const auto& c : labkit::benchmark_cases(labkit::load_dataset(lab.dataset)))
        CHECK_MESSAGE(names.insert(c.name).second, "the benchmark times two cases named " << c.name);
    }
  }

  TEST_CASE("a lab's extra build flags are read from lab.yaml") {
    const auto labs = grade::load_catalog(LABKIT_TEST_SOURCE_ROOT);
    const grade::LabSpec& quicksort = grade::find_lab(labs, "quicksort");
    CHECK(quicksort.nvcc_flags == std::vector<std::string>{"-rdc=true"});
    CHECK(quicksort.link_libraries == std::vector<std::string>{"cudadevrt"});
    const grade::LabSpec& histogram = grade::find_lab(labs, "histogram");
    CHECK(histogram.nvcc_flags.empty());
    CHECK(histogram.link_libraries.empty());
  }

  TEST_CASE("labs are found by number, name or folder") {
    const auto labs = grade::load_catalog(LABKIT_TEST_SOURCE_ROOT);
    CHECK(grade::find_lab(labs, "01").dir == "01-histogram");
    CHECK(grade::find_lab(labs, "1").dir == "01-histogram");
    CHECK(grade::find_lab(labs, "histogram").dir == "01-histogram");
    CHECK(grade::find_lab(labs, "01-histogram").dir == "01-histogram");
    CHECK_THROWS_WITH(grade::find_lab(labs, "99"), doctest::Contains("the labs are: 01-histogram"));
  }

  TEST_CASE("the contract's functions are its header's extern \"C\" declarations, in order") {
    const auto labs = grade::load_catalog(LABKIT_TEST_SOURCE_ROOT);
    CHECK(grade::find_lab(labs, "01").contract == "histogram.h");
    CHECK(grade::find_lab(labs, "01").contract_functions == std::vector<std::string>{"histogram"});
    CHECK(grade::find_lab(labs, "02").contract_functions == std::vector<std::string>{"dot", "argmax", "argmax_float"});
    CHECK(grade::find_lab(labs, "03").contract_functions == std::vector<std::string>{"topk", "topk_managed"});
    CHECK(grade::find_lab(labs, "03").student_files == std::vector<std::string>{"topk.cu", "topk_managed.cu"});
    CHECK(grade::find_lab(labs, "12").contract_functions == std::vector<std::string>{"gauss_solve", "time_peer_copy"});
    const fs::path dir = fs::temp_directory_path() / "labkit-test-contract";
    write(dir / "ok.h", "// extern \"C\" void not_this(int);\n/* extern \"C\" void nor_this(int); */\n"
                        "extern \"C\" size_t temp_bytes(size_t n);\n"
                        "extern \"C\" const char*\n  spread_over_lines (const float* d_in,\n  size_t n);\n");
    CHECK(grade::contract_functions((dir / "ok.h").string()) == std::vector<std::string>{"temp_bytes", "spread_over_lines"});
    write(dir / "block.h", "extern \"C\" {\nvoid hidden(int);\n}\n");
    CHECK_THROWS_WITH(grade::contract_functions((dir / "block.h").string()), doctest::Contains("not in an `extern"));
    write(dir / "none.h", "void plain(int);\n");
    CHECK_THROWS_WITH(grade::contract_functions((dir / "none.h").string()), doctest::Contains("declares no"));
    fs::remove_all(dir);
  }

  TEST_CASE("what the build needs of a lab is in its folder and its lab.yaml") {
    const auto labs = grade::load_catalog(LABKIT_TEST_SOURCE_ROOT);
    const grade::LabSpec& histogram = grade::find_lab(labs, "01");
    CHECK(histogram.checks == "test_histogram.cu");
    CHECK(histogram.bench == "bench_histogram.cu");
    CHECK(histogram.checks_libraries.empty());
    const grade::LabSpec& matmul = grade::find_lab(labs, "04");
    CHECK(matmul.checks_libraries == std::vector<std::string>{"cublas"});
    CHECK(matmul.bench_libraries == std::vector<std::string>{"cublas"});
    const grade::LabSpec& allreduce = grade::find_lab(labs, "13");
    CHECK(allreduce.checks_libraries.empty());
    REQUIRE(allreduce.modules.size() == 1);
    CHECK(allreduce.modules[0].loader_libraries == std::vector<std::string>{"nccl"});
  }

  TEST_CASE("the catalog as Meson reads it: KEY=VALUE lines") {
    const std::string text = grade::catalog_key_values(grade::catalog_json(grade::load_catalog(LABKIT_TEST_SOURCE_ROOT)));
    CHECK(text.rfind("labs=01-histogram 02-dot-product ", 0) == 0);
    for (const char* line : {"01-histogram.checks=test_histogram.cu\n", "01-histogram.contract=histogram.h\n",
                             "02-dot-product.contract_functions=dot argmax argmax_float\n", "01-histogram.modules=\n",
                             "10-quicksort.nvcc_flags=-rdc=true\n", "10-quicksort.link_libraries=cudadevrt\n",
                             "04-matmul.kit_libraries.checks=cublas\n", "12-gauss-multi-gpu.min_gpus=2\n",
                             "12-gauss-multi-gpu.module_files=gauss.cu peer_copy.cu\n",
                             "13-allreduce.modules=mpi\n", "13-allreduce.modules.mpi.files=mpi_allreduce.cu\n",
                             "13-allreduce.modules.mpi.loader=lab-13-allreduce-mpi-rank\n"})
      CHECK_MESSAGE(text.find(line) != std::string::npos, line);
  }

  TEST_CASE("a lab copied under a new number is found, with no list to add it to") {
    const fs::path kit = kit_with_lab_01("new-lab");
    const fs::path lab = kit / "labs" / "14-throwaway";
    fs::copy(kit / "labs" / "01-histogram", lab, fs::copy_options::recursive);
    fs::rename(lab / "test_histogram.cu", lab / "test_throwaway.cu");
    fs::remove(lab / "bench_histogram.cu");
    std::ofstream(lab / "histogram.h", std::ios::app) << "extern \"C\" void throwaway_extra(int n, cudaStream_t stream);\n";
    const auto labs = grade::load_catalog(kit.string());
    REQUIRE(labs.size() == 2);
    const grade::LabSpec& found = grade::find_lab(labs, "14");
    CHECK(found.dir == "14-throwaway");
    CHECK(found.name == "throwaway");
    CHECK(found.checks == "test_throwaway.cu");
    CHECK(found.bench == "");
    CHECK(found.contract_functions == std::vector<std::string>{"histogram", "throwaway_extra"});
    CHECK(found.student_files == std::vector<std::string>{"histogram.cu"});
    const std::string text = grade::catalog_key_values(grade::catalog_json(labs));
    CHECK(text.find("labs=01-histogram 14-throwaway\n") != std::string::npos);
    CHECK(text.find("14-throwaway.contract_functions=histogram throwaway_extra\n") != std::string::npos);
    // What a copy gets wrong is named, with the lab.yaml it is in.
    fs::copy_file(lab / "test_throwaway.cu", lab / "test_second.cu");
    CHECK_THROWS_WITH(grade::load_catalog(kit.string()), doctest::Contains("checks are one test_*.cu"));
    fs::remove(lab / "test_second.cu");
    write(lab / "lab.yaml", "title: t\ndataset: d.yaml\nstudent_files: [histogram.cu]\ncorrectness: {points: 100}\n");
    CHECK_THROWS_WITH(grade::load_catalog(kit.string()), doctest::Contains("14-throwaway/lab.yaml: no `contract:`"));
    fs::remove_all(kit);
  }
}
