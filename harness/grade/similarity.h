// `grade similarity`: which submissions of a class share code, lab by lab. The matching is
// Debian's similarity-tester (sim_c++), which compares token streams, so renamed variables,
// new comments and a new layout still match. What the kit handed out is no one's copy: the
// passages of each submission that sim_c++ finds in the lab's starter are blanked before the
// submissions are compared with each other.
#pragma once

#include "batch.h"
#include "catalog.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace grade {

// One submission's student files of one lab, one after another, as they were compared.
struct ComparedCopy {
  std::string who;
  std::vector<std::string> lines;    // the files' lines, in the lab's order
  std::vector<std::string> origins;  // per line, where it comes from: "histogram.cu:12"
  std::vector<bool> from_starter;    // per line: in a passage of the starter, so left out
};

// A passage two copies share: lines of each (counted from 1, as in ComparedCopy::lines) and
// the tokens sim_c++ matched.
struct SharedPassage {
  int first_from = 0, first_to = 0;
  int second_from = 0, second_to = 0;
  int tokens = 0;
};

struct SimilarPair {
  std::size_t first = 0, second = 0;  // in LabSimilarity::copies
  double first_percent = 0;           // how much of the first copy's code is in the second's
  double second_percent = 0;          // and the other way round
  int tokens = 0;                     // in all its passages
  std::vector<SharedPassage> passages;
  double shared_percent() const { return std::max(first_percent, second_percent); }
};

struct LabSimilarity {
  const LabSpec* lab = nullptr;
  std::vector<ComparedCopy> copies;
  std::vector<std::string> left_out;  // "alice: student files not found (expected: ...)"
  std::vector<SimilarPair> pairs;     // the most shared first
};

// sim_c++'s path, or empty when similarity-tester is not installed.
std::string find_similarity_tester();

// Compares the lab's student files of every submission (found as a batch finds them) with
// sim_c++ (`sim`), in `work_dir` (emptied first). Submissions without the lab's files, or with
// files the batch would refuse, are left out and named in `left_out`. Throws when sim_c++ fails.
LabSimilarity compare_submissions(const LabSpec& lab, const std::vector<Submission>& submissions,
                                  const std::string& sim, const std::string& work_dir);

// A row per pair, the most shared first: rank, the two submissions, each one's share of its
// code found in the other (%), the tokens and passages they share.
std::string similarity_csv(const LabSimilarity& lab);

// The ranked pairs, then the passages of the first pairs side by side; one self-contained file.
std::string similarity_html(const LabSimilarity& lab, const std::string& class_name);

// The lab's line on the console: how many were compared and left out, and the first pairs.
std::string similarity_summary(const LabSimilarity& lab, std::size_t pairs_named);

// What sim_c++ prints, read back. `-n` runs: "a.cu: line 3-20 |b.cu: line 5-22 [45]", one
// per passage, with the two files' names.
struct SimRun {
  std::string first, second;
  SharedPassage passage;
};
std::vector<SimRun> parse_sim_runs(const std::string& text);
// `-p` percentages: "b.cu consists for 87 % of a.cu material" → {{"b.cu", "a.cu"}, 87}.
std::map<std::pair<std::string, std::string>, double> parse_sim_percentages(const std::string& text);

}  // namespace grade
