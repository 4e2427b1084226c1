// AgentClient: fairbench-agent's connect mode — dial the controller, hold one
// stream, run the load jobs it sends, stream their snapshots back.
//
// One job at a time. The load runs only while the stream is alive: when the
// stream breaks (the controller died, the network went, keepalive pings
// unanswered) the running job is stopped at once, and the client dials
// again with backoff. A wrong token is fatal (the controller says
// UNAUTHENTICATED): Run() returns an error instead of retrying forever.
//
// TLS (AgentTls): the controller is verified against a CA file, the agent
// shows a client certificate when given one (the controller may require
// it), and the name checked in the controller's certificate may differ
// from the host dialed. The files are read again at every dial, so that a
// certificate rotated on disk (a Secret updated in place) is used from the
// next connection on. The agent only ever dials: it listens on no port.
//
// Threads: Run() reads the stream; each job runs on its own thread (the
// engine's workers under it); writes are serialised by a mutex. Shutdown()
// may be called from any thread (signal handling).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "agent/engine.h"
#include "common/status.h"
#include "fairbench/v1/agent.grpc.pb.h"

namespace fairbench::agent {

struct AgentTls {
  std::string ca_file;    // verify the controller against it; empty: plain text
  std::string cert_file;  // this agent's certificate (mutual TLS), with key_file
  std::string key_file;
  std::string server_name;  // the name expected in the controller's certificate (default: the host dialed)
  bool enabled() const { return !ca_file.empty(); }
};

// The channel credentials for `tls`, the files read now (insecure when it is
// not enabled). Errors name the flags --tls-ca, --tls-cert and --tls-key.
Result<std::shared_ptr<grpc::ChannelCredentials>> AgentCredentials(const AgentTls& tls);

struct AgentClientOptions {
  std::string controller;  // host:port
  std::string token;
  AgentTls tls;
  std::string agent_id;
  std::string node;
  std::vector<int> cpus;  // pin worker threads here
  // Give up when no stream could be held for this long (0: never). Local
  // agents use it so that they never outlive their controller for long.
  std::chrono::milliseconds give_up_after{0};
};

class AgentClient {
 public:
  explicit AgentClient(AgentClientOptions options);
  ~AgentClient();

  // Dials and serves until Shutdown() or a fatal error.
  Status Run();
  void Shutdown();

 private:
  // One stream from Hello to its end. Returns a fatal status, or OK to dial again.
  Status Session();
  void StartJob(const v1::LoadJob& job);
  void RunJob(v1::LoadJob job);
  void StopJob();  // stops the load and waits for the job thread
  bool Write(const v1::AgentMessage& msg);

  AgentClientOptions options_;
  std::atomic<bool> shutdown_{false};
  std::mutex mu_;  // guards context_, stream_, engine_
  grpc::ClientContext* context_ = nullptr;
  grpc::ClientReaderWriter<v1::AgentMessage, v1::ControllerMessage>* stream_ = nullptr;
  Engine* engine_ = nullptr;
  std::string job_id_;
  std::thread job_thread_;
  std::mutex write_mu_;  // one writer at a time on the stream
};

}  // namespace fairbench::agent
