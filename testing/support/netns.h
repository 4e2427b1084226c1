// Network namespaces for test servers that must listen where a real
// cluster's API server reaches them (a kubelet's address in the node
// network namespace `scripts/kube up` makes). Plain functions.
#pragma once

#include <functional>
#include <string>

#include "common/status.h"

namespace fairbench::testing {

// Runs `f` on this thread inside network namespace `netns` (a name under
// /run/netns, or a path), then back in this one. Sockets made meanwhile
// stay in `netns` whichever thread uses them later. Aborts the process if
// the thread cannot return to its own namespace.
Status InNetns(const std::string& netns, const std::function<void()>& f);

}  // namespace fairbench::testing
