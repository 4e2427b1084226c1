#include "controller/orchestrator/verify.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>

#include <nlohmann/json.hpp>

#include "api/grpc_calls.h"
#include "common/metrics.h"
#include "controller/orchestrator/cell_jobs.h"
#include "host/grpc_probe.h"
#include "host/http_probe.h"

namespace fairbench::controller {
namespace {

bool IStartsWith(const std::string& s, const std::string& prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) != std::tolower(static_cast<unsigned char>(prefix[i])))
      return false;
  }
  return true;
}

std::string Clip(const std::string& s, size_t n = 80) {
  std::string out = s.size() > n ? s.substr(0, n) + "…" : s;
  for (char& c : out) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

// A gRPC scenario: its call made once with grpc++ (not the agents' own
// framing), answered with the expected status and, with expect.json, the
// expected response message.
Status VerifyGrpcCall(const std::string& host, uint16_t port, Scheme scheme, const api::ScenarioSettings& settings) {
  const api::GrpcCallSpec& g = *settings.grpc;
  host::GrpcProbeRequest call;
  call.host = host;
  call.port = port;
  call.tls = scheme == Scheme::kHttps;
  call.method = g.method;
  call.message = g.request_message;
  for (const auto& [k, v] : GrpcJob(g).metadata) call.metadata.emplace_back(k, v);
  call.deadline = std::chrono::duration_cast<std::chrono::milliseconds>(g.deadline.value_or(std::chrono::seconds(5)));
  call.server_streaming = g.kind == api::GrpcCallSpec::Kind::kServerStreaming;
  auto answer = host::GrpcProbeCall(call);
  const std::string what = g.method + ": ";
  if (!answer.ok()) return Status::Unavailable(what + answer.status().message());
  const api::GrpcCode expected = settings.expect.grpc_status.value_or(api::GrpcCode::kOk);
  if (answer->grpc_code != static_cast<int>(expected)) {
    return Status::FailedPrecondition(
        what + "expected gRPC status " + std::string(api::ToString(expected)) + ", got " +
        GrpcStatusName(answer->grpc_code) +
        (answer->grpc_message.empty() ? "" : " (\"" + Clip(answer->grpc_message) + "\")"));
  }
  if (!settings.expect.json) return Status::Ok();
  if (answer->messages.empty()) return Status::FailedPrecondition(what + "expected a response message, got none");
  auto json = api::ResponseJson(g, answer->messages.front());
  if (!json.ok()) return Status::FailedPrecondition(what + json.status().message());
  const nlohmann::json got = nlohmann::json::parse(*json, nullptr, false);
  if (got.is_discarded() || got != *settings.expect.json) {
    return Status::FailedPrecondition(what + "expected the message " + Clip(settings.expect.json->dump()) + ", got " +
                                      Clip(got.is_discarded() ? *json : got.dump()));
  }
  return Status::Ok();
}

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

// The request with "{n}" replaced, as the agents would send it.
api::Request VariedRequest(const api::Request& r, const api::ScenarioSettings& settings) {
  if (!settings.vary) return r;
  const std::string n = VerifyNumber(settings);
  api::Request out = r;
  out.path = SubstituteVaryToken(out.path, n);
  if (out.body) out.body = SubstituteVaryToken(*out.body, n);
  for (auto& [name, value] : out.headers) value = SubstituteVaryToken(value, n);
  return out;
}

api::Expect VariedExpect(const api::ScenarioSettings& settings) {
  api::Expect e = settings.expect;
  if (!settings.vary) return e;
  const std::string n = VerifyNumber(settings);
  if (e.body) e.body = SubstituteVaryToken(*e.body, n);
  if (e.json) {
    // Digits put inside JSON strings keep the text JSON.
    nlohmann::json varied = nlohmann::json::parse(SubstituteVaryToken(e.json->dump(), n), nullptr, false);
    if (!varied.is_discarded()) e.json = std::move(varied);
  }
  return e;
}

// A blocking socket connected to host:port within `deadline`; -1 and *error on failure.
int ConnectTo(const std::string& host, uint16_t port, std::chrono::steady_clock::time_point deadline,
              std::string* error) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0) {
    *error = "resolve " + host + ": " + gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      *error = std::string("connect: ") + std::strerror(errno);
      close(fd);
      fd = -1;
      continue;
    }
    pollfd p{fd, POLLOUT, 0};
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    int err = 0;
    socklen_t len = sizeof err;
    if (poll(&p, 1, static_cast<int>(std::max<int64_t>(0, left.count()))) != 1 ||
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
      *error = err != 0 ? std::string("connect: ") + std::strerror(err) : "connect: timed out";
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  return fd;
}

}  // namespace

std::string SubstituteVaryToken(std::string text, std::string_view n) {
  for (size_t at = text.find(api::kVaryToken); at != std::string::npos;
       at = text.find(api::kVaryToken, at + n.size())) {
    text.replace(at, api::kVaryToken.size(), n);
  }
  return text;
}

std::string VerifyNumber(const api::ScenarioSettings& settings) {
  const int64_t seed = settings.vary ? settings.vary->seed.value_or(api::kDefaultVarySeed) : api::kDefaultVarySeed;
  return std::to_string(AgentVarySeed(seed, "verify", 0));
}

Result<api::AnswerChecks> ReadAnswerToEnd(const std::string& host, uint16_t port, const api::ScenarioSettings& settings,
                                          std::chrono::milliseconds timeout) {
  if (settings.requests.empty()) return Status::InvalidArgument("no request");
  const api::Request r = VariedRequest(settings.requests.front().request, settings);
  const std::string& body = r.EffectiveBody();
  std::string out = r.method + " " + r.path + " HTTP/1.1\r\n";
  bool host_given = false;
  for (const auto& [name, value] : r.headers) host_given |= IEquals(name, "host");
  const bool v6 = host.find(':') != std::string::npos;
  if (!host_given) out += "Host: " + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port) + "\r\n";
  for (const auto& [name, value] : r.headers) out += name + ": " + value + "\r\n";
  if (!body.empty()) out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  out += "Connection: close\r\n\r\n" + body;

  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string error;
  const int fd = ConnectTo(host, port, deadline, &error);
  if (fd < 0) return Status::Unavailable(error);
  std::string in;
  size_t sent = 0;
  bool eof = false;
  while (!eof) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, static_cast<short>(POLLIN | (sent < out.size() ? POLLOUT : 0)), 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    if (sent < out.size() && (p.revents & POLLOUT)) {
      const ssize_t n = send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
      if (n > 0) sent += static_cast<size_t>(n);
      else if (n < 0 && errno != EAGAIN && errno != EINTR) break;
    }
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[16384];
      const ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n > 0) in.append(buf, static_cast<size_t>(n));
      else if (n == 0 || (errno != EAGAIN && errno != EINTR)) eof = true;
      if (in.size() > (64u << 20)) break;  // enough to tell
    }
  }
  close(fd);
  const size_t head_end = in.find("\r\n\r\n");
  if (head_end == std::string::npos) {
    return Status::Unavailable(in.empty() ? "no answer within " + std::to_string(timeout.count()) + " ms"
                                          : "an answer without the end of its headers");
  }
  if (!eof) return Status::Unavailable("the server did not close the connection after its answer (Connection: close)");
  api::AnswerChecks found;
  found.date_missing = true;
  std::optional<uint64_t> length;
  bool chunked = false;
  int status = 0;
  if (in.size() >= 12) std::from_chars(in.data() + 9, in.data() + 12, status);
  std::string_view head(in.data(), head_end);
  const size_t status_end = head.find("\r\n");
  head.remove_prefix(status_end == std::string_view::npos ? head.size() : status_end + 2);  // the status line
  while (!head.empty()) {
    const size_t eol = head.find("\r\n");
    std::string_view line = head.substr(0, eol);
    head.remove_prefix(eol == std::string_view::npos ? head.size() : eol + 2);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view name = line.substr(0, colon);
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    if (IEquals(name, "date")) found.date_missing = false;
    if (IEquals(name, "transfer-encoding")) chunked = true;
    if (IEquals(name, "content-length")) {
      uint64_t v = 0;
      if (std::from_chars(value.data(), value.data() + value.size(), v).ec == std::errc()) length = v;
    }
  }
  const uint64_t body_bytes = in.size() - head_end - 4;
  const bool bodiless = r.method == "HEAD" || status / 100 == 1 || status == 204 || status == 304;
  if (length && !chunked && !bodiless && *length != body_bytes) {
    found.content_length = *length;
    found.body_bytes = body_bytes;
  }
  return found;
}

Status VerifyScenario(const std::string& host, uint16_t port, Scheme scheme, const api::ScenarioSettings& settings,
                      Protocol protocol) {
  if (settings.grpc) return VerifyGrpcCall(host, port, scheme, settings);
  const std::vector<api::WeightedRequest>& requests = settings.requests;
  for (size_t i = 0; i < requests.size(); ++i) {
    const api::Request r = VariedRequest(requests[i].request, settings);
    host::ProbeRequest p;
    p.method = r.method;
    p.host = host;
    p.port = port;
    p.scheme = scheme;
    p.protocol = protocol;
    p.path = r.path;
    for (const auto& [k, v] : r.headers) p.headers.emplace_back(k, v);
    p.body = r.EffectiveBody();
    p.timeout = std::chrono::seconds(5);
    auto response = host::HttpProbe(p);
    const std::string what = r.method + " " + r.path + ": ";
    if (!response.ok()) return Status::Unavailable(what + response.status().message());
    const api::Expect e = VariedExpect(settings);
    if (response->status != e.status) {
      return Status::FailedPrecondition(what + "expected status " + std::to_string(e.status) + ", got " +
                                        std::to_string(response->status));
    }
    if (e.content_type && !IStartsWith(response->content_type, *e.content_type)) {
      return Status::FailedPrecondition(what + "expected content type " + *e.content_type + ", got '" +
                                        response->content_type + "'");
    }
    if (i > 0) continue;  // body and JSON expectations describe the scenario's main request
    if (e.body && response->body != *e.body) {
      return Status::FailedPrecondition(what + "expected body '" + Clip(*e.body) + "', got '" + Clip(response->body) +
                                        "'");
    }
    if (e.json) {
      const nlohmann::json got = nlohmann::json::parse(response->body, nullptr, false);
      if (got.is_discarded())
        return Status::FailedPrecondition(what + "expected JSON, got '" + Clip(response->body) + "'");
      if (got != *e.json) {
        return Status::FailedPrecondition(what + "expected JSON " + Clip(e.json->dump()) + ", got " + Clip(got.dump()));
      }
    }
  }
  return Status::Ok();
}

}  // namespace fairbench::controller
