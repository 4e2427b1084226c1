// The API server's routes that reach a kubelet: the node proxy
// (/api/v1/nodes/{name}/proxy/{path}) and pods/{name}/log. The kubelet is
// found as the real server finds it: the node's InternalIP (else its
// Hostname address) and status.daemonEndpoints.kubeletEndpoint.Port. The
// test kubelet serves plain HTTP, so the server connects over plain HTTP
// (a real API server uses HTTPS with its kubelet client certificate).
// The store is read under the server's lock; the kubelet is called outside
// it, so a slow kubelet holds up no other request.
#include <sstream>

#include "controller/http_probe.h"
#include "testing/apiserver/api_server.h"
#include "testing/apiserver/request_util.h"

namespace fairbench::apiserver {

using nlohmann::json;

namespace {

std::vector<std::string> PathSegments(const std::string& path) {
  std::vector<std::string> out;
  std::stringstream ss(path);
  std::string part;
  while (std::getline(ss, part, '/')) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

std::string Escape(const std::string& s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string S(const json& o, const char* key) {
  return o.is_object() && o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : "";
}

struct KubeletAddress {
  std::string host;
  int port = 0;
};

KubeletAddress AddressOf(const json& node) {
  KubeletAddress a;
  const json status = node.value("status", json::object());
  std::string internal, hostname;
  for (const json& addr : status.value("addresses", json::array())) {
    if (S(addr, "type") == "InternalIP" && internal.empty()) internal = S(addr, "address");
    if (S(addr, "type") == "Hostname" && hostname.empty()) hostname = S(addr, "address");
  }
  a.host = internal.empty() ? hostname : internal;
  const json ep = status.value("daemonEndpoints", json::object()).value("kubeletEndpoint", json::object());
  a.port = ep.value("Port", 0);
  return a;
}

struct Forwarded {
  bool reached = false;
  std::string error;
  int code = 0;
  std::string content_type;
  std::string body;
};

// Through the controller's libcurl probe: cpp-httplib's client builds a
// function-local static regex inside the uninstrumented library, which
// ThreadSanitizer cannot see ordered between this server's workers.
Forwarded Forward(const KubeletAddress& a, const std::string& path_and_query) {
  Forwarded f;
  controller::ProbeRequest request;
  request.host = a.host;
  request.port = static_cast<uint16_t>(a.port);
  request.path = path_and_query;
  request.timeout = std::chrono::seconds(30);
  request.connect_timeout = std::chrono::seconds(3);
  auto res = controller::HttpProbe(request);
  if (!res.ok()) {
    f.error = "dial tcp " + a.host + ":" + std::to_string(a.port) + ": " + res.status().message();
    return f;
  }
  f.reached = true;
  f.code = static_cast<int>(res->status);
  f.content_type = res->content_type;
  f.body = std::move(res->body);
  return f;
}

}  // namespace

bool ApiServer::IsKubeletRoute(const std::string& path) {
  auto seg = PathSegments(path);
  if (seg.size() >= 5 && seg[0] == "api" && seg[1] == "v1" && seg[2] == "nodes" && seg[4] == "proxy") return true;
  return seg.size() == 7 && seg[0] == "api" && seg[1] == "v1" && seg[2] == "namespaces" && seg[4] == "pods" &&
         seg[6] == "log";
}

ApiResponse ApiServer::KubeletRoute(const ApiRequest& req) {
  auto seg = PathSegments(req.path);
  const bool log = seg.size() == 7 && seg[6] == "log";
  KubeletAddress address;
  std::string forward;
  {
    MutexLock lock(mu_);
    if (stopping_) return Reply(ServiceUnavailable("the server is shutting down"));
    // Authorized as get on pods/log or nodes/proxy, before anything is looked up.
    if (auto refused = AuthorizeLocked(req)) return Reply(std::move(*refused));
    if (req.method != "GET") {
      return Reply(MethodNotAllowed("the server does not allow this method on the requested resource"));
    }
    const ResourceInfo* pods = registry_.Find("", "v1", "pods");
    const ResourceInfo* nodes = registry_.Find("", "v1", "nodes");
    std::string node_name;
    if (log) {
      const std::string ns = seg[3];
      const std::string name = seg[5];
      const json* pod = store_.Get(pods->StorageKey(), ns, name);
      if (!pod) return Reply(NotFound(pods->Name(name)));
      const json spec = pod->value("spec", json::object());
      std::vector<std::string> containers, inits;
      for (const json& c : spec.value("containers", json::array())) containers.push_back(S(c, "name"));
      for (const json& c : spec.value("initContainers", json::array())) inits.push_back(S(c, "name"));
      std::string container = QueryValue(req.query, "container");
      auto joined = [](const std::vector<std::string>& v) {
        std::string s;
        for (size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + v[i];
        return s;
      };
      if (container.empty()) {
        if (containers.size() == 1) {
          container = containers[0];
        } else {
          std::string msg = "a container name must be specified for pod " + name + ", choose one of: [" +
                            joined(containers) + "]";
          if (!inits.empty()) msg += " or one of the init containers: [" + joined(inits) + "]";
          return Reply(BadRequest(msg));
        }
      }
      if (std::find(containers.begin(), containers.end(), container) == containers.end() &&
          std::find(inits.begin(), inits.end(), container) == inits.end()) {
        return Reply(BadRequest("container " + container + " is not valid for pod " + name));
      }
      node_name = S(spec, "nodeName");
      if (node_name.empty()) {
        // Not scheduled yet: the real server answers with an empty log.
        ApiResponse r;
        r.content_type = "text/plain";
        return r;
      }
      forward = "/containerLogs/" + Escape(ns) + "/" + Escape(name) + "/" + Escape(container);
      std::string q;
      for (const char* k : {"tailLines", "limitBytes", "previous", "sinceSeconds", "timestamps"}) {
        const std::string v = QueryValue(req.query, k);
        if (!v.empty()) q += (q.empty() ? "?" : "&") + std::string(k) + "=" + Escape(v);
      }
      forward += q;
    } else {
      node_name = seg[3];
      forward = "/";
      for (size_t i = 5; i < seg.size(); ++i) forward += (i > 5 ? "/" : "") + seg[i];
      std::string q;
      for (const auto& [k, v] : req.query) q += (q.empty() ? "?" : "&") + Escape(k) + "=" + Escape(v);
      forward += q;
    }
    const json* node = store_.Get(nodes->StorageKey(), "", node_name);
    if (!node) return Reply(NotFound(nodes->Name(node_name)));
    address = AddressOf(*node);
    if (address.host.empty() || address.port <= 0) {
      return Reply(ServiceUnavailable("no kubelet endpoint is known for node \"" + node_name + "\""));
    }
  }
  Forwarded f = Forward(address, forward);
  if (!f.reached) return Reply(ServiceUnavailable("error trying to reach service: " + f.error));
  if (log && (f.code < 200 || f.code > 299)) {
    std::string msg = f.body;
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    const char* reason = f.code == 404 ? "NotFound" : f.code == 400 ? "BadRequest" : "InternalError";
    return Reply(MakeStatus(f.code, reason, msg));
  }
  ApiResponse r;
  r.code = f.code;
  r.content_type = log ? "text/plain" : (f.content_type.empty() ? "text/plain" : f.content_type);
  r.body = std::move(f.body);
  return r;
}

}  // namespace fairbench::apiserver
