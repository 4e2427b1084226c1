// Decoding (defaults, types, unknown fields) and encoding (canonical text,
// round trips) of whole runs.
#include "api/codec.h"

#include <gtest/gtest.h>

#include "api/cells.h"
#include "api/json_text.h"
#include "api/loader.h"
#include "api/yaml_text.h"

namespace fairbench::api {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// A valid run with `spec_lines` (indented under spec) appended; the
// targets and scenarios lines may be replaced.
std::string Doc(const std::string& spec_lines = "", const std::string& targets = "  targets: [{name: a, image: img}]\n",
                const std::string& scenarios = "  scenarios: [{name: s, request: {path: /}}]\n") {
  return "apiVersion: fairbench.dev/v1alpha1\n"
         "kind: BenchmarkRun\n"
         "metadata: {name: t}\n"
         "spec:\n" +
         targets + scenarios + spec_lines;
}

Decoded DecodeYaml(const std::string& text, UnknownFields unknown = UnknownFields::kReject) {
  Result<Node> node = ParseYaml(text, "run.yaml");
  EXPECT_TRUE(node.ok()) << node.status().ToString();
  return DecodeRun(node.ok() ? *node : Node(), DecodeOptions{unknown});
}

// What ParseRun says about a YAML text: "" when it loads.
std::string Errors(const std::string& text, UnknownFields unknown = UnknownFields::kReject) {
  ParseOptions opts;
  opts.source = "run.yaml";
  opts.unknown_fields = unknown;
  Result<BenchmarkRun> run = ParseRun(text, opts);
  return run.ok() ? "" : run.status().message();
}

TEST(CodecTest, AppliesDefaults) {
  Decoded d = DecodeYaml(Doc());
  ASSERT_TRUE(d.diagnostics.empty()) << d.diagnostics.Format("");
  const BenchmarkRun& run = d.run;
  EXPECT_EQ(run.api_version, "fairbench.dev/v1alpha1");
  EXPECT_EQ(run.kind, "BenchmarkRun");
  const Target& t = run.spec.targets[0];
  EXPECT_EQ(t.port, 8080);
  EXPECT_EQ(t.nofile, 65536);
  EXPECT_FALSE(t.resources.cpu.has_value());
  EXPECT_FALSE(t.local.has_value());
  const Scenario& s = run.spec.scenarios[0];
  EXPECT_EQ(s.request->method, "GET");
  EXPECT_EQ(s.expect.status, 200);
  EXPECT_TRUE(s.connections.empty());
  EXPECT_FALSE(s.duration.has_value());
  const Load& l = run.spec.load;
  EXPECT_EQ(l.threads, 4);
  EXPECT_EQ(l.connections, (std::vector<int64_t>{100}));
  EXPECT_EQ(l.duration, seconds(30));
  EXPECT_EQ(l.warmup, seconds(5));
  EXPECT_EQ(l.timeout, seconds(2));
  EXPECT_TRUE(l.keep_alive);
  EXPECT_EQ(l.pipeline, 1);
  EXPECT_EQ(l.rate, 0);
  EXPECT_EQ(l.agents, 1);
  EXPECT_EQ(run.spec.repetitions, 1);
  EXPECT_EQ(run.spec.cooldown, seconds(10));
  EXPECT_TRUE(run.spec.local.target_cpus.empty());
}

// Catches: vary's fields misnamed or their defaults lost (verifyEvery 100;
// the seed from spec.seed, else the fixed default), or vary dropped when
// written back.
TEST(CodecTest, VaryDefaultsAndRoundTrip) {
  const std::string scenarios =
      "  scenarios: [{name: s, request: {path: '/e/{n}'}, expect: {body: '{n}'}, vary: {}},\n"
      "              {name: t, request: {path: '/e/{n}'}, expect: {body: '{n}'}, vary: {seed: -3, verifyEvery: 7}}]\n";
  Decoded d = DecodeYaml(Doc("", "  targets: [{name: a, image: img}]\n", scenarios));
  ASSERT_TRUE(d.diagnostics.empty()) << d.diagnostics.Format("");
  ASSERT_TRUE(d.run.spec.scenarios[0].vary.has_value());
  EXPECT_EQ(d.run.spec.scenarios[0].vary->verify_every, 100);
  EXPECT_FALSE(d.run.spec.scenarios[0].vary->seed.has_value());
  EXPECT_EQ(d.run.spec.scenarios[1].vary, (Vary{-3, 7}));
  EXPECT_EQ(EffectiveSettings(d.run.spec, d.run.spec.scenarios[0]).vary->seed, kDefaultVarySeed);
  BenchmarkRun with_seed = d.run;
  with_seed.spec.seed = 99;
  EXPECT_EQ(EffectiveSettings(with_seed.spec, with_seed.spec.scenarios[0]).vary->seed, 99);
  EXPECT_EQ(EffectiveSettings(with_seed.spec, with_seed.spec.scenarios[1]).vary->seed, -3);
  EXPECT_FALSE(EffectiveSettings(DecodeYaml(Doc()).run.spec, DecodeYaml(Doc()).run.spec.scenarios[0]).vary.has_value());
  Decoded back = DecodeYaml(ToYaml(d.run));
  ASSERT_TRUE(back.diagnostics.empty()) << back.diagnostics.Format("");
  EXPECT_EQ(back.run, d.run);
}

TEST(CodecTest, LocalProcessDefaults) {
  Decoded d = DecodeYaml("spec:\n  targets:\n  - name: a\n    local: {command: [./srv, --port, \"{port}\"]}\n");
  ASSERT_TRUE(d.diagnostics.empty()) << d.diagnostics.Format("");
  const LocalProcess& l = *d.run.spec.targets[0].local;
  EXPECT_EQ(l.command, (std::vector<std::string>{"./srv", "--port", "{port}"}));
  EXPECT_EQ(l.ready_path, "/");
  EXPECT_EQ(l.ready_timeout, seconds(30));
}

TEST(CodecTest, NullMeansUnset) {
  Decoded d = DecodeYaml(Doc("  load:\n    threads:\n    connections: ~\n  placement:\n"));
  ASSERT_TRUE(d.diagnostics.empty()) << d.diagnostics.Format("");
  EXPECT_EQ(d.run.spec.load.threads, 4);
  EXPECT_EQ(d.run.spec.load.connections, (std::vector<int64_t>{100}));
}

TEST(CodecTest, ParsesDurationsAndCounts) {
  Decoded d = DecodeYaml(
      Doc("  load: {duration: 1m30s, warmup: 1500ms, timeout: 250us, connections: [1k, 10k, 100], rate: 2.5k}\n"
          "  cooldown: 0s\n"));
  ASSERT_TRUE(d.diagnostics.empty()) << d.diagnostics.Format("");
  EXPECT_EQ(d.run.spec.load.duration, seconds(90));
  EXPECT_EQ(d.run.spec.load.warmup, milliseconds(1500));
  EXPECT_EQ(d.run.spec.load.timeout, std::chrono::microseconds(250));
  EXPECT_EQ(d.run.spec.load.connections, (std::vector<int64_t>{1000, 10000, 100}));
  EXPECT_EQ(d.run.spec.load.rate, 2500);
  EXPECT_EQ(d.run.spec.cooldown, seconds(0));
  // Written back canonically.
  const std::string yaml = ToYaml(d.run);
  EXPECT_NE(yaml.find("duration: 90s"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("warmup: 1500ms"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("connections: [1000, 10000, 100]"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("cooldown: 0s"), std::string::npos) << yaml;
}

// Catches: a rate level read as anything but requests/s or a share ("2k"
// lost, "50%" taken for 50 requests/s), a share outside 1–100 % or a rate
// of 0 accepted, an error without its field, or a level written back in a
// form that does not read back the same (a share as a number).
TEST(CodecTest, RateLevels) {
  Decoded d = DecodeYaml(Doc("", "  targets: [{name: a, image: img}]\n",
                             "  scenarios: [{name: s, request: {path: /}, rates: [2000, 2k, \"2500\", \"50%\"]}]\n"));
  ASSERT_TRUE(d.diagnostics.empty()) << d.diagnostics.Format("");
  EXPECT_EQ(d.run.spec.scenarios[0].rates, (std::vector<RateLevel>{{2000, 0}, {2000, 0}, {2500, 0}, {0, 50}}));
  const std::string yaml = ToYaml(d.run);
  EXPECT_NE(yaml.find("rates: [2000, 2000, 2500, 50%]"), std::string::npos) << yaml;
  Decoded again = DecodeYaml(yaml);
  ASSERT_TRUE(again.diagnostics.empty()) << again.diagnostics.Format("");
  EXPECT_EQ(again.run.spec.scenarios[0].rates, d.run.spec.scenarios[0].rates);
  for (const char* bad : {"0", "\"150%\"", "\"0%\"", "\"2.5%\"", "fast", "-5"}) {
    const std::string e =
        Errors(Doc("", "  targets: [{name: a, image: img}]\n",
                   std::string("  scenarios: [{name: s, request: {path: /}, rates: [1000, ") + bad + "]}]\n"));
    EXPECT_NE(e.find("spec.scenarios[0].rates[1]: "), std::string::npos) << bad << ": " << e;
  }
  EXPECT_NE(Errors(Doc("", "  targets: [{name: a, image: img}]\n",
                       "  scenarios: [{name: s, request: {path: /}, rates: [\"150%\"]}]\n"))
                .find("a whole percentage from 1% to 100%"),
            std::string::npos);
}

TEST(CodecTest, TypeErrorsNamePathPositionAndValue) {
  EXPECT_EQ(Errors(Doc("  load: {threads: four}\n")),
            "run.yaml:7:19: spec.load.threads: must be an integer, got \"four\"");
  EXPECT_EQ(Errors(Doc("  load: {threads: \"4\"}\n")),
            "run.yaml:7:19: spec.load.threads: must be an integer, got \"4\"");
  EXPECT_EQ(Errors(Doc("  load: {threads: 1.5}\n")), "run.yaml:7:19: spec.load.threads: must be an integer, got 1.5");
  EXPECT_EQ(Errors(Doc("  load: {threads: 99999999999}\n")),
            "run.yaml:7:19: spec.load.threads: must be at most 2147483647, got 99999999999");
  EXPECT_EQ(Errors(Doc("  load: {keepAlive: yes}\n")),
            "run.yaml:7:21: spec.load.keepAlive: must be true or false, got \"yes\"");
  EXPECT_EQ(Errors(Doc("  load: {connections: 100}\n")),
            "run.yaml:7:23: spec.load.connections: must be a list, got 100");
  EXPECT_EQ(Errors(Doc("  load: {connections: [100, ten]}\n")),
            "run.yaml:7:29: spec.load.connections[1]: must be an integer such as 100 or 10k, got \"ten\"");
  EXPECT_EQ(Errors(Doc("  load: [1]\n")), "run.yaml:7:9: spec.load: must be an object, got a list");
  EXPECT_EQ(Errors(Doc("  load: {duration: 30}\n")),
            "run.yaml:7:20: spec.load.duration: 30 is not a duration: add a unit, e.g. \"30s\"");
  EXPECT_EQ(Errors(Doc("  load: {duration: \"30\"}\n")),
            "run.yaml:7:20: spec.load.duration: \"30\" is not a duration: add a unit, e.g. \"30s\"");
  EXPECT_EQ(
      Errors(Doc("  load: {duration: 30x}\n")),
      "run.yaml:7:20: spec.load.duration: \"30x\" is not a duration (unknown unit \"x\"; use ns, us, ms, s, m, h)");
  EXPECT_EQ(Errors(Doc("  load: {duration: soon}\n")),
            "run.yaml:7:20: spec.load.duration: \"soon\" is not a duration (use e.g. \"30s\", \"500ms\", \"2m\")");
  EXPECT_EQ(Errors(Doc("  load: {duration: -5s}\n")),
            "run.yaml:7:20: spec.load.duration: \"-5s\" is not a duration: it must not be negative");
  EXPECT_EQ(Errors(Doc("  load: {rate: -1}\n")), "run.yaml:7:16: spec.load.rate: must not be negative");
  EXPECT_EQ(
      Errors(Doc("  local: {targetCpus: 3-1}\n")),
      "run.yaml:7:23: spec.local.targetCpus: \"3-1\" is not a CPU list (range 3-1 is reversed; use e.g. \"0-3,8\")");
}

TEST(CodecTest, StringFieldsRefuseNumbersWithAHint) {
  EXPECT_EQ(Errors("apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: t}\nspec:\n"
                   "  targets: [{name: a, image: img, env: {GOMAXPROCS: 4}}]\n"
                   "  scenarios: [{name: s, request: {path: /}}]\n"),
            "run.yaml:5:53: spec.targets[0].env.GOMAXPROCS: must be a string, got 4 (quote it: \"4\")");
  EXPECT_EQ(Errors("apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: 1}\nspec:\n"
                   "  targets: [{name: a, image: img}]\n  scenarios: [{name: s, request: {path: /}}]\n"),
            "run.yaml:3:18: metadata.name: must be a string, got 1 (quote it: \"1\")");
}

TEST(CodecTest, QuantitiesAcceptNumbersAndStrings) {
  Decoded d = DecodeYaml(
      "spec:\n  targets:\n  - {name: a, resources: {cpu: 4, memory: 1Gi}}\n  - {name: b, resources: {cpu: \"0.5\", "
      "memory: 1073741824}}\n");
  ASSERT_TRUE(d.diagnostics.empty()) << d.diagnostics.Format("");
  EXPECT_EQ(d.run.spec.targets[0].resources.cpu->millicores, 4000);
  EXPECT_EQ(d.run.spec.targets[1].resources.cpu->millicores, 500);
  EXPECT_EQ(d.run.spec.targets[1].resources.memory->bytes, int64_t{1} << 30);
  const std::string yaml = ToYaml(d.run);
  EXPECT_NE(yaml.find("cpu: \"4\""), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("cpu: 500m"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("memory: 1Gi"), std::string::npos) << yaml;
  EXPECT_EQ(Errors(Doc("", "  targets: [{name: a, image: i, resources: {cpu: 4 cores}}]\n")),
            "run.yaml:5:50: spec.targets[0].resources.cpu: \"4 cores\" is not a CPU quantity (use e.g. \"4\", \"0.5\", "
            "\"500m\")");
}

TEST(CodecTest, UnknownFieldsSuggestTheClosestName) {
  EXPECT_EQ(Errors(Doc("  load: {conections: [10]}\n")),
            "run.yaml:7:10: spec.load.conections: unknown field (did you mean \"connections\"?)");
  EXPECT_EQ(Errors(Doc("  load: {colour: blue}\n")),
            "run.yaml:7:10: spec.load.colour: unknown field (known fields: threads, connections, duration, warmup, "
            "timeout, keepAlive, pipeline, streams, rate, agents, idleWait)");
  EXPECT_EQ(
      Errors(
          Doc("", "  targets: [{name: a, image: img}]\n", "  scenarios: [{name: s, request: {path: /, weight: 2}}]\n")),
      "run.yaml:6:44: spec.scenarios[0].request.weight: unknown field (known fields: method, path, headers, body, "
      "bodyFile)");
  EXPECT_EQ(Errors("apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: t}\nspecs: {}\n"),
            "run.yaml: spec: required\n"
            "run.yaml:4:1: specs: unknown field (did you mean \"spec\"?)");
}

TEST(CodecTest, LenientModeIgnoresUnknownFields) {
  const std::string doc = Doc("  load: {conections: [10], future: {x: 1}}\n") + "status: {newField: 1}\n";
  EXPECT_NE(Errors(doc), "");
  EXPECT_EQ(Errors(doc, UnknownFields::kIgnore), "");
  // Types are still checked.
  EXPECT_NE(Errors(Doc("  load: {threads: four, future: 1}\n"), UnknownFields::kIgnore), "");
}

TEST(CodecTest, DuplicateKeysAreErrors) {
  EXPECT_EQ(Errors(Doc("  load:\n    threads: 2\n    threads: 8\n")),
            "run.yaml:9:5: spec.load.threads: duplicate key (first at line 8)");
  EXPECT_EQ(Errors(Doc("", "  targets: [{name: a, image: i, env: {A: x, A: y}}]\n")),
            "run.yaml:5:45: spec.targets[0].env.A: duplicate key");
}

TEST(CodecTest, EnumsListTheirValues) {
  EXPECT_EQ(Errors(Doc() + "status: {phase: running}\n"),
            "run.yaml:7:17: status.phase: must be one of Queued, Running, Succeeded, Failed, Cancelled; got "
            "\"running\" (did you mean \"Running\"?)");
  Decoded d = DecodeYaml(Doc() + "status: {conditions: [{type: Ready, status: True}]}\n");
  ASSERT_TRUE(d.diagnostics.empty()) << d.diagnostics.Format("");
  EXPECT_EQ(d.run.status.conditions[0].status, ConditionStatus::kTrue);
}

TEST(CodecTest, DocumentShapeErrors) {
  EXPECT_EQ(Errors(""), "run.yaml: the document is empty; expected a BenchmarkRun");
  EXPECT_EQ(Errors("- a\n- b\n"),
            "run.yaml:1:1: expected a BenchmarkRun object (apiVersion, kind, metadata, spec), got a list");
  EXPECT_EQ(Errors("kind: BenchmarkRun\nmetadata: {name: t}\nspec:\n  targets: [{name: a, image: i}]\n"
                   "  scenarios: [{name: s, request: {path: /}}]\n"),
            "run.yaml: apiVersion: required (fairbench.dev/v1alpha1)");
  EXPECT_EQ(Errors("apiVersion: v1\nkind: Pod\nmetadata: {name: t}\nspec:\n  targets: [{name: a, image: i}]\n"
                   "  scenarios: [{name: s, request: {path: /}}]\n"),
            "run.yaml:1:13: apiVersion: must be fairbench.dev/v1alpha1, got \"v1\"\n"
            "run.yaml:2:7: kind: must be BenchmarkRun, got \"Pod\"");
}

TEST(CodecTest, ExpectJsonComesFromYamlOrJson) {
  Decoded d = DecodeYaml(Doc("", "  targets: [{name: a, image: img}]\n",
                             "  scenarios: [{name: s, request: {path: /}, expect: {json: {b: [1, 2.5], a: x}}}]\n"));
  ASSERT_TRUE(d.diagnostics.empty()) << d.diagnostics.Format("");
  EXPECT_EQ(*d.run.spec.scenarios[0].expect.json, nlohmann::json::parse(R"({"a":"x","b":[1,2.5]})"));
  EXPECT_EQ(*d.run.spec.scenarios[0].expect.json, nlohmann::json::parse(R"({"b":[1.0,2.5],"a":"x"})"));
}

TEST(CodecTest, EncodesCompactStatus) {
  CellResult r;
  r.target = "drogon";
  r.scenario = "hello";
  r.connections = 100;
  r.repetition = 1;
  r.requests_per_second = 515760.5;
  r.errors.timeout = 3;
  r.status_classes.c2xx = 10;
  r.memory_idle = 0;
  EXPECT_EQ(ToJson(r).dump(),
            R"({"target":"drogon","scenario":"hello","connections":100,"repetition":1,"state":"Succeeded",)"
            R"("requestsPerSecond":515760.5,"errors":{"timeout":3},"statusClasses":{"2xx":10},"memoryIdle":0})");
  BenchmarkRunStatus status;
  EXPECT_EQ(ToJson(status).dump(), "{}");
  status.phase = RunPhase::kRunning;
  status.progress = {7, 12};
  EXPECT_EQ(ToJson(status).dump(), R"({"phase":"Running","progress":"7/12","completedCells":7,"totalCells":12})");
  status.nodes = RunNodes{"node-target", {"node-load-1", "node-load-2"}};
  EXPECT_EQ(ToJson(status).dump(),
            R"({"phase":"Running","nodes":{"target":"node-target","agents":["node-load-1","node-load-2"]},)"
            R"("progress":"7/12","completedCells":7,"totalCells":12})");
}

TEST(CodecTest, EncodesEverySpecFieldWithDefaults) {
  Decoded d = DecodeYaml(Doc());
  const std::string json = ToJson(d.run).dump();
  EXPECT_EQ(json, R"({"apiVersion":"fairbench.dev/v1alpha1","kind":"BenchmarkRun","metadata":{"name":"t"},"spec":{)"
                  R"("targets":[{"name":"a","image":"img","port":8080,"scheme":"http","nofile":65536}],)"
                  R"("scenarios":[{"name":"s","request":{"method":"GET","path":"/"},"expect":{"status":200}}],)"
                  R"("load":{"threads":4,"connections":[100],"duration":"30s","warmup":"5s","timeout":"2s",)"
                  R"("keepAlive":true,"pipeline":1,"agents":1},"repetitions":1,"cooldown":"10s"}})");
}

// spec.profile: absent by default; decoded with its defaults, connections
// as a count; written back with only what was set. Catches: the field
// missing from the schema (an unknown field), the frequency default lost.
TEST(CodecTest, ProfileSelectsCellsWithADefaultFrequency) {
  EXPECT_FALSE(DecodeYaml(Doc()).run.spec.profile.has_value());
  Decoded d = DecodeYaml(Doc("  profile:\n    cells: [{target: a, scenario: s, connections: 1k}, {scenario: s}]\n"));
  ASSERT_TRUE(d.diagnostics.empty()) << d.diagnostics.Format("");
  ASSERT_TRUE(d.run.spec.profile.has_value());
  const Profile& p = *d.run.spec.profile;
  EXPECT_FALSE(p.all);
  EXPECT_EQ(p.frequency, 99);
  ASSERT_EQ(p.cells.size(), 2u);
  EXPECT_EQ(p.cells[0], (ProfileCell{"a", "s", 1000}));
  EXPECT_EQ(p.cells[1], (ProfileCell{"", "s", 0}));
  EXPECT_NE(
      ToJson(d.run).dump().find(
          R"("profile":{"cells":[{"target":"a","scenario":"s","connections":1000},{"scenario":"s"}],"frequency":99})"),
      std::string::npos);
  d = DecodeYaml(Doc("  profile: {all: true, frequency: 499}\n"));
  ASSERT_TRUE(d.diagnostics.empty()) << d.diagnostics.Format("");
  EXPECT_TRUE(d.run.spec.profile->all);
  EXPECT_EQ(d.run.spec.profile->frequency, 499);
  EXPECT_EQ(Errors(Doc("  profile: {all: yes please, cells: [{target: a}]}\n")),
            "run.yaml:7:18: spec.profile.all: must be true or false, got \"yes please\"");
}

TEST(CodecTest, RoundTripsThroughBothFormats) {
  BenchmarkRun run = DecodeYaml(Doc()).run;
  run.spec.scenarios[0].request->body = "line1\nline2: \"x\"\t";
  run.spec.scenarios[0].expect.json = nlohmann::json::parse(R"({"n": null, "l": [true, 1e300], "s": "1"})");
  run.status.results.push_back(CellResult{});
  run.status.results[0].latency.p99 = 0.1;
  run.status.results[0].start_time = Time(std::chrono::nanoseconds(1'790'000'000'123'456'789));
  run.metadata.annotations["a/b"] = "";
  run.status.nodes = RunNodes{"node-target", {"node-load-1"}};
  run.spec.profile = Profile{false, {ProfileCell{"a", "", 100}}, 250};

  Result<Node> yaml = ParseYaml(ToYaml(run), "t");
  ASSERT_TRUE(yaml.ok()) << yaml.status().ToString();
  Decoded from_yaml = DecodeRun(*yaml);
  ASSERT_TRUE(from_yaml.diagnostics.empty()) << from_yaml.diagnostics.Format("");
  EXPECT_EQ(from_yaml.run, run) << ToYaml(run);

  Result<Node> json = ParseJson(ToJson(run).dump(), "t");
  ASSERT_TRUE(json.ok());
  Decoded from_json = DecodeRun(*json);
  ASSERT_TRUE(from_json.diagnostics.empty()) << from_json.diagnostics.Format("");
  EXPECT_EQ(from_json.run, run);
}

}  // namespace
}  // namespace fairbench::api
