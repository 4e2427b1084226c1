// DevToolsPipe: a headless Chromium driven over the DevTools protocol, for
// tests that look at a page as a browser renders it.
//
// Chromium runs with --remote-debugging-pipe: it reads commands on fd 3 and
// writes answers and events on fd 4, each a JSON message ending in a NUL.
// Open() starts it and attaches to a fresh page (flat sessions), so Call()
// addresses that page; every event that arrives is kept, in order, for
// the test to inspect (console messages, exceptions, log entries).
//
// The browser runs in a process group of its own with a profile in a
// temporary folder, and is killed with its group when this is destroyed.
// Not thread-safe.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace fairbench::testing {

class DevToolsPipe {
 public:
  // `chromium`: the program; `profile_dir`: its user data folder; its
  // output goes to `log_file`. The page's viewport is width × height.
  static Result<std::unique_ptr<DevToolsPipe>> Open(const std::string& chromium, const std::string& profile_dir,
                                                    const std::string& log_file, int width, int height);
  ~DevToolsPipe();
  DevToolsPipe(const DevToolsPipe&) = delete;
  DevToolsPipe& operator=(const DevToolsPipe&) = delete;

  // A command to the page (or to the browser with `browser`); its result,
  // or the protocol's error as a Status.
  Result<nlohmann::json> Call(const std::string& method, const nlohmann::json& params = nlohmann::json::object(),
                              bool browser = false, std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // Waits until an event named `method` arrives after the `from`-th event;
  // returns its index in events().
  Result<size_t> WaitForEvent(const std::string& method, size_t from,
                              std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // Navigates and waits for the page's load event.
  Status Load(const std::string& url);
  // Evaluates `expression` in the page; its value (returned by value).
  Result<nlohmann::json> Evaluate(const std::string& expression);
  // A real click (pressed and released) at page coordinates.
  Status Click(double x, double y);

  const std::vector<nlohmann::json>& events() const { return events_; }
  // Console errors, uncaught exceptions and error log entries (a blocked
  // script, a refused load) since event `from`, one line each.
  std::vector<std::string> Errors(size_t from = 0) const;

 private:
  DevToolsPipe() = default;
  Status Send(const nlohmann::json& message);
  // Reads until a whole message arrives or the deadline passes.
  Result<nlohmann::json> Receive(std::chrono::steady_clock::time_point deadline);

  pid_t pid_ = -1;
  int to_browser_ = -1;
  int from_browser_ = -1;
  std::string buffer_;
  int next_id_ = 0;
  std::string session_;
  std::vector<nlohmann::json> events_;
};

}  // namespace fairbench::testing
