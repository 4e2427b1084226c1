// KubernetesPlatform: targets and agents as pods created through the
// Kubernetes API (kube::Client), pinned to nodes chosen by the node picker,
// Guaranteed QoS; the load slot is a coordination.k8s.io Lease
// (kube::LoadSlot).
//
// Nodes are chosen once per run (ChooseNodes, or on first need from Deploy
// and EnsureAgents) and kept: node_choice() exposes the choice for the
// run's status, SetNodeChoice restores it after a controller restart.
//
// Target: pod <run>-<target> (pod_templates.h) on the chosen node; a stale
// pod of that name is deleted first. placement() is {node, pod IP, port},
// the IP known once WaitReady has seen it. WaitReady polls the pod (every
// poll_interval) until its Ready condition is True, the container ends
// (Unavailable: "exited with code N", "was OOMKilled (exit code 137)"), the
// pod fails (Unavailable with the kubelet's reason), the deadline passes
// (DeadlineExceeded with the last state seen) or a stop (Cancelled). Gone()
// reads the same from the pod, at most once per poll_interval. Usage() reads
// the kubelet's summary through the node proxy (stats_summary.h). Teardown
// deletes the pod with a short grace period and waits until it is gone,
// bounded by teardown_timeout.
//
// Agents: pods <run>-agent-<i> (the pod name is the agent id) spread over
// the chosen agent nodes; EnsureAgents creates the missing ones and deletes
// and recreates those whose pod ended or is being deleted.
//
// Every wait polls with calls bounded by api_call_timeout and checks the
// stop token between them, so a stop is seen within about that long.
//
// Calls come from one thread (the orchestrator's); Describe() may be called
// from another (it reads a snapshot under a mutex).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "controller/kube/client.h"
#include "controller/kube/load_slot.h"
#include "controller/platform/kubernetes/node_picker.h"
#include "controller/platform/platform.h"

namespace fairbench::controller {

struct KubernetesPlatformOptions {
  std::string ns;           // where pods go; "" = the client's default namespace
  std::string agent_image;  // also holds the fairbench-nofile helper
  std::string nofile_helper_path = "/usr/local/bin/fairbench-nofile";  // in agent_image
  std::string agent_token_secret;                                      // Secret with the agent token
  std::string agent_token_key = "token";
  // The agents' TLS (pod_templates.h): their Secret, whether they show a
  // client certificate, the name they expect; empty secret: plain text.
  std::string agent_tls_secret;
  bool agent_tls_client_certificate = false;
  std::string agent_tls_server_name;
  std::string controller_address;  // host:port agents dial
  api::MemoryQuantity agent_memory{512LL << 20};
  int agent_give_up_after_seconds = 30;
  kube::LoadSlotConfig slot;  // identity is filled from `identity` + the holder when empty
  std::string identity;       // this controller (installation/pod)
  std::string fairbench_version;
  int64_t grace_period_seconds = 5;
  std::chrono::milliseconds poll_interval{150};
  std::chrono::milliseconds api_call_timeout{1000};
  std::chrono::milliseconds teardown_timeout{30000};
  Clock* clock = nullptr;  // for the slot; null = system clock
};

class KubernetesPlatform final : public Platform {
 public:
  KubernetesPlatform(kube::Client& client, KubernetesPlatformOptions options);
  ~KubernetesPlatform() override;

  std::string name() const override { return "kubernetes"; }
  Result<std::unique_ptr<TargetInstance>> Deploy(const DeployRequest& request, std::stop_token stop) override;
  Result<std::vector<std::string>> EnsureAgents(const AgentRequest& request, std::stop_token stop) override;
  Result<std::unique_ptr<LoadSlot>> AcquireSlot(const std::string& holder, std::chrono::milliseconds timeout,
                                                std::stop_token stop) override;
  report::Environment Describe() const override;

  // Lists the nodes and picks the run's target and agent nodes; keeps the
  // choice for Deploy and EnsureAgents.
  Result<k8s::NodeChoice> ChooseNodes(const RunIdentity& run, const api::Placement& placement, int agents, int threads);
  // Restores a choice recorded earlier (a resumed run).
  void SetNodeChoice(const std::string& run, k8s::NodeChoice choice);
  std::optional<k8s::NodeChoice> node_choice(const std::string& run) const;
  // The run is over: its remaining pods (the agents) are deleted, so that
  // their CPUs are free for the next run, and its node choice forgotten.
  // Waits until they are gone, bounded by the teardown timeout.
  Status ReleaseRun(const std::string& run);

  const std::string& ns() const { return ns_; }

 private:
  Result<std::vector<kube::Node>> ListNodes();
  // Deletes pod `name` (grace `grace`) and waits until it is gone.
  Status DeleteAndWait(const std::string& name, int64_t grace, std::stop_token stop);

  kube::Client& client_;
  const KubernetesPlatformOptions options_;
  const std::string ns_;
  mutable Mutex mu_;
  std::map<std::string, k8s::NodeChoice> choices_ GUARDED_BY(mu_);  // run name → nodes
  std::vector<kube::Node> nodes_ GUARDED_BY(mu_);                   // last node list
  std::string last_target_node_ GUARDED_BY(mu_);
  std::vector<std::string> notes_ GUARDED_BY(mu_);
};

}  // namespace fairbench::controller
