// AgentHub: the controller's gRPC service that agents dial into.
//
// Each agent holds one bidirectional stream (AgentHub.Connect), served by one
// AgentSession reactor that owns the stream's state, has at most one write
// in flight and a small bounded outbox in front of it. The first message must
// be Hello with the right token, or the stream ends UNAUTHENTICATED.
//
// The orchestrator asks the hub for idle agents, starts a job on an agent
// with a JobObserver, and may cancel it. Everything an agent sends about the
// job reaches the observer, already checked (sequence numbers, see
// JobStream) and decoded; a broken stream reaches it as a failure. Observer
// calls come from gRPC's threads: they must be quick and must not block.
//
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "common/metrics.h"
#include "common/status.h"
#include "controller/hub/agent_pool.h"
#include "fairbench/v1/agent.grpc.pb.h"

namespace fairbench::controller {

struct AgentInfo {
  std::string id;
  std::string node;
  uint32_t cores = 0;
  std::string version;
  std::string job_id;  // empty when idle
};

struct HubStats {
  uint64_t snapshots = 0;
  uint64_t duplicates = 0;
  uint64_t missing = 0;
  uint64_t refused = 0;  // streams ended for a wrong token or a bad Hello
};

class AgentSession;

class AgentHub final : public v1::AgentHub::CallbackService, public AgentPool {
 public:
  explicit AgentHub(std::string token, std::string controller_id = "fairbench-controller");
  ~AgentHub() override;

  grpc::ServerBidiReactor<v1::AgentMessage, v1::ControllerMessage>* Connect(grpc::CallbackServerContext* context) override;

  std::vector<AgentInfo> Agents() const;
  Result<std::vector<std::string>> WaitForAgents(size_t count, std::chrono::milliseconds timeout,
                                                 const std::set<std::string>& ids, std::stop_token stop) override;
  Result<std::vector<std::string>> WaitForAgents(size_t count, std::chrono::milliseconds timeout) {
    return WaitForAgents(count, timeout, {}, {});
  }
  Status StartJob(const std::string& agent_id, const wire::JobSpec& job, std::shared_ptr<JobObserver> observer) override;
  // The same with a job already in the protocol's form (tests of the protocol).
  Status StartJob(const std::string& agent_id, const v1::LoadJob& job, std::shared_ptr<JobObserver> observer);
  void CancelJob(const std::string& agent_id, const std::string& job_id, const std::string& reason) override;
  // Ends every stream (agents see it and stop their load).
  void Shutdown();
  // Agents say Hello with this token from now on (a token put in the Secret
  // after the controller started); connected agents stay.
  void SetToken(std::string token);
  HubStats stats() const;

 private:
  friend class AgentSession;
  Status Register(AgentSession* session);
  void Unregister(AgentSession* session);
  void Count(uint64_t snapshots, uint64_t duplicates, uint64_t missing, uint64_t refused);

  bool TokenMatches(const std::string& token) const;

  std::string token_;  // guarded by mu_
  const std::string controller_id_;
  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::map<std::string, AgentSession*> sessions_;  // guarded by mu_; by agent id
  std::set<AgentSession*> all_;                    // guarded by mu_; registered or not
  HubStats stats_;                                 // guarded by mu_
  bool shutdown_ = false;                          // guarded by mu_
};

// A fresh shared secret for the agents (128 bits from /dev/urandom, hex).
std::string NewAgentToken();

}  // namespace fairbench::controller
