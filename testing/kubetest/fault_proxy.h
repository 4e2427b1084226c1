// FaultProxy: the failures a client of kube-apiserver meets, at the moment
// a test chooses, in front of a real kube-apiserver (KubeCluster).
//
// It listens on loopback with plain HTTP and forwards each request over TLS
// to the cluster's API server, which authenticates, authorizes, admits and
// serves it: as the cluster's administrator (its client certificate) when
// the request carries no credentials, with the request's own bearer token
// otherwise. Before forwarding, the FaultInjector (faults.h) may answer in
// the API server's place (5xx, 429 with Retry-After), hold the request
// (latency), compact etcd (expire: the real server then answers 410), or let
// the request through and answer 504 instead of its result (timeout: the
// write took effect). A streamed watch may be cut after any event, and
// DropWatches() cuts every open watch: what a restarting API server or a
// broken connection does. Which real behaviour each use imitates is named
// by the test that configures it.
//
// Thread-safe. Stop() (or the destructor) cuts open watches and returns
// once no request is in flight.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "common/mutex.h"
#include "common/status.h"
#include "testing/kubetest/faults.h"

namespace httplib {
class Server;
class ClientImpl;
}  // namespace httplib

namespace fairbench::kubetest {

struct FaultProxyOptions {
  std::string upstream;                           // the API server: https://127.0.0.1:PORT
  std::string ca_file;                            // its CA
  std::string client_cert_file, client_key_file;  // the administrator's client certificate
  std::string admin_user = "kubernetes-admin";    // who that certificate is (for FaultConfig.users)
  // Compacts etcd at its current revision (KubeCluster::Compact): what an
  // `expire` fault does before the request goes on.
  std::function<Status()> compact;
};

class FaultProxy {
 public:
  static Result<std::unique_ptr<FaultProxy>> Start(FaultProxyOptions options);
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  // http://127.0.0.1:PORT
  const std::string& url() const { return url_; }
  int port() const { return port_; }
  FaultInjector& faults() { return faults_; }

  // Cuts every watch streaming now, without the terminating chunk: as a
  // restarting API server or a broken connection does.
  void DropWatches();
  // Watches streaming through the proxy now (the API server has answered
  // 200 and the stream is neither ended nor cut).
  int open_watches() const;
  // Requests forwarded to the API server so far.
  uint64_t forwarded() const { return forwarded_.load(); }

  void Stop();

 private:
  struct Watch;
  FaultProxy() = default;
  void Handle(const void* request, void* response);
  std::string UserOf(const std::string& authorization) const;

  FaultProxyOptions options_;
  FaultInjector faults_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::string url_;
  int port_ = 0;
  std::atomic<bool> stopped_{false};
  std::atomic<uint64_t> forwarded_{0};
  mutable Mutex mu_;
  std::set<std::shared_ptr<Watch>> watches_ GUARDED_BY(mu_);
};

}  // namespace fairbench::kubetest
