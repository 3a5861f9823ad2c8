// What a person at a terminal sees while a lab runs: one status line, fed by the runner's
// progress records.
#pragma once

#include "catalog.h"
#include "runner_client.h"

#include <cstddef>
#include <cstdio>
#include <string>

namespace grade {

// What a person at a terminal sees while a lab runs: one status line on stderr, rewritten in
// place, and gone when the lab is done. Off, it prints nothing (CI logs, batches, pipes).
class LiveLine {
public:
  explicit LiveLine(bool on) : on_(on) {}
  ~LiveLine() { clear(); }
  LiveLine(const LiveLine&) = delete;
  LiveLine& operator=(const LiveLine&) = delete;

  void show(const std::string& text) {
    if (!on_) return;
    constexpr std::size_t width = 100;  // fits a terminal without wrapping, which would break \r
    std::fprintf(stderr, "\r\033[K%s", text.substr(0, width).c_str());
    std::fflush(stderr);
    shown_ = true;
  }
  void clear() {
    if (!on_ || !shown_) return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    shown_ = false;
  }

private:
  bool on_;
  bool shown_ = false;
};

// "lab 01 histogram"
std::string lab_label(const LabSpec& lab);

// Turns the runner's progress records into "case k of n" and "timing case X" lines.
RecordHandler case_progress(LiveLine& live, const LabSpec& lab, std::size_t correctness_cases);

}  // namespace grade
