// `grade profile`: ncu's command line and the reading of its CSV (raw page), with the kit's
// own kernels left out, and the side-by-side summary.
#include "profile.h"

#include <doctest/doctest.h>

#include <algorithm>

namespace {

// ncu --csv --page raw --print-units base, as Nsight Compute 2025 writes it for lab 01's
// starter, with the host's shared-memory poisoner among the kernels.
constexpr const char* student_csv = R"csv(==PROF== Connected to process 4242 (/build/labs/lab-01-histogram-host)
==PROF== Profiling "histogram_global_atomics_kernel" - 0: 0%....50%....100% - 38 passes
==PROF== Disconnected from process 4242
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","dram__throughput.avg.pct_of_peak_sustained_elapsed","gpu__time_duration.sum","l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum","l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum","launch__registers_per_thread","lts__t_sectors_op_atom.sum","lts__t_sectors_op_red.sum","sm__maximum_warps_per_active_cycle_pct","sm__warps_active.avg.pct_of_peak_sustained_active","smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio","smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio","smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio","smsp__average_warps_issue_stalled_selected_per_issue_active.ratio"
"","","","","","","","","","","","%","ns","","","register/thread","sector","sector","%","%","","","",""
"0","4242","lab-01-histogram-host","127.0.0.1","(anonymous namespace)::fill_shared_memory_kernel(unsigned int, unsigned long)","1","13","(1024, 1, 1)","(132, 1, 1)","0","9.0","0.10","4,096","0","0","16","0","0","100","98.0","0","0","0","1"
"1","4242","lab-01-histogram-host","127.0.0.1","(anonymous namespace)::histogram_global_atomics_kernel(const unsigned char *, unsigned long, unsigned int *)","1","13","(256, 1, 1)","(264, 1, 1)","0","9.0","2.35","12,345,678","0","0","18","0","104,857,600","100","96.1","0","21.5","3.2","1"
)csv";

constexpr const char* reference_csv = R"csv("ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","dram__throughput.avg.pct_of_peak_sustained_elapsed","gpu__time_duration.sum","l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum","sm__warps_active.avg.pct_of_peak_sustained_active","smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"
"","","","","","","","","","","","%","us","","%",""
"0","77","lab-01-histogram-host","127.0.0.1","void histogram_private_kernel<4>(const unsigned char *, unsigned long, unsigned int *)","1","13","(512, 1, 1)","(132, 1, 1)","0","9.0","91.0","60.5","1,200","71.0","5.5"
"1","77","lab-01-histogram-host","127.0.0.1","merge_kernel(unsigned int *)","1","13","(256, 1, 1)","(1, 1, 1)","0","9.0","0.5","2.0","0","3.0","1.0"
)csv";

}  // namespace

TEST_SUITE("profile") {
  TEST_CASE("ncu's CSV: one entry per kernel of the code under study, in base units") {
    const auto kernels = grade::profile::parse_csv(student_csv);
    REQUIRE(kernels.size() == 1);  // the kit's fill_shared_memory_kernel is left out
    CHECK(kernels[0].name == "histogram_global_atomics_kernel");
    CHECK(kernels[0].value("gpu__time_duration.sum") == doctest::Approx(12345678));
    CHECK(kernels[0].value("lts__t_sectors_op_red.sum") == doctest::Approx(104857600));
    CHECK(kernels[0].value("sm__warps_active.avg.pct_of_peak_sustained_active") == doctest::Approx(96.1));
    CHECK(kernels[0].value("no_such_metric") < 0);
  }

  TEST_CASE("times in other units are brought to nanoseconds; template names are kept") {
    const auto kernels = grade::profile::parse_csv(reference_csv);
    REQUIRE(kernels.size() == 2);
    CHECK(kernels[0].name == "histogram_private_kernel<4>");
    CHECK(kernels[0].value("gpu__time_duration.sum") == doctest::Approx(60500));
  }

  TEST_CASE("the side-by-side summary and what to look at") {
    const std::string text = grade::profile::side_by_side(grade::profile::parse_csv(student_csv),
                                                          grade::profile::parse_csv(reference_csv), "Lab 01");
    CHECK(text.find("histogram_global_atomics_kernel") != std::string::npos);
    CHECK(text.find("12.346 ms") != std::string::npos);
    CHECK(text.find("2.4%") != std::string::npos);   // your DRAM throughput
    CHECK(text.find("91.0%") != std::string::npos);  // the reference's
    CHECK(text.find("lg_throttle") != std::string::npos);
    CHECK(text.find("long_scoreboard") != std::string::npos);
    CHECK(text.find("What to look at") != std::string::npos);
    CHECK(text.find("atomic sectors reach L2") != std::string::npos);
    CHECK(text.find("memory-bound, so keep more bytes in flight") != std::string::npos);  // not cut short
  }

  TEST_CASE("ncu's command line: CSV of the raw page, base units, the metrics, a log per host start") {
    const auto argv = grade::profile::command("/cuda/bin/ncu", "/w/yours-{start}.log", false);
    CHECK(argv.front() == "/cuda/bin/ncu");
    const auto metrics = std::find(argv.begin(), argv.end(), "--metrics");
    REQUIRE(metrics != argv.end());
    CHECK((metrics + 1)->find("gpu__time_duration.sum") != std::string::npos);
    CHECK((metrics + 1)->find("regex:^smsp__average_warps_issue_stalled_") != std::string::npos);
    CHECK(std::find(argv.begin(), argv.end(), "--csv") != argv.end());
    CHECK(std::find(argv.begin(), argv.end(), "/w/yours-{start}.log") != argv.end());
    const auto core = grade::profile::command("ncu", "l", true);
    CHECK(std::find_if(core.begin(), core.end(), [](const std::string& a) { return a.find("regex:") != std::string::npos; }) ==
          core.end());
  }

  TEST_CASE("no permission to profile is named, with the way out") {
    const std::string denied =
        "==PROF== Connected to process 1 (/x/lab-01-histogram-host)\n"
        "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters "
        "on the target device 0.\n";
    CHECK(grade::profile::problem(denied).find("ERR_NVGPUCTRPERM") != std::string::npos);
    CHECK(grade::profile::problem(student_csv).empty());
    CHECK(grade::profile::rejected_a_metric("==ERROR== Failed to find metric sm__nonsense"));
  }
}
