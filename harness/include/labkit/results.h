// The result channel between a lab runner and the grader: JSON lines (labkit/protocol.h's
// records) on a file descriptor the grader opened and named in LABKIT_RESULT_FD, each stamped
// with the grader's token. The runner reads both variables and removes them from its
// environment before loading any student code, so printed output and student code cannot
// speak on the channel. Only the runner writes records: a lab's checks report through
// labkit/lab.h (verdict, not_run, measure_performance).
#pragma once

#include "labkit/protocol.h"

namespace labkit {

void open_result_channel_from_environment();
void emit_result(const protocol::Record& record);  // adds the token; does nothing without a channel

}  // namespace labkit
