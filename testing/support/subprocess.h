// Subprocess: one child process that a test starts, signals, waits for and
// never leaks.
//
// Start() forks and execs argv[0] (a path, or a name looked up in PATH) with
// the given environment and working directory. Each standard stream is
// inherited, sent to /dev/null, to a file, or to a pipe the parent reads.
// The child leads its own process group by default, so that Kill() reaches
// the helpers it forks (nginx's workers) and the destructor can SIGKILL the
// whole group: a failing test leaves no server holding a port.
//
// Not thread-safe: one thread owns a Subprocess. Move-only.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace fairbench::testing {

struct ExitStatus {
  bool exited = false;  // ended through exit(); exit_code is valid
  int exit_code = 0;
  bool signaled = false;  // ended by a signal; term_signal is valid
  int term_signal = 0;

  bool success() const { return exited && exit_code == 0; }
  std::string ToString() const;  // "exit 0", "signal 9 (Killed)"
};

struct Redirect {
  enum class Kind { kInherit, kNull, kFile, kPipe };
  Kind kind = Kind::kInherit;
  std::string path;  // kFile: created or truncated (appended if append)
  bool append = false;

  static Redirect Inherit() { return {}; }
  static Redirect Null() { return {Kind::kNull, "", false}; }
  static Redirect File(std::string p, bool append_to = false) { return {Kind::kFile, std::move(p), append_to}; }
  static Redirect Pipe() { return {Kind::kPipe, "", false}; }
};

struct SubprocessOptions {
  std::vector<std::string> argv;  // argv[0] is the program
  // Variables set (or replaced) on top of the parent's environment; with
  // clear_environment the child sees only these.
  std::map<std::string, std::string> env;
  bool clear_environment = false;
  std::string working_dir;  // empty: the parent's
  Redirect stdin_from = Redirect::Null();
  Redirect stdout_to = Redirect::Inherit();
  Redirect stderr_to = Redirect::Inherit();
  bool own_process_group = true;
};

class Subprocess {
 public:
  // Fails (without a child) if the program cannot be executed: the exec
  // error travels back over a close-on-exec pipe, so "no such file" is a
  // Status here, not a mysterious exit code 127 later.
  static Result<Subprocess> Start(SubprocessOptions options);

  Subprocess(Subprocess&& other) noexcept;
  Subprocess& operator=(Subprocess&& other) noexcept;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  // Still running: SIGKILL to the group (or the child) and reap it.
  ~Subprocess();

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0 && !status_.has_value(); }

  // Sends `signal` to the child, or to its whole group when it leads one and
  // to_group is set. OK if the child has already been reaped (nothing to do).
  Status Kill(int signal, bool to_group = false);

  // Waits until the child exits or `timeout` passes (DeadlineExceeded; the
  // child keeps running). Once reaped, returns the same status every time.
  Result<ExitStatus> Wait(std::chrono::milliseconds timeout);
  // Non-blocking: the status if the child has exited, nullopt otherwise.
  std::optional<ExitStatus> Poll();

  // Signals, waits up to `grace`, then SIGKILLs the group and waits.
  Result<ExitStatus> Terminate(int signal, std::chrono::milliseconds grace);

  // Pipe ends for Redirect::Pipe streams (-1 otherwise); owned by this object.
  int stdin_fd() const { return stdin_fd_; }
  int stdout_fd() const { return stdout_fd_; }
  int stderr_fd() const { return stderr_fd_; }
  // Reads a pipe until EOF or `timeout`; returns what was read.
  Result<std::string> ReadStdout(std::chrono::milliseconds timeout);
  Result<std::string> ReadStderr(std::chrono::milliseconds timeout);

 private:
  Subprocess() = default;
  void Release();
  Result<std::string> ReadPipe(int* fd, std::chrono::milliseconds timeout);

  pid_t pid_ = -1;
  bool group_ = false;
  std::optional<ExitStatus> status_;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
};

}  // namespace fairbench::testing
