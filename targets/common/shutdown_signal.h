// Shutdown signals for the target servers: SIGTERM and SIGINT are taken by
// one thread with sigwait(), not by an asynchronous handler, so that the
// server can be stopped with ordinary (non-async-signal-safe) code.
//
// Call BlockShutdownSignals() first thing in main(), before any thread is
// started (threads inherit the mask), and ignore SIGPIPE there too: a
// client that goes away must cost an EPIPE, not the process.
#pragma once

namespace fairbench::targets {

void BlockShutdownSignals();
// Blocks until SIGTERM or SIGINT arrives; returns which.
int WaitForShutdownSignal();

}  // namespace fairbench::targets
