// `grade`'s exit statuses (labkit/exit_status.h): a run of one's own labs says whether every
// check passed; a batch says whether every lab-submission was graded, not how the students
// did; the user's mistakes are named and are theirs (2), never "the kit failed".
#include "bad_input.h"
#include "catalog.h"
#include "labkit/exit_status.h"
#include "model.h"
#include "report/gradebook_csv.h"

#include <doctest/doctest.h>

namespace exit_status = labkit::protocol::exit_status;

namespace {

grade::LabResult lab_with(grade::LabStatus status, grade::Outcome outcome = grade::Outcome::passed) {
  grade::LabResult lab{"01", "histogram", "Histogram"};
  lab.status = status;
  grade::CaseResult c{"uniform-257", "correctness"};
  c.outcome = outcome;
  c.max_points = 10;
  c.points = outcome == grade::Outcome::passed ? 10 : 0;
  lab.cases = {c};
  grade::add_totals(lab);
  return lab;
}

grade::Report report_of(std::vector<grade::LabResult> labs) {
  grade::Report report{"alice", "student files", std::move(labs)};
  grade::add_totals(report);
  return report;
}

}  // namespace

TEST_SUITE("exit status") {
  TEST_CASE("one's own labs: 0 all passed, 1 something failed, 3 something could not run, 4 the kit") {
    CHECK(grade::exit_status_of(report_of({lab_with(grade::LabStatus::graded)})) == exit_status::ok);
    CHECK(grade::exit_status_of(report_of({lab_with(grade::LabStatus::graded, grade::Outcome::failed)})) ==
          exit_status::failed);
    CHECK(grade::exit_status_of(report_of({lab_with(grade::LabStatus::build_failed, grade::Outcome::not_run)})) ==
          exit_status::failed);
    CHECK(grade::exit_status_of(report_of({lab_with(grade::LabStatus::not_run, grade::Outcome::not_run)})) ==
          exit_status::not_run);
    // A part of a lab that did not compile (lab 13's mpi_allreduce.cu) is a build error, found
    // with or without a GPU, like the lab's own.
    for (const grade::LabStatus status : {grade::LabStatus::graded, grade::LabStatus::not_run}) {
      grade::LabResult part_broken = lab_with(status, grade::Outcome::not_run);
      part_broken.build_log = std::string("mpi_allreduce.cu") + grade::part_not_compiled + ":\nmpi_allreduce.cu(1): error";
      CHECK(grade::exit_status_of(report_of({part_broken})) == exit_status::failed);
    }
    // A failure outweighs what could not run; a kit fault outweighs everything.
    CHECK(grade::exit_status_of(report_of({lab_with(grade::LabStatus::not_run, grade::Outcome::not_run),
                                           lab_with(grade::LabStatus::graded, grade::Outcome::failed)})) ==
          exit_status::failed);
    CHECK(grade::exit_status_of(report_of({lab_with(grade::LabStatus::graded, grade::Outcome::failed),
                                           lab_with(grade::LabStatus::kit_fault, grade::Outcome::not_run)})) ==
          exit_status::kit_fault);
  }

  TEST_CASE("a batch: the students' failures are data (0); 3 when some could not run; 4 when the kit failed") {
    const std::vector<grade::Report> graded = {
        report_of({lab_with(grade::LabStatus::graded, grade::Outcome::failed)}),
        report_of({lab_with(grade::LabStatus::build_failed, grade::Outcome::not_run)}),
        report_of({lab_with(grade::LabStatus::missing_files, grade::Outcome::not_run)}),
        report_of({lab_with(grade::LabStatus::run_failed, grade::Outcome::failed)}),
        report_of({lab_with(grade::LabStatus::forbidden, grade::Outcome::failed)}),
        report_of({lab_with(grade::LabStatus::graded)})};
    CHECK(grade::batch_exit_status(graded) == exit_status::ok);

    std::vector<grade::Report> some_not_run = graded;
    some_not_run.push_back(report_of({lab_with(grade::LabStatus::not_run, grade::Outcome::not_run)}));
    CHECK(grade::batch_exit_status(some_not_run) == exit_status::not_run);

    std::vector<grade::Report> kit_failed = some_not_run;
    kit_failed.push_back(report_of({lab_with(grade::LabStatus::kit_fault, grade::Outcome::not_run)}));
    CHECK(grade::batch_exit_status(kit_failed) == exit_status::kit_fault);
  }

  TEST_CASE("a lab is found by number, name, folder name or folder; an unknown one is the user's mistake") {
    const auto labs = grade::load_catalog(LABKIT_TEST_SOURCE_ROOT);
    for (const std::string key : {"01", "1", "histogram", "01-histogram", "labs/01-histogram", "labs/01-histogram/",
                                  "./labs/01-histogram", "solutions/01-histogram/"}) {
      CAPTURE(key);
      CHECK(grade::find_lab(labs, key).dir == "01-histogram");
    }
    CHECK_THROWS_AS(grade::find_lab(labs, "99"), grade::BadInput);
    CHECK_THROWS_AS(grade::find_lab(labs, "labs/99-nothing"), grade::BadInput);
    try {
      grade::find_lab(labs, "99");
    } catch (const grade::BadInput& error) {
      CHECK(std::string(error.what()).find("no lab '99'; the labs are: 01-histogram") == 0);
    }
  }

  TEST_CASE("the gradebook and the JSON report say whether an instructor's secret changed the inputs") {
    grade::Report with = report_of({lab_with(grade::LabStatus::graded)});
    with.secret_used = true;
    grade::Report without = report_of({lab_with(grade::LabStatus::graded)});
    without.who = "bob";
    const auto labs = grade::load_catalog(LABKIT_TEST_SOURCE_ROOT);
    const std::string csv = grade::gradebook_csv({with, without}, {grade::find_lab(labs, "01")});
    CHECK(csv.find("student,lab01-histogram,total,max,secret,notes\n") == 0);
    CHECK(csv.find("\nalice,10,10,10,yes,\n") != std::string::npos);
    CHECK(csv.find("\nbob,10,10,10,no,\n") != std::string::npos);
    CHECK(grade::to_json(with).at("secret_used") == true);
    CHECK(grade::to_json(without).at("secret_used") == false);
  }
}
