#include "controller/kube/exec_credential.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "api/time_text.h"
#include "common/mutex.h"
#include "controller/kube/api_fields.h"

extern char** environ;

namespace fairbench::kube {

Result<CommandResult> RunCommand(const std::string& command, const std::vector<std::string>& args,
                                 const std::vector<std::pair<std::string, std::string>>& extra_env,
                                 std::chrono::milliseconds timeout) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) return Status::IoError(std::string("pipe: ") + std::strerror(errno));
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(out[0]);
    close(out[1]);
    return Status::IoError(std::string("pipe: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);

  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : extra_env) env[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_strings = {command};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);

  pid_t pid = 0;
  int rc = command.find('/') == std::string::npos
               ? posix_spawnp(&pid, command.c_str(), &actions, nullptr, argv.data(), envp.data())
               : posix_spawn(&pid, command.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  close(err[1]);
  if (rc != 0) {
    close(out[0]);
    close(err[0]);
    return Status::NotFound("cannot run " + command + ": " + std::strerror(rc));
  }
  CommandResult result;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  bool out_open = true, err_open = true, timed_out = false;
  char buf[4096];
  while (out_open || err_open) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd fds[2] = {{out_open ? out[0] : -1, POLLIN, 0}, {err_open ? err[0] : -1, POLLIN, 0}};
    int n = poll(fds, 2, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      std::string& sink = i == 0 ? result.out : result.err;
      if (got > 0) {
        // Bounded: a runaway plugin cannot fill memory.
        if (sink.size() < (i == 0 ? (1u << 20) : (1u << 16))) sink.append(buf, static_cast<size_t>(got));
      } else {
        (i == 0 ? out_open : err_open) = false;
      }
    }
  }
  close(out[0]);
  close(err[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out)
    return Status::DeadlineExceeded(command + " did not finish within " + std::to_string(timeout.count()) + "ms");
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

Result<std::pair<Credentials, std::optional<Clock::Wall>>> ParseExecCredential(const std::string& text,
                                                                               const std::string& api_version) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::InvalidArgument("exec plugin: output is not an ExecCredential JSON object");
  }
  std::string got = j.value(fields::kApiVersion, "");
  if (got != api_version) {
    return Status::InvalidArgument("exec plugin is configured to use API version " + api_version +
                                   ", plugin returned version " + got);
  }
  if (j.value(fields::kKind, "") != "ExecCredential") {
    return Status::InvalidArgument("exec plugin: returned kind \"" + j.value(fields::kKind, "") +
                                   "\", want ExecCredential");
  }
  if (!j.contains(fields::kStatus) || !j[fields::kStatus].is_object()) {
    return Status::InvalidArgument("exec plugin didn't return a status field");
  }
  const auto& st = j[fields::kStatus];
  Credentials c;
  c.token = st.value("token", "");
  c.client_cert_pem = st.value("clientCertificateData", "");
  c.client_key_pem = st.value("clientKeyData", "");
  if (c.token.empty() && c.client_cert_pem.empty()) {
    return Status::InvalidArgument("exec plugin didn't return a token or cert/key pair");
  }
  if (c.client_cert_pem.empty() != c.client_key_pem.empty()) {
    return Status::InvalidArgument("exec plugin returned only one of clientCertificateData and clientKeyData");
  }
  std::optional<Clock::Wall> expires;
  std::string exp = st.value("expirationTimestamp", "");
  if (!exp.empty()) {
    auto t = api::ParseTime(exp);
    if (!t.ok()) return Status::InvalidArgument("exec plugin: bad expirationTimestamp: " + t.status().message());
    expires = *t;
  }
  return std::make_pair(c, expires);
}

ExecCredentialSource::ExecCredentialSource(ExecConfig config, Clock& clock)
    : config_(std::move(config)), clock_(clock) {}

Result<Credentials> ExecCredentialSource::Get() {
  MutexLock lock(mu_);
  if (cached_ && (!expires_ || clock_.WallNow() < *expires_)) return *cached_;
  auto fresh = Run();
  if (!fresh.ok()) return fresh.status();
  return *cached_;
}

void ExecCredentialSource::Invalidate() {
  MutexLock lock(mu_);
  cached_.reset();
  expires_.reset();
}

int ExecCredentialSource::runs() const {
  MutexLock lock(mu_);
  return runs_;
}

Result<Credentials> ExecCredentialSource::Run() {
  if (config_.interactive_mode == "Always") {
    return Status::FailedPrecondition("exec plugin " + config_.command +
                                      " requires interactive mode (interactiveMode: Always), but there is no terminal");
  }
  std::string command = config_.command;
  if (command.find('/') != std::string::npos && command[0] != '/' && !config_.base_dir.empty()) {
    command = config_.base_dir + "/" + command;
  }
  nlohmann::json info = {{fields::kApiVersion, config_.api_version},
                         {fields::kKind, "ExecCredential"},
                         {fields::kSpec, {{"interactive", false}}}};
  if (config_.provide_cluster_info) info[fields::kSpec]["cluster"] = {{"server", config_.cluster_server}};
  auto env = config_.env;
  env.emplace_back("KUBERNETES_EXEC_INFO", info.dump());
  ++runs_;
  auto result = RunCommand(command, config_.args, env, config_.timeout);
  if (!result.ok()) return Status::Unavailable("exec plugin: " + result.status().message());
  if (result->exit_code != 0) {
    std::string err = result->err.substr(0, 512);
    return Status::Unavailable("exec plugin " + config_.command + " exited with status " +
                               std::to_string(result->exit_code) + (err.empty() ? "" : ": " + err));
  }
  auto parsed = ParseExecCredential(result->out, config_.api_version);
  if (!parsed.ok()) return parsed.status();
  cached_ = parsed->first;
  expires_ = parsed->second;
  return *cached_;
}

}  // namespace fairbench::kube
