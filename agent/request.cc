#include "agent/request.h"

#include <algorithm>
#include <cctype>

#include "agent/grpc_frame.h"
#include "common/load_rules.h"

namespace fairbench::agent {
namespace {

bool IEquals(const std::string& a, const char* b) {
  const size_t n = std::char_traits<char>::length(b);
  if (a.size() != n) return false;
  for (size_t i = 0; i < n; ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

// The syntax: common/load_rules.h, shared with the run file's validation
// and the wire codec.
using load_rules::HasLineBreak;
using load_rules::IsToken;

}  // namespace

BuiltRequest BuildRequest(const RequestSpec& spec, const std::string& host_header, bool keep_alive) {
  bool user_host = false, user_length = false, user_connection = false;
  for (const auto& [name, value] : spec.headers) {
    user_host |= IEquals(name, "host");
    user_length |= IEquals(name, "content-length");
    user_connection |= IEquals(name, "connection");
  }
  std::string out;
  out.reserve(64 + spec.target.size() + spec.body.size() + spec.headers.size() * 32);
  out += spec.method;
  out += ' ';
  out += spec.target;
  out += " HTTP/1.1\r\n";
  if (!user_host) {
    out += "Host: ";
    out += host_header;
    out += "\r\n";
  }
  for (const auto& [name, value] : spec.headers) {
    out += name;
    out += ": ";
    out += value;
    out += "\r\n";
  }
  if (!spec.body.empty() && !user_length) {
    out += "Content-Length: ";
    out += std::to_string(spec.body.size());
    out += "\r\n";
  }
  if (!keep_alive && !user_connection) out += "Connection: close\r\n";
  out += "\r\n";
  out += spec.body;
  BuiltRequest built;
  built.name = spec.name.empty() ? spec.method + " " + spec.target : spec.name;
  built.bytes = std::move(out);
  built.head = spec.method == "HEAD";
  built.weight = spec.weight;
  return built;
}

Result<std::pair<std::string, std::string>> ParseHeader(const std::string& text) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return Status::InvalidArgument("header '" + text + "' must look like 'Name: value'");
  std::string name = text.substr(0, colon);
  std::string value = text.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.erase(value.begin());
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.pop_back();
  if (!IsToken(name)) {
    return Status::InvalidArgument("header '" + text + "' has an invalid name");
  }
  if (HasLineBreak(value)) return Status::InvalidArgument("header '" + name + "' contains a line break");
  return std::make_pair(std::move(name), std::move(value));
}

Status ValidateRequest(const RequestSpec& spec, const std::string& where) {
  if (!IsToken(spec.method)) {
    return Status::InvalidArgument(where + "method '" + spec.method + "' is not an HTTP method token");
  }
  if (!load_rules::StartsLikeTarget(spec.target)) {
    return Status::InvalidArgument(where + "path '" + spec.target + "' must start with '/'");
  }
  if (load_rules::HasSpaceOrControl(spec.target)) {
    return Status::InvalidArgument(where + "path '" + spec.target + "' contains spaces or control characters");
  }
  for (const auto& [name, value] : spec.headers) {
    if (!IsToken(name)) {
      return Status::InvalidArgument(where + "header name '" + name + "' is not a token");
    }
    if (HasLineBreak(value)) return Status::InvalidArgument(where + "header '" + name + "' contains a line break");
  }
  if (spec.weight == 0) return Status::InvalidArgument(where + "weight must be ≥ 1");
  return Status::Ok();
}

RequestSchedule::RequestSchedule(const std::vector<uint32_t>& weights) {
  for (uint32_t w : weights) {
    weights_.push_back(w);
    current_.push_back(0);
    total_ += w;
  }
}

uint32_t RequestSchedule::NextWeighted() {
  size_t best = 0;
  for (size_t i = 0; i < weights_.size(); ++i) {
    current_[i] += weights_[i];
    if (current_[i] > current_[best]) best = i;
  }
  current_[best] -= total_;
  return static_cast<uint32_t>(best);
}

RequestSpec GrpcRequest(const std::string& method, const std::string& message,
                        const std::vector<std::pair<std::string, std::string>>& metadata,
                        std::chrono::nanoseconds deadline) {
  const std::string path = method.empty() || method.front() != '/' ? "/" + method : method;
  RequestSpec r;
  r.name = path;
  r.method = "POST";
  r.target = path;
  r.headers = {{"content-type", "application/grpc"}, {"te", "trailers"}};
  if (deadline.count() > 0) r.headers.emplace_back("grpc-timeout", FormatGrpcTimeout(deadline.count()));
  for (const auto& [key, value] : metadata) r.headers.emplace_back(key, value);
  r.body = EncodeGrpcFrame(message);
  return r;
}

}  // namespace fairbench::agent
