// `grade board`: the class speed board. Per lab, the submissions that are correct (every
// correctness case passed) and were timed on every performance case, ranked by their ratio
// against the reference, beside the library's ratio where the lab times one. It is read from
// a finished batch's output (gradebook.csv and students/WHO.json): nothing is measured again.
// Students opt in: only those to whom the roster gives a handle are shown, under it; the rest
// are counted, never named.
#pragma once

#include "model.h"
#include "roster.h"

#include <optional>
#include <string>
#include <vector>

namespace grade {

struct BoardEntry {
  int rank = 0;                     // 1 is the fastest; equal ratios share a rank
  std::string handle;
  double ratio = 0;                 // geometric mean of case_ratios
  std::vector<double> case_ratios;  // reference time / the submission's, per case of LabBoard::cases
  std::string gpu;                  // where it was timed
};

// The library that does the lab's job (CUB, cuBLAS), timed with the reference: its ratio is
// reference time / library time, the median over the batch's records of each case.
struct LibraryOnBoard {
  std::vector<std::string> names;                  // per case; empty where the case has none
  std::vector<std::optional<double>> case_ratios;  // per case
  std::optional<double> ratio;  // geometric mean, only where every case has the library
  std::string name() const;     // the names, each once: "cub::DeviceRadixSort::SortKeys"
};

struct LabBoard {
  std::string id, name, title;
  std::vector<std::string> cases;  // the lab's performance cases, in its order
  std::vector<BoardEntry> entries;  // the fastest first
  std::optional<LibraryOnBoard> library;
  std::size_t submissions = 0;        // in the batch, this lab graded or not
  std::size_t correct_and_timed = 0;  // shown or not: those without a handle are only counted
  std::vector<std::string> gpus;      // the GPUs the shown entries were timed on, each once
};

// Whether a lab-submission belongs on a board: graded, every correctness case passed and every
// performance case timed with its credit (not one the grader judged faster than memory allows,
// nor one that skipped the lesson). One case not run (no MPI here, a part not handed in) keeps
// it off: the ratios of different sets of cases do not compare.
bool on_board(const LabResult& lab);

// Per lab of the reports (by id), the board; students without a handle in `roster`
// are left off.
std::vector<LabBoard> speed_boards(const std::vector<Report>& reports, const Roster& roster);

// A row per entry and lab: lab, rank, handle, ratio, library, library_ratio (blank where the
// lab has none or not on every case).
std::string board_csv(const std::vector<LabBoard>& boards);

// Every lab's board in one self-contained file, in the look of the HTML reports: per lab a
// table of rank, handle and ratio (with a bar), each case's ratio, and the library's row where
// its ratio falls.
std::string board_html(const std::vector<LabBoard>& boards, const std::string& class_name);

// A line per lab for the console: how many are correct and timed, how many shown, the first.
std::string board_summary(const std::vector<LabBoard>& boards);

// The reports a batch wrote under `results_dir`: students/WHO.json of the students its
// gradebook.csv lists (a file left from an earlier class in the same folder is not read).
// Throws BadInput when the folder holds no gradebook.csv or a file cannot be read.
std::vector<Report> read_batch_results(const std::string& results_dir);

// board.html and board.csv under out_dir from the batch under results_dir; returns the
// console's summary.
std::string write_board(const std::string& results_dir, const Roster& roster, const std::string& out_dir);

}  // namespace grade
