// The schema of BenchmarkRun: every API field name and enum spelling, in one
// place.
//
// Each Describe(v, x) lists the fields of one struct in their canonical
// order, binding a name to a member. A visitor walks them: the decoder
// (Node → struct, codec.cc), the encoder (struct → Node, encoder.h), the
// path index that gives validation its field paths (field_paths.h) and the
// CRD's OpenAPI schema (openapi.h). Renaming a
// field here renames it everywhere, and the order here is the order of
// encoded output and of error reports.
//
// The visitor interface:
//   v.Field(std::string_view name, Member& m, unsigned flags = 0)
// where `m` is const when encoding. Describe may call Describe of another
// struct on the same visitor to inline its fields (WeightedRequest inlines
// Request). Internal to fairbench_api.
#pragma once

#include <array>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "api/benchmark_run.h"

namespace fairbench::api::schema {

// Field flags.
inline constexpr unsigned kOmitZero = 1;  // encode a number/boolean only when non-zero/true
inline constexpr unsigned kCount = 2;     // an integer that may be written "10k" (ParseCount)
// Decoding reports the field's absence. For objects whose own fields would
// otherwise each report being empty; plain fields say "required" in validation.
inline constexpr unsigned kRequired = 4;

template <typename S, typename T>
concept Is = std::is_same_v<std::remove_const_t<S>, T>;

template <typename V, typename S>
requires Is<S, BenchmarkRun>
void Describe(V& v, S& s) {
  v.Field("apiVersion", s.api_version);
  v.Field("kind", s.kind);
  v.Field("metadata", s.metadata);
  v.Field("spec", s.spec, kRequired);
  v.Field("status", s.status);
}

template <typename V, typename S>
requires Is<S, ObjectMeta>
void Describe(V& v, S& s) {
  v.Field("name", s.name);
  v.Field("namespace", s.namespace_);
  v.Field("labels", s.labels);
  v.Field("annotations", s.annotations);
  v.Field("uid", s.uid);
  v.Field("resourceVersion", s.resource_version);
  v.Field("generation", s.generation, kOmitZero);
  v.Field("creationTimestamp", s.creation_timestamp);
}

// ------------------------------------------------------------------ spec

template <typename V, typename S>
requires Is<S, BenchmarkRunSpec>
void Describe(V& v, S& s) {
  v.Field("targets", s.targets);
  v.Field("scenarios", s.scenarios);
  v.Field("load", s.load);
  v.Field("placement", s.placement);
  v.Field("local", s.local);
  v.Field("repetitions", s.repetitions);
  v.Field("repetitionOrder", s.repetition_order);
  v.Field("seed", s.seed);
  v.Field("cooldown", s.cooldown);
  v.Field("profile", s.profile);
  v.Field("calibration", s.calibration);
}

template <typename V, typename S>
requires Is<S, Calibration>
void Describe(V& v, S& s) {
  v.Field("stall", s.stall);
  v.Field("rate", s.rate);
  v.Field("duration", s.duration);
}

template <typename V, typename S>
requires Is<S, Profile>
void Describe(V& v, S& s) {
  v.Field("all", s.all, kOmitZero);
  v.Field("cells", s.cells);
  v.Field("frequency", s.frequency);
}

template <typename V, typename S>
requires Is<S, ProfileCell>
void Describe(V& v, S& s) {
  v.Field("target", s.target);
  v.Field("scenario", s.scenario);
  v.Field("connections", s.connections, kOmitZero | kCount);
}

template <typename V, typename S>
requires Is<S, Target>
void Describe(V& v, S& s) {
  v.Field("name", s.name);
  v.Field("image", s.image);
  v.Field("port", s.port);
  v.Field("scheme", s.scheme);
  v.Field("protocol", s.protocol);
  v.Field("command", s.command);
  v.Field("args", s.args);
  v.Field("resources", s.resources);
  v.Field("nofile", s.nofile);
  v.Field("env", s.env);
  v.Field("readiness", s.readiness);
  v.Field("local", s.local);
  v.Field("securityContext", s.security_context);
  v.Field("hostNetwork", s.host_network, kOmitZero);
}

template <typename V, typename S>
requires Is<S, TargetSecurityContext>
void Describe(V& v, S& s) {
  v.Field("runAsNonRoot", s.run_as_non_root);
  v.Field("runAsUser", s.run_as_user);
  v.Field("runAsGroup", s.run_as_group);
  v.Field("allowPrivilegeEscalation", s.allow_privilege_escalation);
  v.Field("capabilities", s.capabilities);
}

template <typename V, typename S>
requires Is<S, Capabilities>
void Describe(V& v, S& s) {
  v.Field("add", s.add);
  v.Field("drop", s.drop);
}

template <typename V, typename S>
requires Is<S, Readiness>
void Describe(V& v, S& s) {
  v.Field("path", s.path);
  v.Field("timeout", s.timeout);
  v.Field("grpc", s.grpc);
}

template <typename V, typename S>
requires Is<S, GrpcReadiness>
void Describe(V& v, S& s) {
  v.Field("service", s.service);
  v.Field("method", s.method);
}

template <typename V, typename S>
requires Is<S, Resources>
void Describe(V& v, S& s) {
  v.Field("cpu", s.cpu);
  v.Field("memory", s.memory);
}

template <typename V, typename S>
requires Is<S, LocalProcess>
void Describe(V& v, S& s) {
  v.Field("command", s.command);
  v.Field("env", s.env);
  v.Field("workingDir", s.working_dir);
  v.Field("readyPath", s.ready_path);
  v.Field("readyTimeout", s.ready_timeout);
}

template <typename V, typename S>
requires Is<S, Scenario>
void Describe(V& v, S& s) {
  v.Field("name", s.name);
  v.Field("request", s.request);
  v.Field("requests", s.requests);
  v.Field("script", s.script);
  v.Field("grpc", s.grpc);
  v.Field("expect", s.expect);
  v.Field("connections", s.connections, kCount);
  v.Field("duration", s.duration);
  v.Field("slo", s.slo);
  v.Field("vary", s.vary);
  v.Field("rates", s.rates);
}

template <typename V, typename S>
requires Is<S, Vary>
void Describe(V& v, S& s) {
  v.Field("seed", s.seed);
  v.Field("verifyEvery", s.verify_every);
}

template <typename V, typename S>
requires Is<S, AnswerChecks>
void Describe(V& v, S& s) {
  v.Field("verified", s.verified);
  v.Field("failed", s.failed);
  v.Field("withoutDate", s.without_date, kOmitZero);
  v.Field("dateFrozen", s.date_frozen, kOmitZero);
  v.Field("contentLength", s.content_length);
  v.Field("bodyBytes", s.body_bytes);
  v.Field("dateMissing", s.date_missing, kOmitZero);
}

template <typename V, typename S>
requires Is<S, ConfigMapKeyRef>
void Describe(V& v, S& s) {
  v.Field("name", s.name);
  v.Field("key", s.key);
}

template <typename V, typename S>
requires Is<S, Script>
void Describe(V& v, S& s) {
  v.Field("file", s.file);
  v.Field("inline", s.inline_text);
  v.Field("configMapRef", s.config_map_ref);
  v.Field("args", s.args);
}

template <typename V, typename S>
requires Is<S, GrpcCallSpec>
void Describe(V& v, S& s) {
  v.Field("method", s.method);
  v.Field("message", s.message);
  v.Field("messageFile", s.message_file);
  v.Field("descriptorSet", s.descriptor_set);
  v.Field("descriptorSetConfigMapRef", s.descriptor_set_config_map_ref);
  v.Field("metadata", s.metadata);
  v.Field("deadline", s.deadline);
}

template <typename V, typename S>
requires Is<S, Slo>
void Describe(V& v, S& s) {
  v.Field("p50", s.p50);
  v.Field("p90", s.p90);
  v.Field("p99", s.p99);
  v.Field("p999", s.p999);
  v.Field("maxErrorRate", s.max_error_rate);
  v.Field("startRate", s.start_rate, kCount);
  v.Field("maxSteps", s.max_steps);
}

template <typename V, typename S>
requires Is<S, Request>
void Describe(V& v, S& s) {
  v.Field("method", s.method);
  v.Field("path", s.path);
  v.Field("headers", s.headers);
  v.Field("body", s.body);
  v.Field("bodyFile", s.body_file);
}

template <typename V, typename S>
requires Is<S, WeightedRequest>
void Describe(V& v, S& s) {
  Describe(v, s.request);  // inlined: {method, path, …, weight}
  v.Field("weight", s.weight);
}

template <typename V, typename S>
requires Is<S, Expect>
void Describe(V& v, S& s) {
  v.Field("status", s.status);
  v.Field("body", s.body);
  v.Field("json", s.json);
  v.Field("contentType", s.content_type);
  v.Field("grpcStatus", s.grpc_status);
}

template <typename V, typename S>
requires Is<S, Load>
void Describe(V& v, S& s) {
  v.Field("threads", s.threads);
  v.Field("connections", s.connections, kCount);
  v.Field("duration", s.duration);
  v.Field("warmup", s.warmup);
  v.Field("timeout", s.timeout);
  v.Field("keepAlive", s.keep_alive);
  v.Field("pipeline", s.pipeline);
  v.Field("streams", s.streams);
  v.Field("rate", s.rate, kOmitZero | kCount);
  v.Field("agents", s.agents);
  v.Field("idleWait", s.idle_wait);
}

template <typename V, typename S>
requires Is<S, Placement>
void Describe(V& v, S& s) {
  v.Field("target", s.target);
  v.Field("agents", s.agents);
  v.Field("requireExclusiveCpus", s.require_exclusive_cpus, kOmitZero);
}

template <typename V, typename S>
requires Is<S, NodePlacement>
void Describe(V& v, S& s) {
  v.Field("nodeName", s.node_name);
  v.Field("nodeSelector", s.node_selector);
  v.Field("tolerations", s.tolerations);
}

template <typename V, typename S>
requires Is<S, Toleration>
void Describe(V& v, S& s) {
  v.Field("key", s.key);
  v.Field("operator", s.operator_);
  v.Field("value", s.value);
  v.Field("effect", s.effect);
  v.Field("tolerationSeconds", s.toleration_seconds);
}

template <typename V, typename S>
requires Is<S, LocalPlacement>
void Describe(V& v, S& s) {
  v.Field("targetCpus", s.target_cpus);
  v.Field("agentCpus", s.agent_cpus);
}

// ------------------------------------------------------------------ status

template <typename V, typename S>
requires Is<S, BenchmarkRunStatus>
void Describe(V& v, S& s) {
  v.Field("phase", s.phase);
  v.Field("observedGeneration", s.observed_generation, kOmitZero);
  v.Field("current", s.current);
  v.Field("nodes", s.nodes);
  v.Field("progress", s.progress);
  v.Field("completedCells", s.progress.completed, kOmitZero);
  v.Field("totalCells", s.progress.total, kOmitZero);
  v.Field("startTime", s.start_time);
  v.Field("completionTime", s.completion_time);
  v.Field("results", s.results);
  v.Field("cpus", s.cpus);
  v.Field("stored", s.stored);
  v.Field("conditions", s.conditions);
}

template <typename V, typename S>
requires Is<S, StoredResult>
void Describe(V& v, S& s) {
  v.Field("id", s.id, kOmitZero);
  v.Field("store", s.store);
  v.Field("time", s.time);
  v.Field("error", s.error);
}

template <typename V, typename S>
requires Is<S, TargetCpus>
void Describe(V& v, S& s) {
  v.Field("target", s.target);
  v.Field("node", s.node);
  v.Field("cpus", s.cpus);
  v.Field("nodeCpus", s.node_cpus);
  v.Field("asked", s.asked);
  v.Field("cpuQuota", s.cpu_quota);
  v.Field("memoryLimit", s.memory_limit);
  v.Field("cpuManagerPolicy", s.cpu_manager_policy);
  v.Field("exclusive", s.exclusive);
  v.Field("disjointFromAgents", s.disjoint_from_agents);
  v.Field("asManyAsAsked", s.as_many_as_asked);
  v.Field("message", s.message);
  v.Field("agents", s.agents);
}

template <typename V, typename S>
requires Is<S, AgentCpus>
void Describe(V& v, S& s) {
  v.Field("agent", s.agent);
  v.Field("node", s.node);
  v.Field("cpus", s.cpus);
  v.Field("sameMachine", s.same_machine, kOmitZero);
}

template <typename V, typename S>
requires Is<S, CurrentCell>
void Describe(V& v, S& s) {
  v.Field("target", s.target);
  v.Field("scenario", s.scenario);
  v.Field("connections", s.connections, kOmitZero);
  v.Field("repetition", s.repetition, kOmitZero);
  v.Field("stage", s.stage);
  v.Field("rateLevel", s.rate_level);
}

template <typename V, typename S>
requires Is<S, RunNodes>
void Describe(V& v, S& s) {
  v.Field("target", s.target);
  v.Field("agents", s.agents);
}

template <typename V, typename S>
requires Is<S, CellResult>
void Describe(V& v, S& s) {
  v.Field("target", s.target);
  v.Field("scenario", s.scenario);
  v.Field("connections", s.connections);
  v.Field("repetition", s.repetition);
  v.Field("rateLevel", s.rate_level);
  v.Field("state", s.state);
  v.Field("reason", s.reason);
  v.Field("message", s.message);
  v.Field("requestsPerSecond", s.requests_per_second, kOmitZero);
  v.Field("latency", s.latency);
  v.Field("errors", s.errors);
  v.Field("statusClasses", s.status_classes);
  v.Field("requests", s.requests, kOmitZero);
  v.Field("bytes", s.bytes, kOmitZero);
  v.Field("bytesPerResponse", s.bytes_per_response, kOmitZero);
  v.Field("transferPerSecond", s.transfer_per_second, kOmitZero);
  v.Field("memoryIdle", s.memory_idle);
  v.Field("memoryLoaded", s.memory_loaded);
  v.Field("targetCpu", s.target_cpu);
  v.Field("agentCpu", s.agent_cpu);
  v.Field("offeredRate", s.offered_rate);
  v.Field("limiter", s.limiter);
  v.Field("tls", s.tls);
  v.Field("grpc", s.grpc);
  v.Field("answers", s.answers);
  v.Field("startTime", s.start_time);
  v.Field("endTime", s.end_time);
}

template <typename V, typename S>
requires Is<S, Limiter>
void Describe(V& v, S& s) {
  v.Field("kind", s.kind);
  v.Field("evidence", s.evidence);
}

template <typename V, typename S>
requires Is<S, Latency>
void Describe(V& v, S& s) {
  v.Field("mean", s.mean, kOmitZero);
  v.Field("stdev", s.stdev, kOmitZero);
  v.Field("max", s.max, kOmitZero);
  v.Field("p50", s.p50, kOmitZero);
  v.Field("p75", s.p75, kOmitZero);
  v.Field("p90", s.p90, kOmitZero);
  v.Field("p99", s.p99, kOmitZero);
  v.Field("p999", s.p999, kOmitZero);
  v.Field("p9999", s.p9999, kOmitZero);
}

template <typename V, typename S>
requires Is<S, ErrorCounts>
void Describe(V& v, S& s) {
  v.Field("connect", s.connect, kOmitZero);
  v.Field("read", s.read, kOmitZero);
  v.Field("write", s.write, kOmitZero);
  v.Field("timeout", s.timeout, kOmitZero);
  v.Field("status", s.status, kOmitZero);
  v.Field("portExhaustion", s.port_exhaustion, kOmitZero);
  v.Field("handshake", s.handshake, kOmitZero);
  v.Field("goaway", s.goaway, kOmitZero);
  v.Field("rstStream", s.rst_stream, kOmitZero);
  v.Field("h2Protocol", s.h2_protocol, kOmitZero);
  v.Field("script", s.script, kOmitZero);
  v.Field("grpcProtocol", s.grpc_protocol, kOmitZero);
}

template <typename V, typename S>
requires Is<S, GrpcStatusCount>
void Describe(V& v, S& s) {
  v.Field("code", s.code);
  v.Field("calls", s.calls);
}

template <typename V, typename S>
requires Is<S, GrpcCalls>
void Describe(V& v, S& s) {
  v.Field("statuses", s.statuses);
  v.Field("statusOther", s.status_other, kOmitZero);
  v.Field("noStatus", s.no_status, kOmitZero);
  v.Field("badStatus", s.bad_status, kOmitZero);
  v.Field("truncated", s.truncated, kOmitZero);
  v.Field("badFlag", s.bad_flag, kOmitZero);
  v.Field("tooLarge", s.too_large, kOmitZero);
  v.Field("unaryMessages", s.unary_messages, kOmitZero);
  v.Field("messages", s.messages, kOmitZero);
  v.Field("firstMessageLatency", s.first_message_latency);
  v.Field("lastMessageLatency", s.last_message_latency);
}

template <typename V, typename S>
requires Is<S, TlsHandshakes>
void Describe(V& v, S& s) {
  v.Field("count", s.count);
  v.Field("resumed", s.resumed);
  v.Field("mean", s.mean);
  v.Field("perSecond", s.per_second);
}

template <typename V, typename S>
requires Is<S, StatusClasses>
void Describe(V& v, S& s) {
  v.Field("1xx", s.c1xx, kOmitZero);
  v.Field("2xx", s.c2xx, kOmitZero);
  v.Field("3xx", s.c3xx, kOmitZero);
  v.Field("4xx", s.c4xx, kOmitZero);
  v.Field("5xx", s.c5xx, kOmitZero);
}

template <typename V, typename S>
requires Is<S, Condition>
void Describe(V& v, S& s) {
  v.Field("type", s.type);
  v.Field("status", s.status);
  v.Field("reason", s.reason);
  v.Field("message", s.message);
  v.Field("lastTransitionTime", s.last_transition_time);
  v.Field("observedGeneration", s.observed_generation, kOmitZero);
}

// Containers the visitors handle generically.
template <typename T>
inline constexpr bool kIsOptional = false;
template <typename T>
inline constexpr bool kIsOptional<std::optional<T>> = true;
template <typename T>
inline constexpr bool kIsVector = false;
template <typename T>
inline constexpr bool kIsVector<std::vector<T>> = true;

// True for the structs above: what a visitor descends into.
template <typename T>
concept Described = requires(T& t, int& v) {
  Describe(v, t);
};

// ------------------------------------------------------------------ enums

template <typename E>
struct EnumNames;

template <>
struct EnumNames<RunPhase> {
  static constexpr std::array<std::pair<RunPhase, std::string_view>, 5> kNames{{
      {RunPhase::kQueued, "Queued"},
      {RunPhase::kRunning, "Running"},
      {RunPhase::kSucceeded, "Succeeded"},
      {RunPhase::kFailed, "Failed"},
      {RunPhase::kCancelled, "Cancelled"},
  }};
};

template <>
struct EnumNames<Stage> {
  static constexpr std::array<std::pair<Stage, std::string_view>, 8> kNames{{
      {Stage::kWaitingForSlot, "WaitingForSlot"},
      {Stage::kDeploying, "Deploying"},
      {Stage::kVerifying, "Verifying"},
      {Stage::kSamplingIdle, "SamplingIdle"},
      {Stage::kWarmingUp, "WarmingUp"},
      {Stage::kMeasuring, "Measuring"},
      {Stage::kCoolingDown, "CoolingDown"},
      {Stage::kTearingDown, "TearingDown"},
  }};
};

template <>
struct EnumNames<CellState> {
  static constexpr std::array<std::pair<CellState, std::string_view>, 3> kNames{{
      {CellState::kSucceeded, "Succeeded"},
      {CellState::kFailed, "Failed"},
      {CellState::kSkipped, "Skipped"},
  }};
};

template <>
struct EnumNames<ConditionStatus> {
  static constexpr std::array<std::pair<ConditionStatus, std::string_view>, 3> kNames{{
      {ConditionStatus::kTrue, "True"},
      {ConditionStatus::kFalse, "False"},
      {ConditionStatus::kUnknown, "Unknown"},
  }};
};

template <>
struct EnumNames<RepetitionOrder> {
  static constexpr std::array<std::pair<RepetitionOrder, std::string_view>, 2> kNames{{
      {RepetitionOrder::kSequential, "Sequential"},
      {RepetitionOrder::kInterleaved, "Interleaved"},
  }};
};

template <>
struct EnumNames<IdleWaitMode> {
  static constexpr std::array<std::pair<IdleWaitMode, std::string_view>, 4> kNames{{
      {IdleWaitMode::kAuto, "Auto"},
      {IdleWaitMode::kBlock, "Block"},
      {IdleWaitMode::kNap, "Nap"},
      {IdleWaitMode::kPoll, "Poll"},
  }};
};

template <>
struct EnumNames<LimiterKind> {
  static constexpr std::array<std::pair<LimiterKind, std::string_view>, 7> kNames{{
      {LimiterKind::kTargetCpu, "TargetCpu"},
      {LimiterKind::kGeneratorCpu, "GeneratorCpu"},
      {LimiterKind::kConnections, "Connections"},
      {LimiterKind::kOfferedRate, "OfferedRate"},
      {LimiterKind::kErrors, "Errors"},
      {LimiterKind::kMemoryLimit, "MemoryLimit"},
      {LimiterKind::kUnknown, "Unknown"},
  }};
};

template <>
struct EnumNames<GrpcCode> {
  static constexpr std::array<std::pair<GrpcCode, std::string_view>, 17> kNames{{
      {GrpcCode::kOk, "OK"},
      {GrpcCode::kCancelled, "CANCELLED"},
      {GrpcCode::kUnknown, "UNKNOWN"},
      {GrpcCode::kInvalidArgument, "INVALID_ARGUMENT"},
      {GrpcCode::kDeadlineExceeded, "DEADLINE_EXCEEDED"},
      {GrpcCode::kNotFound, "NOT_FOUND"},
      {GrpcCode::kAlreadyExists, "ALREADY_EXISTS"},
      {GrpcCode::kPermissionDenied, "PERMISSION_DENIED"},
      {GrpcCode::kResourceExhausted, "RESOURCE_EXHAUSTED"},
      {GrpcCode::kFailedPrecondition, "FAILED_PRECONDITION"},
      {GrpcCode::kAborted, "ABORTED"},
      {GrpcCode::kOutOfRange, "OUT_OF_RANGE"},
      {GrpcCode::kUnimplemented, "UNIMPLEMENTED"},
      {GrpcCode::kInternal, "INTERNAL"},
      {GrpcCode::kUnavailable, "UNAVAILABLE"},
      {GrpcCode::kDataLoss, "DATA_LOSS"},
      {GrpcCode::kUnauthenticated, "UNAUTHENTICATED"},
  }};
};

template <>
struct EnumNames<Scheme> {
  static constexpr const auto& kNames = kSchemeNames;
};

template <>
struct EnumNames<Protocol> {
  static constexpr const auto& kNames = kProtocolNames;
};

template <>
struct EnumNames<CellReason> {
  static constexpr const auto& kNames = kCellReasonNames;
};

template <typename E>
concept NamedEnum = requires {
  EnumNames<E>::kNames;
};

// Enums whose names the CRD leaves open (a plain string, as these fields
// have always been there): a value outside them is refused by decoding —
// the CLI's, and the controller's with a condition and an Event naming the
// field — in the words "must be http or https, got \"ftp\"".
template <typename E>
inline constexpr bool kOpenInCrd = false;
template <>
inline constexpr bool kOpenInCrd<Scheme> = true;
template <>
inline constexpr bool kOpenInCrd<Protocol> = true;
template <>
inline constexpr bool kOpenInCrd<CellReason> = true;

template <NamedEnum E>
std::string_view NameOf(E e) {
  for (const auto& [value, name] : EnumNames<E>::kNames) {
    if (value == e) return name;
  }
  return "?";
}

}  // namespace fairbench::api::schema
