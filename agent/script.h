// Script: wrk's Lua scripting (LuaJIT), with wrk's API and semantics.
//
// One setup state runs setup(thread) once per worker thread before the
// load and done(summary, latency, requests) after it; each worker thread
// has its own independent state (ScriptThread) in which init(args) runs
// before the load and request(), response() and delay() during it. Every
// state loads the same script. The `wrk` table is wrk's wrk.lua (scheme,
// host, port, method, path, headers, body, thread; format, resolve, setup,
// init, and request once init ran; addrs in the setup state) and its C
// half (lookup, connect), filled from the URL and the -H headers before the
// script runs, as in wrk.
//
// The cost is only where the script asks for it: a state without a
// request() function has its request formatted once, after init()
// (wrk.request()), and the worker sends it like a request given by flags;
// without response() no response is handed to Lua; without delay() none
// is asked for.
//
// Errors are values: a script that does not load or fails in setup() or
// init() is an InvalidArgument "name:line: message". An error raised during
// the load (request(), response(), delay(), or a request() text that is not
// an HTTP request) marks the thread failed with the same kind of message;
// the worker stops the run.
//
// Threads: Create, Done and everything on Script run on one thread (the
// owner's) while no worker runs; a ScriptThread's load calls run on its
// worker's thread only. Nothing is shared between the states.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/h2_request.h"
#include "agent/request.h"
#include "agent/url.h"
#include "common/histogram.h"
#include "common/metrics.h"
#include "common/status.h"

struct lua_State;

namespace fairbench::agent {

// A script's text and the name its errors carry (a file's path, or e.g.
// "scenarios[1].script.inline").
struct ScriptSource {
  std::string name;
  std::string text;
};

// Reads a script file; the error names the path.
Result<ScriptSource> ReadScriptFile(const std::string& path);

struct ScriptOptions {
  ScriptSource source;
  // The target as wrk's table has it: scheme, host, port ("" when the URL
  // had none), path (and query).
  std::string scheme = "http";
  std::string host;
  std::string port;
  std::string path = "/";
  std::vector<std::pair<std::string, std::string>> headers;  // -H, in order
  std::string method = "GET";                                // wrk.method before the script runs (-m)
  std::string body;                                          // wrk.body (--body); empty: nil
  // init()'s argument: args[0] is the URL (as in wrk), args[1..] what
  // followed "--".
  std::string url;
  std::vector<std::string> args;
  uint32_t threads = 1;
  // Each thread connects to the first address unless setup() sets
  // thread.addr.
  std::vector<SocketAddress> addresses;
  // HTTP/2: static requests are also built as H2Requests with this scheme
  // ("http" for h2c, "https" for h2); empty: HTTP/1.1.
  std::string h2_scheme;
  // Lua values handed to setup()'s thread:get are copied at most this deep.
  static constexpr int kMaxDepth = 64;
};

// What done() is given: wrk's summary fields, the latency histogram of the
// whole run (µs) and the Req/Sec samples of every thread.
struct ScriptSummary {
  uint64_t duration_us = 0;
  uint64_t requests = 0;
  uint64_t bytes = 0;
  uint64_t connect = 0, read = 0, write = 0, status = 0, timeout = 0;
  Histogram latency;
  std::vector<double> rate_samples;
};

// done()'s input from what a run measured: the measure phase's merged
// intervals and the end report.
ScriptSummary SummaryForDone(const IntervalStats& measure, const EndReport& end);

class Script;

// One worker thread's state.
class ScriptThread {
 public:
  ~ScriptThread();
  ScriptThread(const ScriptThread&) = delete;
  ScriptThread& operator=(const ScriptThread&) = delete;

  // Fixed before the load.
  bool dynamic() const { return dynamic_; }          // request() is a function
  bool wants_response() const { return response_; }  // response() is a function
  bool has_delay() const { return delay_; }          // delay() is a function
  const SocketAddress& address() const { return address_; }
  // Without request(): the one request formatted after init() (HTTP/1.1
  // bytes, and the HTTP/2 stream when h2_scheme was given).
  const std::vector<BuiltRequest>& requests() const { return requests_; }
  const std::vector<std::shared_ptr<const H2Request>>& h2_requests() const { return h2_requests_; }

  // During the load, on the worker's thread. Each returns false once the
  // script failed (failed(), error()).
  //
  // Calls request(): its text replaces *text, *count is the number of
  // requests in it.
  bool Request(std::string* text, uint32_t* count);
  // HTTP/2 (h2_scheme given): calls request() and turns each request of
  // its text into a stream, replacing *streams.
  bool RequestStreams(std::vector<std::shared_ptr<const H2Request>>* streams);
  // Calls response(status, headers, body) with a response read off the
  // wire: `raw` holds its bytes as received (interim 1xx responses, then
  // the head, then the body, chunked or not).
  bool ResponseRaw(int status, std::string_view raw);
  // The same with the parts already apart (HTTP/2).
  bool Response(int status, const std::vector<std::pair<std::string, std::string>>& headers, std::string_view body);
  // Calls delay(): how long to wait before the next request, in ns.
  bool Delay(int64_t* ns);

  bool stop_requested() const { return stop_; }
  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }

 private:
  friend class Script;
  friend struct ScriptApi;
  ScriptThread() = default;
  bool Fail(const std::string& message);
  // Calls the function on top of the stack (with `nargs` arguments above
  // it) protected; false (and error_) when it raised an error.
  bool Call(int nargs, int nresults, const char* what);

  lua_State* L_ = nullptr;
  std::string chunk_name_;  // the script's name, for errors
  std::string h2_scheme_;   // HTTP/2: "http" or "https"
  std::string authority_;   // HTTP/2: :authority when a text has no Host
  std::string h2_text_;     // HTTP/2: request()'s last text
  uint32_t index_ = 0;
  bool dynamic_ = false;
  bool response_ = false;
  bool delay_ = false;
  bool stop_ = false;
  SocketAddress address_;
  std::vector<BuiltRequest> requests_;
  std::vector<std::shared_ptr<const H2Request>> h2_requests_;
  std::string error_;
  std::vector<std::pair<std::string, std::string>> headers_;  // reused by ResponseRaw
  std::string body_;
};

class Script {
 public:
  // Loads the script in the setup state and, thread by thread, in the
  // thread's own state; calls wrk.setup(thread) (setup()) in the setup
  // state, then wrk.init(args) (init()) in the thread's; then takes the
  // static request from wrk.request(), or, in thread 0 only, calls
  // request() once to check what it returns and drops that text, as wrk
  // does. Errors: InvalidArgument, "name:line: message".
  static Result<std::unique_ptr<Script>> Create(const ScriptOptions& options);
  ~Script();
  Script(const Script&) = delete;
  Script& operator=(const Script&) = delete;

  uint32_t threads() const { return static_cast<uint32_t>(threads_.size()); }
  ScriptThread& thread(uint32_t i) { return *threads_[i]; }
  const ScriptThread& thread(uint32_t i) const { return *threads_[i]; }
  bool dynamic() const { return threads_.front()->dynamic(); }
  bool has_delay() const { return threads_.front()->has_delay(); }
  bool has_done() const { return done_; }

  // The first request of thread 0: the formatted one, or the text its
  // request() returned to the check (for checking an endpoint before the
  // load).
  std::string FirstRequestText() const;

  // Calls done(summary, latency, requests) in the setup state. What it
  // prints (print, io.write, io.stdout:write) goes to *out when given,
  // else to stdout.
  Status Done(const ScriptSummary& summary, std::string* out);

  // The first error a thread raised during the load ("" when none).
  std::string LoadError() const;

 private:
  Script() = default;
  lua_State* L_ = nullptr;  // the setup state
  bool done_ = false;
  std::string checked_text_;  // thread 0's request() text checked before the load
  std::vector<std::unique_ptr<ScriptThread>> threads_;
};

}  // namespace fairbench::agent
