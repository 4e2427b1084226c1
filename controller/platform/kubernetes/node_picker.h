// The node picker: where a run's target and agents go, as a pure function
// of the cluster's Node objects and spec.placement.
//
// A node is eligible when its Ready condition is True, spec.unschedulable is
// not set, it carries every label of the nodeSelector (and is the named
// node when nodeName is given), and the placement tolerates each of its
// NoSchedule and NoExecute taints (PreferNoSchedule taints are ignored).
// The target gets the first eligible target node by name for which agent
// nodes remain; agents are spread round-robin over the eligible load nodes
// in name order, never on the target's node. Agent nodes must also have at
// least `threads` CPUs allocatable (agents request whole CPUs).
//
// Errors name the field and the cause, as the CLI names fields:
//   InvalidArgument     spec.placement.target.nodeName: node "x" does not exist
//   FailedPrecondition  spec.placement.target.nodeName: node "x" is not Ready
//   FailedPrecondition  spec.placement.agents.nodeSelector: no node other than
//                       the target's node matches {role=load}
//
// Pure and deterministic (nodes are sorted by name first); thread-safe.
#pragma once

#include <string>
#include <vector>

#include "api/benchmark_run.h"
#include "common/status.h"
#include "controller/kube/objects.h"

namespace fairbench::controller::k8s {

struct NodeChoice {
  std::string target_node;
  std::vector<std::string> agent_nodes;  // one per agent, agent i on agent_nodes[i]
  friend bool operator==(const NodeChoice&, const NodeChoice&) = default;
};

// `nodes`: the cluster's Node objects, in any order.
Result<NodeChoice> PickNodes(const std::vector<kube::Node>& nodes, const api::Placement& placement, int agents,
                             int threads);

// The target's node alone (spec.placement.target).
Result<std::string> PickTargetNode(const std::vector<kube::Node>& nodes, const api::NodePlacement& placement);

// `agents` agent nodes off `target_node` (spec.placement.agents).
Result<std::vector<std::string>> PickAgentNodes(const std::vector<kube::Node>& nodes,
                                                const api::NodePlacement& placement, const std::string& target_node,
                                                int agents, int threads);

// Why `node` cannot take a pod with `placement` ("is not Ready", "has taint
// k=v:NoSchedule that is not tolerated"), or "" when it can. Labels are not
// checked here.
std::string IneligibleReason(const kube::Node& node, const api::NodePlacement& placement);

// Whether a toleration tolerates a taint, as the kubelet and scheduler
// decide it.
bool Tolerates(const api::Toleration& toleration, const kube::Taint& taint);

// "{a=b, c=d}", "{}" for an empty selector.
std::string SelectorText(const api::StringMap& selector);

}  // namespace fairbench::controller::k8s
