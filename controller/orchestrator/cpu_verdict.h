// JudgeCpus: were a target's CPUs its own? From what was read inside the
// target (TargetCpuFacts: its CPU list, its machine's online CPUs, its
// quota, its memory limit, the kernel's boot id), what it asked for, the
// agents' own views (their Hello) and the controller's, and its node's
// kubelet CPU manager policy — the status.cpus entry of the target.
//
//   asManyAsAsked       it may run on exactly the whole CPUs it asked for
//                       (False for a fractional request: no CPUs of its own)
//   disjointFromAgents  no agent on the same kernel (same boot id) may run on
//                       one of its CPUs; agents on other machines are
//                       disjoint by construction
//   exclusive           True only where something keeps every other process
//                       off its CPUs and the facts agree: a kubelet with the
//                       static CPU manager policy, whole CPUs, as many as
//                       asked, no agent nor the controller beside it. False
//                       with evidence of sharing: an agent or the controller
//                       on one of its CPUs, every CPU of its machine while it
//                       asked for fewer, more CPUs than asked, or a kubelet
//                       whose policy is not static. Unknown otherwise (not
//                       read; the policy not read; the local and Docker
//                       platforms, where only fairbench's own pinning keeps
//                       its agents off — other processes are not kept off).
//
// A cell of a target judged exclusive False is flagged SharedCpus; with
// spec.placement.requireExclusiveCpus, a target not judged True fails its
// cells with CpusNotExclusive (CpusNotExclusiveMessage).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/benchmark_run.h"
#include "common/cpu_view.h"
#include "controller/hub/agent_pool.h"
#include "controller/platform/platform.h"

namespace fairbench::controller {

api::TargetCpus JudgeCpus(const std::string& target, const TargetCpuFacts& facts,
                          const std::vector<AgentCpuView>& agents, const std::optional<CpuView>& controller);

// "target drogon's CPUs were not proven its own: …", naming the node's CPU
// manager policy where it is the likely cause.
std::string CpusNotExclusiveMessage(const api::TargetCpus& cpus);

}  // namespace fairbench::controller
