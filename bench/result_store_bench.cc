// The result store in one process, without a process's start or a file's
// parsing: Store() of a parsed record into STORE, N times (each time under
// a new start, one hour after the last: a new run), with the parts of it
// timed alone (the canonical text, the index, gzip), then QuerySeries and
// ListRuns N times. bench/result_store.py runs it on the store it filled.
//
//   build/bin/result_store_bench STORE RESULTS.json N TARGET SCENARIO CONNECTIONS [TARGET2]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "controller/results/run_index.h"
#include "controller/results/sqlite_result_store.h"
#include "controller/store/configmap_run_store.h"

namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

void Print(const char* what, std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  std::printf("%-40s median %7.2f ms [%.2f-%.2f], n=%zu\n", what, ms[ms.size() / 2], ms.front(), ms.back(), ms.size());
}

std::vector<double> Time(int n, const std::function<bool(int)>& f) {
  std::vector<double> ms;
  for (int i = 0; i < n; ++i) {
    const auto t0 = Clock::now();
    if (!f(i)) std::exit(1);
    ms.push_back(Ms(Clock::now() - t0));
  }
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace fairbench;
  if (argc < 7) {
    std::fprintf(stderr, "usage: %s STORE RESULTS.json N TARGET SCENARIO CONNECTIONS [TARGET2]\n", argv[0]);
    return 2;
  }
  const int n = std::stoi(argv[3]);
  std::ifstream in(argv[2], std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = Time(1, [&](int) { return report::RunRecordFromJsonText(text.str(), argv[2]).ok(); });
  auto record = report::RunRecordFromJsonText(text.str(), argv[2]);
  if (!record.ok()) {
    std::fprintf(stderr, "%s\n", record.status().message().c_str());
    return 1;
  }
  auto store = results::SqliteResultStore::Open(argv[1]);
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.status().message().c_str());
    return 1;
  }
  Print("parse results.json (not part of Store)", parsed);
  std::string canonical;
  Print("canonical text (ToJsonText)", Time(n, [&](int) {
          canonical = report::ToJsonText(*record);
          return true;
        }));
  Print("index (IndexRun: SHA-256, rows)",
        Time(n, [&](int) { return !results::IndexRun(*record, canonical).key.empty(); }));
  Print("gzip", Time(n, [&](int) { return controller::Gzip(canonical).ok(); }));
  const api::Time start = *record->run.status.start_time;
  Print("Store (a new run; all of the above, one transaction)", Time(n, [&](int i) {
          record->run.status.start_time = start + std::chrono::hours(1000 + i);
          auto r = (*store)->Store(*record);
          if (!r.ok()) std::fprintf(stderr, "%s\n", r.status().message().c_str());
          return r.ok() && r->outcome == results::StoreOutcome::kStored;
        }));
  Print("Store (the same run again: unchanged)", Time(n, [&](int) {
          auto r = (*store)->Store(*record);
          return r.ok() && r->outcome == results::StoreOutcome::kUnchanged;
        }));
  for (int t = 4; t < argc && t != 5 && t != 6; t = t == 4 ? 7 : t + 1) {
    results::SeriesQuery q;
    q.target = argv[t];
    q.scenario = argv[5];
    q.connections = std::stoll(argv[6]);
    size_t points = 0;
    auto ms = Time(n, [&](int) {
      auto s = (*store)->QuerySeries(q);
      if (s.ok()) points = s->points.size();
      return s.ok();
    });
    const std::string what = "QuerySeries " + q.target + " (" + std::to_string(points) + " points)";
    Print(what.c_str(), ms);
  }
  results::RunFilter f;
  f.limit = 50;
  Print("ListRuns (the latest 50)", Time(n, [&](int) { return (*store)->ListRuns(f).ok(); }));
  f.labels = {{"branch", "main"}};
  f.target = "drogon";
  Print("ListRuns (label, target; 50)", Time(n, [&](int) { return (*store)->ListRuns(f).ok(); }));
  return 0;
}
