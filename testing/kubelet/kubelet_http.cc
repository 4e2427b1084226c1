#include "testing/kubelet/kubelet_http.h"

#include <fcntl.h>
#include <httplib.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

#include "testing/support/netns.h"

namespace fairbench::kubelet {

std::string SelectLog(const std::string& text, std::optional<int64_t> tail_lines, std::optional<int64_t> limit_bytes) {
  std::string out = text;
  if (tail_lines && *tail_lines >= 0) {
    // Line starts; a last line without its newline still counts as a line.
    std::vector<size_t> starts;
    if (!out.empty()) starts.push_back(0);
    for (size_t i = 0; i + 1 < out.size(); ++i) {
      if (out[i] == '\n') starts.push_back(i + 1);
    }
    const size_t want = static_cast<size_t>(*tail_lines);
    if (want == 0) {
      out.clear();
    } else if (want < starts.size()) {
      out = out.substr(starts[starts.size() - want]);
    }
  }
  if (limit_bytes && *limit_bytes >= 0 && out.size() > static_cast<size_t>(*limit_bytes)) {
    out.resize(static_cast<size_t>(*limit_bytes));
  }
  return out;
}

Result<std::unique_ptr<KubeletHttp>> KubeletHttp::Bind(const std::string& host, int port, const std::string& cert_file,
                                                       const std::string& key_file, const std::string& netns) {
  if (!netns.empty()) {
    Result<std::unique_ptr<KubeletHttp>> out = Status::Unavailable("");
    if (Status s = testing::InNetns(netns, [&] { out = Bind(host, port, cert_file, key_file); }); !s.ok()) return s;
    return out;
  }
  auto h = std::unique_ptr<KubeletHttp>(new KubeletHttp());
  if (cert_file.empty() != key_file.empty()) {
    return Status::InvalidArgument("a serving certificate needs both its certificate and its key");
  }
  if (!cert_file.empty()) {
    auto tls = std::make_unique<httplib::SSLServer>(cert_file.c_str(), key_file.c_str());
    if (!tls->is_valid()) {
      return Status::InvalidArgument("the serving certificate " + cert_file + " or its key " + key_file +
                                     " is not usable");
    }
    h->server_ = std::move(tls);
  } else {
    h->server_ = std::make_unique<httplib::Server>();
  }
  // kube-apiserver keeps its proxied connections to a kubelet open; a short
  // keep-alive lets Stop() return at once instead of after httplib's 5 s.
  h->server_->set_keep_alive_timeout(1);
  if (port == 0) {
    h->port_ = h->server_->bind_to_any_port(host);
  } else if (h->server_->bind_to_port(host, port)) {
    h->port_ = port;
  } else {
    h->port_ = -1;
  }
  if (h->port_ <= 0) return Status::Unavailable("cannot listen on " + host + ":" + std::to_string(port));
  return h;
}

KubeletHttp::~KubeletHttp() { Stop(); }

namespace {

constexpr std::streamoff kMaxLogBytes = 64 << 20;

std::optional<int64_t> IntParam(const httplib::Request& req, const char* name) {
  if (!req.has_param(name)) return std::nullopt;
  try {
    return std::stoll(req.get_param_value(name));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

void KubeletHttp::Serve(Kubelet& kubelet) {
  server_->Get("/healthz",
               [](const httplib::Request&, httplib::Response& res) { res.set_content("ok", "text/plain"); });
  server_->Get("/pods", [&kubelet](const httplib::Request&, httplib::Response& res) {
    res.set_content(kubelet.Pods().dump(), "application/json");
  });
  server_->Get("/configz", [&kubelet](const httplib::Request&, httplib::Response& res) {
    res.set_content(kubelet.Configz().dump(), "application/json");
  });
  server_->Get("/stats/summary", [&kubelet](const httplib::Request&, httplib::Response& res) {
    res.set_content(kubelet.Summary().dump(), "application/json");
  });
  server_->Get(
      R"(/containerLogs/([^/]+)/([^/]+)/([^/]+))", [&kubelet](const httplib::Request& req, httplib::Response& res) {
        const bool previous = req.has_param("previous") && req.get_param_value("previous") == "true";
        auto file = kubelet.LogFile(req.matches[1].str(), req.matches[2].str(), req.matches[3].str(), previous);
        if (auto* err = std::get_if<LogError>(&file)) {
          res.status = err->code;
          res.set_content(err->message, "text/plain");
          return;
        }
        // At most the last kMaxLogBytes of the file are served.
        std::ifstream in(std::get<std::string>(file), std::ios::binary | std::ios::ate);
        const std::streamoff size = in ? static_cast<std::streamoff>(in.tellg()) : 0;
        const std::streamoff from = std::max<std::streamoff>(0, size - kMaxLogBytes);
        std::string text(static_cast<size_t>(size - from), '\0');
        in.seekg(from);
        in.read(text.data(), static_cast<std::streamsize>(text.size()));
        text.resize(static_cast<size_t>(std::max<std::streamsize>(0, in.gcount())));
        res.set_content(SelectLog(text, IntParam(req, "tailLines"), IntParam(req, "limitBytes")), "text/plain");
      });
  thread_ = std::thread([this] { server_->listen_after_bind(); });
}

void KubeletHttp::Stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace fairbench::kubelet
