// KubeletHttp: the test kubelet's endpoint, HTTPS with a serving certificate
// (as a real kubelet serves on 10250; kube-apiserver's node proxy and
// pods/log dial it so), or plain HTTP without one: GET /healthz, /pods,
// /configz (Kubelet::Configz), /stats/summary (the Summary
// API), /containerLogs/{namespace}/{pod}/{container} (tailLines,
// limitBytes, previous; at most the last 64 MiB of a log are read). The
// API server's node proxy and pods/log reach it
// through the node's InternalIP and daemonEndpoints.kubeletEndpoint.Port.
//
// Thread-safe; serves on a thread of its own until Stop().
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "common/status.h"
#include "testing/kubelet/kubelet.h"

namespace httplib {
class Server;
}

namespace fairbench::kubelet {

// The part of a log that tailLines and limitBytes select.
std::string SelectLog(const std::string& text, std::optional<int64_t> tail_lines, std::optional<int64_t> limit_bytes);

class KubeletHttp {
 public:
  // Binds host:port (port 0: any free port) at once; serves after Serve().
  // With `cert_file` and `key_file` (PEM), HTTPS; else plain HTTP. With
  // `netns` (a network namespace's name under /run/netns, or a path), the
  // socket is made in that namespace: host:port is one of its addresses.
  static Result<std::unique_ptr<KubeletHttp>> Bind(const std::string& host, int port, const std::string& cert_file = "",
                                                   const std::string& key_file = "", const std::string& netns = "");
  ~KubeletHttp();
  int port() const { return port_; }
  void Serve(Kubelet& kubelet);
  void Stop();

 private:
  KubeletHttp() = default;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace fairbench::kubelet
