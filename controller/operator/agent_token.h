// The agents' token: the shared secret an agent presents to the
// controller's hub. It lives in a Secret (data.token) that the chart
// creates; a bare install gets one created here, labelled managed-by
// fairbench. It is never a flag.
//
// ReadAgentToken is one attempt: the token; FailedPrecondition when the
// Secret is there without a usable data.token (the operator's to fix);
// Unavailable when the API server did not answer (the caller retries).
//
// AgentTokenGate holds a token that could not be had when the controller
// started: before each run the Secret is read again; once it has a token
// the gate opens (the hub gets it), until then each run it is asked for
// fails with the condition Failed/AgentTokenMissing and a Warning Event
// naming the Secret. The controller keeps running meanwhile.
//
// ReadAgentToken is thread-safe; an AgentTokenGate is used from one
// thread (the executor's run factory).
#pragma once

#include <functional>
#include <stop_token>
#include <string>

#include "common/backoff.h"
#include "common/status.h"
#include "controller/kube/client.h"

namespace fairbench::controller {

Result<std::string> ReadAgentToken(kube::Client& client, const std::string& ns, const std::string& name);

// ReadAgentToken again while the API server does not answer (waits of
// `retry`, one error line per attempt naming `server`), until it does or
// `stop` is requested (then the last Unavailable).
Result<std::string> WaitForAgentToken(kube::Client& client, const std::string& ns, const std::string& name,
                                      const std::string& server, const BackoffPolicy& retry, std::stop_token stop);

class AgentTokenGate {
 public:
  // `first`: what ReadAgentToken said at start (not Unavailable).
  // `on_token` gets the token once the Secret has one.
  AgentTokenGate(kube::Client& client, std::string ns, std::string name, const Result<std::string>& first,
                 std::function<void(const std::string&)> on_token);
  // Why agents cannot authenticate ("Secret ns/name has no data.token:
  // agents cannot authenticate; …"), or "" when they can.
  const std::string& problem() const { return problem_; }
  // Before a run: OK when agents can authenticate (the Secret is read again
  // while it could not be used), else FailedPrecondition with problem().
  Status BeforeRun();

 private:
  void Take(const Result<std::string>& token);

  kube::Client& client_;
  const std::string ns_;
  const std::string name_;
  const std::function<void(const std::string&)> on_token_;
  std::string problem_;
};

}  // namespace fairbench::controller
