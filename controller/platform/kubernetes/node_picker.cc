#include "controller/platform/kubernetes/node_picker.h"

#include <algorithm>

#include "api/quantity.h"
#include "controller/kube/api_fields.h"
#include "controller/kube/api_fields.h"

namespace fairbench::controller::k8s {
namespace {

namespace f = kube::fields;

// The nodes sorted by name; unnamed entries are dropped.
std::vector<const kube::Node*> SortedNodes(const std::vector<kube::Node>& nodes) {
  std::vector<const kube::Node*> out;
  for (const kube::Node& n : nodes) {
    if (!n.metadata.name.empty()) out.push_back(&n);
  }
  std::sort(out.begin(), out.end(),
            [](const kube::Node* a, const kube::Node* b) { return a->metadata.name < b->metadata.name; });
  return out;
}

const kube::Node* FindNode(const std::vector<const kube::Node*>& nodes, const std::string& name) {
  for (const kube::Node* n : nodes) {
    if (n->metadata.name == name) return n;
  }
  return nullptr;
}

bool MatchesSelector(const kube::Node& node, const api::StringMap& selector) {
  for (const auto& [k, v] : selector) {
    const auto it = node.metadata.labels.find(k);
    if (it == node.metadata.labels.end() || it->second != v) return false;
  }
  return true;
}

std::string TaintText(const kube::Taint& taint) {
  return taint.key + (taint.value.empty() ? "" : "=" + taint.value) + ":" + taint.effect;
}

// Allocatable CPUs in millicores (capacity when allocatable is absent), or
// -1 when the node does not say.
int64_t AllocatableMillicores(const kube::Node& node) {
  for (const auto* m : {&node.allocatable, &node.capacity}) {
    const auto it = m->find("cpu");
    if (it == m->end()) continue;
    auto cpu = api::ParseCpu(it->second);
    if (cpu.ok()) return cpu->millicores;
  }
  return -1;
}

std::string Quote(const std::string& s) { return "\"" + s + "\""; }

std::string JoinCauses(const std::vector<std::string>& causes) {
  std::string out;
  for (const std::string& c : causes) out += (out.empty() ? "" : "; ") + c;
  return out;
}

// Why an agent node cannot take an agent of `threads` CPUs, or "".
std::string AgentReason(const kube::Node& node, const api::NodePlacement& placement, int threads) {
  std::string why = IneligibleReason(node, placement);
  if (!why.empty()) return why;
  const int64_t millicores = AllocatableMillicores(node);
  if (millicores >= 0 && millicores < int64_t{threads} * 1000) {
    return "has " + api::FormatCpu(api::CpuQuantity{millicores}) + " CPUs allocatable, fewer than the " +
           std::to_string(threads) + " threads of an agent";
  }
  return "";
}

}  // namespace

std::string SelectorText(const api::StringMap& selector) {
  std::string out = "{";
  for (const auto& [k, v] : selector) out += (out.size() > 1 ? ", " : "") + k + "=" + v;
  return out + "}";
}

bool Tolerates(const api::Toleration& t, const kube::Taint& taint) {
  if (!t.effect.empty() && t.effect != taint.effect) return false;
  if (!t.key.empty() && t.key != taint.key) return false;
  if (t.operator_.empty() || t.operator_ == f::kTolerationEqual) return t.value == taint.value;
  return t.operator_ == f::kTolerationExists;
}

std::string IneligibleReason(const kube::Node& node, const api::NodePlacement& placement) {
  if (!node.Ready()) return "is not Ready";
  if (node.Unschedulable()) return "is unschedulable (cordoned)";
  for (const kube::Taint& taint : node.taints) {
    if (taint.effect != f::kNoSchedule && taint.effect != f::kNoExecute) continue;
    const bool tolerated = std::any_of(placement.tolerations.begin(), placement.tolerations.end(),
                                       [&](const api::Toleration& t) { return Tolerates(t, taint); });
    if (!tolerated) return "has taint " + TaintText(taint) + " that is not tolerated";
  }
  return "";
}

Result<std::string> PickTargetNode(const std::vector<kube::Node>& all, const api::NodePlacement& placement) {
  const std::vector<const kube::Node*> nodes = SortedNodes(all);
  const std::string selector = SelectorText(placement.node_selector);
  if (!placement.node_name.empty()) {
    const std::string field = "spec.placement.target.nodeName: node " + Quote(placement.node_name);
    const kube::Node* node = FindNode(nodes, placement.node_name);
    if (node == nullptr) return Status::InvalidArgument(field + " does not exist");
    if (!MatchesSelector(*node, placement.node_selector)) {
      return Status::FailedPrecondition(field + " does not match spec.placement.target.nodeSelector " + selector);
    }
    if (std::string why = IneligibleReason(*node, placement); !why.empty()) {
      return Status::FailedPrecondition(field + " " + why);
    }
    return placement.node_name;
  }
  const std::string field =
      placement.node_selector.empty() ? "spec.placement.target" : "spec.placement.target.nodeSelector";
  std::vector<std::string> causes;
  for (const kube::Node* node : nodes) {
    if (!MatchesSelector(*node, placement.node_selector)) continue;
    std::string why = IneligibleReason(*node, placement);
    if (why.empty()) return node->metadata.name;
    causes.push_back("node " + Quote(node->metadata.name) + " " + why);
  }
  if (causes.empty()) return Status::FailedPrecondition(field + ": no node matches " + selector);
  return Status::FailedPrecondition(field + ": no eligible node matches " + selector + ": " + JoinCauses(causes));
}

Result<std::vector<std::string>> PickAgentNodes(const std::vector<kube::Node>& all, const api::NodePlacement& placement,
                                                const std::string& target_node, int agents, int threads) {
  std::vector<std::string> out;
  if (agents <= 0) return out;
  const std::vector<const kube::Node*> nodes = SortedNodes(all);
  const std::string selector = SelectorText(placement.node_selector);
  std::vector<std::string> eligible;
  if (!placement.node_name.empty()) {
    const std::string field = "spec.placement.agents.nodeName: node " + Quote(placement.node_name);
    if (placement.node_name == target_node) {
      return Status::FailedPrecondition(field + " is the target's node: agents never share it");
    }
    const kube::Node* node = FindNode(nodes, placement.node_name);
    if (node == nullptr) return Status::InvalidArgument(field + " does not exist");
    if (!MatchesSelector(*node, placement.node_selector)) {
      return Status::FailedPrecondition(field + " does not match spec.placement.agents.nodeSelector " + selector);
    }
    if (std::string why = AgentReason(*node, placement, threads); !why.empty()) {
      return Status::FailedPrecondition(field + " " + why);
    }
    eligible.push_back(placement.node_name);
  } else {
    const std::string field =
        placement.node_selector.empty() ? "spec.placement.agents" : "spec.placement.agents.nodeSelector";
    std::vector<std::string> causes;
    for (const kube::Node* node : nodes) {
      const std::string& name = node->metadata.name;
      if (name == target_node || !MatchesSelector(*node, placement.node_selector)) continue;
      std::string why = AgentReason(*node, placement, threads);
      if (why.empty()) {
        eligible.push_back(name);
      } else {
        causes.push_back("node " + Quote(name) + " " + why);
      }
    }
    if (eligible.empty()) {
      const std::string target = " (the target's node is " + Quote(target_node) + ")";
      if (causes.empty()) {
        return Status::FailedPrecondition(field + ": no node other than the target's node matches " + selector +
                                          target);
      }
      return Status::FailedPrecondition(field + ": no eligible node other than the target's node matches " + selector +
                                        target + ": " + JoinCauses(causes));
    }
  }
  for (int i = 0; i < agents; ++i) out.push_back(eligible[static_cast<size_t>(i) % eligible.size()]);
  return out;
}

Result<NodeChoice> PickNodes(const std::vector<kube::Node>& nodes, const api::Placement& placement, int agents,
                             int threads) {
  // The first target node (by name) that leaves room for the agents; with
  // none, the agents' error for the first target node.
  auto first = PickTargetNode(nodes, placement.target);
  if (!first.ok()) return first.status();
  std::vector<std::string> candidates = {*first};
  if (placement.target.node_name.empty()) {
    for (const kube::Node* node : SortedNodes(nodes)) {
      const std::string& name = node->metadata.name;
      if (name > *first && MatchesSelector(*node, placement.target.node_selector) &&
          IneligibleReason(*node, placement.target).empty()) {
        candidates.push_back(name);
      }
    }
  }
  Status first_error;
  for (const std::string& target : candidates) {
    auto agent_nodes = PickAgentNodes(nodes, placement.agents, target, agents, threads);
    if (agent_nodes.ok()) return NodeChoice{target, std::move(*agent_nodes)};
    if (first_error.ok()) first_error = agent_nodes.status();
  }
  return first_error;
}

}  // namespace fairbench::controller::k8s
