// AgentHub: the controller's gRPC service that agents dial into.
//
// Each agent holds one bidirectional stream (AgentHub.Connect), served by one
// AgentSession reactor that owns the stream's state, has at most one write
// in flight and a small bounded outbox in front of it. The first message must
// be Hello with the right token, or the stream ends UNAUTHENTICATED.
//
// Bounds (AgentHubOptions), so that whoever can reach the port cannot make
// the controller hold an unbounded number of streams: at most max_agents
// agents that said Hello (one more is refused with RESOURCE_EXHAUSTED; an
// agent reconnecting under its own id replaces its old stream and is not
// counted twice), at most max_pending streams that have not said Hello yet
// (more are refused with RESOURCE_EXHAUSTED at once), and a stream without
// Hello after hello_timeout is ended with DEADLINE_EXCEEDED. Each refusal
// is counted in HubStats and logged (at most one line per reason a second).
// Message sizes are bounded by the listener (grpc_server.h).
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
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "common/metrics.h"
#include "common/mutex.h"
#include "common/status.h"
#include "controller/hub/agent_pool.h"
#include "fairbench/v1/agent.grpc.pb.h"

namespace fairbench::controller {

struct AgentInfo {
  std::string id;
  std::string node;
  uint32_t cores = 0;
  std::string version;
  std::string job_id;           // empty when idle
  std::optional<CpuView> cpus;  // what it said of its own CPUs (Hello.cpu_view)
};

struct HubStats {
  uint64_t streams = 0;  // streams opened (past TLS), refused or not
  uint64_t snapshots = 0;
  uint64_t duplicates = 0;
  uint64_t missing = 0;
  uint64_t refused = 0;          // streams ended for a wrong token or a bad Hello
  uint64_t refused_full = 0;     // agents refused: max_agents were connected
  uint64_t refused_pending = 0;  // streams refused: max_pending were waiting for their Hello
  uint64_t hello_timeouts = 0;   // streams ended: no Hello within hello_timeout
};

struct AgentHubOptions {
  // Twice the agents one run may have (api::kMaxAgents, 256): a run's
  // agents, and as many replacements still saying goodbye.
  size_t max_agents = 512;
  // A whole run's agents may dial at the same moment; beyond that, a stream
  // without Hello is someone else's (those refused retry with backoff).
  size_t max_pending = 256;
  // An agent says Hello as soon as its stream is open: milliseconds.
  std::chrono::milliseconds hello_timeout{5000};
};

class AgentSession;

class AgentHub final : public v1::AgentHub::CallbackService, public AgentPool {
 public:
  explicit AgentHub(std::string token, std::string controller_id = "fairbench-controller",
                    AgentHubOptions options = {});
  ~AgentHub() override;

  grpc::ServerBidiReactor<v1::AgentMessage, v1::ControllerMessage>* Connect(
      grpc::CallbackServerContext* context) override;

  std::vector<AgentInfo> Agents() const;
  AgentCpuView AgentCpus(const std::string& agent_id) const override;
  Result<std::vector<std::string>> WaitForAgents(size_t count, std::chrono::milliseconds timeout,
                                                 const std::set<std::string>& ids, std::stop_token stop) override;
  Result<std::vector<std::string>> WaitForAgents(size_t count, std::chrono::milliseconds timeout) {
    return WaitForAgents(count, timeout, {}, {});
  }
  Status StartJob(const std::string& agent_id, const wire::JobSpec& job,
                  std::shared_ptr<JobObserver> observer) override;
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
  grpc::Status Register(AgentSession* session);
  void Unregister(AgentSession* session);
  void Count(uint64_t snapshots, uint64_t duplicates, uint64_t missing, uint64_t refused);
  // Ends pending streams whose Hello is overdue; runs on reaper_.
  void ReapPending(std::stop_token stop);
  // A stream ended for a wrong token or a bad Hello: counted, and logged
  // through LogRefusal (whoever reaches the port can send many).
  void Refuse(const std::string& reason, const std::string& line);
  // One log line per reason a second at most: a flood of refused streams
  // must not flood the log. Called with mu_ held.
  void LogRefusal(const std::string& reason, const std::string& line) REQUIRES(mu_);

  bool TokenMatches(const std::string& token) const;

  std::string token_ GUARDED_BY(mu_);
  const std::string controller_id_;
  const AgentHubOptions options_;
  mutable Mutex mu_;
  std::condition_variable_any cv_;
  std::map<std::string, AgentSession*> sessions_ GUARDED_BY(mu_);  // by agent id
  std::set<AgentSession*> all_ GUARDED_BY(mu_);                    // registered or not
  // Streams that have not said Hello yet, and when they must have.
  std::map<AgentSession*, std::chrono::steady_clock::time_point> pending_ GUARDED_BY(mu_);
  struct Said {
    std::chrono::steady_clock::time_point at;
    uint64_t unsaid = 0;
  };
  std::map<std::string, Said> said_ GUARDED_BY(mu_);  // LogRefusal's memory
  HubStats stats_ GUARDED_BY(mu_);
  bool shutdown_ GUARDED_BY(mu_) = false;
  std::jthread reaper_;  // last: stopped and joined first
};

// A fresh shared secret for the agents (128 bits from /dev/urandom, hex).
std::string NewAgentToken();

}  // namespace fairbench::controller
