// Kubelet: the test kubelet's node-level half. Registers the Node (labels,
// taints, capacity and allocatable, addresses, the kubelet endpoint,
// nodeInfo, conditions), heartbeats through nodes/{name}/status and a Lease
// in kube-node-lease, watches the pods bound to the node
// (fieldSelector=spec.nodeName=<node>) and keeps one PodWorker per pod:
// admission (the CPU manager's exclusive CPUs first — UnexpectedAdmissionError
// when they run out — then requests against allocatable, as the kubelet's
// predicate admission does: phase Failed, reason OutOf<resource>), pod IPs
// from the --pod-ip-base /24, the Summary API's numbers, and /configz.
//
// Thread-safe. Start() once; Stop() kills every pod's processes.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "controller/kube/client.h"
#include "controller/kube/event_recorder.h"
#include "controller/kube/informer.h"
#include "testing/kubelet/address_pool.h"
#include "testing/kubelet/pod_worker.h"

namespace fairbench::kubelet {

struct Taint {
  std::string key;
  std::string value;
  std::string effect;
};

struct NodeOptions {
  std::map<std::string, std::string> labels;
  std::vector<Taint> taints;
  int64_t memory_bytes = 0;
  int64_t max_pods = 110;
  std::string pod_ip_base = "127.0.1";  // pods get <base>.1 … <base>.254
  std::chrono::milliseconds heartbeat{3000};
  int kubelet_port = 0;
};

class Kubelet {
 public:
  Kubelet(KubeletConfig config, NodeOptions node, kube::Client& client);
  ~Kubelet();
  Kubelet(const Kubelet&) = delete;
  Kubelet& operator=(const Kubelet&) = delete;

  // Registers the node, starts the heartbeat and the pod informer.
  Status Start();
  void Stop();

  // The Summary API (/stats/summary).
  kube::Json Summary();
  // The log file of a container, or why there is none (HTTP code, message).
  std::variant<std::string, LogError> LogFile(const std::string& ns, const std::string& pod,
                                              const std::string& container, bool previous);
  // The pods the kubelet runs (/pods), as a PodList.
  kube::Json Pods();
  // /configz: {"kubeletconfig": {...}}, the kubelet's KubeletConfiguration
  // (v1beta1 field names, no kind/apiVersion) as far as this one has it.
  kube::Json Configz() const;

  kube::Json NodeObject() const;

 private:
  kube::Json NodeStatus() const;
  Status Register();
  void Heartbeat();
  void HeartbeatLoop(std::stop_token stop);
  void SyncLoop(std::stop_token stop);
  void Sync();

  // Pod IPs and Services' forwarding addresses, from --pod-ip-base.
  const std::shared_ptr<AddressPool> addresses_;
  const KubeletConfig config_;
  const NodeOptions node_;
  kube::Client& client_;
  const std::string started_at_;

  Mutex mu_;
  CondVar wake_;
  bool dirty_ GUARDED_BY(mu_) = false;
  std::map<std::string, std::unique_ptr<PodWorker>> workers_ GUARDED_BY(mu_);  // by uid
  std::optional<std::pair<std::chrono::system_clock::time_point, uint64_t>> node_cpu_last_ GUARDED_BY(mu_);

  kube::EventRecorder events_;
  std::unique_ptr<kube::Informer> informer_;
  std::jthread heartbeat_;
  std::jthread sync_;
  std::atomic<bool> stopped_{false};
};

// "a=b,c=d" → map; "key=value:Effect,key:Effect" → taints.
Result<std::map<std::string, std::string>> ParseLabels(const std::string& text);
Result<std::vector<Taint>> ParseTaints(const std::string& text);
// "0-2,5" → {0,1,2,5}.
Result<std::vector<int>> ParseCpuList(const std::string& text);

}  // namespace fairbench::kubelet
