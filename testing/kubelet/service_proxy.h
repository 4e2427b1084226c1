// ServiceProxy: the test kubelet's stand-in for kube-proxy where a
// Service's port is not its pod's port. Such a Service gets a loopback
// address of its own (from the kubelet's AddressPool) and, for each of its
// ports, a listener on ADDRESS:port that forwards every TCP connection to
// the pod chosen for it, at POD_IP:targetPort. Pods' /etc/hosts map the
// Service's names to that address (PodWorker::RefreshHosts).
//
// Only loopback addresses are listened on or dialled. At most
// kMaxConnections connections per port at once (more are closed at once).
// A Service not routed for a minute is forgotten (its listeners closed,
// its address released).
//
// Thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "testing/kubelet/address_pool.h"

namespace fairbench::kubelet {

struct ServicePortRoute {
  int port = 0;           // the Service's port
  std::string target_ip;  // the chosen pod's IP (loopback)
  int target_port = 0;    // its targetPort, resolved
};

class ServiceProxy {
 public:
  static constexpr int kMaxConnections = 128;

  explicit ServiceProxy(std::shared_ptr<AddressPool> pool);
  ~ServiceProxy();
  ServiceProxy(const ServiceProxy&) = delete;
  ServiceProxy& operator=(const ServiceProxy&) = delete;

  // Listens on the Service's address at each port and forwards to its
  // target (ports no longer listed are closed); the address.
  Result<std::string> Route(const std::string& ns, const std::string& name, const std::vector<ServicePortRoute>& ports);
  // Closes every listener and connection.
  void Stop();

 private:
  class Forwarder;
  struct Service {
    std::string address;
    std::map<int, std::unique_ptr<Forwarder>> ports;
    std::chrono::steady_clock::time_point last_routed;
  };

  const std::shared_ptr<AddressPool> pool_;
  Mutex mu_;
  std::map<std::string, Service> services_ GUARDED_BY(mu_);  // by "ns/name"
};

}  // namespace fairbench::kubelet
