// BenchmarkRun: the typed API object (fairbench.dev/v1alpha1), shared by the
// local CLI (`fairbench run FILE`), the controller and the CRD.
//
// These are plain structs. A default-constructed value carries the API's
// defaults (threads 4, connections [100], duration 30s, …), so decoding starts
// from one and overwrites what the document sets: "defaults applied on load"
// needs no separate pass. Durations are std::chrono::nanoseconds, quantities
// are numbers (millicores, bytes), timestamps are system_clock time points;
// the codecs (codec.h) turn them into canonical text ("30s", "1Gi", "500m",
// RFC 3339). The JSON/YAML field names live in schema.h and nowhere else.
//
// Value types: copy, compare with ==, pass between threads freely.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/well_known.h"
#include "common/protocol.h"

namespace fairbench::api {

inline constexpr std::string_view kGroup = "fairbench.dev";
inline constexpr std::string_view kVersion = "v1alpha1";
inline constexpr std::string_view kApiVersion = "fairbench.dev/v1alpha1";
inline constexpr std::string_view kKind = "BenchmarkRun";

using Duration = std::chrono::nanoseconds;
using Time = std::chrono::time_point<std::chrono::system_clock, std::chrono::nanoseconds>;
using StringMap = std::map<std::string, std::string>;

// Kubernetes quantity for CPU: "4", "0.5", "500m". Kept in millicores, as
// Kubernetes does (it rounds finer values up to 1m).
struct CpuQuantity {
  int64_t millicores = 0;
  friend bool operator==(const CpuQuantity&, const CpuQuantity&) = default;
};

// Kubernetes quantity for memory: "1Gi", "512Mi", "1G", "1048576".
struct MemoryQuantity {
  int64_t bytes = 0;
  friend bool operator==(const MemoryQuantity&, const MemoryQuantity&) = default;
};

// A Linux CPU list as in cpuset(7) and taskset: "0-1,4". Sorted, unique.
struct CpuList {
  std::vector<int> cpus;
  bool empty() const { return cpus.empty(); }
  friend bool operator==(const CpuList&, const CpuList&) = default;
};

// ---------------------------------------------------------------- metadata

struct ObjectMeta {
  std::string name;        // DNS-1123 subdomain
  std::string namespace_;  // empty outside Kubernetes
  StringMap labels;
  StringMap annotations;
  // Set by the API server; empty or zero for a local file.
  std::string uid;
  std::string resource_version;
  int64_t generation = 0;
  std::optional<Time> creation_timestamp;
  friend bool operator==(const ObjectMeta&, const ObjectMeta&) = default;
};

// ---------------------------------------------------------------- spec

struct Resources {
  // Unset means "no limit". On Kubernetes both are used as requests and
  // limits (Guaranteed QoS); locally the memory becomes a cgroup limit when
  // the platform can set one.
  std::optional<CpuQuantity> cpu;
  std::optional<MemoryQuantity> memory;
  friend bool operator==(const Resources&, const Resources&) = default;
};

// How to start a target as a local process (LocalPlatform).
struct LocalProcess {
  std::vector<std::string> command;  // argv; "{port}" is replaced at launch
  StringMap env;                     // added to the target's environment
  std::string working_dir;           // relative to the run file's directory
  std::string ready_path = "/";      // GET until it answers, then the target is ready
  Duration ready_timeout = std::chrono::seconds(30);
  friend bool operator==(const LocalProcess&, const LocalProcess&) = default;
};

// When a deployed target counts as ready: it answers HTTP (any status) on
// `path` within `timeout`. The same on every platform (Kubernetes: the
// pod's readiness probe).
// gRPC targets (protocol grpc): ready when grpc.health.v1.Health/Check for
// `service` ("": the server as a whole) answers SERVING — as Kubernetes'
// grpc readiness probe decides — or, with `method`, when that method
// answers an empty request message with any gRPC status.
struct GrpcReadiness {
  std::string service;
  std::optional<std::string> method;  // "package.Service/Method"
  friend bool operator==(const GrpcReadiness&, const GrpcReadiness&) = default;
};

struct Readiness {
  std::string path = "/";
  Duration timeout = std::chrono::seconds(30);
  // gRPC targets: how readiness is asked (unset: the health check of the
  // whole server). `path` is HTTP's and unused for them.
  std::optional<GrpcReadiness> grpc;
  friend bool operator==(const Readiness&, const Readiness&) = default;
};

// Linux capabilities added to and dropped from a container ("NET_BIND_SERVICE", "ALL").
struct Capabilities {
  std::vector<std::string> add;
  std::vector<std::string> drop;
  friend bool operator==(const Capabilities&, const Capabilities&) = default;
};

// Kubernetes: where a target's container departs from what the Pod
// Security Standard "restricted" asks of every fairbench pod by default
// (runAsNonRoot, allowPrivilegeEscalation false, capabilities drop ALL,
// seccompProfile RuntimeDefault) — for a framework image that must run as
// root (runAsNonRoot: false, runAsUser: 0) or needs a capability. Each
// field set replaces that default for the target's container alone.
struct TargetSecurityContext {
  std::optional<bool> run_as_non_root;
  std::optional<int64_t> run_as_user;
  std::optional<int64_t> run_as_group;
  std::optional<bool> allow_privilege_escalation;
  std::optional<Capabilities> capabilities;
  friend bool operator==(const TargetSecurityContext&, const TargetSecurityContext&) = default;
};

struct Target {
  std::string name;   // DNS-1123 label, unique in the run
  std::string image;  // container image (Kubernetes)
  int32_t port = 8080;
  // How agents, the scenario checks and readiness reach the port: http or
  // https (TLS; the certificate is not verified, as wrk does not).
  Scheme scheme = Scheme::kHttp;
  // What agents speak to it: http1 (unset), h2 (HTTP/2 over TLS chosen by
  // ALPN; scheme https), h2c (HTTP/2 with prior knowledge; scheme http) or
  // grpc (gRPC calls over HTTP/2: h2 with https, h2c with http; its
  // scenarios are gRPC calls). The scenario checks before the load use the
  // same.
  std::optional<Protocol> protocol;
  // Kubernetes: the container's command (it replaces the image's
  // entrypoint) and its arguments; "{port}" becomes `port`. A target with a
  // command runs under the nofile helper (Kubernetes has no pod field for
  // RLIMIT_NOFILE); without one, nofile is left to the container runtime.
  std::vector<std::string> command;
  std::vector<std::string> args;
  Resources resources;
  int64_t nofile = 65536;  // RLIMIT_NOFILE of the server
  StringMap env;
  // Unset: local.readyPath / local.readyTimeout where given, else the defaults.
  std::optional<Readiness> readiness;
  std::optional<LocalProcess> local;
  std::optional<TargetSecurityContext> security_context;  // Kubernetes only
  // Kubernetes only: the target pod uses its node's network (no pod
  // network between the agents and the server); agents reach it at its
  // node's address.
  bool host_network = false;
  friend bool operator==(const Target&, const Target&) = default;
};

struct Request {
  std::string method = "GET";
  std::string path;  // origin-form: "/api/status?x=1"
  StringMap headers;
  std::optional<std::string> body;
  std::optional<std::string> body_file;  // relative to the run file's directory
  // Not part of the API: the content of body_file, read by the loader
  // (loader.h) so that nothing downstream touches the file system. Never
  // encoded; ignored by ==.
  std::string body_file_content;

  // The bytes to send: body, or the file's content, or nothing.
  const std::string& EffectiveBody() const;

  friend bool operator==(const Request& a, const Request& b) {
    return a.method == b.method && a.path == b.path && a.headers == b.headers && a.body == b.body &&
           a.body_file == b.body_file;
  }
};

// One entry of a request mix: the request, chosen with probability
// weight / (sum of weights).
struct WeightedRequest {
  Request request;
  int32_t weight = 1;
  friend bool operator==(const WeightedRequest&, const WeightedRequest&) = default;
};

// gRPC's status codes (grpc/status.h), spelt as gRPC names them.
enum class GrpcCode : uint8_t {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};
std::string_view ToString(GrpcCode code);

// What a correct answer looks like; checked once per target before any load
// (a failing endpoint is reported, not benchmarked) and counted under load.
// gRPC scenarios: grpcStatus (unset: OK), and `json` is the response
// message decoded through the scenario's descriptor set (the first message
// of a server-streaming call); status, body and contentType are HTTP's.
struct Expect {
  int32_t status = 200;
  std::optional<std::string> body;          // exact
  std::optional<nlohmann::json> json;       // JSON equality (key order ignored)
  std::optional<std::string> content_type;  // prefix: "application/json" matches "…; charset=utf-8"
  std::optional<GrpcCode> grpc_status;      // gRPC scenarios; unset: OK
  friend bool operator==(const Expect&, const Expect&) = default;
};

// A latency objective. With one, each of the scenario's cells is a search
// instead of one measurement: constant-rate trials (open model, latency
// corrected for coordinated omission) from start_rate, doubling until the
// objective fails, then bisecting between the last rate that met it and
// the first that did not — max_steps trials in all. The cell reports the
// highest rate that met it, the curve of latency against offered rate, and
// where errors began.
struct Slo {
  std::optional<Duration> p50, p90, p99, p999;  // at least one
  std::optional<double> max_error_rate;         // errors ÷ requests, 0..1; unset: errors do not decide
  int64_t start_rate = 100;                     // requests/s of the first trial
  int32_t max_steps = 10;
  friend bool operator==(const Slo&, const Slo&) = default;
};

// A key of a ConfigMap in the run's namespace (Kubernetes).
struct ConfigMapKeyRef {
  std::string name;
  std::string key;
  friend bool operator==(const ConfigMapKeyRef&, const ConfigMapKeyRef&) = default;
};

// A wrk Lua script that makes the scenario's requests, as `wrk -s` does
// (setup, init, delay, request, response, done): from a file (relative to
// the run file; local runs), given inline, or a ConfigMap's key
// (Kubernetes). Exactly one of the three. `args` are init()'s arguments
// (what follows "--" on wrk's command line).
struct Script {
  std::optional<std::string> file;
  std::optional<std::string> inline_text;  // "inline"
  std::optional<ConfigMapKeyRef> config_map_ref;
  std::vector<std::string> args;
  // Not part of the API: the script's text — the file read by the loader,
  // the ConfigMap's value read by the controller, or the inline text — so
  // that nothing downstream reads a file or the API. Never encoded;
  // ignored by ==.
  std::string content;

  // The script's text as agents get it.
  const std::string& Text() const { return inline_text ? *inline_text : content; }
  // The name its errors carry ("post_echo.lua:3: ..."): the file as
  // written, "configmap/NAME/KEY", or "SCENARIO.inline.lua".
  std::string Name(const std::string& scenario) const;

  friend bool operator==(const Script& a, const Script& b) {
    return a.file == b.file && a.inline_text == b.inline_text && a.config_map_ref == b.config_map_ref &&
           a.args == b.args;
  }
};

// A gRPC call a scenario makes (targets with protocol grpc): the method, the
// request message, metadata and a deadline. The message is JSON encoded as
// the method's input type through a descriptor set (`protoc
// --descriptor_set_out=FILE --include_imports`), or a file of binary
// protobuf sent as it is; neither: the empty message. With a descriptor set
// the method must be in it (unary or server-streaming) and the call's kind
// is known.
struct GrpcCallSpec {
  std::string method;  // "package.Service/Method"
  std::optional<nlohmann::json> message;
  std::optional<std::string> message_file;                       // local runs, relative to the run file
  std::optional<std::string> descriptor_set;                     // a file: local runs, relative to the run file
  std::optional<ConfigMapKeyRef> descriptor_set_config_map_ref;  // Kubernetes: a binaryData key
  StringMap metadata;                                            // sent as headers, lower-cased
  std::optional<Duration> deadline;                              // sent as grpc-timeout; unset: none
  // Not part of the API: the contents of message_file and of the
  // descriptor set (the file read by the loader, the ConfigMap's value read
  // by the controller). Never encoded; ignored by ==.
  std::string message_file_content;
  std::string descriptor_set_content;
  // Not part of the API: what ResolveGrpcCalls (grpc_calls.h) made of the
  // above — the request message as sent, and whether the method streams
  // its answer (known with a descriptor set). Ignored by ==.
  std::string request_message;
  // Known from the descriptor set; kUnknown without one.
  using Kind = GrpcCallKind;  // common/protocol.h
  GrpcCallKind kind = GrpcCallKind::kUnknown;

  friend bool operator==(const GrpcCallSpec& a, const GrpcCallSpec& b) {
    return a.method == b.method && a.message == b.message && a.message_file == b.message_file &&
           a.descriptor_set == b.descriptor_set && a.descriptor_set_config_map_ref == b.descriptor_set_config_map_ref &&
           a.metadata == b.metadata && a.deadline == b.deadline;
  }
};

// A constant rate a scenario's cells are measured at (scenarios[].rates):
// requests/s over all agents, or a share of the target's capacity — the
// requests/s of a closed-loop cell at the same connections and repetition,
// measured just before. Exactly one of the two is set. Written 2000 (or
// "2k") and "50%".
struct RateLevel {
  int64_t per_second = 0;
  int32_t percent = 0;  // 1..100
  bool is_share() const { return percent > 0; }
  friend bool operator==(const RateLevel&, const RateLevel&) = default;
};

// Answers that cannot be cached: each request carries the next number n of
// a seeded sequence wherever the request has "{n}" (its path, body and
// header values; a bodyFile's content is sent as it is), printed in
// decimal. Every verifyEvery-th answer of a connection is kept and checked
// against expect.body or expect.json with the same n put in for their
// "{n}", so a server that caches or hard-codes its answers fails the
// cell. The agents also look at the Date header of those answers (missing,
// or the same value over more than 2 s). HTTP/1.1 targets, one request
// (no mix, no script), pipeline 1.
struct Vary {
  std::optional<int64_t> seed;  // unset: spec.seed when set, else kDefaultVarySeed
  int32_t verify_every = 100;   // ≥ 1
  friend bool operator==(const Vary&, const Vary&) = default;
};
inline constexpr int64_t kDefaultVarySeed = 0x5eed;
// What "{n}" is, in a request and in an expectation.
inline constexpr std::string_view kVaryToken = "{n}";

struct Scenario {
  std::string name;  // DNS-1123 label, unique in the run
  // Exactly one of the four: one request, a weighted mix, a script, or a
  // gRPC call (the scenarios of gRPC targets).
  std::optional<Request> request;
  std::vector<WeightedRequest> requests;
  std::optional<Script> script;
  std::optional<GrpcCallSpec> grpc;
  Expect expect;
  std::vector<int64_t> connections;  // empty: spec.load.connections
  std::optional<Duration> duration;  // unset: spec.load.duration
  std::optional<Slo> slo;            // set: each cell searches the capacity under it
  std::optional<Vary> vary;          // set: "{n}" varies each request; answers are sampled and checked
  // Set: efficiency at fixed offered rates. Each connection level is
  // measured at each rate (open model, latency corrected for coordinated
  // omission), after a closed-loop cell when a rate is a share of
  // capacity. A cell that achieved less than 98 % of the rate it was
  // offered is flagged RateNotAchieved and never ranked.
  std::vector<RateLevel> rates;
  friend bool operator==(const Scenario&, const Scenario&) = default;
};

// What a load worker does when nothing is ready while requests are in
// flight (IdleWait in common/metrics.h): Auto naps when the target is on the
// agent's machine (the local platform) and blocks otherwise.
using IdleWaitMode = fairbench::IdleWaitMode;  // common/protocol.h

struct Load {
  int32_t threads = 4;                       // per agent
  std::vector<int64_t> connections = {100};  // levels; each spread over the agents
  Duration duration = std::chrono::seconds(30);
  Duration warmup = std::chrono::seconds(5);
  Duration timeout = std::chrono::seconds(2);  // per request; a slower answer counts as a timeout error
  bool keep_alive = true;
  int32_t pipeline = 1;  // requests in flight per connection
  // h2/h2c targets: concurrent streams per connection (unset: 1, as h2load
  // -m), capped by the server's SETTINGS_MAX_CONCURRENT_STREAMS.
  std::optional<int32_t> streams;
  int64_t rate = 0;  // requests/s over all agents; 0: closed loop (as fast as answered)
  int32_t agents = 1;
  std::optional<IdleWaitMode> idle_wait;  // unset: Auto
  friend bool operator==(const Load&, const Load&) = default;
};

struct Toleration {
  std::string key;
  std::string operator_;  // "Exists" or "Equal" (default)
  std::string value;
  std::string effect;  // NoSchedule, PreferNoSchedule, NoExecute; empty: all
  std::optional<int64_t> toleration_seconds;
  friend bool operator==(const Toleration&, const Toleration&) = default;
};

struct NodePlacement {
  std::string node_name;
  StringMap node_selector;
  std::vector<Toleration> tolerations;
  friend bool operator==(const NodePlacement&, const NodePlacement&) = default;
};

// Kubernetes: where targets and agents run (agents are always kept off the
// target's node).
struct Placement {
  NodePlacement target;
  NodePlacement agents;
  // On every platform: a target whose CPUs are not proven its own
  // (status.cpus[].exclusive not True) fails its cells with
  // CpusNotExclusive before any load, instead of running them flagged
  // SharedCpus.
  bool require_exclusive_cpus = false;
  friend bool operator==(const Placement&, const Placement&) = default;
};

// LocalPlatform: which CPUs targets and agents are pinned to. Empty: the
// platform splits the machine's CPUs half and half.
struct LocalPlacement {
  CpuList target_cpus;
  CpuList agent_cpus;
  friend bool operator==(const LocalPlacement&, const LocalPlacement&) = default;
};

// How repetitions are ordered. Sequential: each target deployed once for all
// its repetitions. Interleaved: N rounds, each deploying every target afresh
// in a seeded random order, so that slow drifts of the machine spread over
// all targets instead of landing on one.
enum class RepetitionOrder { kSequential, kInterleaved };
// Which cells to profile: the target's processes are sampled with perf
// during the measured window of each (local platform), and the report
// draws a flame graph per profiled cell. A selector's empty target or
// scenario and zero connections match any; every selector must match at
// least one cell of the run.
struct ProfileCell {
  std::string target;
  std::string scenario;
  int64_t connections = 0;
  friend bool operator==(const ProfileCell&, const ProfileCell&) = default;
};

struct Profile {
  bool all = false;                // every cell; or:
  std::vector<ProfileCell> cells;  // the cells these select
  int32_t frequency = 99;          // samples per second (Hz), per CPU the target runs on
  friend bool operator==(const Profile&, const Profile&) = default;
};

// The harness tested on this machine before the run's targets (`fairbench
// run` only): the project's delay server stopped for `stall` in the middle
// of an open-model cell at `rate` and of a closed-loop cell, each measured
// for `duration`, and what each reported judged against what the stall
// must show (controller/cli/calibration.h). Kept in results.json and the
// report.
struct Calibration {
  Duration stall = std::chrono::milliseconds(500);
  int64_t rate = 1000;  // the open model's requests/s
  Duration duration = std::chrono::seconds(4);
  friend bool operator==(const Calibration&, const Calibration&) = default;
};

struct BenchmarkRunSpec {
  std::vector<Target> targets;
  std::vector<Scenario> scenarios;
  Load load;
  Placement placement;
  LocalPlacement local;
  int32_t repetitions = 1;
  // Unset: interleaved when repetitions > 1 (EffectiveRepetitionOrder).
  std::optional<RepetitionOrder> repetition_order;
  // The seed of the interleaved order; unset: one is drawn and recorded.
  std::optional<int64_t> seed;
  Duration cooldown = std::chrono::seconds(10);  // idle time after each cell
  std::optional<Profile> profile;                // unset: no cell is profiled
  std::optional<Calibration> calibration;        // unset: the harness is not tested first
  friend bool operator==(const BenchmarkRunSpec&, const BenchmarkRunSpec&) = default;
};

// ---------------------------------------------------------------- status

enum class RunPhase { kQueued, kRunning, kSucceeded, kFailed, kCancelled };

// What the orchestrator is doing right now, for humans watching.
enum class Stage {
  kWaitingForSlot,
  kDeploying,
  kVerifying,
  kSamplingIdle,
  kWarmingUp,
  kMeasuring,
  kCoolingDown,
  kTearingDown,
};

enum class CellState { kSucceeded, kFailed, kSkipped };

enum class ConditionStatus { kTrue, kFalse, kUnknown };

struct CurrentCell {
  std::string target;
  std::string scenario;
  int64_t connections = 0;
  int32_t repetition = 0;
  std::optional<Stage> stage;
  std::optional<RateLevel> rate_level;  // a cell of scenarios[].rates
  friend bool operator==(const CurrentCell&, const CurrentCell&) = default;
};

// Written as "progress: 7/12" plus completedCells and totalCells.
struct Progress {
  int64_t completed = 0;
  int64_t total = 0;
  friend bool operator==(const Progress&, const Progress&) = default;
};

// Microseconds.
struct Latency {
  double mean = 0, stdev = 0, max = 0;
  double p50 = 0, p75 = 0, p90 = 0, p99 = 0, p999 = 0, p9999 = 0;
  friend bool operator==(const Latency&, const Latency&) = default;
};

struct ErrorCounts {
  uint64_t connect = 0, read = 0, write = 0, timeout = 0;
  uint64_t status = 0;           // responses whose status differed from expect.status
  uint64_t port_exhaustion = 0;  // EADDRNOTAVAIL on connect: the agent ran out of ports
  uint64_t handshake = 0;        // https: TLS handshakes that failed
  // HTTP/2 streams: refused by GOAWAY, reset by the server, lost to a protocol error.
  uint64_t goaway = 0, rst_stream = 0, h2_protocol = 0;
  uint64_t script = 0;  // errors a wrk script raised during the load (the load stopped)
  // gRPC: calls the server answered in a way gRPC does not allow (by kind
  // in CellResult::grpc). A call whose grpc-status differed from
  // expect.grpcStatus is counted under `status`.
  uint64_t grpc_protocol = 0;
  uint64_t Total() const {
    return connect + read + write + timeout + status + port_exhaustion + handshake + goaway + rst_stream + h2_protocol +
           script + grpc_protocol;
  }
  friend bool operator==(const ErrorCounts&, const ErrorCounts&) = default;
};

// gRPC cells: calls ended with one status code.
struct GrpcStatusCount {
  GrpcCode code = GrpcCode::kOk;
  uint64_t calls = 0;
  friend bool operator==(const GrpcStatusCount&, const GrpcStatusCount&) = default;
};

// gRPC cells: how the window's calls ended. A call that ended with a
// grpc-status is one of the cell's requests, under its code; one the
// server answered in a way gRPC does not allow is a protocol error of one
// kind: no grpc-status, a grpc-status that is no number, a message cut
// short, a prefix that is not gRPC framing, a message over the size
// limit, a unary call answered OK with no message or several.
struct GrpcCalls {
  std::vector<GrpcStatusCount> statuses;  // codes that ended a call, in code order
  uint64_t status_other = 0;              // numeric codes above 16
  uint64_t no_status = 0, bad_status = 0, truncated = 0, bad_flag = 0, too_large = 0, unary_messages = 0;
  uint64_t messages = 0;  // response messages of the calls that ended with a status
  // Server-streaming calls: from the call's start to its first message
  // and to its last (`latency` is the whole call's).
  std::optional<Latency> first_message_latency;
  std::optional<Latency> last_message_latency;
  friend bool operator==(const GrpcCalls&, const GrpcCalls&) = default;
};

// https targets: the TLS handshakes of the window, apart from request
// latency (with short connections, one per request: the cost of TLS).
struct TlsHandshakes {
  uint64_t count = 0;
  uint64_t resumed = 0;  // of them, sessions resumed
  double mean = 0;       // microseconds, from the TCP connect to the handshake's end
  double per_second = 0;
  friend bool operator==(const TlsHandshakes&, const TlsHandshakes&) = default;
};

struct StatusClasses {
  uint64_t c1xx = 0, c2xx = 0, c3xx = 0, c4xx = 0, c5xx = 0;
  friend bool operator==(const StatusClasses&, const StatusClasses&) = default;
};

// What limited a cell's throughput — "why not double?" — judged from what
// the cell measured (controller/report/limiter.h has the rules and thresholds):
// the target's CPU at its quota or its CPUs, the load generator's CPU, every
// connection busy in a closed loop (or unable to carry an open model's
// rate), the rate offered, errors, the target's memory limit; Unknown when
// nothing measured identifies it.
enum class LimiterKind { kTargetCpu, kGeneratorCpu, kConnections, kOfferedRate, kErrors, kMemoryLimit, kUnknown };

struct Limiter {
  LimiterKind kind = LimiterKind::kUnknown;
  // One sentence with the numbers: "target CPU 0.98 cores of its CPU quota of 1."
  std::string evidence;
  friend bool operator==(const Limiter&, const Limiter&) = default;
};

// Scenarios with vary: what the agents found in the answers they sampled
// (every verifyEvery-th of each connection), and what the check before the
// load found in one answer read to the end of its connection.
struct AnswerChecks {
  uint64_t verified = 0;      // sampled answers checked against the expectation
  uint64_t failed = 0;        // of them, answers that differed from it
  uint64_t without_date = 0;  // sampled answers with no Date header
  bool date_frozen = false;   // the same Date in sampled answers more than 2 s apart
  // The answer read before the load, when its Content-Length disagreed
  // with the bytes that followed its headers until the server closed.
  std::optional<uint64_t> content_length;
  std::optional<uint64_t> body_bytes;
  bool date_missing = false;  // that answer had no Date header
  friend bool operator==(const AnswerChecks&, const AnswerChecks&) = default;
};

// One cell's outcome. Metrics cover the measurement window only.
struct CellResult {
  std::string target;
  std::string scenario;
  int64_t connections = 0;
  int32_t repetition = 1;  // 1-based
  // The cell's level of scenarios[].rates; unset: not one of them (a
  // closed loop, or spec.load.rate).
  std::optional<RateLevel> rate_level;
  CellState state = CellState::kSucceeded;
  std::optional<CellReason> reason;  // for Failed and Skipped (well_known.h)
  std::string message;               // one line for people
  double requests_per_second = 0;
  Latency latency;
  ErrorCounts errors;
  StatusClasses status_classes;
  uint64_t requests = 0;
  uint64_t bytes = 0;  // read from the target, headers included
  double bytes_per_response = 0;
  double transfer_per_second = 0;         // bytes/s
  std::optional<uint64_t> memory_idle;    // bytes, before any load on the target
  std::optional<uint64_t> memory_loaded;  // bytes, at the end of this cell's window
  std::optional<double> target_cpu;       // cores, mean over the window
  std::optional<double> agent_cpu;        // cores, summed over agents
  // Requests/s offered (a constant rate: spec.load.rate or the cell's rate
  // level resolved); unset: a closed loop.
  std::optional<double> offered_rate;
  std::optional<Limiter> limiter;       // succeeded cells; unset: failed, skipped, or recorded before it
  std::optional<TlsHandshakes> tls;     // https targets only
  std::optional<GrpcCalls> grpc;        // gRPC targets only
  std::optional<AnswerChecks> answers;  // scenarios with vary only
  std::optional<Time> start_time;       // measurement window
  std::optional<Time> end_time;
  friend bool operator==(const CellResult&, const CellResult&) = default;
};

struct Condition {
  std::string type;  // "Complete", "Failed", "Progressing", …
  ConditionStatus status = ConditionStatus::kUnknown;
  std::string reason;  // CamelCase
  std::string message;
  std::optional<Time> last_transition_time;
  int64_t observed_generation = 0;
  friend bool operator==(const Condition&, const Condition&) = default;
};

// Where a run's pods were placed (Kubernetes): chosen once per run and kept,
// so that a resumed run lands on the same nodes.
struct RunNodes {
  std::string target;               // the target's node
  std::vector<std::string> agents;  // agent i's node at index i; never the target's
  friend bool operator==(const RunNodes&, const RunNodes&) = default;
};

// An agent's CPUs as it read them itself (common/cpu_view.h), beside a
// target's.
struct AgentCpus {
  std::string agent;
  std::string node;
  std::string cpus;           // "0-1"; empty: the agent did not say
  bool same_machine = false;  // on the target's kernel (one boot id): its CPUs are the target's CPUs' neighbours
  friend bool operator==(const AgentCpus&, const AgentCpus&) = default;
};

// What a target really got, read from inside its pod (fairbench-nofile's
// line on its log) or from its process (the local and Docker platforms),
// judged against what it asked, the agents' CPUs and its node's kubelet
// (controller/orchestrator/cpu_verdict.h): status.cpus, one per target,
// its latest deployment.
struct TargetCpus {
  std::string target;
  std::string node;                                       // Kubernetes node; empty elsewhere
  std::string cpus;                                       // the CPUs it may run on ("2-3"); empty: not read
  std::string node_cpus;                                  // the CPUs online on its machine ("0-3")
  std::optional<CpuQuantity> asked;                       // whole CPUs asked for (resources.cpu, spec.local.targetCpus)
  std::optional<CpuQuantity> cpu_quota;                   // its CFS quota; unset: none, or not read
  std::optional<MemoryQuantity> memory_limit;             // unset: none, or not read
  std::string cpu_manager_policy;                         // its node's kubelet ("static", "none"); empty: not known
  ConditionStatus exclusive = ConditionStatus::kUnknown;  // no one else may run on its CPUs
  ConditionStatus disjoint_from_agents = ConditionStatus::kUnknown;  // no agent on its machine shares a CPU
  ConditionStatus as_many_as_asked = ConditionStatus::kUnknown;      // it may run on exactly the CPUs it asked for
  std::string message;                                               // why, in one sentence per verdict
  std::vector<AgentCpus> agents;                                     // the agents of its latest cell
  friend bool operator==(const TargetCpus&, const TargetCpus&) = default;
};

// Where the controller stored the finished run's record (status.stored):
// the result store of its --result-store (controller/results). Set once
// the run is in a terminal phase; unset when no store is configured.
struct StoredResult {
  int64_t id = 0;            // the run's id in the store; 0: not stored yet (error says why)
  std::string store;         // "PostgreSQL store postgresql://fairbench@db:5432/results" (never a password)
  std::optional<Time> time;  // when it was stored
  std::string error;         // why the latest attempt failed; empty once stored
  friend bool operator==(const StoredResult&, const StoredResult&) = default;
};

struct BenchmarkRunStatus {
  std::optional<RunPhase> phase;  // unset until the controller first sees the run
  int64_t observed_generation = 0;
  std::optional<CurrentCell> current;
  std::optional<RunNodes> nodes;
  Progress progress;
  std::optional<Time> start_time;
  std::optional<Time> completion_time;
  std::vector<CellResult> results;  // in cell order; finished cells only
  std::vector<TargetCpus> cpus;     // per target deployed, in spec order
  std::optional<StoredResult> stored;
  std::vector<Condition> conditions;
  friend bool operator==(const BenchmarkRunStatus&, const BenchmarkRunStatus&) = default;
};

struct BenchmarkRun {
  std::string api_version = std::string(kApiVersion);
  std::string kind = std::string(kKind);
  ObjectMeta metadata;
  BenchmarkRunSpec spec;
  BenchmarkRunStatus status;
  friend bool operator==(const BenchmarkRun&, const BenchmarkRun&) = default;
};

// API spellings of the enums ("Queued", "Measuring", "Skipped", "True").
std::string_view ToString(RunPhase v);
std::string_view ToString(Stage v);
std::string_view ToString(CellState v);
std::string_view ToString(ConditionStatus v);
std::string_view ToString(RepetitionOrder v);
std::string_view ToString(IdleWaitMode v);
std::string_view ToString(LimiterKind v);

RepetitionOrder EffectiveRepetitionOrder(const BenchmarkRunSpec& spec);

}  // namespace fairbench::api
