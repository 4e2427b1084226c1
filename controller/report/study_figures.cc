// The published figures of the study; see study_figures.h.
#include "controller/report/study_figures.h"

#include <cmath>
#include <string>
#include <vector>

#include "api/time_text.h"
#include "controller/report/cell_checks.h"

namespace fairbench::report {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

api::ErrorCounts Timeouts(uint64_t timeouts, uint64_t reads = 0) {
  api::ErrorCounts e;
  e.timeout = timeouts;
  e.read = reads;
  return e;
}

api::Request Req(const char* method, const char* path) {
  api::Request r;
  r.method = method;
  r.path = path;
  return r;
}

struct Published {
  const char* name;
  // requests/s: hello@100, hello@1000, hello@10000, json, echo, path-param
  double rps[6];
  // latency (µs) avg / max at hello 100, 1,000, 10,000
  double avg[3];
  double max[3];
  // stdev (µs) at hello 100 and 10,000
  double stdev_100, stdev_10000;
  api::ErrorCounts errors_10000;
  double bytes_per_response;  // hello-world, headers included
  double memory_idle_mib, memory_loaded_mib;
};

// In the study's column order (its Hello World ranking).
const std::vector<Published>& Figures() {
  static const std::vector<Published> kFigures{
      {"cinatra",
       {605123, 479291, 197470, 567065, 533886, 538086},
       {149.52, 2050, 35090},
       {12220, 238930, 2000000},
       183.62,
       21430,
       Timeouts(2288),
       106,
       92.46,
       86.87},
      {"hical",
       {562810, 447487, 181924, 534547, 439399, 516732},
       {174.11, 2240, 31560},
       {19660, 152870, 83390},
       315.23,
       10140,
       Timeouts(0),
       175,
       129.6,
       129.6},
      {"drogon",
       {515760, 464828, 197957, 361592, 292815, 335876},
       {195.54, 2120, 29490},
       {16080, 166470, 94410},
       265.15,
       10000,
       Timeouts(0),
       151,
       97.79,
       92.05},
      {"crow",
       {311188, 265762, 185720, 280068, 236927, 271959},
       {327.38, 3750, 53330},
       {19550, 16430, 76530},
       255.88,
       3040,
       Timeouts(0),
       134,
       65.02,
       64.91},
      {"oatpp",
       {226090, 177771, 123480, 190915, 146888, 189858},
       {2920, 7860, 54730},
       {100310, 1670000, 2000000},
       7220,
       95180,
       Timeouts(7899),
       97,
       18.8,
       16.36},
      {"cpp-httplib",
       {85410, 84332, 74864, 79625, 72802, 80820},
       {27560, 276800, 66310},
       {317880, 1930000, 1880000},
       36140,
       241970,
       Timeouts(55, 161186),
       110,
       1.891,
       1.895},
  };
  return kFigures;
}

const Published& Find(const std::string& name) {
  for (const Published& p : Figures()) {
    if (name == p.name) return p;
  }
  return Figures().front();  // unreachable: every spec target is listed
}

api::BenchmarkRunSpec StudySpec() {
  api::BenchmarkRunSpec spec;
  // The order of examples/study.yaml.
  const std::vector<std::pair<std::string, std::string>> targets{
      {"hical", "example.org/fairbench/hical:2.7.0"},
      {"drogon", "example.org/fairbench/drogon:1.9.8"},
      {"crow", "example.org/fairbench/crow:1.2.0"},
      {"oatpp", "example.org/fairbench/oatpp:1.3.0"},
      {"cpp-httplib", "example.org/fairbench/cpp-httplib:0.18.3"},
      {"cinatra", "example.org/fairbench/cinatra:0.3.0"}};
  for (const auto& [name, image] : targets) {
    api::Target t;
    t.name = name;
    t.image = image;
    t.port = name == "oatpp" ? 8000 : name == "cinatra" ? 8090 : 8080;
    t.resources.cpu = api::CpuQuantity{4000};
    t.resources.memory = api::MemoryQuantity{int64_t{1} << 30};
    spec.targets.push_back(t);
  }
  api::Scenario hello;
  hello.name = "hello";
  hello.request = Req("GET", "/");
  hello.expect.body = "Hello, World!";
  hello.connections = {100, 1000, 10000};
  api::Scenario json;
  json.name = "json";
  json.request = Req("GET", "/api/status");
  json.expect.content_type = "application/json";
  api::Scenario echo;
  echo.name = "echo";
  echo.request = Req("POST", "/api/echo");
  echo.request->headers = {{"Content-Type", "application/json"}};
  echo.request->body = R"({"name":"Alice","age":30,"email":"alice@example.com"})";
  echo.expect.json = nlohmann::json{{"name", "Alice"}, {"age", 30}, {"email", "alice@example.com"}};
  api::Scenario path;
  path.name = "path-param";
  path.request = Req("GET", "/users/42");
  path.expect.content_type = "application/json";
  spec.scenarios = {hello, json, echo, path};
  spec.load.threads = 4;
  spec.load.connections = {100};
  spec.load.duration = std::chrono::seconds(30);
  return spec;
}

}  // namespace

RunRecord StudyFigures() {
  RunRecord record;
  api::BenchmarkRun& run = record.run;
  run.metadata.name = "cpp-frameworks";
  run.metadata.annotations[api::annotation::kDescription] =
      "Published figures of the study (six C++ frameworks, data collected 2026-09-28), entered by hand as sample "
      "data: measured with wrk by the study's author, not by fairbench. Percentiles, CPU and request counts were "
      "not published.";
  run.spec = StudySpec();
  run.status.phase = api::RunPhase::kSucceeded;
  run.status.progress = {36, 36};
  run.status.start_time = *api::ParseTime("2026-09-28T10:00:00Z");
  run.status.completion_time = *api::ParseTime("2026-09-28T10:36:00Z");

  Environment& env = record.environment;
  env.platform = "docker-compose (the study's own scripts)";
  env.cpu_model = "Intel Core i7-11700K host; VirtualBox VM";
  env.cpus = 8;
  env.memory_bytes = uint64_t{16} << 30;
  env.notes = {"Ubuntu 24.04 in VirtualBox (8 vCPU, 16 GB), Docker 29.4.3, Docker bridge network.",
               "Load generator: wrk 4.1.0 in its own container, -t4 -d30s; POST through a Lua script.",
               "Host sysctls: ip_local_port_range 1024–65535, somaxconn and tcp_max_syn_backlog 65535, tcp_tw_reuse 1.",
               "Each framework: Release (-O3), 4 worker threads, container limited to 4 CPU, 1024 MB, nofile 65536."};

  const std::vector<std::pair<std::string, int64_t>> cells{{"hello", 100}, {"hello", 1000}, {"hello", 10000},
                                                           {"json", 100},  {"echo", 100},   {"path-param", 100}};
  for (const api::Target& t : run.spec.targets) {
    const Published& p = Find(t.name);
    for (size_t i = 0; i < cells.size(); ++i) {
      CellRecord c;
      api::CellResult& r = c.result;
      r.target = t.name;
      r.scenario = cells[i].first;
      r.connections = cells[i].second;
      r.repetition = 1;
      r.requests_per_second = p.rps[i];
      r.memory_idle = static_cast<uint64_t>(std::llround(p.memory_idle_mib * kMiB));
      if (i < 3) {
        r.latency.mean = p.avg[i];
        r.latency.max = p.max[i];
      }
      if (i == 0) {
        r.latency.stdev = p.stdev_100;
        r.bytes_per_response = p.bytes_per_response;
        // The study derived bytes per response as Transfer/sec ÷ Requests/sec.
        r.transfer_per_second = p.bytes_per_response * p.rps[0];
        // One "loaded" figure per framework in the study.
        r.memory_loaded = static_cast<uint64_t>(std::llround(p.memory_loaded_mib * kMiB));
      }
      if (i == 2) {
        r.latency.stdev = p.stdev_10000;
        r.errors = p.errors_10000;
      }
      c.measure_seconds = 30;
      run.status.results.push_back(r);
      record.cells.push_back(std::move(c));
    }
  }
  CheckCells(record);
  return record;
}

}  // namespace fairbench::report
