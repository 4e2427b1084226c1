#include "api/validate.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <string>

#include "api/cells.h"
#include "api/cpu_list.h"
#include "api/field_path.h"
#include "common/grpc_message.h"
#include "api/field_paths.h"
#include "api/names.h"
#include "api/node.h"
#include "api/quantity.h"

namespace fairbench::api {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool HasControlOrSpace(std::string_view s) { return load_rules::HasSpaceOrControl(s); }

bool HasLineBreak(std::string_view s) {
  return s.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos;
}

// Headers of one HTTP/1.1 connection rather than of a request: RFC 9113
// §8.2.2 makes them malformed in HTTP/2, and the agent refuses to send them.
bool IsConnectionSpecific(const std::string& lower) {
  return lower == "connection" || lower == "keep-alive" || lower == "proxy-connection" ||
         lower == "transfer-encoding" || lower == "upgrade";
}

class Checker {
 public:
  Checker(const BenchmarkRun& run, const ValidateOptions& options) : run_(run), paths_(run), options_(options) {}

  Diagnostics Check() {
    CheckTypeMeta();
    CheckMetadata(run_.metadata);
    CheckSpec(run_.spec);
    out_.SortByField();
    return std::move(out_);
  }

 private:
  template <typename T>
  void Fail(const T& member, std::string message) {
    const FieldPaths::Entry* e = paths_.Find(member);
    // Every member reached from run_ is indexed; a miss is a bug here, but
    // the message is still worth showing.
    out_.Add(Diagnostic{
        e != nullptr ? e->path : std::string(), std::move(message), {}, e != nullptr ? e->order : std::vector<int>{}});
  }

  template <typename T>
  void Range(const T& value, T lo, T hi) {
    if (value < lo || value > hi) {
      Fail(value,
           "must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", got " + std::to_string(value));
    }
  }

  template <typename T>
  void AtLeastOne(const T& value, T max) {
    if (value < 1) Fail(value, "must be ≥ 1");
    else if (value > max) Fail(value, "must be at most " + std::to_string(max));
  }

  void Positive(const Duration& d) {
    if (d <= Duration::zero()) Fail(d, "must be greater than 0");
  }

  void NotNegative(const Duration& d) {
    if (d < Duration::zero()) Fail(d, "must not be negative");
  }

  void CheckTypeMeta() {
    if (run_.api_version.empty()) {
      Fail(run_.api_version, "required (" + std::string(kApiVersion) + ")");
    } else if (run_.api_version != kApiVersion) {
      Fail(run_.api_version, "must be " + std::string(kApiVersion) + ", got " + Quote(run_.api_version));
    }
    if (run_.kind.empty()) {
      Fail(run_.kind, "required (" + std::string(kKind) + ")");
    } else if (run_.kind != kKind) {
      Fail(run_.kind, "must be " + std::string(kKind) + ", got " + Quote(run_.kind));
    }
  }

  void CheckMetadata(const ObjectMeta& m) {
    if (m.name.empty()) {
      Fail(m.name, "required (a lowercase name such as \"cpp-frameworks\")");
    } else if (std::string why = CheckDnsSubdomain(m.name); !why.empty()) {
      Fail(m.name, why);
    }
    if (!m.namespace_.empty()) {
      if (std::string why = CheckDnsLabel(m.namespace_); !why.empty()) Fail(m.namespace_, why);
    }
    CheckLabels(m.labels, true);
    CheckLabels(m.annotations, false);
  }

  // Labels and node selectors: keys and values both constrained;
  // annotations: keys only.
  void CheckLabels(const StringMap& labels, bool check_values) {
    for (const auto& [key, value] : labels) {
      if (std::string why = CheckQualifiedName(key); !why.empty()) {
        Fail(value, why);
      } else if (check_values) {
        if (std::string vwhy = CheckLabelValue(value); !vwhy.empty()) Fail(value, vwhy);
      }
    }
  }

  void CheckEnv(const StringMap& env) {
    for (const auto& [key, value] : env) {
      if (std::string why = CheckEnvName(key); !why.empty()) Fail(value, why);
    }
  }

  void CheckSpec(const BenchmarkRunSpec& spec) {
    CheckTargets(spec);
    CheckScenarios(spec);
    CheckLoad(spec.load);
    CheckPlacement(spec.placement);
    CheckLocalPlacement(spec.local);
    AtLeastOne(spec.repetitions, kMaxRepetitions);
    NotNegative(spec.cooldown);
    if (spec.profile.has_value()) CheckProfile(spec, *spec.profile);
    if (spec.calibration.has_value()) CheckCalibrationSpec(*spec.calibration);
    const size_t cells = CountCells(spec);
    if (cells > kMaxCells) {
      Fail(spec, "expands into " + std::to_string(cells) +
                     " cells (targets × scenarios × connection levels × repetitions); at most " +
                     std::to_string(kMaxCells) + " fit in one run's status");
    }
  }

  void CheckTargets(const BenchmarkRunSpec& spec) {
    if (spec.targets.empty()) Fail(spec.targets, "must not be empty");
    std::map<std::string, size_t> seen;
    for (const Target& t : spec.targets) {
      CheckName(t.name, &seen);
      const bool has_command = t.local.has_value() && !t.local->command.empty();
      switch (options_.platform) {
        case Platform::kAny:
          if (t.image.empty() && !t.local.has_value()) {
            Fail(t, "needs an image (Kubernetes) or local.command (local runs)");
          }
          break;
        case Platform::kLocal:
          if (!t.local.has_value()) Fail(t.local, "required to run locally (local.command)");
          break;
        case Platform::kKubernetes:
          if (t.image.empty()) Fail(t.image, "required on Kubernetes");
          break;
        case Platform::kDocker:
          if (t.image.empty()) Fail(t.image, "required with --platform docker (the container image the target runs)");
          break;
      }
      if (HasControlOrSpace(t.image)) Fail(t.image, "must not contain spaces");
      Range(t.port, 1, 65535);
      if (t.protocol) CheckProtocol(spec, t);
      if (t.resources.cpu && t.resources.cpu->millicores <= 0) Fail(*t.resources.cpu, "must be greater than 0");
      if (t.resources.memory && t.resources.memory->bytes <= 0) Fail(*t.resources.memory, "must be greater than 0");
      Range<int64_t>(t.nofile, 1, kMaxNofile);
      CheckEnv(t.env);
      if (!t.command.empty() && t.command[0].empty()) Fail(t.command[0], "must not be empty (the program to run)");
      // On Kubernetes the whole command line is wrapped by the nofile helper;
      // a container of the Docker platform gets nofile from the engine, and
      // args alone replace the image's CMD.
      if (t.command.empty() && !t.args.empty() && options_.platform != Platform::kDocker) {
        Fail(t.args, "needs command as well: the whole command line is wrapped to set nofile");
      }
      if (t.readiness.has_value()) {
        const Readiness& r = *t.readiness;
        if (r.path.empty() || r.path[0] != '/') Fail(r.path, "must start with \"/\", got " + Quote(r.path));
        Positive(r.timeout);
        if (r.grpc.has_value()) {
          if (EffectiveProtocol(t) != Protocol::kGrpc) Fail(*r.grpc, "only for targets with protocol grpc");
          if (r.grpc->method && !IsGrpcMethod(*r.grpc->method)) {
            Fail(*r.grpc->method, Quote(*r.grpc->method) + " is not package.Service/Method");
          }
          if (r.grpc->method && !r.grpc->service.empty()) Fail(r.grpc->service, "cannot be used together with method");
        }
      }
      CheckGrpcPairs(spec, t);
      if (t.security_context.has_value()) CheckSecurityContext(*t.security_context);
      if (t.local.has_value()) {
        const LocalProcess& l = *t.local;
        if (!has_command) {
          Fail(l.command, "must not be empty (the program and its arguments)");
        } else if (l.command[0].empty()) {
          Fail(l.command[0], "must not be empty (the program to run)");
        }
        CheckEnv(l.env);
        if (l.ready_path.empty() || l.ready_path[0] != '/') {
          Fail(l.ready_path, "must start with \"/\", got " + Quote(l.ready_path));
        }
        Positive(l.ready_timeout);
      }
    }
  }

  // As the API server bounds user and group ids; a root user under
  // runAsNonRoot, which every kubelet refuses, is refused here already.
  void CheckSecurityContext(const TargetSecurityContext& sc) {
    for (const auto* id : {&sc.run_as_user, &sc.run_as_group}) {
      if (id->has_value() && (**id < 0 || **id > 2147483647)) {
        Fail(*id, "must be between 0 and 2147483647, got " + std::to_string(**id));
      }
    }
    if (sc.run_as_user == 0 && sc.run_as_non_root.value_or(true)) {
      Fail(sc.run_as_user, "is 0 (root) while runAsNonRoot is " +
                               std::string(sc.run_as_non_root ? "true" : "true by default (restricted)") +
                               ": set runAsNonRoot: false to run the target as root");
    }
    if (sc.capabilities.has_value()) {
      for (const auto* list : {&sc.capabilities->add, &sc.capabilities->drop}) {
        for (const std::string& c : *list) {
          if (c.empty() || c.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789") != std::string::npos) {
            Fail(c, "must be a capability's name in capitals without CAP_ (NET_BIND_SERVICE, ALL), got " + Quote(c));
          }
        }
      }
    }
  }

  // Required, an RFC 1123 label, unique among its siblings.
  void CheckName(const std::string& name, std::map<std::string, size_t>* seen) {
    if (name.empty()) {
      Fail(name, "required");
    } else if (std::string why = CheckDnsLabel(name); !why.empty()) {
      Fail(name, why);
    } else if (!seen->emplace(name, seen->size()).second) {
      Fail(name, "duplicate name " + Quote(name));
    }
  }

  void CheckScenarios(const BenchmarkRunSpec& spec) {
    if (spec.scenarios.empty()) Fail(spec.scenarios, "must not be empty");
    std::map<std::string, size_t> seen;
    for (const Scenario& s : spec.scenarios) {
      CheckName(s.name, &seen);
      if (!s.request.has_value() && s.requests.empty() && !s.script.has_value() && !s.grpc.has_value()) {
        Fail(s,
             "needs request (one request), requests (a weighted mix), script (a wrk Lua script) or grpc (a gRPC call)");
      } else if (s.grpc.has_value() && (s.request.has_value() || !s.requests.empty() || s.script.has_value())) {
        Fail(*s.grpc, "cannot be used together with request, requests or script: the scenario is one gRPC call");
      } else if (s.request.has_value() && !s.requests.empty()) {
        Fail(s.requests, "cannot be used together with request");
      }
      if (s.script.has_value()) {
        if (s.request.has_value()) {
          Fail(*s.script, "cannot be used together with request: the script makes the requests");
        } else if (!s.requests.empty()) {
          Fail(*s.script, "cannot be used together with requests: the script makes the requests");
        }
        CheckScript(*s.script);
      }
      if (s.request.has_value()) CheckRequest(*s.request);
      for (const WeightedRequest& w : s.requests) {
        CheckRequest(w.request);
        if (w.weight < 1) Fail(w.weight, "must be ≥ 1");
      }
      if (s.grpc.has_value()) CheckGrpcCall(*s.grpc);
      CheckExpect(s.expect);
      if (s.expect.grpc_status.has_value() && !s.grpc.has_value())
        Fail(*s.expect.grpc_status, "only for a scenario with grpc");
      if (s.grpc.has_value() && s.expect.json.has_value() && !s.grpc->descriptor_set &&
          !s.grpc->descriptor_set_config_map_ref) {
        Fail(*s.expect.json, "a gRPC response is checked as JSON through the descriptor set: needs grpc.descriptorSet");
      }
      if (s.grpc.has_value() && s.expect.body.has_value())
        Fail(*s.expect.body, "not for gRPC; use json (with grpc.descriptorSet)");
      if (s.grpc.has_value() && s.expect.content_type.has_value())
        Fail(*s.expect.content_type, "not for gRPC (always application/grpc)");
      CheckLevels(s.connections, spec.load);
      if (s.duration.has_value()) Positive(*s.duration);
      if (s.slo) CheckSlo(*s.slo, spec);
      if (!s.rates.empty()) CheckRates(s, spec);
      CheckVary(s, spec);
    }
  }

  // A ConfigMap key the controller reads (Kubernetes only); `instead` says
  // what to use elsewhere.
  void CheckConfigMapRef(const ConfigMapKeyRef& r, const std::string& instead) {
    if (options_.platform != Platform::kKubernetes && options_.platform != Platform::kAny) {
      Fail(r, "only available on Kubernetes; " + instead);
    }
    if (r.name.empty()) Fail(r.name, "required");
    else if (std::string why = CheckDnsSubdomain(r.name); !why.empty()) Fail(r.name, why);
    if (r.key.empty()) Fail(r.key, "required");
  }

  void CheckScript(const Script& sc) {
    const int given = (sc.file ? 1 : 0) + (sc.inline_text ? 1 : 0) + (sc.config_map_ref ? 1 : 0);
    if (given != 1) {
      Fail(sc,
           given == 0 ? "needs one of file, inline or configMapRef" : "give only one of file, inline and configMapRef");
      return;
    }
    if (sc.file) {
      if (sc.file->empty()) Fail(*sc.file, "must not be empty");
      else if (options_.platform == Platform::kKubernetes) {
        Fail(*sc.file, "only available in a local run file; use inline or configMapRef");
      }
    }
    if (sc.inline_text && sc.inline_text->find_first_not_of(" \t\r\n") == std::string::npos) {
      Fail(*sc.inline_text, "must not be empty");
    }
    if (sc.config_map_ref) CheckConfigMapRef(*sc.config_map_ref, "use file or inline");
    for (const std::string& a : sc.args) {
      if (a.find('\0') != std::string::npos) Fail(a, "must not contain NUL");
    }
  }

  // "package.Service/Method", as gRPC's path names it (grpc_message.h).
  static bool IsGrpcMethod(std::string_view m) { return ParseGrpcMethodName(m).ok() && !HasControlOrSpace(m); }

  void CheckGrpcCall(const GrpcCallSpec& g) {
    if (g.method.empty()) {
      Fail(g.method, "required (\"package.Service/Method\", e.g. \"fairbench.echo.v1.Echo/Unary\")");
    } else if (!IsGrpcMethod(g.method)) {
      Fail(g.method, Quote(g.method) + " is not package.Service/Method (e.g. \"fairbench.echo.v1.Echo/Unary\")");
    }
    const bool descriptors = g.descriptor_set.has_value() || g.descriptor_set_config_map_ref.has_value();
    if (g.message.has_value() && g.message_file.has_value())
      Fail(*g.message_file, "cannot be used together with message");
    if (g.message.has_value() && !descriptors) {
      Fail(
          *g.message,
          "JSON is encoded through the method's descriptors: needs descriptorSet (protoc --descriptor_set_out=FILE --include_imports)");
    } else if (g.message.has_value() && !g.message->is_object()) {
      Fail(*g.message, "must be a JSON object (the request message)");
    }
    if (g.descriptor_set.has_value() && g.descriptor_set_config_map_ref.has_value()) {
      Fail(*g.descriptor_set_config_map_ref, "cannot be used together with descriptorSet");
    }
    for (const std::optional<std::string>* file : {&g.message_file, &g.descriptor_set}) {
      if (!file->has_value()) continue;
      if ((*file)->empty()) Fail(**file, "must not be empty");
      else if (options_.platform == Platform::kKubernetes) {
        Fail(**file, file == &g.message_file
                         ? "only available in a local run file; use message with descriptorSetConfigMapRef"
                         : "only available in a local run file; use descriptorSetConfigMapRef");
      }
    }
    if (g.descriptor_set_config_map_ref) CheckConfigMapRef(*g.descriptor_set_config_map_ref, "use descriptorSet");
    for (const auto& [key, value] : g.metadata) {
      const std::string lower = Lower(key);
      if (!IsHttpToken(key)) {
        Fail(value, Quote(key) + " is not a valid metadata key");
      } else if (load_rules::IsGrpcOwnMetadata(lower)) {
        Fail(value, Quote(key) + " is gRPC's own (set from method and deadline)");
      } else if (lower == "content-length") {
        Fail(value, "set from the message; remove this key");
      } else if (IsConnectionSpecific(lower)) {
        Fail(value,
             Quote(key) + " is connection-specific, not allowed in HTTP/2 (RFC 9113 §8.2.2), which gRPC runs on");
      } else if (HasLineBreak(value)) {
        Fail(value, "must not contain line breaks");
      } else if (lower == "host" && value.empty()) {
        Fail(value, "must not be empty: it becomes the call's :authority");
      }
    }
    if (g.deadline.has_value()) Positive(*g.deadline);
  }

  void CheckSlo(const Slo& slo, const BenchmarkRunSpec& spec) {
    if (!slo.p50 && !slo.p90 && !slo.p99 && !slo.p999) Fail(slo, "needs a latency objective: p50, p90, p99 or p999");
    for (const std::optional<Duration>* d : {&slo.p50, &slo.p90, &slo.p99, &slo.p999}) {
      if (d->has_value()) Positive(**d);
    }
    if (slo.max_error_rate && !(*slo.max_error_rate >= 0 && *slo.max_error_rate <= 1)) {
      Fail(*slo.max_error_rate, "must be between 0 and 1 (a share of the requests, e.g. 0.01)");
    }
    if (slo.start_rate < 1) Fail(slo.start_rate, "must be ≥ 1 request/s");
    Range(slo.max_steps, int32_t{2}, int32_t{50});
    if (spec.load.rate > 0) Fail(slo, "cannot be used with load.rate: the search sets the rate itself");
    if (spec.load.pipeline > 1) Fail(slo, "cannot be used with load.pipeline > 1: the search uses a constant rate");
  }

  // scenarios[].rates: fixed offered rates, each measured as its own cell.
  void CheckRates(const Scenario& s, const BenchmarkRunSpec& spec) {
    for (size_t i = 0; i < s.rates.size(); ++i) {
      for (size_t j = 0; j < i; ++j) {
        if (s.rates[j] == s.rates[i]) Fail(s.rates[i], "duplicate rate " + FormatRateLevel(s.rates[i]));
      }
    }
    if (s.slo)
      Fail(s.rates, "cannot be used with slo: a scenario either searches its capacity or is measured at fixed rates");
    if (spec.load.rate > 0) Fail(s.rates, "cannot be used with load.rate: each rate of the list is a cell of its own");
    if (spec.load.pipeline > 1)
      Fail(s.rates, "cannot be used with load.pipeline > 1: a constant rate sends one request at a time");
  }

  void CheckRequest(const Request& r) {
    if (!IsHttpToken(r.method)) {
      Fail(r.method, Quote(r.method) + " is not an HTTP method (a token such as GET or POST)");
    } else {
      static constexpr std::string_view kStandard[] = {"GET",     "HEAD",    "POST",  "PUT",  "DELETE",
                                                       "CONNECT", "OPTIONS", "TRACE", "PATCH"};
      std::string upper = r.method;
      for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      if (upper != r.method && std::find(std::begin(kStandard), std::end(kStandard), upper) != std::end(kStandard)) {
        Fail(r.method, "methods are case-sensitive; did you mean " + Quote(upper) + "?");
      }
    }
    if (r.path.empty()) {
      Fail(r.path, "required (e.g. \"/\")");
    } else if (r.path[0] != '/') {
      Fail(r.path, "must start with \"/\", got " + Quote(r.path));
    } else if (HasControlOrSpace(r.path)) {
      Fail(r.path, "must not contain spaces or control characters (percent-encode them)");
    }
    for (const auto& [name, value] : r.headers) {
      const std::string lower = Lower(name);
      if (!IsHttpToken(name)) {
        Fail(value, Quote(name) + " is not a valid header name");
      } else if (lower == "content-length" || lower == "transfer-encoding") {
        Fail(value, "set from the body; remove this header");
      } else if (lower == "connection") {
        Fail(value, "set from load.keepAlive; remove this header");
      } else if (HasLineBreak(value)) {
        Fail(value, "must not contain line breaks");
      } else if (const Target* t = Http2RequestTarget(); t != nullptr) {
        CheckHttp2Header(name, lower, value, *t);
      }
    }
    if (r.body.has_value() && r.body_file.has_value()) {
      Fail(*r.body_file, "cannot be used together with body");
    } else if (r.body_file.has_value()) {
      if (r.body_file->empty()) {
        Fail(*r.body_file, "must not be empty");
      } else if (options_.platform == Platform::kKubernetes) {
        Fail(*r.body_file, "only available in a local run file; use body");
      }
    }
  }

  // The first target that sends the scenarios' requests over HTTP/2 (h2 or
  // h2c; a grpc target runs gRPC scenarios only), or nullptr.
  const Target* Http2RequestTarget() const {
    for (const Target& t : run_.spec.targets) {
      const Protocol p = EffectiveProtocol(t);
      if (p == Protocol::kH2 || p == Protocol::kH2c) return &t;
    }
    return nullptr;
  }

  // A request header that target `t` would get as an HTTP/2 header field.
  void CheckHttp2Header(const std::string& name, const std::string& lower, const std::string& value, const Target& t) {
    const std::string why = "target " + Quote(t.name) + " is " + std::string(ToString(EffectiveProtocol(t)));
    if (IsConnectionSpecific(lower)) {
      Fail(value, Quote(name) + " is connection-specific, not allowed in HTTP/2 (RFC 9113 §8.2.2): " + why);
    } else if (lower == "te" && Lower(value) != "trailers") {
      Fail(value, "TE may only be \"trailers\" in HTTP/2 (RFC 9113 §8.2.2): " + why);
    } else if (lower == "host" && value.empty()) {
      Fail(value, "must not be empty: it becomes the request's :authority in HTTP/2 (" + why + ")");
    }
  }

  static bool HasVaryToken(std::string_view text) { return text.find(kVaryToken) != std::string_view::npos; }
  static bool HasVaryTokenJson(const nlohmann::json& j) {
    if (j.is_string()) return HasVaryToken(j.get_ref<const std::string&>());
    if (j.is_object()) {
      for (const auto& [key, value] : j.items()) {
        if (HasVaryToken(key) || HasVaryTokenJson(value)) return true;
      }
    } else if (j.is_array()) {
      for (const nlohmann::json& e : j) {
        if (HasVaryTokenJson(e)) return true;
      }
    }
    return false;
  }

  // scenarios[].vary, and "{n}" outside it: a "{n}" without vary would be
  // sent as it is, and an expectation with it could never match.
  void CheckVary(const Scenario& s, const BenchmarkRunSpec& spec) {
    std::vector<const Request*> requests;
    if (s.request) requests.push_back(&*s.request);
    for (const WeightedRequest& w : s.requests) requests.push_back(&w.request);
    if (!s.vary) {
      const std::string why = "\"{n}\" is replaced only in a scenario with vary";
      for (const Request* r : requests) {
        if (HasVaryToken(r->path)) Fail(r->path, why);
        if (r->body && HasVaryToken(*r->body)) Fail(*r->body, why);
        for (const auto& [name, value] : r->headers) {
          if (HasVaryToken(value)) Fail(value, why);
        }
      }
      if (s.expect.body && HasVaryToken(*s.expect.body)) Fail(*s.expect.body, why);
      if (s.expect.json && HasVaryTokenJson(*s.expect.json)) Fail(*s.expect.json, why);
      return;
    }
    const Vary& v = *s.vary;
    if (v.verify_every < 1) Fail(v.verify_every, "must be ≥ 1");
    if (s.script) {
      Fail(v, "cannot be used with script: the script makes the requests");
      return;
    }
    if (s.grpc) {
      Fail(v, "not for gRPC scenarios");
      return;
    }
    if (!s.requests.empty()) {
      Fail(v, "needs one request (request), not a weighted mix (requests)");
      return;
    }
    if (!s.request) return;  // reported above
    const Request& r = *s.request;
    bool token = HasVaryToken(r.path) || (r.body && HasVaryToken(*r.body));
    for (const auto& [name, value] : r.headers) token = token || HasVaryToken(value);
    if (!token) Fail(v, "needs \"{n}\" in request.path, request.body or a header value of request.headers");
    if (!(s.expect.body && HasVaryToken(*s.expect.body)) && !(s.expect.json && HasVaryTokenJson(*s.expect.json))) {
      Fail(v, "needs \"{n}\" in expect.body or in a string of expect.json: answers are checked against it");
    }
    if (spec.load.pipeline > 1) Fail(v, "cannot be used with load.pipeline > 1");
    for (const Target& t : spec.targets) {
      const Protocol p = EffectiveProtocol(t);
      if (p != Protocol::kHttp1) {
        Fail(v, "HTTP/1.1 targets only: target " + Quote(t.name) + " is " + std::string(ToString(p)));
        break;
      }
    }
  }

  void CheckExpect(const Expect& e) {
    Range(e.status, 100, 599);
    if (e.body.has_value() && e.json.has_value()) Fail(e.json, "cannot be used together with body");
    if (e.content_type.has_value()) {
      if (e.content_type->empty()) Fail(*e.content_type, "must not be empty");
      else if (HasLineBreak(*e.content_type)) Fail(*e.content_type, "must not contain line breaks");
    }
  }

  // Connection levels: positive, distinct, and each agent's share must give
  // every thread at least one connection (wrk refuses the same).
  void CheckLevels(const std::vector<int64_t>& levels, const Load& load) {
    const bool spreadable = load.threads >= 1 && load.agents >= 1;
    for (size_t i = 0; i < levels.size(); ++i) {
      const int64_t c = levels[i];
      if (c < 1) {
        Fail(levels[i], "must be ≥ 1");
      } else if (c > kMaxConnections) {
        Fail(levels[i], "must be at most " + std::to_string(kMaxConnections));
      } else if (std::find(levels.begin(), levels.begin() + static_cast<std::ptrdiff_t>(i), c) !=
                 levels.begin() + static_cast<std::ptrdiff_t>(i)) {
        Fail(levels[i], "duplicate level " + std::to_string(c));
      } else if (spreadable && c / load.agents < load.threads) {
        if (load.agents == 1) {
          Fail(levels[i],
               std::to_string(c) + " connections cannot be spread over " + std::to_string(load.threads) + " threads");
        } else {
          Fail(levels[i], std::to_string(c) + " connections cannot be spread over " + std::to_string(load.agents) +
                              " agents × " + std::to_string(load.threads) + " threads (each agent gets " +
                              std::to_string(c / load.agents) + ")");
        }
      }
    }
  }

  // gRPC targets run gRPC scenarios, and only they do: every cell pairs
  // each target with each scenario.
  void CheckGrpcPairs(const BenchmarkRunSpec& spec, const Target& t) {
    const bool grpc_target = EffectiveProtocol(t) == Protocol::kGrpc;
    for (const Scenario& s : spec.scenarios) {
      if (grpc_target && !s.grpc.has_value() &&
          (s.request.has_value() || !s.requests.empty() || s.script.has_value())) {
        Fail(*t.protocol, "a grpc target runs gRPC scenarios only: scenario " + Quote(s.name) +
                              " makes HTTP requests (give it grpc, or run it against another target)");
        return;
      }
      if (!grpc_target && s.grpc.has_value()) {
        Fail(*s.grpc, "needs every target to have protocol grpc: target " + Quote(t.name) + " is " +
                          std::string(ToString(EffectiveProtocol(t))));
        return;
      }
    }
  }

  void CheckProtocol(const BenchmarkRunSpec& spec, const Target& t) {
    const Protocol protocol = *t.protocol;
    if (protocol == Protocol::kH2 && t.scheme != Scheme::kHttps) {
      Fail(*t.protocol, "h2 is HTTP/2 over TLS and needs scheme https (HTTP/2 without TLS is h2c)");
    }
    if (protocol == Protocol::kH2c && t.scheme != Scheme::kHttp) {
      Fail(*t.protocol, "h2c is HTTP/2 without TLS and needs scheme http (HTTP/2 over TLS is h2)");
    }
    if (!IsHttp2(protocol)) return;
    const std::string p(ToString(protocol));
    if (protocol == Protocol::kGrpc && spec.load.pipeline > 1) {
      Fail(*t.protocol, "grpc cannot be used with load.pipeline > 1 (gRPC calls are HTTP/2 streams: use load.streams)");
      return;
    }
    if (spec.load.pipeline > 1)
      Fail(*t.protocol, p + " cannot be used with load.pipeline > 1 (HTTP/2 uses load.streams)");
    if (!spec.load.keep_alive) Fail(*t.protocol, p + " cannot be used with load.keepAlive false");
  }

  void CheckLoad(const Load& l) {
    AtLeastOne(l.threads, kMaxThreads);
    if (l.connections.empty()) Fail(l.connections, "must not be empty");
    CheckLevels(l.connections, l);
    Positive(l.duration);
    NotNegative(l.warmup);
    Positive(l.timeout);
    AtLeastOne(l.pipeline, kMaxPipeline);
    if (l.rate > 0 && l.pipeline > 1) Fail(l.pipeline, std::string(kPipelineWithRate));
    if (l.streams) {
      Range(*l.streams, int32_t{1}, kMaxStreams);
      bool h2 = false;
      for (const Target& t : run_.spec.targets) h2 = h2 || IsHttp2(EffectiveProtocol(t));
      if (!h2) Fail(*l.streams, "only for targets with protocol h2, h2c or grpc");
    }
    if (l.rate < 0) Fail(l.rate, "must not be negative");
    AtLeastOne(l.agents, kMaxAgents);
  }

  void CheckPlacement(const Placement& p) {
    CheckNodePlacement(p.target);
    CheckNodePlacement(p.agents);
    if (!p.agents.node_name.empty() && p.agents.node_name == p.target.node_name) {
      Fail(p.agents.node_name, "must differ from the target's node: agents never share the target's node");
    }
  }

  void CheckNodePlacement(const NodePlacement& p) {
    if (!p.node_name.empty()) {
      if (std::string why = CheckDnsSubdomain(p.node_name); !why.empty()) Fail(p.node_name, why);
    }
    CheckLabels(p.node_selector, true);
    for (const Toleration& t : p.tolerations) {
      if (t.operator_ != "" && t.operator_ != "Exists" && t.operator_ != "Equal") {
        Fail(t.operator_, "must be Exists or Equal, got " + Quote(t.operator_));
      }
      if (t.key.empty() && t.operator_ != "Exists") {
        Fail(t.key, "required unless the operator is Exists");
      } else if (!t.key.empty()) {
        if (std::string why = CheckQualifiedName(t.key); !why.empty()) Fail(t.key, why);
      }
      if (t.operator_ == "Exists" && !t.value.empty()) Fail(t.value, "must be empty when the operator is Exists");
      if (t.effect != "" && t.effect != "NoSchedule" && t.effect != "PreferNoSchedule" && t.effect != "NoExecute") {
        Fail(t.effect, "must be NoSchedule, PreferNoSchedule or NoExecute, got " + Quote(t.effect));
      }
      if (t.toleration_seconds.has_value() && t.effect != "NoExecute") {
        Fail(*t.toleration_seconds, "only applies with the effect NoExecute");
      }
    }
  }

  // spec.profile: each selector must name cells that exist, so that a typo
  // is not a run that silently profiles nothing.
  void CheckCalibrationSpec(const Calibration& c) {
    if (options_.platform == Platform::kKubernetes) {
      return Fail(c,
                  "only for fairbench run on one machine (the delay server runs as a process beside it), not on "
                  "Kubernetes");
    }
    if (auto problem = CheckCalibration(c.stall, c.duration, c.rate)) {
      if (problem->field == "stall") return Fail(c.stall, problem->message);
      if (problem->field == "duration") return Fail(c.duration, problem->message);
      return Fail(c.rate, problem->message);
    }
  }

  void CheckProfile(const BenchmarkRunSpec& spec, const Profile& p) {
    Range(p.frequency, 1, kMaxProfileFrequency);
    if (p.all && !p.cells.empty()) {
      Fail(p.cells, "cannot be used together with all");
    } else if (!p.all && p.cells.empty()) {
      Fail(p, "needs all: true or cells (the cells to profile)");
    }
    for (const ProfileCell& c : p.cells) CheckProfileCell(spec, c);
  }

  template <typename T>
  static std::string NotFound(std::string_view what, const std::string& name, const std::vector<T>& items,
                              std::string_view field) {
    std::vector<std::string_view> names;
    std::string known;
    for (const T& item : items) {
      names.push_back(item.name);
      known += (known.empty() ? "" : ", ") + item.name;
    }
    std::string msg = "no " + std::string(what) + " " + Quote(name) + " in spec." + std::string(field);
    const std::string_view near = ClosestMatch(name, names);
    return msg +
           (near.empty() ? " (" + std::string(field) + ": " + known + ")" : " (did you mean " + Quote(near) + "?)");
  }

  void CheckProfileCell(const BenchmarkRunSpec& spec, const ProfileCell& c) {
    if (c.target.empty() && c.scenario.empty() && c.connections == 0) {
      return Fail(c, "must name a target, a scenario or connections (or use profile.all)");
    }
    const auto named = [](const auto& items, const std::string& name) {
      return std::any_of(items.begin(), items.end(), [&](const auto& i) { return i.name == name; });
    };
    if (!c.target.empty() && !named(spec.targets, c.target)) {
      return Fail(c.target, NotFound("target", c.target, spec.targets, "targets"));
    }
    if (!c.scenario.empty() && !named(spec.scenarios, c.scenario)) {
      return Fail(c.scenario, NotFound("scenario", c.scenario, spec.scenarios, "scenarios"));
    }
    if (c.connections < 0) return Fail(c.connections, "must be ≥ 1");
    if (c.connections == 0) return;
    std::vector<int64_t> levels;  // of the scenarios the selector names
    for (const Scenario& s : spec.scenarios) {
      if (!c.scenario.empty() && s.name != c.scenario) continue;
      for (int64_t level : s.connections.empty() ? spec.load.connections : s.connections) {
        if (std::find(levels.begin(), levels.end(), level) == levels.end()) levels.push_back(level);
      }
    }
    if (std::find(levels.begin(), levels.end(), c.connections) != levels.end()) return;
    std::string known;
    for (int64_t level : levels) known += (known.empty() ? "" : ", ") + std::to_string(level);
    Fail(c.connections,
         "no cell runs at " + std::to_string(c.connections) + " connections" +
             (c.scenario.empty() ? " (levels in this run: " : " (scenario " + c.scenario + " runs at: ") + known + ")");
  }

  void CheckLocalPlacement(const LocalPlacement& l) {
    const CpuList shared = Intersection(l.target_cpus, l.agent_cpus);
    if (!shared.empty()) {
      Fail(l.agent_cpus, std::string(shared.cpus.size() == 1 ? "CPU " : "CPUs ") + FormatCpuList(shared) +
                             (shared.cpus.size() == 1 ? " is" : " are") +
                             " also in targetCpus; targets and agents never share a CPU");
    }
  }

  const BenchmarkRun& run_;
  FieldPaths paths_;
  ValidateOptions options_;
  Diagnostics out_;
};

}  // namespace

Diagnostics Validate(const BenchmarkRun& run, const ValidateOptions& options) { return Checker(run, options).Check(); }

std::vector<std::string> Warnings(const BenchmarkRunSpec& spec) {
  std::vector<std::string> out;
  for (size_t i = 0; i < spec.targets.size(); ++i) {
    const Target& t = spec.targets[i];
    if (t.resources.cpu && t.resources.cpu->millicores % 1000 != 0) {
      out.push_back(JoinIndex("spec.targets", i) + ".resources.cpu: " + FormatCpu(*t.resources.cpu) +
                    " is not a whole number of CPUs: target " + t.name +
                    " gets a share of cores rather than cores of its own (a CPU quota throttles it, and Kubernetes' "
                    "static CPU manager pins only whole CPUs), which blurs its numbers; whole CPUs are recommended");
    }
  }
  return out;
}

std::optional<CalibrationProblem> CheckCalibration(Duration stall, Duration duration, int64_t rate) {
  if (stall < std::chrono::milliseconds(50) || stall > std::chrono::seconds(10)) {
    return CalibrationProblem{"stall",
                              "between 50ms and 10s (shorter, the server's own delay and the machine's "
                              "noise blur it)"};
  }
  if (duration < 2 * stall + std::chrono::seconds(1)) {
    return CalibrationProblem{"duration",
                              "at least twice the stall plus 1s, so that the stall lies wholly inside "
                              "the measurement"};
  }
  if (rate < 10 || rate > 100000) return CalibrationProblem{"rate", "between 10 and 100000 requests/s"};
  if (static_cast<double>(rate) * std::chrono::duration<double>(stall).count() < 40) {
    return CalibrationProblem{"rate",
                              "at least 40 requests due during the stall (rate × stall), or its percentiles "
                              "mean little"};
  }
  return std::nullopt;
}

}  // namespace fairbench::api
