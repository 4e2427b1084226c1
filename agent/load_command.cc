#include "agent/load_command.h"

#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "agent/engine.h"
#include "agent/grpc_call.h"
#include "agent/idle_wait.h"
#include "agent/job_options.h"
#include "agent/request.h"
#include "agent/request_mix.h"
#include "agent/script.h"
#include "agent/url.h"
#include "api/cpu_list.h"
#include "common/load_rules.h"
#include "common/tls_files.h"
#include "common/signals.h"
#include "common/units.h"
#include "common/wrk_summary.h"

namespace fairbench::agent {
namespace {

int BadInput(const std::string& message) {
  std::fprintf(stderr, "fairbench-agent: %s\n", message.c_str());
  return 2;
}

// Raises the soft open-file limit to the hard one; returns the soft limit.
uint64_t RaiseFileLimit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024;
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
  }
  return rl.rlim_cur;
}

}  // namespace

Result<std::vector<int>> ParseCpusFlag(const std::string& text) {
  auto list = api::ParseCpuList(text);
  if (!list.ok()) return list.status();
  if (list->empty()) return Status::InvalidArgument("CPU list '" + text + "' is empty");
  const long configured = sysconf(_SC_NPROCESSORS_CONF);
  if (list->cpus.back() >= configured) {
    return Status::InvalidArgument("CPU list '" + text + "': CPU " + std::to_string(list->cpus.back()) +
                                   " is outside 0-" + std::to_string(configured - 1));
  }
  return std::move(list->cpus);
}

CLI::App* AddLoadCommand(CLI::App& app, LoadFlags& f) {
  CLI::App* cmd = app.add_subcommand("load", "Generate HTTP load like wrk and print wrk's summary");
  cmd->add_option("url", f.url, "Target URL, http[s]://host[:port]/path")->required();
  cmd->add_option("-t,--threads", f.threads, "Worker threads (default 2)");
  cmd->add_option("-c,--connections", f.connections, "Connections to keep open, in total (default 10)");
  cmd->add_option("-d,--duration", f.duration, "Duration of the measurement, e.g. 30s, 2m (default 10s)");
  cmd->add_option("--warmup", f.warmup, "Load before the measurement starts, not counted (default 0s)");
  cmd->add_option("--timeout", f.timeout,
                  "No complete response within this time: count a timeout, reconnect (default 2s)");
  cmd->add_option("-H,--header", f.headers, "Add a request header, 'Name: value' (repeatable)");
  cmd->add_option("-m,--method", f.method, "Request method (default GET, or POST with a body)");
  auto* body = cmd->add_option("--body", f.body, "Request body");
  auto* body_file = cmd->add_option("--body-file", f.body_file, "Read the request body from a file");
  body->excludes(body_file);
  auto* mix = cmd->add_option("--requests", f.requests_file, "A YAML file with a weighted mix of requests");
  mix->excludes(body)->excludes(body_file);
  auto* script = cmd->add_option("-s,--script", f.script,
                                 "A wrk Lua script (setup, init, delay, request, response, done); its arguments "
                                 "follow '--'");
  script->excludes(mix);
  cmd->add_option("args", f.script_args, "After '--': arguments for the script's init(args)");
  cmd->add_option("--rate", f.rate, "Constant total rate in requests/s (open model); latency is then corrected");
  auto* idle_wait = cmd->add_option(
      "--idle-wait", f.idle_wait,
      "When nothing is ready while requests are in flight: block (sleep on the sockets), nap (sleep up to "
      "2% of the mean latency on the worker's own timer, 4% when at least one response comes per such "
      "nap: a server on this machine then pays no wake-up of "
      "the generator per response), poll (spin: a CPU per worker), or auto: nap when the target is on "
      "this machine, else block (default auto)");
  cmd->add_flag("--busy-poll", f.busy_poll, "The same as --idle-wait poll")->excludes(idle_wait);
  cmd->add_option("--pipeline", f.pipeline, "Requests written back to back on each connection (default 1)");
  cmd->add_flag("--no-keep-alive", f.no_keep_alive, "A new connection for every request (sends Connection: close)");
  cmd->add_flag("--latency", f.latency, "Print the latency distribution");
  cmd->add_flag("--progress", f.progress, "Print one line per second to stderr while running");
  cmd->add_option("--json", f.json_file, "Also write every number as JSON to this file ('-' for stdout)");
  cmd->add_option("--cpus", f.cpus, "Pin worker threads to these CPUs, e.g. 1 or 2-3");
  cmd->add_flag("--verify", f.verify, "https: verify the server's certificate and name (off by default, as wrk)");
  cmd->add_option("--target-ca-file", f.target_ca_file,
                  "https with --verify: trust the CAs in this PEM file instead of the system's");
  cmd->add_option("--sni", f.sni,
                  "https: server name to send (SNI) and verify (default: the URL's host; none for an IP address)");
  auto* h2 = cmd->add_flag("--h2", f.h2, "HTTP/2 over TLS (an https:// URL; the server must choose h2 by ALPN)");
  auto* h2c = cmd->add_flag("--h2c", f.h2c, "HTTP/2 without TLS, prior knowledge (an http:// URL)");
  h2->excludes(h2c);
  cmd->add_option(
      "--streams", f.streams,
      "HTTP/2: streams per connection, capped by the server's SETTINGS; each refilled as it ends, so N in flight; the streams of one turn of the event loop go out in one write (default 1; h2load's -m)");
  cmd->add_option("--h2-stream-window", f.h2_stream_window,
                  "HTTP/2: our stream receive window in bytes, e.g. 64k, 1M (default 65535)");
  cmd->add_option("--h2-connection-window", f.h2_connection_window,
                  "HTTP/2: our connection receive window in bytes (default 65535)");
  cmd->add_option("--grpc", f.grpc,
                  "gRPC: call SERVICE/METHOD (e.g. pkg.Echo/Unary, unary or server-streaming) over HTTP/2: h2c for "
                  "http://, h2 by ALPN for https://; each stream is a call, counted by its grpc-status");
  cmd->add_option("--message-file", f.message_file, "gRPC: the request message, binary protobuf (default: empty)");
  cmd->add_option("--message-json", f.message_json, "gRPC: the request message as JSON (needs --descriptor-set)");
  cmd->add_option(
      "--descriptor-set", f.descriptor_set,
      "gRPC: a protoc --descriptor_set_out --include_imports file: checks the method, encodes --message-json");
  cmd->add_option("--metadata", f.metadata, "gRPC: a metadata field, 'key: value' (repeatable)");
  cmd->add_option("--deadline", f.deadline, "gRPC: the call's deadline, sent as grpc-timeout, e.g. 100ms");
  cmd->add_option("--max-message-size", f.max_message_size,
                  "gRPC: a response message above this many bytes is a protocol error (default 4M)");
  cmd->add_option("--vary-every", f.vary_every,
                  "Replace {n} in the URL's path, the headers and the body with a new number for each request, and "
                  "check every Nth answer of each connection against --expect-body or --expect-json");
  cmd->add_option("--vary-seed", f.vary_seed, "--vary-every: the seed of the numbers (default 24301)");
  auto* expect_body =
      cmd->add_option("--expect-body", f.expect_body, "--vary-every: the answer's body, {n} its request's number");
  cmd->add_option("--expect-json", f.expect_json,
                  "--vary-every: the answer as JSON, {n} in its strings the request's number")
      ->excludes(expect_body);
  return cmd;
}

namespace {

// --h2-*-window: a byte count (plain, or with k/M/G as powers of 1024).
Result<uint32_t> ParseWindow(const std::string& text, const std::string& flag) {
  auto v = ParseBinarySize(text);
  if (!v.ok()) return Status::InvalidArgument(flag + ": '" + text + "' is not a size in bytes");
  if (*v == 0 || *v > 2147483647ull)
    return Status::InvalidArgument(flag + ": must be between 1 and 2147483647 bytes, got '" + text + "'");
  return static_cast<uint32_t>(*v);
}

// Whether the server at `addresses` chooses h2 by ALPN: one blocking
// handshake before the load, so that a server without HTTP/2 is named at
// once instead of showing up as a count of handshake errors.
// `grpc`: the load is gRPC, which has no HTTP/1.1 to fall back to.
Status CheckAlpnH2(const std::vector<SocketAddress>& addresses, const TlsContext& ctx, std::chrono::nanoseconds timeout,
                   bool grpc) {
  const SocketAddress& addr = addresses.front();
  const int fd = ::socket(addr.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
  if (fd < 0) return Status::IoError(std::string("socket: ") + std::strerror(errno));
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1'000'000'000);
  tv.tv_usec = static_cast<suseconds_t>(timeout.count() % 1'000'000'000 / 1000);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr.storage), addr.length) != 0) {
    const std::string err = std::strerror(errno);
    ::close(fd);
    return Status::IoError("connect: " + err);
  }
  SSL* ssl = ctx.NewConnection(fd, nullptr);
  if (ssl == nullptr) {
    ::close(fd);
    return Status::Internal("out of memory");
  }
  Status result = Status::Ok();
  if (SSL_connect(ssl) != 1) {
    const std::string errors = TlsContext::TakeErrors();
    if (errors.find("no application protocol") != std::string::npos) {
      result = Status::InvalidArgument(
          grpc
              ? "--grpc: the server does not offer h2 in ALPN (TLS alert no_application_protocol): it is no gRPC server"
              : "--h2: the server does not offer h2 in ALPN (TLS alert no_application_protocol); "
                "it does not speak HTTP/2 over TLS: drop --h2 to load it with HTTP/1.1");
    } else {
      result = Status::IoError(std::string(grpc ? "--grpc" : "--h2") + ": TLS handshake failed: " + errors);
    }
  } else if (!TlsContext::NegotiatedH2(ssl)) {
    result = Status::InvalidArgument(
        grpc ? "--grpc: the server did not choose h2 by ALPN (it speaks HTTP/1.1 only over TLS): it is no gRPC server"
             : "--h2: the server did not choose h2 by ALPN (it speaks HTTP/1.1 only over TLS); "
               "drop --h2 to load it with HTTP/1.1");
  }
  TlsContext::Release(ssl);
  ::close(fd);
  return result;
}

}  // namespace

// --- flags → job -----------------------------------------------------------

namespace {

// The limits: common/load_rules.h, as the run file and the wire check them.
using load_rules::Count;
using load_rules::InRange;
using load_rules::RangeOf;

Status Bad(const std::string& message) { return Status::InvalidArgument(message); }

// -t, -c, -d, --warmup, --timeout, --rate, --pipeline, --no-keep-alive.
Status ParsePace(const LoadFlags& f, wire::JobSpec* job) {
  auto threads = ParseCount(f.threads);
  if (!threads.ok()) return Bad("-t/--threads: " + threads.status().message());
  auto connections = ParseCount(f.connections);
  if (!connections.ok()) return Bad("-c/--connections: " + connections.status().message());
  auto duration = ParseDuration(f.duration);
  if (!duration.ok()) return Bad("-d/--duration: " + duration.status().message());
  auto warmup = ParseDuration(f.warmup);
  if (!warmup.ok()) return Bad("--warmup: " + warmup.status().message());
  auto timeout = ParseDuration(f.timeout);
  if (!timeout.ok()) return Bad("--timeout: " + timeout.status().message());
  if (*threads == 0) return Bad("-t/--threads: must be ≥ 1");
  if (*connections == 0) return Bad("-c/--connections: must be ≥ 1");
  if (*connections < *threads) {
    return Bad("-c/--connections: " + std::to_string(*connections) + " connections cannot be spread over " +
               std::to_string(*threads) + " threads (connections must be ≥ threads)");
  }
  if (!InRange(Count::kConnections, static_cast<int64_t>(*connections)) ||
      !InRange(Count::kThreads, static_cast<int64_t>(*threads))) {
    return Bad("-c/-t: too large");
  }
  if (duration->count() <= 0) return Bad("-d/--duration: must be > 0");
  if (timeout->count() <= 0) return Bad("--timeout: must be > 0");
  if (f.rate < 0) return Bad("--rate: must be ≥ 0");
  if (f.pipeline == 0) return Bad("--pipeline: must be ≥ 1");
  job->threads = static_cast<uint32_t>(*threads);
  job->connections = static_cast<uint32_t>(*connections);
  job->duration = *duration;
  job->warmup = *warmup;
  job->timeout = *timeout;
  job->rate = f.rate;
  job->pipeline = f.pipeline;
  job->keep_alive = !f.no_keep_alive;
  return Status::Ok();
}

// --grpc: the request is the call; HTTP/2 follows from the URL's scheme.
// Its message, metadata and deadline flags are for it only.
Result<std::optional<GrpcCall>> ParseGrpcFlags(const LoadFlags& f, const Url& url) {
  if (f.grpc.empty()) {
    if (!f.message_file.empty() || !f.message_json.empty() || !f.descriptor_set.empty() || !f.metadata.empty() ||
        !f.deadline.empty() || !f.max_message_size.empty()) {
      return Bad(
          "--message-file, --message-json, --descriptor-set, --metadata, --deadline and --max-message-size "
          "are for --grpc SERVICE/METHOD");
    }
    return std::optional<GrpcCall>();
  }
  if (!f.method.empty() || !f.body.empty() || !f.body_file.empty() || !f.requests_file.empty() || !f.script.empty()) {
    return Bad("--grpc: the request is the call; -m, --body, --body-file, --requests and -s do not apply");
  }
  if (!f.headers.empty()) return Bad("-H: with --grpc, give metadata with --metadata 'key: value'");
  if (url.target != "/") {
    return Bad("--grpc: the URL names the server only (http[s]://host:port), not '" + url.target +
               "'; the method is --grpc SERVICE/METHOD");
  }
  GrpcCallFlags g{f.grpc, f.message_file, f.message_json, f.descriptor_set, f.metadata, f.deadline, f.max_message_size};
  auto call = BuildGrpcCall(g);
  if (!call.ok()) return call.status();
  return std::optional<GrpcCall>(std::move(*call));
}

// --h2, --h2c (or --grpc), --streams and the windows.
Status ParseHttp2Flags(const LoadFlags& f, const Url& url, bool grpc, wire::JobSpec* job, JobLocal* local) {
  if (f.h2 && f.h2c)
    return Bad("--h2 and --h2c exclude each other (--h2: https with ALPN; --h2c: http, prior knowledge)");
  if (f.h2 && url.scheme != Scheme::kHttps)
    return Bad("--h2: needs an https:// URL (HTTP/2 over TLS); for http:// use --h2c");
  if (f.h2c && url.scheme == Scheme::kHttps)
    return Bad("--h2c: needs an http:// URL (HTTP/2 without TLS); for https:// use --h2");
  const bool h2 = f.h2 || f.h2c || grpc;
  if (!h2) {
    if (!f.streams.empty()) return Bad("--streams: only with --h2, --h2c or --grpc");
    if (!f.h2_stream_window.empty()) return Bad("--h2-stream-window: only with --h2, --h2c or --grpc");
    if (!f.h2_connection_window.empty()) return Bad("--h2-connection-window: only with --h2, --h2c or --grpc");
    return Status::Ok();
  }
  if (!f.streams.empty()) {
    auto n = ParseCount(f.streams);
    if (!n.ok()) return Bad("--streams: " + n.status().message());
    if (!InRange(Count::kStreams, static_cast<int64_t>(*n))) {
      return Bad("--streams: must be between 1 and " + std::to_string(RangeOf(Count::kStreams).max) + ", got " +
                 f.streams);
    }
    job->streams = static_cast<uint32_t>(*n);
  }
  if (!f.h2_stream_window.empty()) {
    auto w = ParseWindow(f.h2_stream_window, "--h2-stream-window");
    if (!w.ok()) return w.status();
    local->h2_stream_window = *w;
  }
  if (!f.h2_connection_window.empty()) {
    auto w = ParseWindow(f.h2_connection_window, "--h2-connection-window");
    if (!w.ok()) return w.status();
    local->h2_connection_window = *w;
  }
  const char* flag = grpc ? "--grpc" : f.h2 ? "--h2" : "--h2c";
  if (f.pipeline > 1) return Bad(std::string("--pipeline cannot be combined with ") + flag + " (use --streams)");
  if (f.no_keep_alive) return Bad(std::string("--no-keep-alive cannot be combined with ") + flag);
  job->protocol = url.scheme == Scheme::kHttps ? Protocol::kH2 : Protocol::kH2c;
  return Status::Ok();
}

// --verify, --target-ca-file and --sni: https only.
Status ParseTlsFlags(const LoadFlags& f, const Url& url, JobLocal* local) {
  if (url.scheme != Scheme::kHttps) {
    if (f.verify) return Bad("--verify: only for https:// URLs");
    if (!f.target_ca_file.empty()) return Bad("--target-ca-file: only for https:// URLs");
    if (!f.sni.empty()) return Bad("--sni: only for https:// URLs");
  }
  if (!f.target_ca_file.empty()) {
    if (!f.verify) return Bad("--target-ca-file: only used with --verify (certificates are not checked without it)");
    auto pem = tls::ReadCertificates(f.target_ca_file, "--target-ca-file");
    if (!pem.ok()) return pem.status();
  }
  for (char c : f.sni) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != '_') {
      return Bad("--sni: '" + f.sni + "' is not a host name");
    }
  }
  local->verify = f.verify;
  local->target_ca_file = f.target_ca_file;
  local->sni = f.sni;
  return Status::Ok();
}

Result<std::string> ReadBodyFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Bad("--body-file: cannot read '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Bad("--body-file: cannot read '" + path + "'");
  return ss.str();
}

// The one request of the URL, -m, -H and --body or --body-file.
Result<RequestSpec> RequestFromFlags(const LoadFlags& f, const Url& url) {
  RequestSpec spec;
  spec.target = url.target;
  if (!f.body_file.empty()) {
    auto body = ReadBodyFile(f.body_file);
    if (!body.ok()) return body.status();
    spec.body = std::move(*body);
  } else {
    spec.body = f.body;
  }
  spec.method = !f.method.empty() ? f.method : (spec.body.empty() ? "GET" : "POST");
  for (const std::string& h : f.headers) {
    auto header = ParseHeader(h);
    if (!header.ok()) return Bad("-H: " + header.status().message());
    spec.headers.push_back(std::move(*header));
  }
  if (Status s = ValidateRequest(spec, ""); !s.ok()) return s;
  return spec;
}

// The --requests mix, with -H added to every request of it.
Result<std::vector<RequestSpec>> MixFromFlags(const LoadFlags& f) {
  auto mix = LoadRequestMix(f.requests_file);
  if (!mix.ok()) return mix.status();
  for (const std::string& h : f.headers) {
    auto header = ParseHeader(h);
    if (!header.ok()) return Bad("-H: " + header.status().message());
    for (RequestSpec& s : *mix) s.headers.push_back(*header);
  }
  return std::move(*mix);
}

// The job's requests: the gRPC call, the --requests mix or the URL's one.
Status ParseRequests(const LoadFlags& f, const Url& url, const std::optional<GrpcCall>& grpc, wire::JobSpec* job) {
  if (grpc) {
    job->grpc =
        wire::JobGrpc{grpc->method, grpc->message, grpc->metadata, grpc->deadline, grpc->max_message, grpc->kind};
    return Status::Ok();
  }
  if (!f.requests_file.empty()) {
    auto mix = MixFromFlags(f);
    if (!mix.ok()) return mix.status();
    job->requests = std::move(*mix);
  } else {
    auto spec = RequestFromFlags(f, url);
    if (!spec.ok()) return spec.status();
    job->requests.push_back(std::move(*spec));
  }
  return Status::Ok();
}

// The CLI's words for a script its flags cannot run with.
Status CheckScriptAgainstFlags(const Script& script, const EngineOptions& o) {
  if (script.has_delay() && o.rate > 0) {
    return Bad("--rate cannot be combined with the script's delay(): each would set the pace of requests");
  }
  if (script.dynamic() && o.pipeline > 1) {
    return Bad("--pipeline cannot be combined with a script's request(): return several requests from it instead");
  }
  return Status::Ok();
}

// -s and its arguments: the script is read now, set up by the builder.
Status ParseScriptFlags(const LoadFlags& f, wire::JobSpec* job, JobLocal* local) {
  if (f.script.empty()) return Status::Ok();
  auto source = ReadScriptFile(f.script);
  if (!source.ok()) return Bad("-s: " + source.status().message());
  job->script = wire::JobScript{std::move(source->name), std::move(source->text), f.script_args};
  local->check_script = CheckScriptAgainstFlags;
  return Status::Ok();
}

// --vary-every, --vary-seed, --expect-body and --expect-json.
Status ParseVaryFlags(const LoadFlags& f, wire::JobSpec* job) {
  if (f.vary_every == 0) {
    if (!f.expect_body.empty() || !f.expect_json.empty())
      return Bad("--expect-body and --expect-json are for --vary-every");
    return Status::Ok();
  }
  if (!f.script.empty() || !f.requests_file.empty() || job->grpc || IsHttp2(job->protocol) || f.pipeline > 1) {
    return Bad("--vary-every: one request over HTTP/1.1 (not with -s, --requests, --grpc, --h2, --h2c or --pipeline)");
  }
  const std::string& expect = f.expect_json.empty() ? f.expect_body : f.expect_json;
  if (expect.find(kVaryToken) == std::string::npos) {
    return Bad("--vary-every: needs --expect-body or --expect-json with {n}, the request's number, in it");
  }
  job->vary = wire::JobVary{f.vary_seed, f.vary_every, expect, !f.expect_json.empty()};
  return Status::Ok();
}

// The target: the URL's host and port, the Host header as the URL gives it.
void SetTarget(const LoadFlags& f, const Url& url, wire::JobSpec* job, JobLocal* local) {
  job->host = url.host;
  job->port = url.port;
  job->scheme = url.scheme;
  job->host_header = url.HostHeader();
  local->url = f.url;
  local->port_implicit = !url.explicit_port;
}

// gRPC: the URL with the method's path, as the summary names it.
std::string ShownUrl(const LoadFlags& f, const std::optional<GrpcCall>& grpc) {
  std::string shown = f.url;
  if (!grpc) return shown;
  while (!shown.empty() && shown.back() == '/') shown.pop_back();
  return shown + grpc->request.target;
}

}  // namespace

Result<FlagsJob> JobFromFlags(const LoadFlags& f) {
  FlagsJob out;
  auto url = ParseUrl(f.url);
  if (!url.ok()) return url.status();
  SetTarget(f, *url, &out.job, &out.local);
  if (Status s = ParsePace(f, &out.job); !s.ok()) return s;
  auto grpc = ParseGrpcFlags(f, *url);
  if (!grpc.ok()) return grpc.status();
  if (Status s = ParseHttp2Flags(f, *url, grpc->has_value(), &out.job, &out.local); !s.ok()) return s;
  if (Status s = ParseTlsFlags(f, *url, &out.local); !s.ok()) return s;
  if (f.script.empty() && !f.script_args.empty()) {
    return Bad("'" + f.script_args.front() + "': arguments after the URL are for a script's init(); give one with -s");
  }
  if (Status s = ParseRequests(f, *url, *grpc, &out.job); !s.ok()) return s;
  const std::optional<IdleWaitMode> idle = f.busy_poll ? IdleWaitMode::kPoll : ParseIdleWaitMode(f.idle_wait);
  if (!idle) return Bad("--idle-wait: must be auto, block, nap or poll, got '" + f.idle_wait + "'");
  out.job.idle_wait = *idle;
  if (Status s = ParseScriptFlags(f, &out.job, &out.local); !s.ok()) return s;
  if (Status s = ParseVaryFlags(f, &out.job); !s.ok()) return s;
  if (!f.cpus.empty()) {
    auto cpus = ParseCpusFlag(f.cpus);
    if (!cpus.ok()) return Bad("--cpus: " + cpus.status().message());
    out.local.cpus = std::move(*cpus);
  }
  out.shown_url = ShownUrl(f, *grpc);
  return out;
}

// --- run and print ---------------------------------------------------------

namespace {

// https: the context is made now, so that a bad CA file, or a server that
// does not choose h2, is named before the load. 0, or the exit code.
int PrepareTls(const LoadFlags& f, bool grpc, EngineOptions& opt) {
  if (!opt.tls.enabled) return 0;
  auto ctx = TlsContext::Create(opt.tls);
  if (!ctx.ok())
    return BadInput((f.target_ca_file.empty() ? "--verify: " : "--target-ca-file: ") + ctx.status().message());
  opt.tls_context = std::move(*ctx);
  if (opt.protocol != HttpProtocol::kH2) return 0;
  if (Status s = CheckAlpnH2(opt.addresses, *opt.tls_context, opt.timeout, grpc); !s.ok()) {
    std::fprintf(stderr, "fairbench-agent: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}

// 0, or the exit code when the open-file limit cannot hold the connections.
int CheckFileLimit(const EngineOptions& opt) {
  const uint64_t limit = RaiseFileLimit();
  if (opt.connections + 32 > limit) {
    return BadInput(std::to_string(opt.connections) + " connections need about " +
                    std::to_string(opt.connections + 32) + " open files, but the limit is " + std::to_string(limit) +
                    " (raise it with ulimit -n)");
  }
  return 0;
}

void PrintProgress(const Snapshot& snap) {
  const double secs = static_cast<double>(snap.end_ns - snap.start_ns) / 1e9;
  std::fprintf(
      stderr, "[%6.1fs %-7s] %10.0f req/s  p50 %9s  p99 %9s  errors %llu  open %u\n",
      static_cast<double>(snap.end_ns) / 1e9, PhaseName(snap.phase),
      secs > 0 ? static_cast<double>(snap.stats.counters.requests) / secs : 0.0,
      FormatTimeUs(static_cast<double>(snap.stats.latency.ValueAtPercentile(50))).c_str(),
      FormatTimeUs(static_cast<double>(snap.stats.latency.ValueAtPercentile(99))).c_str(),
      static_cast<unsigned long long>(snap.stats.counters.errors.SocketErrors() + snap.stats.counters.errors.status),
      snap.connections_open);
}

// Room for the run's snapshots, taken up front; the per-interval timeline
// is only kept for the JSON file.
void PrepareTotals(const EngineOptions& opt, bool keep_timeline, RunTotals* totals) {
  totals->set_keep_timeline(keep_timeline);
  const double seconds = static_cast<double>((opt.warmup + opt.duration).count()) / 1e9;
  const double interval_s = static_cast<double>(opt.interval.count()) / 1e9;
  constexpr double kMost = 1 << 20;  // a longer run grows as it goes
  totals->Reserve(static_cast<size_t>(std::min(kMost, seconds / interval_s + 4)),
                  static_cast<size_t>(std::min(kMost, (seconds * 10 + 2) * opt.threads)));
}

// Runs the load to its end (or SIGINT/SIGTERM), printing wrk's first two
// lines before it and --progress during it.
Status RunEngine(const EngineOptions& opt, const LoadFlags& f, const std::string& shown_url, RunTotals* totals,
                 EndReport* end) {
  // SIGINT/SIGTERM end the run early, with a summary; SIGPIPE is never wanted.
  // Blocked before the engine's threads start (they inherit the mask); the
  // watcher takes them once the engine has started.
  std::signal(SIGPIPE, SIG_IGN);
  const BlockedSignals stop_signals({SIGINT, SIGTERM});

  Engine engine(opt);
  std::printf("Running %s test @ %s\n", FormatTimeS(static_cast<double>(opt.duration.count()) / 1e9).c_str(),
              shown_url.c_str());
  std::printf("  %u threads and %u connections\n", opt.threads, opt.connections);
  std::fflush(stdout);
  if (Status s = engine.Start(); !s.ok()) return s;
  SignalWatcher signal_watcher({SIGINT, SIGTERM}, [&engine](int) { engine.Stop(); });
  PrepareTotals(opt, !f.json_file.empty(), totals);
  while (auto snap = engine.NextSnapshot()) {
    if (f.progress) PrintProgress(*snap);
    totals->Add(*snap);
  }
  *end = engine.Finish();
  signal_watcher.Stop();
  return Status::Ok();
}

SummaryContext SummaryFor(const EngineOptions& opt, const FlagsJob& load, bool latency) {
  SummaryContext ctx;
  ctx.url = load.shown_url;
  ctx.threads = opt.threads;
  ctx.connections = opt.connections;
  ctx.duration_s = static_cast<double>(opt.duration.count()) / 1e9;
  ctx.rate = opt.rate;
  ctx.keep_alive = opt.keep_alive;
  ctx.pipeline = opt.pipeline;
  ctx.latency_distribution = latency;
  ctx.protocol = HttpProtocolName(opt.protocol);
  ctx.streams = opt.protocol != HttpProtocol::kHttp1 ? opt.h2.max_streams : 0;
  if (load.job.grpc) {
    ctx.grpc_method = GrpcRequest(load.job.grpc->method, "", {}, std::chrono::nanoseconds(0)).target;
    ctx.grpc_kind = std::string(ToString(load.job.grpc->kind));
  }
  return ctx;
}

// The script's done() and what stopped its load; 0 or 1.
int FinishScript(Script& script, const RunTotals& totals, const EndReport& end) {
  int code = 0;
  const std::string load_error = script.LoadError();
  if (Status s = script.Done(SummaryForDone(totals.measure(), end), nullptr); !s.ok()) {
    std::fprintf(stderr, "fairbench-agent: %s\n", s.message().c_str());
    code = 1;
  }
  if (!load_error.empty()) {
    // The load stopped on it; what was measured until then is above.
    std::fprintf(stderr, "fairbench-agent: %s\n", load_error.c_str());
    code = 1;
  }
  return code;
}

// --json: every number, to a file or ('-') stdout; 0 or 1.
int WriteJson(const std::string& path, const SummaryContext& ctx, const RunTotals& totals, const EndReport& end) {
  nlohmann::json doc = RenderJson(ctx, totals, end);
  const std::string json = doc.dump(2) + "\n";
  if (path == "-") {
    std::fputs(json.c_str(), stdout);
    return 0;
  }
  std::ofstream out(path);
  out << json;
  if (!out) {
    std::fprintf(stderr, "fairbench-agent: cannot write '%s'\n", path.c_str());
    return 1;
  }
  return 0;
}

// wrk's lines, then what the script's done() prints (as wrk), then ours,
// then the JSON file. Returns the exit code.
int PrintSummary(const EngineOptions& opt, const FlagsJob& load, const LoadFlags& f, Script* script,
                 const RunTotals& totals, const EndReport& end) {
  const SummaryContext ctx = SummaryFor(opt, load, f.latency);
  std::string text = RenderText(ctx, totals, end);
  // The first two lines were printed at the start, as wrk does.
  for (int skip = 0; skip < 2; ++skip) text.erase(0, text.find('\n') + 1);
  const size_t ours = text.find("--- fairbench\n");
  std::fputs(text.substr(0, ours).c_str(), stdout);
  std::fflush(stdout);
  const int code = script != nullptr ? FinishScript(*script, totals, end) : 0;
  if (ours != std::string::npos) std::fputs(text.substr(ours).c_str(), stdout);
  std::fflush(stdout);
  if (!f.json_file.empty() && WriteJson(f.json_file, ctx, totals, end) != 0) return 1;
  return code;
}

}  // namespace

int RunLoadCommand(const LoadFlags& f) {
  auto load = JobFromFlags(f);
  if (!load.ok()) return BadInput(load.status().message());
  std::unique_ptr<Script> script;
  auto opt = BuildEngineOptions(load->job, load->local, &script);
  if (!opt.ok()) return BadInput(opt.status().message());
  if (int code = PrepareTls(f, load->job.grpc.has_value(), *opt); code != 0) return code;
  if (int code = CheckFileLimit(*opt); code != 0) return code;
  RunTotals totals;
  EndReport end;
  if (Status s = RunEngine(*opt, f, load->shown_url, &totals, &end); !s.ok()) {
    std::fprintf(stderr, "fairbench-agent: %s\n", s.message().c_str());
    return 1;
  }
  return PrintSummary(*opt, *load, f, script.get(), totals, end);
}

}  // namespace fairbench::agent
