#include "controller/operator/agent_token.h"

#include <spdlog/spdlog.h>

#include "api/well_known.h"
#include "common/base64.h"
#include "controller/hub/agent_hub.h"
#include "controller/kube/api_fields.h"
#include "common/clock.h"
#include "common/json_read.h"

namespace fairbench::controller {
namespace {

namespace f = kube::fields;
namespace jr = json_read;

constexpr char kTokenKey[] = "token";

}  // namespace

Result<std::string> ReadAgentToken(kube::Client& client, const std::string& ns, const std::string& name) {
  auto secret = client.Get(kube::resources::Secrets(), ns, name);
  if (secret.ok()) {
    auto decoded = Base64Decode(jr::String(jr::Object(*secret, f::kData), kTokenKey));
    if (decoded.ok() && !decoded->empty()) return *decoded;
    return Status::FailedPrecondition("Secret " + ns + "/" + name + " has no data.token");
  }
  if (secret.error().reason != kube::Reason::kNotFound) {
    return Status::Unavailable("Secret " + ns + "/" + name + ": " + secret.error().message);
  }
  const std::string token = NewAgentToken();
  const kube::Json object = {
      {f::kApiVersion, "v1"},
      {f::kKind, "Secret"},
      {f::kMetadata, {{f::kName, name}, {f::kLabels, {{api::label::kManagedBy, api::label::kFairbench}}}}},
      {"type", "Opaque"},
      {"stringData", {{kTokenKey, token}}}};
  auto created = client.Create(kube::resources::Secrets(), ns, object);
  if (!created.ok() && created.error().reason != kube::Reason::kAlreadyExists) {
    return Status::Unavailable("creating Secret " + ns + "/" + name + ": " + created.error().message);
  }
  if (!created.ok()) return ReadAgentToken(client, ns, name);  // another controller created it first
  spdlog::info("created Secret {}/{} with a new agent token", ns, name);
  return token;
}

Result<std::string> WaitForAgentToken(kube::Client& client, const std::string& ns, const std::string& name,
                                      const std::string& server, const BackoffPolicy& retry, std::stop_token stop) {
  Result<std::string> token = Status::Unavailable("not read yet");
  Backoff backoff(retry);
  while (!stop.stop_requested()) {
    token = ReadAgentToken(client, ns, name);
    if (token.ok() || token.status().code() != Status::Code::kUnavailable) return token;
    const auto wait = backoff.Next();
    spdlog::error("cannot reach the API server {}: {} (retrying in {} ms)", server, token.status().message(),
                  wait.count());
    if (!SystemClock::Instance().SleepFor(wait, stop)) break;
  }
  return token;
}

AgentTokenGate::AgentTokenGate(kube::Client& client, std::string ns, std::string name, const Result<std::string>& first,
                               std::function<void(const std::string&)> on_token)
    : client_(client), ns_(std::move(ns)), name_(std::move(name)), on_token_(std::move(on_token)) {
  if (!first.ok()) {
    Take(first);
    spdlog::error("{}", problem_);
  }
}

void AgentTokenGate::Take(const Result<std::string>& token) {
  if (token.ok()) {
    if (!problem_.empty()) spdlog::info("Secret {}/{} has a token now: agents can authenticate", ns_, name_);
    problem_.clear();
    if (on_token_) on_token_(*token);
    return;
  }
  problem_ = token.status().message() +
             ": agents cannot authenticate; put a token in it (or delete it: the controller then creates one); it "
             "is read again before the next run starts";
}

Status AgentTokenGate::BeforeRun() {
  if (problem_.empty()) return Status::Ok();
  Take(ReadAgentToken(client_, ns_, name_));
  return problem_.empty() ? Status::Ok() : Status::FailedPrecondition(problem_);
}

}  // namespace fairbench::controller
