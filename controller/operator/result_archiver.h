// ResultArchiver: every finished BenchmarkRun into the result store
// (controller/results) when the controller has one (--result-store, the
// chart's resultStore Secret), and status.stored naming the run's id there.
//
// The reconciler offers each run it sees in a terminal phase (Succeeded,
// Failed, Cancelled) whose status names no stored id; the archiver, on a
// thread of its own, reads the run's record from its ConfigMaps (what
// `fairbench fetch` reads), stores it, and merges into the run's status
//
//   stored: {id: 12, store: "PostgreSQL store postgresql://…", time: …}
//
// with a Normal Event ResultStored ("stored as run 12 in …"). Because the
// offer comes from the run's phase, not from the executor's end of it, a
// run that finished while no controller could store it (the store down,
// the controller restarted between the end and the store, another
// controller leading) is stored by the next controller that sees it: no
// finished run is left out.
//
// A store that cannot be reached or written is retried with backoff (1 s
// doubling to 5 min) for as long as the controller runs; the run's status
// says why meanwhile (stored: {store, error}) and a Warning Event
// ResultStoreFailed tells it once per run and reason. A run with no record
// (Failed before its first cell: a spec the model refused, a missing
// token) has nothing to store and is passed over. The same run stored
// twice keeps one copy (the store's rule), so offering a run again is
// harmless.
//
// Thread-safe; the client, the status client and the recorder must outlive
// it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "api/benchmark_run.h"
#include "common/backoff.h"
#include "controller/kube/client.h"
#include "controller/kube/event_recorder.h"
#include "controller/operator/run_status_client.h"
#include "controller/results/result_store.h"

namespace fairbench::controller {

struct ResultArchiverOptions {
  std::string store;  // a path (SQLite) or a postgresql:// URL
  BackoffPolicy retry_backoff{std::chrono::seconds(1), std::chrono::minutes(5), 2.0, 0.2};
};

struct ResultArchiverStats {
  uint64_t stored = 0;    // runs stored (or found stored already)
  uint64_t failures = 0;  // attempts that failed
  uint64_t skipped = 0;   // runs without a record
  std::string last_error;
};

// A postgresql:// URL as the PostgreSQL store names itself, without its
// password ("postgresql://fb@db:5432/results"); anything else as it is.
std::string RedactStoreLocation(const std::string& location);

class ResultArchiver {
 public:
  ResultArchiver(kube::Client& client, RunStatusClient& run_status, kube::EventRecorder* events,
                 ResultArchiverOptions options);
  ~ResultArchiver();  // stops the thread; what is queued stays for the next controller
  ResultArchiver(const ResultArchiver&) = delete;
  ResultArchiver& operator=(const ResultArchiver&) = delete;

  // `run` (a terminal phase) is stored unless its status already names an
  // id, or it is queued, or it was stored or passed over by this archiver.
  void Offer(const api::BenchmarkRun& run);
  // Whether `run` would be offered: terminal, and no stored id in status.
  static bool Wants(const api::BenchmarkRun& run);
  // Waits (up to `timeout`) until nothing is queued; false on timeout.
  bool WaitIdle(std::chrono::milliseconds timeout);
  ResultArchiverStats stats() const;

 private:
  struct Job {
    api::BenchmarkRun run;
    int attempt = 0;
    std::chrono::steady_clock::time_point due;
    std::string last_error;  // told in status and an Event once per reason
  };
  void Loop(std::stop_token stop);
  // Stores one run: OK, or the reason to retry. `done`: nothing more to do.
  Status Attempt(Job& job, bool& done);
  Status OpenStore();
  static std::string Key(const api::BenchmarkRun& run);  // "ns/name#uid"

  kube::Client& client_;
  RunStatusClient& run_status_;
  kube::EventRecorder* const events_;
  const ResultArchiverOptions options_;

  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::deque<Job> queue_;
  std::set<std::string> queued_, done_;  // keys
  bool busy_ = false;                    // a job is out of the queue, being attempted
  ResultArchiverStats stats_;
  std::unique_ptr<results::ResultStore> store_;  // the thread's only
  std::jthread thread_;
};

}  // namespace fairbench::controller
