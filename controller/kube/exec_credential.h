// Exec credential plugins (KUBE-API.md §8): run the kubeconfig's
// `users[].user.exec` command, read an ExecCredential from its stdout
// (a token, or a client certificate and key), cache it until its
// expirationTimestamp, and run the plugin again after a 401.
// The input is passed in KUBERNETES_EXEC_INFO; there is never a terminal,
// so a plugin that insists on interactive mode is an error.
//
// Thread-safe: concurrent Get() calls share one run of the plugin.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "controller/kube/credentials.h"

namespace fairbench::kube {

struct ExecConfig {
  std::string api_version = "client.authentication.k8s.io/v1";
  std::string command;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  std::string interactive_mode = "IfAvailable";  // Never | IfAvailable | Always
  bool provide_cluster_info = false;
  std::string cluster_server;  // for provideClusterInfo
  std::string base_dir;        // a relative command with a '/' resolves against it
  std::chrono::milliseconds timeout{30000};
};

class ExecCredentialSource final : public CredentialSource {
 public:
  ExecCredentialSource(ExecConfig config, Clock& clock);
  Result<Credentials> Get() override;
  void Invalidate() override;
  int runs() const;

 private:
  Result<Credentials> Run() REQUIRES(mu_);

  const ExecConfig config_;
  Clock& clock_;
  mutable Mutex mu_;
  std::optional<Credentials> cached_ GUARDED_BY(mu_);
  std::optional<Clock::Wall> expires_ GUARDED_BY(mu_);
  int runs_ GUARDED_BY(mu_) = 0;
};

// Parses an ExecCredential; `api_version` is what the kubeconfig asked for.
Result<std::pair<Credentials, std::optional<Clock::Wall>>> ParseExecCredential(const std::string& text,
                                                                               const std::string& api_version);

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};
// Runs a command without a shell, stdin from /dev/null, with a deadline.
Result<CommandResult> RunCommand(const std::string& command, const std::vector<std::string>& args,
                                 const std::vector<std::pair<std::string, std::string>>& extra_env,
                                 std::chrono::milliseconds timeout);

}  // namespace fairbench::kube
