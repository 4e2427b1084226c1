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

#include "common/api/well_known.h"
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
struct Readiness {
  std::string path = "/";
  Duration timeout = std::chrono::seconds(30);
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
  std::string name;  // DNS-1123 label, unique in the run
  std::string image;  // container image (Kubernetes)
  int32_t port = 8080;
  // How agents, the scenario checks and readiness reach the port: http or
  // https (TLS; the certificate is not verified, as wrk does not).
  Scheme scheme = Scheme::kHttp;
  // What agents speak to it: http1 (unset), h2 (HTTP/2 over TLS chosen by
  // ALPN; scheme https) or h2c (HTTP/2 with prior knowledge; scheme http).
  // The scenario checks before the load use the same.
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

// What a correct answer looks like; checked once per target before any load
// (a failing endpoint is reported, not benchmarked) and counted under load.
struct Expect {
  int32_t status = 200;
  std::optional<std::string> body;          // exact
  std::optional<nlohmann::json> json;       // JSON equality (key order ignored)
  std::optional<std::string> content_type;  // prefix: "application/json" matches "…; charset=utf-8"
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

struct Scenario {
  std::string name;  // DNS-1123 label, unique in the run
  // Exactly one of the three: one request, a weighted mix, or a script.
  std::optional<Request> request;
  std::vector<WeightedRequest> requests;
  std::optional<Script> script;
  Expect expect;
  std::vector<int64_t> connections;  // empty: spec.load.connections
  std::optional<Duration> duration;  // unset: spec.load.duration
  std::optional<Slo> slo;            // set: each cell searches the capacity under it
  friend bool operator==(const Scenario&, const Scenario&) = default;
};

// What a load worker does when nothing is ready while requests are in
// flight (IdleWait in common/metrics.h): Auto naps when the target is on the
// agent's machine (the local platform) and blocks otherwise.
enum class IdleWaitMode { kAuto, kBlock, kNap, kPoll };

struct Load {
  int32_t threads = 4;  // per agent
  std::vector<int64_t> connections = {100};  // levels; each spread over the agents
  Duration duration = std::chrono::seconds(30);
  Duration warmup = std::chrono::seconds(5);
  Duration timeout = std::chrono::seconds(2);  // per request; a slower answer counts as a timeout error
  bool keep_alive = true;
  int32_t pipeline = 1;  // requests in flight per connection
  // h2/h2c targets: concurrent streams per connection (unset: 1, as h2load
  // -m), capped by the server's SETTINGS_MAX_CONCURRENT_STREAMS.
  std::optional<int32_t> streams;
  int64_t rate = 0;      // requests/s over all agents; 0: closed loop (as fast as answered)
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
  std::optional<Profile> profile;  // unset: no cell is profiled
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
  friend bool operator==(const ErrorCounts&, const ErrorCounts&) = default;
};

// https targets: the TLS handshakes of the window, apart from request
// latency (with short connections, one per request: the cost of TLS).
struct TlsHandshakes {
  uint64_t count = 0;
  uint64_t resumed = 0;     // of them, sessions resumed
  double mean = 0;          // microseconds, from the TCP connect to the handshake's end
  double per_second = 0;
  friend bool operator==(const TlsHandshakes&, const TlsHandshakes&) = default;
};

struct StatusClasses {
  uint64_t c1xx = 0, c2xx = 0, c3xx = 0, c4xx = 0, c5xx = 0;
  friend bool operator==(const StatusClasses&, const StatusClasses&) = default;
};

// One cell's outcome. Metrics cover the measurement window only.
struct CellResult {
  std::string target;
  std::string scenario;
  int64_t connections = 0;
  int32_t repetition = 1;  // 1-based
  CellState state = CellState::kSucceeded;
  std::optional<CellReason> reason;  // for Failed and Skipped (well_known.h)
  std::string message;  // one line for people
  double requests_per_second = 0;
  Latency latency;
  ErrorCounts errors;
  StatusClasses status_classes;
  uint64_t requests = 0;
  uint64_t bytes = 0;                 // read from the target, headers included
  double bytes_per_response = 0;
  double transfer_per_second = 0;     // bytes/s
  std::optional<uint64_t> memory_idle;    // bytes, before any load on the target
  std::optional<uint64_t> memory_loaded;  // bytes, at the end of this cell's window
  std::optional<double> target_cpu;       // cores, mean over the window
  std::optional<double> agent_cpu;        // cores, summed over agents
  std::optional<TlsHandshakes> tls;       // https targets only
  std::optional<Time> start_time;         // measurement window
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

struct BenchmarkRunStatus {
  std::optional<RunPhase> phase;  // unset until the controller first sees the run
  int64_t observed_generation = 0;
  std::optional<CurrentCell> current;
  std::optional<RunNodes> nodes;
  Progress progress;
  std::optional<Time> start_time;
  std::optional<Time> completion_time;
  std::vector<CellResult> results;  // in cell order; finished cells only
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

RepetitionOrder EffectiveRepetitionOrder(const BenchmarkRunSpec& spec);

}  // namespace fairbench::api
