#include "controller/platform/kubernetes/node_picker.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace fairbench::controller::k8s {
namespace {

using Json = nlohmann::json;

struct NodeSpec {
  std::string name{};
  api::StringMap labels{};
  bool ready = true;
  bool unschedulable = false;
  std::vector<Json> taints{};
  std::string cpu = "8";
};

Json MakeNode(const NodeSpec& n) {
  Json node = {{"apiVersion", "v1"},
               {"kind", "Node"},
               {"metadata", {{"name", n.name}, {"labels", n.labels}}},
               {"spec", Json::object()},
               {"status",
                {{"conditions", Json::array({{{"type", "Ready"}, {"status", n.ready ? "True" : "False"}}})},
                 {"capacity", {{"cpu", n.cpu}, {"memory", "16Gi"}}},
                 {"allocatable", {{"cpu", n.cpu}, {"memory", "15Gi"}}}}}};
  if (n.unschedulable) node["spec"]["unschedulable"] = true;
  if (!n.taints.empty()) node["spec"]["taints"] = n.taints;
  return node;
}

// The nodes as the API server sends them, decoded as the platform does.
std::vector<kube::Node> List(const std::vector<NodeSpec>& nodes) {
  std::vector<kube::Node> out;
  for (const NodeSpec& n : nodes) {
    auto node = kube::Node::FromJson(MakeNode(n));
    EXPECT_TRUE(node.ok()) << node.status().ToString();
    if (node.ok()) out.push_back(std::move(*node));
  }
  return out;
}

Json Taint(const std::string& key, const std::string& value, const std::string& effect) {
  Json t = {{"key", key}, {"effect", effect}};
  if (!value.empty()) t["value"] = value;
  return t;
}

const api::StringMap kTargetRole = {{"fairbench.dev/role", "target"}};
const api::StringMap kLoadRole = {{"fairbench.dev/role", "load"}};

api::Placement Roles() {
  api::Placement p;
  p.target.node_selector = kTargetRole;
  p.agents.node_selector = kLoadRole;
  return p;
}

struct Case {
  std::string name{};
  std::string breakage{};  // what a wrong picker would do that this case catches
  std::vector<NodeSpec> nodes{};
  api::Placement placement{};
  int agents = 1;
  int threads = 4;
  // Expected: either a choice or an error code with the exact message.
  std::string target{};
  std::vector<std::string> agent_nodes{};
  Status::Code code = Status::Code::kOk;
  std::string message{};
};

std::vector<Case> Cases() {
  std::vector<Case> cs;
  {
    Case c{"selectors", "target and agents placed by their selectors", {}, Roles()};
    c.nodes = {{"load-b", kLoadRole}, {"target-1", kTargetRole}, {"load-a", kLoadRole}};
    c.agents = 3;
    c.target = "target-1";
    // Round-robin in name order, whatever the API listed first.
    c.agent_nodes = {"load-a", "load-b", "load-a"};
    cs.push_back(c);
  }
  {
    Case c{"never_target_node", "agents on the target's node when both selectors match it", {}, {}};
    c.nodes = {{"a"}, {"b"}};
    c.agents = 2;
    c.target = "a";
    c.agent_nodes = {"b", "b"};
    cs.push_back(c);
  }
  {
    Case c{"only_one_node", "agents silently co-located with the target", {}, {}};
    c.nodes = {{"solo"}};
    c.code = Status::Code::kFailedPrecondition;
    c.message =
        "spec.placement.agents: no node other than the target's node matches {} (the target's node is \"solo\")";
    cs.push_back(c);
  }
  {
    Case c{"target_node_name_missing", "a typo in nodeName creating a pod that never runs", {}, {}};
    c.nodes = {{"a"}, {"b"}};
    c.placement.target.node_name = "x";
    c.code = Status::Code::kInvalidArgument;
    c.message = "spec.placement.target.nodeName: node \"x\" does not exist";
    cs.push_back(c);
  }
  {
    Case c{"target_node_name", "nodeName ignored in favour of the first node", {}, {}};
    c.nodes = {{"a"}, {"b"}, {"c"}};
    c.placement.target.node_name = "b";
    c.agents = 2;
    c.target = "b";
    c.agent_nodes = {"a", "c"};
    cs.push_back(c);
  }
  {
    Case c{"target_not_ready", "a NotReady node chosen", {}, {}};
    c.nodes = {{"a", {}, false}, {"b"}};
    c.placement.target.node_name = "a";
    c.code = Status::Code::kFailedPrecondition;
    c.message = "spec.placement.target.nodeName: node \"a\" is not Ready";
    cs.push_back(c);
  }
  {
    Case c{"skip_not_ready_and_cordoned", "NotReady or cordoned nodes chosen by a selector", {}, {}};
    c.nodes = {{"a", {}, false}, {"b", {}, true, true}, {"c"}, {"d"}};
    c.target = "c";
    c.agent_nodes = {"d"};
    cs.push_back(c);
  }
  {
    Case c{"untolerated_taint", "a tainted node chosen without a toleration", {}, Roles()};
    c.nodes = {{"t", kTargetRole, true, false, {Taint("dedicated", "bench", "NoSchedule")}}, {"l", kLoadRole}};
    c.code = Status::Code::kFailedPrecondition;
    c.message =
        "spec.placement.target.nodeSelector: no eligible node matches {fairbench.dev/role=target}: node \"t\" "
        "has taint dedicated=bench:NoSchedule that is not tolerated";
    cs.push_back(c);
  }
  {
    Case c{"tolerated_taint", "a matching toleration not honoured", {}, Roles()};
    c.nodes = {{"t", kTargetRole, true, false, {Taint("dedicated", "bench", "NoSchedule")}},
               {"l", kLoadRole, true, false, {Taint("load", "", "NoExecute")}}};
    c.placement.target.tolerations = {{"dedicated", "Equal", "bench", "NoSchedule", std::nullopt}};
    c.placement.agents.tolerations = {{"load", "Exists", "", "", std::nullopt}};
    c.target = "t";
    c.agent_nodes = {"l"};
    cs.push_back(c);
  }
  {
    Case c{"prefer_no_schedule_ignored", "PreferNoSchedule treated as a hard taint", {}, {}};
    c.nodes = {{"a", {}, true, false, {Taint("soft", "x", "PreferNoSchedule")}}, {"b"}};
    c.target = "a";
    c.agent_nodes = {"b"};
    cs.push_back(c);
  }
  {
    Case c{"wrong_value_not_tolerated", "Equal tolerations matching any value", {}, {}};
    c.nodes = {{"a", {}, true, false, {Taint("k", "v", "NoSchedule")}}, {"b"}};
    c.placement.target.node_name = "a";
    c.placement.target.tolerations = {{"k", "Equal", "other", "NoSchedule", std::nullopt}};
    c.code = Status::Code::kFailedPrecondition;
    c.message = "spec.placement.target.nodeName: node \"a\" has taint k=v:NoSchedule that is not tolerated";
    cs.push_back(c);
  }
  {
    Case c{"no_target_match", "an empty selector match reported as something else", {}, Roles()};
    c.nodes = {{"l", kLoadRole}};
    c.code = Status::Code::kFailedPrecondition;
    c.message = "spec.placement.target.nodeSelector: no node matches {fairbench.dev/role=target}";
    cs.push_back(c);
  }
  {
    Case c{"agents_only_on_target", "the agents' selector satisfied by the target node alone", {}, {}};
    c.placement.agents.node_selector = kTargetRole;
    c.placement.target.node_selector = kTargetRole;
    c.nodes = {{"t", kTargetRole}, {"x"}};
    c.code = Status::Code::kFailedPrecondition;
    c.message =
        "spec.placement.agents.nodeSelector: no node other than the target's node matches "
        "{fairbench.dev/role=target} (the target's node is \"t\")";
    cs.push_back(c);
  }
  {
    Case c{"target_choice_leaves_room", "the first target node taken although it is the only agent node", {}, {}};
    c.placement.target.node_selector = {{"zone", "a"}};
    c.placement.agents.node_selector = {{"agent", "yes"}};
    c.nodes = {{"n1", {{"zone", "a"}, {"agent", "yes"}}}, {"n2", {{"zone", "a"}}}};
    c.target = "n2";
    c.agent_nodes = {"n1"};
    cs.push_back(c);
  }
  {
    Case c{"agent_too_small", "an agent placed on a node with fewer CPUs than its threads", {}, {}};
    c.nodes = {{"a"}, {"b", {}, true, false, {}, "2"}};
    c.placement.target.node_name = "a";
    c.threads = 4;
    c.code = Status::Code::kFailedPrecondition;
    c.message =
        "spec.placement.agents: no eligible node other than the target's node matches {} (the target's node "
        "is \"a\"): node \"b\" has 2 CPUs allocatable, fewer than the 4 threads of an agent";
    cs.push_back(c);
  }
  {
    Case c{"agents_node_name_is_target", "agents.nodeName equal to the target's node accepted", {}, {}};
    c.nodes = {{"a"}, {"b"}};
    c.placement.target.node_name = "a";
    c.placement.agents.node_name = "a";
    c.code = Status::Code::kFailedPrecondition;
    c.message = "spec.placement.agents.nodeName: node \"a\" is the target's node: agents never share it";
    cs.push_back(c);
  }
  {
    Case c{"agents_node_name_missing", "a missing agents.nodeName not reported as such", {}, {}};
    c.nodes = {{"a"}, {"b"}};
    c.placement.agents.node_name = "zz";
    c.code = Status::Code::kInvalidArgument;
    c.message = "spec.placement.agents.nodeName: node \"zz\" does not exist";
    cs.push_back(c);
  }
  {
    Case c{"no_agents", "agents == 0 failing on a one-node cluster", {}, {}};
    c.nodes = {{"solo"}};
    c.agents = 0;
    c.target = "solo";
    cs.push_back(c);
  }
  return cs;
}

// Table: each case names the breakage it catches in `breakage`.
TEST(NodePickerTest, Table) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name + " (catches: " + c.breakage + ")");
    auto got = PickNodes(List(c.nodes), c.placement, c.agents, c.threads);
    if (c.code == Status::Code::kOk) {
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(got->target_node, c.target);
      EXPECT_EQ(got->agent_nodes, c.agent_nodes);
    } else {
      ASSERT_FALSE(got.ok());
      EXPECT_EQ(got.status().code(), c.code) << got.status().ToString();
      EXPECT_EQ(got.status().message(), c.message);
    }
  }
}

// Catches: a picker whose answer depends on the order the API lists nodes
// (two controllers, or a restart, would place the same run differently).
TEST(NodePickerTest, DeterministicWhateverTheListOrder) {
  std::vector<NodeSpec> nodes = {{"c"}, {"a"}, {"d"}, {"b"}};
  auto first = PickNodes(List(nodes), {}, 3, 1);
  std::reverse(nodes.begin(), nodes.end());
  auto second = PickNodes(List(nodes), {}, 3, 1);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(*first, *second);
  EXPECT_EQ(first->target_node, "a");
  EXPECT_EQ(first->agent_nodes, (std::vector<std::string>{"b", "c", "d"}));
}

// Catches: a CPU capacity the server sends as a number (a quantity may
// be) dropped when the Node is decoded: the agent node would then look
// unlimited and get an agent it cannot hold.
TEST(NodePickerTest, ReadsANumericCpuCapacity) {
  Json small = MakeNode({"b"});
  small["status"]["capacity"]["cpu"] = 2;
  small["status"]["allocatable"]["cpu"] = 2;
  auto b = kube::Node::FromJson(small);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  std::vector<kube::Node> nodes = List({{"a"}});
  nodes.push_back(*b);
  auto got = PickAgentNodes(nodes, {}, "a", 1, 4);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(),
            "spec.placement.agents: no eligible node other than the target's node matches {} (the target's node is "
            "\"a\"): node \"b\" has 2 CPUs allocatable, fewer than the 4 threads of an agent");
}

// Catches: toleration matching that differs from Kubernetes' rules
// (ToleratesTaint: effect, key, then operator).
TEST(NodePickerTest, ToleratesLikeKubernetes) {
  const kube::Taint taint{"k", "v", "NoSchedule"};
  struct T {
    api::Toleration t;
    bool want;
  };
  const std::vector<T> table = {
      {{"k", "Equal", "v", "NoSchedule", std::nullopt}, true},
      {{"k", "", "v", "", std::nullopt}, true},  // default operator Equal, any effect
      {{"k", "Equal", "w", "NoSchedule", std::nullopt}, false},
      {{"k", "Exists", "", "", std::nullopt}, true},
      {{"", "Exists", "", "", std::nullopt}, true},  // empty key + Exists tolerates everything
      {{"k", "Exists", "", "NoExecute", std::nullopt}, false},
      {{"j", "Exists", "", "", std::nullopt}, false},
  };
  for (const T& t : table) {
    SCOPED_TRACE(t.t.key + " " + t.t.operator_ + " " + t.t.value + " " + t.t.effect);
    EXPECT_EQ(Tolerates(t.t, taint), t.want);
  }
}

}  // namespace
}  // namespace fairbench::controller::k8s
