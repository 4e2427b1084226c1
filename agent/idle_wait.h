// Choosing how a load worker waits when nothing is ready (IdleWait,
// common/metrics.h): what a setting (IdleWaitMode, common/protocol.h:
// --idle-wait, a LoadJob's idle_wait, a BenchmarkRun's load.idleWait) and
// in particular "auto" becomes for a given target.
//
// "auto" naps when the target shares this machine (its address is a
// loopback address or one of this machine's interfaces' addresses): only
// then does the server's send pay the wake-up of a sleeping generator.
// A target on another machine is woken for by the network card's
// interrupt, so auto blocks there. Pure functions but IsThisMachine, which
// reads the interfaces (getifaddrs) once per call: call it before the load.
#pragma once

#include "agent/url.h"
#include "common/metrics.h"
#include "common/protocol.h"

namespace fairbench::agent {

// Whether `addr` is an address of this machine: loopback (127.0.0.0/8,
// ::1, ::ffff:127.0.0.0/104) or an address of one of its interfaces.
bool IsThisMachine(const SocketAddress& addr);

// The setting made concrete for a target at `target`.
IdleWait ResolveIdleWait(IdleWaitMode setting, const SocketAddress& target);

}  // namespace fairbench::agent
