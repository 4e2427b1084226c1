// Loopback ports for tests: find one that is free, wait until one accepts.
//
// FreeLoopbackPort() finds a port that binds now on every address of this
// machine (so a server may take it on 127.0.0.1 or on 0.0.0.0, and no
// other address holds it: a real kubelet's on 198.18.N.1), below the
// kernel's ephemeral range (no outgoing connection takes it as its source
// port), and releases it at once, so another test may still pick it before
// the caller binds: callers that can let the server pick (port 0) and
// report its port should prefer that. Thread-safe (no shared state).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "common/status.h"

namespace fairbench::testing {

Result<uint16_t> FreeLoopbackPort();

// Whether a TCP port binds now on the wildcard address, that is on no
// address of this machine is it bound (FreeLoopbackPort's check).
bool PortFreeOnEveryAddress(uint16_t port);

// Connects repeatedly until a TCP connection to host:port succeeds (then
// closes it) or `timeout` passes (DeadlineExceeded). host is a numeric IPv4
// or IPv6 address. Each successful probe is a real connection the server
// sees (and counts, if it counts connections).
Status WaitForPort(const std::string& host, uint16_t port, std::chrono::milliseconds timeout);

// True if something accepts TCP connections on host:port right now.
bool PortAccepts(const std::string& host, uint16_t port);

}  // namespace fairbench::testing
