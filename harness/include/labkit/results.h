// The result channel between a lab runner and the grader: JSON lines on a file descriptor
// the grader opened and named in LABKIT_RESULT_FD, each stamped with the grader's token.
// The runner reads both variables and removes them from its environment before loading
// any student code, so printed output and student code cannot speak on the channel.
#pragma once

#include <nlohmann/json.hpp>

namespace labkit {

void open_result_channel_from_environment();
void emit_result(nlohmann::json record);  // adds the token; does nothing without a channel

}  // namespace labkit
