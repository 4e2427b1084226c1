// Kubelet: the test kubelet's node-level half. Registers the Node (labels,
// taints, capacity and allocatable, addresses, the kubelet endpoint,
// nodeInfo, conditions), heartbeats through nodes/{name}/status and a Lease
// in kube-node-lease, watches the pods bound to the node
// (fieldSelector=spec.nodeName=<node>) and keeps one PodWorker per pod:
// admission (requests against allocatable, as the kubelet's predicate
// admission does: phase Failed, reason OutOf<resource>), pod IPs from the
// --pod-ip-base /24, and the Summary API's numbers.
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

  kube::Json NodeObject() const;

 private:
  kube::Json NodeStatus() const;
  Status Register();
  void Heartbeat();
  void HeartbeatLoop(std::stop_token stop);
  void SyncLoop(std::stop_token stop);
  void Sync();
  std::string AllocateIp() REQUIRES(mu_);

  const KubeletConfig config_;
  const NodeOptions node_;
  kube::Client& client_;
  const std::string started_at_;

  Mutex mu_;
  CondVar wake_;
  bool dirty_ GUARDED_BY(mu_) = false;
  std::map<std::string, std::unique_ptr<PodWorker>> workers_ GUARDED_BY(mu_);  // by uid
  std::map<std::string, int> ips_ GUARDED_BY(mu_);  // uid → host number
  int next_ip_ GUARDED_BY(mu_) = 1;
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
