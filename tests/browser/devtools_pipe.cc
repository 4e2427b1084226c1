#include "tests/browser/devtools_pipe.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace fairbench::testing {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

Result<std::unique_ptr<DevToolsPipe>> DevToolsPipe::Open(const std::string& chromium, const std::string& profile_dir,
                                                         const std::string& log_file, int width, int height) {
  int commands[2], answers[2];  // [0] reads, [1] writes
  if (pipe2(commands, O_CLOEXEC) != 0) return Status::IoError(std::string("pipe: ") + std::strerror(errno));
  if (pipe2(answers, O_CLOEXEC) != 0) {
    close(commands[0]);
    close(commands[1]);
    return Status::IoError(std::string("pipe: ") + std::strerror(errno));
  }
  const int log = open(log_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  std::vector<std::string> args = {chromium,
                                   "--headless",
                                   "--disable-gpu",
                                   "--no-sandbox",
                                   "--no-first-run",
                                   "--no-default-browser-check",
                                   "--disable-extensions",
                                   "--disable-background-networking",
                                   "--remote-debugging-pipe",
                                   "--user-data-dir=" + profile_dir,
                                   "--window-size=" + std::to_string(width) + "," + std::to_string(height),
                                   "about:blank"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return Status::IoError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    // fd 3: commands in; fd 4: answers out. dup2 clears close-on-exec.
    const int in = dup(commands[0]);
    const int out = dup(answers[1]);
    dup2(in, 3);
    dup2(out, 4);
    if (log >= 0) {
      dup2(log, 1);
      dup2(log, 2);
    }
    execvp(argv[0], argv.data());
    _exit(127);
  }
  setpgid(pid, pid);
  close(commands[0]);
  close(answers[1]);
  if (log >= 0) close(log);
  std::unique_ptr<DevToolsPipe> d(new DevToolsPipe());
  d->pid_ = pid;
  d->to_browser_ = commands[1];
  d->from_browser_ = answers[0];
  auto target = d->Call("Target.createTarget", {{"url", "about:blank"}}, /*browser=*/true);
  if (!target.ok()) return Status::Unavailable("chromium did not answer on its pipe: " + target.status().message());
  auto attached = d->Call("Target.attachToTarget", {{"targetId", (*target)["targetId"]}, {"flatten", true}}, true);
  if (!attached.ok()) return attached.status();
  d->session_ = (*attached)["sessionId"].get<std::string>();
  for (const char* domain : {"Page.enable", "Runtime.enable", "Log.enable"}) {
    if (auto r = d->Call(domain); !r.ok()) return r.status();
  }
  auto metrics = d->Call("Emulation.setDeviceMetricsOverride",
                         {{"width", width}, {"height", height}, {"deviceScaleFactor", 1}, {"mobile", false}});
  if (!metrics.ok()) return metrics.status();
  return d;
}

DevToolsPipe::~DevToolsPipe() {
  if (to_browser_ >= 0) close(to_browser_);
  if (from_browser_ >= 0) close(from_browser_);
  if (pid_ > 0) {
    ::kill(-pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
}

Status DevToolsPipe::Send(const Json& message) {
  std::string text = message.dump();
  text.push_back('\0');
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(to_browser_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::IoError(std::string("writing to chromium: ") + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Result<Json> DevToolsPipe::Receive(Clock::time_point deadline) {
  for (;;) {
    const size_t end = buffer_.find('\0');
    if (end != std::string::npos) {
      Json j = Json::parse(buffer_.substr(0, end), nullptr, false);
      buffer_.erase(0, end + 1);
      if (j.is_discarded()) return Status::IoError("chromium sent a message that is not JSON");
      return j;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return Status::DeadlineExceeded("no message from chromium in time");
    pollfd p{from_browser_, POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char chunk[65536];
    const ssize_t n = read(from_browser_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::Unavailable("chromium closed its pipe (see its log)");
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

Result<Json> DevToolsPipe::Call(const std::string& method, const Json& params, bool browser,
                                std::chrono::milliseconds timeout) {
  const int id = ++next_id_;
  Json message{{"id", id}, {"method", method}, {"params", params}};
  if (!browser && !session_.empty()) message["sessionId"] = session_;
  if (Status s = Send(message); !s.ok()) return s;
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    auto m = Receive(deadline);
    if (!m.ok()) return Status::Unavailable(method + ": " + m.status().message());
    if (!m->contains("id")) {
      events_.push_back(std::move(*m));
      continue;
    }
    if ((*m)["id"] != id) continue;
    if (m->contains("error")) return Status::Internal(method + ": " + (*m)["error"].dump());
    return (*m)["result"];
  }
}

Result<size_t> DevToolsPipe::WaitForEvent(const std::string& method, size_t from, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (size_t i = from;; ++i) {
    while (i >= events_.size()) {
      auto m = Receive(deadline);
      if (!m.ok()) return Status::Unavailable("waiting for " + method + ": " + m.status().message());
      if (!m->contains("id")) events_.push_back(std::move(*m));
    }
    if (events_[i].value("method", "") == method) return i;
  }
}

Status DevToolsPipe::Load(const std::string& url) {
  const size_t from = events_.size();
  auto r = Call("Page.navigate", {{"url", url}});
  if (!r.ok()) return r.status();
  if (r->contains("errorText")) return Status::Unavailable("cannot load " + url + ": " + (*r)["errorText"].dump());
  auto loaded = WaitForEvent("Page.loadEventFired", from);
  return loaded.ok() ? Status::Ok() : loaded.status();
}

Result<Json> DevToolsPipe::Evaluate(const std::string& expression) {
  auto r = Call("Runtime.evaluate", {{"expression", expression}, {"returnByValue", true}, {"awaitPromise", true}});
  if (!r.ok()) return r.status();
  if (r->contains("exceptionDetails")) return Status::Internal("the page threw: " + (*r)["exceptionDetails"].dump());
  return (*r)["result"].value("value", Json());
}

Status DevToolsPipe::Click(double x, double y) {
  for (const char* type : {"mouseMoved", "mousePressed", "mouseReleased"}) {
    Json params{{"type", type}, {"x", x}, {"y", y}};
    if (std::string(type) != "mouseMoved") {
      params["button"] = "left";
      params["clickCount"] = 1;
    }
    if (auto r = Call("Input.dispatchMouseEvent", params); !r.ok()) return r.status();
  }
  return Status::Ok();
}

std::vector<std::string> DevToolsPipe::Errors(size_t from) const {
  std::vector<std::string> out;
  for (size_t i = from; i < events_.size(); ++i) {
    const Json& e = events_[i];
    const std::string method = e.value("method", "");
    const Json& p = e.contains("params") ? e["params"] : Json::object();
    if (method == "Runtime.exceptionThrown") {
      out.push_back("exception: " + p["exceptionDetails"].dump());
    } else if (method == "Runtime.consoleAPICalled" &&
               (p.value("type", "") == "error" || p.value("type", "") == "assert")) {
      out.push_back("console." + p.value("type", "") + ": " + p["args"].dump());
    } else if (method == "Log.entryAdded" && p["entry"].value("level", "") == "error") {
      out.push_back("log: " + p["entry"].value("text", ""));
    }
  }
  return out;
}

}  // namespace fairbench::testing
