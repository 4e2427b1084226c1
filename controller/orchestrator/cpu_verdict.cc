#include "controller/orchestrator/cpu_verdict.h"

#include <algorithm>
#include <cmath>

#include "api/cpu_list.h"

namespace fairbench::controller {
namespace {

using api::ConditionStatus;

std::vector<int> Cpus(const std::string& text) {
  auto list = api::ParseCpuList(text);
  return list.ok() ? list->cpus : std::vector<int>{};
}

std::string Count(size_t n) { return std::to_string(n) + (n == 1 ? " CPU" : " CPUs"); }

std::vector<int> Shared(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

std::string List(const std::vector<int>& cpus) { return api::FormatCpuList(api::CpuList{cpus}); }

std::string PolicyAdvice(const api::TargetCpus& t) {
  return "set the kubelet's cpuManagerPolicy: static (with reservedSystemCPUs) on node " + t.node +
         " and give the target whole CPUs with requests equal to limits";
}

}  // namespace

api::TargetCpus JudgeCpus(const std::string& target, const TargetCpuFacts& facts,
                          const std::vector<AgentCpuView>& agents, const std::optional<CpuView>& controller) {
  api::TargetCpus t;
  t.target = target;
  t.node = facts.node;
  t.asked = facts.asked;
  t.cpu_manager_policy = facts.cpu_manager_policy;
  std::vector<std::string> why;
  if (!facts.view) {
    t.message = "its CPUs were not read: " + facts.not_read;
    for (const AgentCpuView& a : agents) t.agents.push_back({a.agent, a.node, a.view ? a.view->cpus : "", false});
    return t;
  }
  const CpuView& v = *facts.view;
  t.cpus = v.cpus;
  t.node_cpus = v.online;
  if (v.cpu_quota) t.cpu_quota = api::CpuQuantity{static_cast<int64_t>(std::llround(*v.cpu_quota * 1000))};
  if (v.memory_limit) t.memory_limit = api::MemoryQuantity{static_cast<int64_t>(*v.memory_limit)};
  const std::vector<int> own = Cpus(v.cpus);
  const std::vector<int> online = Cpus(v.online);

  // As many as asked.
  std::optional<size_t> whole;
  if (!facts.asked) {
    why.push_back("it asked for no CPUs");
  } else if (facts.asked->millicores % 1000 != 0) {
    t.as_many_as_asked = ConditionStatus::kFalse;
    why.push_back("it asked for " + std::to_string(facts.asked->millicores) + "m, not whole CPUs: no CPUs of its own");
  } else {
    whole = static_cast<size_t>(facts.asked->millicores / 1000);
    t.as_many_as_asked = own.size() == *whole ? ConditionStatus::kTrue : ConditionStatus::kFalse;
    if (own.size() != *whole) {
      why.push_back("it may run on " + Count(own.size()) + " (" + v.cpus + "), asked for " + std::to_string(*whole));
    }
  }

  // Disjoint from the agents on its machine.
  bool agent_unknown = agents.empty();
  std::vector<std::string> beside;
  for (const AgentCpuView& a : agents) {
    api::AgentCpus entry{a.agent, a.node, a.view ? a.view->cpus : "", false};
    if (!a.view || a.view->boot_id.empty() || v.boot_id.empty()) {
      agent_unknown = true;
    } else if (a.view->boot_id == v.boot_id) {
      entry.same_machine = true;
      const std::vector<int> both = Shared(own, Cpus(a.view->cpus));
      if (!both.empty()) beside.push_back("agent " + a.agent + " may run on CPUs " + List(both) + " too");
    }
    t.agents.push_back(std::move(entry));
  }
  if (!beside.empty()) {
    t.disjoint_from_agents = ConditionStatus::kFalse;
    for (std::string& b : beside) why.push_back(std::move(b));
  } else if (!agent_unknown) {
    t.disjoint_from_agents = ConditionStatus::kTrue;
  } else if (!agents.empty()) {
    why.push_back("an agent did not say which CPUs it may run on");
  }

  // Exclusive.
  std::vector<std::string> shared_because;
  if (t.disjoint_from_agents == ConditionStatus::kFalse) shared_because.push_back("agents run beside it");
  if (controller && !controller->boot_id.empty() && controller->boot_id == v.boot_id) {
    const std::vector<int> both = Shared(own, Cpus(controller->cpus));
    if (!both.empty()) shared_because.push_back("the controller may run on CPUs " + List(both) + " too");
  }
  if (facts.asked && !whole) shared_because.push_back("a fractional CPU request gets no CPUs of its own");
  if (!online.empty() && own == online && (!whole || *whole < online.size())) {
    shared_because.push_back("it may run on every CPU of its machine (" + v.online + ")");
  } else if (whole && own.size() > *whole) {
    shared_because.push_back("it may run on more CPUs than it asked for");
  }
  if (facts.kubelet && !facts.cpu_manager_policy.empty() && facts.cpu_manager_policy != "static") {
    shared_because.push_back("node " + facts.node + "'s kubelet runs the CPU manager policy " +
                             facts.cpu_manager_policy + ", which gives no pod CPUs of its own");
  }
  if (!shared_because.empty()) {
    t.exclusive = ConditionStatus::kFalse;
    for (std::string& s : shared_because) {
      if (std::find(why.begin(), why.end(), s) == why.end()) why.push_back(std::move(s));
    }
  } else if (facts.kubelet && facts.cpu_manager_policy == "static" && t.as_many_as_asked == ConditionStatus::kTrue) {
    t.exclusive = ConditionStatus::kTrue;
    why.insert(why.begin(), "CPUs " + v.cpus + " of " + v.online + " are its own: node " + facts.node +
                                "'s kubelet runs the static CPU manager policy and the pod is Guaranteed with " +
                                Count(own.size()));
  } else if (facts.kubelet && facts.cpu_manager_policy.empty()) {
    why.push_back("node " + facts.node + "'s CPU manager policy was not read (" + facts.policy_not_read + ")");
  } else if (!facts.kubelet) {
    why.push_back("pinned to CPUs " + v.cpus + " of " + v.online +
                  ", which fairbench keeps its agents and controller off; nothing keeps other processes of this "
                  "machine off them");
  }
  for (size_t i = 0; i < why.size(); ++i) t.message += (i == 0 ? "" : "; ") + why[i];
  return t;
}

std::string CpusNotExclusiveMessage(const api::TargetCpus& t) {
  std::string m =
      "target " + t.target + "'s CPUs were not proven its own (spec.placement.requireExclusiveCpus): " + t.message;
  if (!t.node.empty() && t.cpu_manager_policy != "static") {
    m += "; the likely cause: node " + t.node + "'s kubelet CPU manager policy is " +
         (t.cpu_manager_policy.empty() ? std::string("unknown") : t.cpu_manager_policy) + " — " + PolicyAdvice(t);
  }
  return m;
}

}  // namespace fairbench::controller
