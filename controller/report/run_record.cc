#include "controller/report/run_record.h"

#include <algorithm>
#include <array>
#include <functional>
#include <limits>
#include <type_traits>
#include <utility>

#include "api/codec.h"
#include "api/cpu_list.h"
#include "api/diagnostics.h"
#include "api/json_text.h"
#include "common/base64.h"
#include "common/histogram.h"

namespace fairbench::report {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

constexpr auto kFlagNames = std::to_array<std::pair<CellFlag, const char*>>({
    {CellFlag::kGeneratorSaturated, "GeneratorSaturated"},
    {CellFlag::kLittlesLawMismatch, "LittlesLawMismatch"},
    {CellFlag::kFewerConnections, "FewerConnections"},
    {CellFlag::kSnapshotGap, "SnapshotGap"},
    {CellFlag::kSparseUsage, "SparseUsage"},
    {CellFlag::kSharedCpus, "SharedCpus"},
    {CellFlag::kErrors, "Errors"},
    {CellFlag::kRateNotAchieved, "RateNotAchieved"},
    {CellFlag::kContentLengthMismatch, "ContentLengthMismatch"},
    {CellFlag::kDateMissing, "DateMissing"},
    {CellFlag::kDateFrozen, "DateFrozen"},
    {CellFlag::kAnswersUnsampled, "AnswersUnsampled"},
});

constexpr const char* kHistogramEncoding = "HdrHistogram V2 compressed, base64; values in microseconds";

// The status classes of a timeline point, as wrk_summary's JSON names them:
// index 0 is "anything outside 100..599".
constexpr std::array<const char*, 6> kStatusClassNames{"other", "1xx", "2xx", "3xx", "4xx", "5xx"};

// ---------------------------------------------------------------- writing

OrderedJson ErrorsJson(const ErrorCounts& e) {
  return OrderedJson{{"connect", e.connect},        {"read", e.read},     {"write", e.write},
                     {"timeout", e.timeout},        {"status", e.status}, {"portExhaustion", e.port_exhaustion},
                     {"handshake", e.handshake},    {"goaway", e.goaway}, {"rstStream", e.rst_stream},
                     {"h2Protocol", e.h2_protocol}, {"script", e.script}};
}

OrderedJson TimelineJson(const TimelinePoint& p) {
  OrderedJson classes = OrderedJson::object();
  for (size_t i = 0; i < kStatusClassNames.size(); ++i) classes[kStatusClassNames[i]] = p.counters.status_classes[i];
  return OrderedJson{
      {"sequence", p.sequence},
      {"phase", PhaseName(p.phase)},
      {"start", p.start_s},
      {"end", p.end_s},
      {"requests", p.counters.requests},
      {"bytesRead", p.counters.bytes_read},
      {"bytesWritten", p.counters.bytes_written},
      {"errors", ErrorsJson(p.counters.errors)},
      {"statusClasses", classes},
      {"connects", p.counters.connects},
      {"connectTimeUs", p.counters.connect_time_us},
      {"closesByServer", p.counters.closes_by_server},
      {"tlsHandshakes", p.counters.tls_handshakes},
      {"tlsHandshakeTimeUs", p.counters.tls_handshake_time_us},
      {"tlsResumed", p.counters.tls_resumed},
      {"latencyUs", {{"mean", p.mean_us}, {"p50", p.p50_us}, {"p90", p.p90_us}, {"p99", p.p99_us}, {"max", p.max_us}}},
      {"connectionsOpen", p.connections_open},
      {"agentCpuSeconds", p.cpu_seconds},
  };
}

OrderedJson CellJson(const CellRecord& c) {
  OrderedJson j;
  j["result"] = api::ToJson(c.result);
  j["agents"] = c.agents;
  j["connectionsPeak"] = c.connections_peak;
  j["drained"] = c.drained;
  j["abandoned"] = c.abandoned;
  j["measureSeconds"] = c.measure_seconds;
  if (c.idle) {
    const IdleReport& i = *c.idle;
    j["idleWait"] = OrderedJson{{"mode", IdleWaitName(i.mode)}, {"naps", i.naps},
                                {"napHits", i.nap_hits},        {"napSeconds", i.nap_seconds},
                                {"maxNapNs", i.max_nap_ns},     {"polls", i.polls},
                                {"emptyPolls", i.empty_polls},  {"spinSeconds", i.spin_seconds}};
  }
  j["littlesLawConnections"] = c.littles_law_connections;
  j["littlesLawInFlight"] = c.littles_law_in_flight;
  j["usageSamples"] = c.usage_samples;
  j["usageSpanSeconds"] = c.usage_span_seconds;
  OrderedJson flags = OrderedJson::array();
  for (CellFlag f : c.flags) flags.push_back(FlagName(f));
  j["flags"] = flags;
  j["latencyCorrected"] = c.latency_corrected;
  j["latencyHistogram"] = c.latency_histogram;
  j["uncorrectedHistogram"] = c.uncorrected_histogram;
  OrderedJson timeline = OrderedJson::array();
  for (const TimelinePoint& p : c.timeline) timeline.push_back(TimelineJson(p));
  j["timeline"] = timeline;
  j["wrkText"] = c.wrk_text;
  if (c.capacity) {
    OrderedJson trials = OrderedJson::array();
    for (const CapacityTrial& t : c.capacity->trials) {
      trials.push_back(OrderedJson{{"offered", t.offered},
                                   {"achieved", t.achieved},
                                   {"p50Us", t.p50},
                                   {"p90Us", t.p90},
                                   {"p99Us", t.p99},
                                   {"p999Us", t.p999},
                                   {"errorRate", t.error_rate},
                                   {"pass", t.pass}});
    }
    j["capacity"] = OrderedJson{{"objective", c.capacity->objective},
                                {"rate", c.capacity->rate},
                                {"bounded", c.capacity->bounded},
                                {"errorsBeganAt", c.capacity->errors_began_at},
                                {"trials", trials}};
  }
  if (c.profile) j["profile"] = ToJson(*c.profile);
  if (!c.script_output.empty()) {
    OrderedJson outputs = OrderedJson::array();
    for (const ScriptOutput& o : c.script_output) outputs.push_back(OrderedJson{{"agent", o.agent}, {"text", o.text}});
    j["scriptOutput"] = std::move(outputs);
  }
  return j;
}

OrderedJson EnvironmentJson(const Environment& e) {
  return OrderedJson{
      {"hostname", e.hostname},
      {"kernel", e.kernel},
      {"cpuModel", e.cpu_model},
      {"cpus", e.cpus},
      {"memoryBytes", e.memory_bytes},
      {"platform", e.platform},
      {"fairbenchVersion", e.fairbench_version},
      {"targetCpus", api::FormatCpuList(api::CpuList{e.target_cpus})},
      {"agentCpus", api::FormatCpuList(api::CpuList{e.agent_cpus})},
      {"notes", e.notes},
  };
}

// ---------------------------------------------------------------- reading

std::string Field(const std::string& path, std::string_view name) {
  return path.empty() ? std::string(name) : path + "." + std::string(name);
}
std::string Index(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

std::string Describe(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::object: return "an object";
    case Json::value_t::array: return "a list";
    case Json::value_t::string: return api::Quote(j.get<std::string>());
    default: return j.dump();
  }
}

// Reads the members of one JSON object into typed fields, recording every
// problem under its field path; unknown members are problems too.
class ObjectReader {
 public:
  ObjectReader(const Json& object, std::string path, api::Diagnostics& diagnostics)
      : object_(object), path_(std::move(path)), diagnostics_(diagnostics) {}
  ObjectReader(const ObjectReader&) = delete;
  ObjectReader& operator=(const ObjectReader&) = delete;
  ~ObjectReader() {
    if (!object_.is_object()) return;
    for (auto it = object_.begin(); it != object_.end(); ++it) {
      bool known = false;
      for (const std::string& k : known_) known = known || k == it.key();
      if (!known) diagnostics_.Add(Field(path_, it.key()), "unknown field");
    }
  }

  // False (with a diagnostic) when the value is not an object.
  bool Valid() {
    if (object_.is_object()) return true;
    diagnostics_.Add(path_, "must be an object, got " + Describe(object_));
    return false;
  }

  // The member, or nullptr (with a diagnostic when `required`).
  const Json* Find(std::string_view name, bool required = false) {
    known_.emplace_back(name);
    if (!object_.is_object()) return nullptr;
    const auto it = object_.find(std::string(name));
    if (it == object_.end()) {
      if (required) diagnostics_.Add(Field(path_, name), "required");
      return nullptr;
    }
    return &*it;
  }

  std::string PathOf(std::string_view name) const { return Field(path_, name); }

  template <typename T>
  void Read(std::string_view name, T& out) {
    const Json* j = Find(name);
    if (j == nullptr) return;
    const std::string path = PathOf(name);
    if constexpr (std::is_same_v<T, bool>) {
      if (!j->is_boolean()) return Error(path, "must be true or false", *j);
      out = j->get<bool>();
    } else if constexpr (std::is_integral_v<T>) {
      if (!j->is_number_integer()) return Error(path, "must be an integer", *j);
      if constexpr (std::is_unsigned_v<T>) {
        if (!j->is_number_unsigned()) return Error(path, "must not be negative", *j);
        const auto v = j->get<uint64_t>();
        if (v > std::numeric_limits<T>::max()) return Error(path, "is too large", *j);
        out = static_cast<T>(v);
      } else {
        const bool huge =
            j->is_number_unsigned() && j->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
        const int64_t v = huge ? 0 : j->get<int64_t>();
        if (huge || v > std::numeric_limits<T>::max() || v < std::numeric_limits<T>::min()) {
          return Error(path, "is out of range", *j);
        }
        out = static_cast<T>(v);
      }
    } else if constexpr (std::is_floating_point_v<T>) {
      if (!j->is_number()) return Error(path, "must be a number", *j);
      out = j->get<T>();
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (!j->is_string()) return Error(path, "must be a string", *j);
      out = j->get<std::string>();
    } else {
      static_assert(std::is_same_v<T, std::vector<std::string>>, "no reader for this type");
      if (!j->is_array()) return Error(path, "must be a list of strings", *j);
      out.clear();
      for (size_t i = 0; i < j->size(); ++i) {
        if (!(*j)[i].is_string()) {
          Error(Index(path, i), "must be a string", (*j)[i]);
          continue;
        }
        out.push_back((*j)[i].get<std::string>());
      }
    }
  }

  void ReadCpuList(std::string_view name, std::vector<int>& out) {
    std::string text;
    Read(name, text);
    Result<api::CpuList> list = api::ParseCpuList(text);
    if (!list.ok()) return diagnostics_.Add(PathOf(name), list.status().message());
    out = list->cpus;
  }

  // A base64 HdrHistogram: kept as text, checked that it decodes.
  void ReadHistogram(std::string_view name, std::string& out) {
    Read(name, out);
    if (out.empty()) return;
    Result<std::string> bytes = Base64Decode(out);
    if (!bytes.ok()) return diagnostics_.Add(PathOf(name), "is not base64: " + bytes.status().message());
    Result<Histogram> h = Histogram::DecodeCompressed(*bytes);
    if (!h.ok()) diagnostics_.Add(PathOf(name), "is not an HdrHistogram: " + h.status().message());
  }

  void Error(const std::string& path, const std::string& what, const Json& got) {
    diagnostics_.Add(path, what + ", got " + Describe(got));
  }

 private:
  const Json& object_;
  std::string path_;
  api::Diagnostics& diagnostics_;
  std::vector<std::string> known_;
};

void ReadErrors(const Json& j, const std::string& path, api::Diagnostics& d, ErrorCounts& e) {
  ObjectReader r(j, path, d);
  if (!r.Valid()) return;
  r.Read("connect", e.connect);
  r.Read("read", e.read);
  r.Read("write", e.write);
  r.Read("timeout", e.timeout);
  r.Read("status", e.status);
  r.Read("portExhaustion", e.port_exhaustion);
  r.Read("handshake", e.handshake);
  r.Read("goaway", e.goaway);
  r.Read("rstStream", e.rst_stream);
  r.Read("h2Protocol", e.h2_protocol);
  r.Read("script", e.script);
}

void ReadTimelinePoint(const Json& j, const std::string& path, api::Diagnostics& d, TimelinePoint& p) {
  ObjectReader r(j, path, d);
  if (!r.Valid()) return;
  r.Read("sequence", p.sequence);
  std::string phase = PhaseName(p.phase);
  r.Read("phase", phase);
  if (phase == PhaseName(Phase::kWarmup)) {
    p.phase = Phase::kWarmup;
  } else if (phase == PhaseName(Phase::kMeasure)) {
    p.phase = Phase::kMeasure;
  } else {
    d.Add(r.PathOf("phase"), "must be warmup or measure, got " + api::Quote(phase));
  }
  r.Read("start", p.start_s);
  r.Read("end", p.end_s);
  r.Read("requests", p.counters.requests);
  r.Read("bytesRead", p.counters.bytes_read);
  r.Read("bytesWritten", p.counters.bytes_written);
  if (const Json* e = r.Find("errors")) ReadErrors(*e, r.PathOf("errors"), d, p.counters.errors);
  if (const Json* c = r.Find("statusClasses")) {
    ObjectReader classes(*c, r.PathOf("statusClasses"), d);
    if (classes.Valid()) {
      for (size_t i = 0; i < kStatusClassNames.size(); ++i)
        classes.Read(kStatusClassNames[i], p.counters.status_classes[i]);
    }
  }
  r.Read("connects", p.counters.connects);
  r.Read("connectTimeUs", p.counters.connect_time_us);
  r.Read("closesByServer", p.counters.closes_by_server);
  r.Read("tlsHandshakes", p.counters.tls_handshakes);
  r.Read("tlsHandshakeTimeUs", p.counters.tls_handshake_time_us);
  r.Read("tlsResumed", p.counters.tls_resumed);
  if (const Json* l = r.Find("latencyUs")) {
    ObjectReader lat(*l, r.PathOf("latencyUs"), d);
    if (lat.Valid()) {
      lat.Read("mean", p.mean_us);
      lat.Read("p50", p.p50_us);
      lat.Read("p90", p.p90_us);
      lat.Read("p99", p.p99_us);
      lat.Read("max", p.max_us);
    }
  }
  r.Read("connectionsOpen", p.connections_open);
  r.Read("agentCpuSeconds", p.cpu_seconds);
}

// Everything of a cell but its compact result, which the API codec decodes.
// Set only when "idleWait" is an object.
void ReadIdleWait(const Json& j, const std::string& path, api::Diagnostics& d, std::optional<IdleReport>& idle) {
  ObjectReader ir(j, path, d);
  if (!ir.Valid()) return;
  IdleReport& out = idle.emplace();
  std::string mode = "block";
  ir.Read("mode", mode);
  if (mode == "nap") {
    out.mode = IdleWait::kNap;
  } else if (mode == "poll") {
    out.mode = IdleWait::kPoll;
  } else if (mode != "block") {
    ir.Error(ir.PathOf("mode"), "must be block, nap or poll", j["mode"]);
  }
  ir.Read("naps", out.naps);
  ir.Read("napHits", out.nap_hits);
  ir.Read("napSeconds", out.nap_seconds);
  ir.Read("maxNapNs", out.max_nap_ns);
  ir.Read("polls", out.polls);
  ir.Read("emptyPolls", out.empty_polls);
  ir.Read("spinSeconds", out.spin_seconds);
}

// An unknown flag is reported (with the known ones) and left out.
void ReadFlags(ObjectReader& r, api::Diagnostics& d, std::vector<CellFlag>& out) {
  std::vector<std::string> flags;
  r.Read("flags", flags);
  for (size_t i = 0; i < flags.size(); ++i) {
    const std::optional<CellFlag> f = FlagFromName(flags[i]);
    if (!f) {
      std::string known;
      for (const auto& [flag, name] : kFlagNames) known += (known.empty() ? "" : ", ") + std::string(name);
      d.Add(Index(r.PathOf("flags"), i), "unknown flag " + api::Quote(flags[i]) + " (known: " + known + ")");
      continue;
    }
    out.push_back(*f);
  }
}

void ReadCapacityTrials(ObjectReader& cr, api::Diagnostics& d, std::vector<CapacityTrial>& out) {
  const Json* trials = cr.Find("trials");
  if (trials == nullptr) return;
  if (!trials->is_array()) return cr.Error(cr.PathOf("trials"), "must be a list", *trials);
  for (size_t i = 0; i < trials->size(); ++i) {
    ObjectReader tr((*trials)[i], Index(cr.PathOf("trials"), i), d);
    if (!tr.Valid()) continue;
    CapacityTrial t;
    tr.Read("offered", t.offered);
    tr.Read("achieved", t.achieved);
    tr.Read("p50Us", t.p50);
    tr.Read("p90Us", t.p90);
    tr.Read("p99Us", t.p99);
    tr.Read("p999Us", t.p999);
    tr.Read("errorRate", t.error_rate);
    tr.Read("pass", t.pass);
    out.push_back(t);
  }
}

// Set only when "capacity" is an object.
void ReadCapacity(const Json& j, const std::string& path, api::Diagnostics& d,
                  std::optional<CapacitySearch>& capacity) {
  ObjectReader cr(j, path, d);
  if (!cr.Valid()) return;
  CapacitySearch s;
  cr.Read("objective", s.objective);
  cr.Read("rate", s.rate);
  cr.Read("bounded", s.bounded);
  cr.Read("errorsBeganAt", s.errors_began_at);
  ReadCapacityTrials(cr, d, s.trials);
  capacity = std::move(s);
}

void ReadScriptOutputs(ObjectReader& r, api::Diagnostics& d, std::vector<ScriptOutput>& out) {
  const Json* outputs = r.Find("scriptOutput");
  if (outputs == nullptr) return;
  if (!outputs->is_array()) return r.Error(r.PathOf("scriptOutput"), "must be a list", *outputs);
  for (size_t i = 0; i < outputs->size(); ++i) {
    ObjectReader o((*outputs)[i], Index(r.PathOf("scriptOutput"), i), d);
    if (!o.Valid()) continue;
    ScriptOutput script;
    o.Read("agent", script.agent);
    o.Read("text", script.text);
    out.push_back(std::move(script));
  }
}

void ReadCellExtras(const Json& j, const std::string& path, api::Diagnostics& d, CellRecord& c) {
  ObjectReader r(j, path, d);
  if (!r.Valid()) return;
  r.Find("result", /*required=*/true);
  r.Read("agents", c.agents);
  r.Read("connectionsPeak", c.connections_peak);
  r.Read("drained", c.drained);
  r.Read("abandoned", c.abandoned);
  r.Read("measureSeconds", c.measure_seconds);
  if (const Json* idle = r.Find("idleWait")) ReadIdleWait(*idle, r.PathOf("idleWait"), d, c.idle);
  r.Read("littlesLawConnections", c.littles_law_connections);
  r.Read("littlesLawInFlight", c.littles_law_in_flight);
  r.Read("usageSamples", c.usage_samples);
  r.Read("usageSpanSeconds", c.usage_span_seconds);
  ReadFlags(r, d, c.flags);
  r.Read("latencyCorrected", c.latency_corrected);
  r.ReadHistogram("latencyHistogram", c.latency_histogram);
  r.ReadHistogram("uncorrectedHistogram", c.uncorrected_histogram);
  if (const Json* t = r.Find("timeline")) {
    if (!t->is_array()) {
      r.Error(r.PathOf("timeline"), "must be a list", *t);
    } else {
      c.timeline.resize(t->size());
      for (size_t i = 0; i < t->size(); ++i)
        ReadTimelinePoint((*t)[i], Index(r.PathOf("timeline"), i), d, c.timeline[i]);
    }
  }
  r.Read("wrkText", c.wrk_text);
  if (const Json* cap = r.Find("capacity")) ReadCapacity(*cap, r.PathOf("capacity"), d, c.capacity);
  if (const Json* p = r.Find("profile")) ReadProfile(*p, r.PathOf("profile"), d, c.profile.emplace());
  ReadScriptOutputs(r, d, c.script_output);
}

void ReadSchedule(const Json& j, const std::string& path, api::Diagnostics& d, Schedule& s) {
  ObjectReader r(j, path, d);
  if (!r.Valid()) return;
  r.Read("order", s.order);
  if (s.order != "Sequential" && s.order != "Interleaved") {
    d.Add(r.PathOf("order"), "must be \"Sequential\" or \"Interleaved\", got " + api::Quote(s.order));
  }
  r.Read("seed", s.seed);
  const Json* rounds = r.Find("rounds");
  if (rounds == nullptr) return;
  if (!rounds->is_array()) return r.Error(r.PathOf("rounds"), "must be a list of lists of target names", *rounds);
  for (size_t i = 0; i < rounds->size(); ++i) {
    const Json& round = (*rounds)[i];
    std::vector<std::string> names;
    bool ok = round.is_array();
    for (size_t k = 0; ok && k < round.size(); ++k) {
      ok = round[k].is_string();
      if (ok) names.push_back(round[k].get<std::string>());
    }
    if (!ok) {
      d.Add(Index(r.PathOf("rounds"), i), "must be a list of target names");
      continue;
    }
    s.rounds.push_back(std::move(names));
  }
}

void ReadCalibration(const Json& j, const std::string& path, api::Diagnostics& d, CalibrationRecord& c) {
  ObjectReader r(j, path, d);
  if (!r.Valid()) return;
  r.Read("passed", c.passed);
  r.Read("host", c.host);
  r.Read("stallMs", c.stall_ms);
  r.Read("delayMs", c.delay_ms);
  r.Read("rate", c.rate);
  r.Read("closedConnections", c.closed_connections);
  r.Read("uncorrectedWouldPass", c.uncorrected_would_pass);
  r.Read("error", c.error);
  const Json* checks = r.Find("checks");
  if (checks == nullptr) return;
  if (!checks->is_array()) return r.Error(r.PathOf("checks"), "must be a list", *checks);
  for (size_t i = 0; i < checks->size(); ++i) {
    ObjectReader k((*checks)[i], Index(r.PathOf("checks"), i), d);
    if (!k.Valid()) continue;
    CalibrationCheck check;
    k.Read("cell", check.cell);
    k.Read("name", check.name);
    k.Read("expected", check.expected);
    k.Read("unit", check.unit);
    k.Read("measured", check.measured);
    k.Read("low", check.low);
    k.Read("high", check.high);
    k.Read("error", check.error);
    k.Read("passed", check.passed);
    c.checks.push_back(std::move(check));
  }
}

void ReadEnvironment(const Json& j, const std::string& path, api::Diagnostics& d, Environment& e) {
  ObjectReader r(j, path, d);
  if (!r.Valid()) return;
  r.Read("hostname", e.hostname);
  r.Read("kernel", e.kernel);
  r.Read("cpuModel", e.cpu_model);
  r.Read("cpus", e.cpus);
  r.Read("memoryBytes", e.memory_bytes);
  r.Read("platform", e.platform);
  r.Read("fairbenchVersion", e.fairbench_version);
  r.ReadCpuList("targetCpus", e.target_cpus);
  r.ReadCpuList("agentCpus", e.agent_cpus);
  r.Read("notes", e.notes);
}

// The run as the API codec reads it, with the cells' results put back into
// status.results so that one DecodeRun checks them all.
api::Node RunWithResults(const api::Node& run, const Json& cells) {
  api::Node results = api::Node::Sequence();
  if (cells.is_array()) {
    for (const Json& cell : cells) {
      const auto it = cell.is_object() ? cell.find("result") : cell.end();
      results.Append(cell.is_object() && it != cell.end() ? api::NodeFromJson(*it) : api::Node::Map());
    }
  }
  if (!run.is_map()) return run;
  api::Node out = api::Node::Map();
  bool has_status = false;
  for (const api::Node::Entry& e : run.entries()) {
    if (e.key != "status" || !e.value.is_map()) {
      out.Add(e.key, e.value, e.key_mark);
      continue;
    }
    has_status = true;
    api::Node status = api::Node::Map();
    for (const api::Node::Entry& s : e.value.entries()) status.Add(s.key, s.value, s.key_mark);
    status.Add("results", std::move(results));
    out.Add(e.key, std::move(status), e.key_mark);
  }
  if (!has_status) {
    api::Node status = api::Node::Map();
    status.Add("results", std::move(results));
    out.Add("status", std::move(status));
  }
  return out;
}

// "status.results[3].latency" → "cells[3].result.latency"; anything else
// belongs to the run.
std::string RunPathToFilePath(const std::string& path) {
  constexpr std::string_view kResults = "status.results[";
  if (path.rfind(kResults, 0) == 0) {
    const size_t close = path.find(']');
    return "cells[" + path.substr(kResults.size(), close - kResults.size()) + "].result" + path.substr(close + 1);
  }
  return path.empty() ? "run" : "run." + path;
}

}  // namespace

const char* FlagName(CellFlag flag) {
  for (const auto& [f, name] : kFlagNames) {
    if (f == flag) return name;
  }
  return "Unknown";
}

std::optional<CellFlag> FlagFromName(std::string_view name) {
  for (const auto& [f, n] : kFlagNames) {
    if (name == n) return f;
  }
  return std::nullopt;
}

nlohmann::ordered_json ToJson(const RunRecord& record) {
  OrderedJson j;
  j["apiVersion"] = api::kApiVersion;
  j["kind"] = kResultsKind;
  j["histogramEncoding"] = kHistogramEncoding;
  api::BenchmarkRun run = record.run;
  run.status.results.clear();  // they are the cells' results, written once below
  j["run"] = api::ToJson(run);
  j["environment"] = EnvironmentJson(record.environment);
  if (!record.schedule.order.empty()) {
    j["schedule"] = OrderedJson{
        {"order", record.schedule.order}, {"seed", record.schedule.seed}, {"rounds", record.schedule.rounds}};
  }
  if (record.calibration) {
    const CalibrationRecord& c = *record.calibration;
    OrderedJson checks = OrderedJson::array();
    for (const CalibrationCheck& k : c.checks) {
      checks.push_back(OrderedJson{{"cell", k.cell},
                                   {"name", k.name},
                                   {"expected", k.expected},
                                   {"unit", k.unit},
                                   {"measured", k.measured},
                                   {"low", k.low},
                                   {"high", k.high},
                                   {"error", k.error},
                                   {"passed", k.passed}});
    }
    OrderedJson cj{{"passed", c.passed},
                   {"host", c.host},
                   {"stallMs", c.stall_ms},
                   {"delayMs", c.delay_ms},
                   {"rate", c.rate},
                   {"closedConnections", c.closed_connections},
                   {"uncorrectedWouldPass", c.uncorrected_would_pass},
                   {"checks", checks}};
    if (!c.error.empty()) cj["error"] = c.error;
    j["calibration"] = std::move(cj);
  }
  OrderedJson cells = OrderedJson::array();
  for (const CellRecord& c : record.cells) cells.push_back(CellJson(c));
  j["cells"] = cells;
  return j;
}

void WriteJsonText(const RunRecord& record, const std::function<void(std::string_view)>& sink) {
  if (record.cells.empty()) {
    sink(ToJson(record).dump(1) + "\n");
    return;
  }
  {
    RunRecord head;
    head.run = record.run;
    head.environment = record.environment;
    head.schedule = record.schedule;
    head.calibration = record.calibration;
    // "cells" is the last member: the head's text ends with its empty array.
    std::string text = ToJson(head).dump(1);
    constexpr std::string_view kEmptyTail = "\"cells\": []\n}";
    text.resize(text.size() - kEmptyTail.size() + kEmptyTail.find('['));
    text += "[\n";
    sink(text);
  }
  std::string piece;
  for (size_t i = 0; i < record.cells.size(); ++i) {
    // An element of the top-level "cells" sits two levels deep: every line
    // of its own dump(1) is indented by two more spaces.
    const std::string cell = CellJson(record.cells[i]).dump(1);
    piece.clear();
    piece.reserve(cell.size() + cell.size() / 8 + 4);
    size_t at = 0;
    while (at < cell.size()) {
      const size_t end = std::min(cell.find('\n', at), cell.size());
      piece.append("  ").append(cell, at, end - at);
      at = end + 1;
      if (at < cell.size()) piece += '\n';
    }
    piece += i + 1 < record.cells.size() ? ",\n" : "\n";
    sink(piece);
  }
  sink(" ]\n}\n");
}

std::string ToJsonText(const RunRecord& record) {
  std::string text;
  WriteJsonText(record, [&text](std::string_view piece) { text.append(piece); });
  return text;
}

namespace {

Result<RunRecord> Decode(const nlohmann::json& json, std::string_view source) {
  if (!json.is_object()) {
    return Status::InvalidArgument(std::string(source) + ": expected an object with apiVersion " +
                                   api::Quote(api::kApiVersion) + " and kind " + api::Quote(kResultsKind) + ", got " +
                                   Describe(json));
  }
  api::Diagnostics d;
  RunRecord record;
  {
    ObjectReader top(json, "", d);
    std::string api_version, kind, encoding;
    top.Read("apiVersion", api_version);
    top.Read("kind", kind);
    top.Read("histogramEncoding", encoding);
    if (api_version != api::kApiVersion) {
      d.Add("apiVersion", "must be " + api::Quote(api::kApiVersion) + ", got " + api::Quote(api_version));
    }
    if (kind != kResultsKind) d.Add("kind", "must be " + api::Quote(kResultsKind) + ", got " + api::Quote(kind));
    const Json* run = top.Find("run", /*required=*/true);
    const Json* environment = top.Find("environment");
    const Json* cells = top.Find("cells", /*required=*/true);
    if (environment != nullptr) ReadEnvironment(*environment, "environment", d, record.environment);
    if (const Json* schedule = top.Find("schedule")) ReadSchedule(*schedule, "schedule", d, record.schedule);
    if (const Json* calibration = top.Find("calibration")) {
      record.calibration.emplace();
      ReadCalibration(*calibration, "calibration", d, *record.calibration);
    }
    if (cells != nullptr && !cells->is_array()) top.Error("cells", "must be a list", *cells);

    if (run != nullptr) {
      const api::Node run_node = api::NodeFromJson(*run);
      if (const api::Node* status = run_node.Find("status"); status != nullptr && status->Find("results") != nullptr) {
        d.Add("run.status.results", "must not be set: each cell's result is written under cells[].result");
      } else {
        const api::Decoded decoded = api::DecodeRun(RunWithResults(run_node, cells ? *cells : Json::array()));
        for (const api::Diagnostic& diag : decoded.diagnostics.items()) {
          d.Add(RunPathToFilePath(diag.path), diag.message);
        }
        record.run = decoded.run;
      }
    }
    if (cells != nullptr && cells->is_array()) {
      record.cells.resize(cells->size());
      for (size_t i = 0; i < cells->size(); ++i) {
        ReadCellExtras((*cells)[i], Index("cells", i), d, record.cells[i]);
        if (i < record.run.status.results.size()) record.cells[i].result = record.run.status.results[i];
      }
    }
  }  // the readers report unknown fields as they go out of scope
  if (!d.empty()) return d.ToStatus(source);
  return record;
}

}  // namespace

Result<RunRecord> RunRecordFromJson(const nlohmann::json& json) { return Decode(json, "results.json"); }

Result<RunRecord> RunRecordFromJsonText(std::string_view text, std::string_view source) {
  Json json;
  try {
    json = Json::parse(text);
  } catch (const Json::exception&) {
    // Parse again through the API's parser for its "SOURCE:LINE:COL" message.
    Result<api::Node> node = api::ParseJson(text, source);
    return Status::InvalidArgument(node.ok() ? std::string(source) + ": invalid JSON" : node.status().message());
  }
  return Decode(json, source);
}

}  // namespace fairbench::report
