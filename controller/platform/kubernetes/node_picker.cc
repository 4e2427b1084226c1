#include "controller/platform/kubernetes/node_picker.h"

#include <algorithm>

#include "common/api/quantity.h"

namespace fairbench::controller::k8s {
namespace {

using Json = nlohmann::json;

std::string Str(const Json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_string()) return "";
  return j[key].get<std::string>();
}

const Json& Obj(const Json& j, const char* key) {
  static const Json kEmpty = Json::object();
  if (!j.is_object() || !j.contains(key) || !j[key].is_object()) return kEmpty;
  return j[key];
}

std::string NodeName(const Json& node) { return Str(Obj(node, "metadata"), "name"); }

// The Node objects, sorted by name; unnamed entries are dropped.
std::vector<Json> SortedNodes(const Json& nodes) {
  const Json* items = &nodes;
  if (nodes.is_object() && nodes.contains("items")) items = &nodes["items"];
  std::vector<Json> out;
  if (!items->is_array()) return out;
  for (const Json& n : *items) {
    if (!NodeName(n).empty()) out.push_back(n);
  }
  std::sort(out.begin(), out.end(), [](const Json& a, const Json& b) { return NodeName(a) < NodeName(b); });
  return out;
}

const Json* FindNode(const std::vector<Json>& nodes, const std::string& name) {
  for (const Json& n : nodes) {
    if (NodeName(n) == name) return &n;
  }
  return nullptr;
}

bool MatchesSelector(const Json& node, const api::StringMap& selector) {
  const Json& labels = Obj(Obj(node, "metadata"), "labels");
  for (const auto& [k, v] : selector) {
    if (Str(labels, k.c_str()) != v || !labels.contains(k)) return false;
  }
  return true;
}

std::string TaintText(const Json& taint) {
  std::string key = Str(taint, "key");
  std::string value = Str(taint, "value");
  return key + (value.empty() ? "" : "=" + value) + ":" + Str(taint, "effect");
}

// Allocatable CPUs in millicores (capacity when allocatable is absent), or
// -1 when the node does not say.
int64_t AllocatableMillicores(const Json& node) {
  const Json& status = Obj(node, "status");
  for (const char* field : {"allocatable", "capacity"}) {
    const Json& m = Obj(status, field);
    if (!m.contains("cpu")) continue;
    std::string text = m["cpu"].is_string() ? m["cpu"].get<std::string>()
                       : m["cpu"].is_number() ? m["cpu"].dump()
                                              : "";
    auto cpu = api::ParseCpu(text);
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
std::string AgentReason(const Json& node, const api::NodePlacement& placement, int threads) {
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

bool Tolerates(const api::Toleration& t, const Json& taint) {
  if (!t.effect.empty() && t.effect != Str(taint, "effect")) return false;
  if (!t.key.empty() && t.key != Str(taint, "key")) return false;
  if (t.operator_.empty() || t.operator_ == "Equal") return t.value == Str(taint, "value");
  return t.operator_ == "Exists";
}

std::string IneligibleReason(const Json& node, const api::NodePlacement& placement) {
  const Json& status = Obj(node, "status");
  bool ready = false;
  if (status.contains("conditions") && status["conditions"].is_array()) {
    for (const Json& c : status["conditions"]) {
      if (Str(c, "type") == "Ready") ready = Str(c, "status") == "True";
    }
  }
  if (!ready) return "is not Ready";
  const Json& spec = Obj(node, "spec");
  if (spec.contains("unschedulable") && spec["unschedulable"].is_boolean() && spec["unschedulable"].get<bool>()) {
    return "is unschedulable (cordoned)";
  }
  if (spec.contains("taints") && spec["taints"].is_array()) {
    for (const Json& taint : spec["taints"]) {
      const std::string effect = Str(taint, "effect");
      if (effect != "NoSchedule" && effect != "NoExecute") continue;
      const bool tolerated = std::any_of(placement.tolerations.begin(), placement.tolerations.end(),
                                         [&](const api::Toleration& t) { return Tolerates(t, taint); });
      if (!tolerated) return "has taint " + TaintText(taint) + " that is not tolerated";
    }
  }
  return "";
}

Result<std::string> PickTargetNode(const Json& nodes_json, const api::NodePlacement& placement) {
  const std::vector<Json> nodes = SortedNodes(nodes_json);
  const std::string selector = SelectorText(placement.node_selector);
  if (!placement.node_name.empty()) {
    const std::string field = "spec.placement.target.nodeName: node " + Quote(placement.node_name);
    const Json* node = FindNode(nodes, placement.node_name);
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
  for (const Json& node : nodes) {
    if (!MatchesSelector(node, placement.node_selector)) continue;
    std::string why = IneligibleReason(node, placement);
    if (why.empty()) return NodeName(node);
    causes.push_back("node " + Quote(NodeName(node)) + " " + why);
  }
  if (causes.empty()) return Status::FailedPrecondition(field + ": no node matches " + selector);
  return Status::FailedPrecondition(field + ": no eligible node matches " + selector + ": " + JoinCauses(causes));
}

Result<std::vector<std::string>> PickAgentNodes(const Json& nodes_json, const api::NodePlacement& placement,
                                                const std::string& target_node, int agents, int threads) {
  std::vector<std::string> out;
  if (agents <= 0) return out;
  const std::vector<Json> nodes = SortedNodes(nodes_json);
  const std::string selector = SelectorText(placement.node_selector);
  std::vector<std::string> eligible;
  if (!placement.node_name.empty()) {
    const std::string field = "spec.placement.agents.nodeName: node " + Quote(placement.node_name);
    if (placement.node_name == target_node) {
      return Status::FailedPrecondition(field + " is the target's node: agents never share it");
    }
    const Json* node = FindNode(nodes, placement.node_name);
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
    for (const Json& node : nodes) {
      const std::string name = NodeName(node);
      if (name == target_node || !MatchesSelector(node, placement.node_selector)) continue;
      std::string why = AgentReason(node, placement, threads);
      if (why.empty()) {
        eligible.push_back(name);
      } else {
        causes.push_back("node " + Quote(name) + " " + why);
      }
    }
    if (eligible.empty()) {
      const std::string target = " (the target's node is " + Quote(target_node) + ")";
      if (causes.empty()) {
        return Status::FailedPrecondition(field + ": no node other than the target's node matches " + selector + target);
      }
      return Status::FailedPrecondition(field + ": no eligible node other than the target's node matches " + selector +
                                        target + ": " + JoinCauses(causes));
    }
  }
  for (int i = 0; i < agents; ++i) out.push_back(eligible[static_cast<size_t>(i) % eligible.size()]);
  return out;
}

Result<NodeChoice> PickNodes(const Json& nodes_json, const api::Placement& placement, int agents, int threads) {
  // The first target node (by name) that leaves room for the agents; with
  // none, the agents' error for the first target node.
  auto first = PickTargetNode(nodes_json, placement.target);
  if (!first.ok()) return first.status();
  std::vector<std::string> candidates = {*first};
  if (placement.target.node_name.empty()) {
    for (const Json& node : SortedNodes(nodes_json)) {
      const std::string name = NodeName(node);
      if (name > *first && MatchesSelector(node, placement.target.node_selector) &&
          IneligibleReason(node, placement.target).empty()) {
        candidates.push_back(name);
      }
    }
  }
  Status first_error;
  for (const std::string& target : candidates) {
    auto agent_nodes = PickAgentNodes(nodes_json, placement.agents, target, agents, threads);
    if (agent_nodes.ok()) return NodeChoice{target, std::move(*agent_nodes)};
    if (first_error.ok()) first_error = agent_nodes.status();
  }
  return first_error;
}

}  // namespace fairbench::controller::k8s
