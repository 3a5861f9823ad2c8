// The GPUs' lock files (LABKIT_GPU_LOCK): the grader may run several labs on one GPU at once,
// and a runner holds its GPUs' locks shared while it checks correctness and exclusive while it
// times. A lock that cannot be taken is an error, never skipped: skipping it would silently let
// another lab's checks run beside a timed call.
#pragma once

#include <string>
#include <vector>

namespace labkit {

// Opens (creating them) the lock files of `paths`, separated by ':' (empty entries ignored).
// Throws std::runtime_error naming the file and the reason when one cannot be opened.
std::vector<int> open_gpu_locks(const std::string& paths);

// flock(2)s every descriptor `how` (LOCK_SH, LOCK_EX), waiting as long as it takes. Throws
// std::runtime_error naming the reason when one cannot be locked.
void lock_gpus(const std::vector<int>& fds, int how);

}  // namespace labkit
