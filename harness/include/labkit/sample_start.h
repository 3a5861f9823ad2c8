// What a timed sample starts from, made by whichever process the sample's layout calls for
// (labkit/timing.h): the L2 flushed, and the GPUs switched to the process that times the call.
#pragma once

#include <cuda_runtime.h>

namespace labkit {

// Resets persisting L2 lines, then writes a buffer of twice the L2 size on `stream` (current
// device), which evicts whatever the previous sample left there; returns once it is enqueued.
void flush_l2(cudaStream_t stream);

// Runs an empty kernel on every device and waits for it: the GPUs switch to this process's
// context now, not inside a call timed by a host clock. Device 0 is current afterwards.
void wake_every_device();

}  // namespace labkit
