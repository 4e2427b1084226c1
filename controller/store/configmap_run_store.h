// ConfigMapRunStore: a run's record kept in ConfigMaps owned by its
// BenchmarkRun — the store of the operator, read back by `fairbench fetch`.
//
//   <run>-results-0    binaryData["results.json.gz"]: the first part of the
//                      gzip of the results.json text (exactly the text
//                      FileRunStore writes), and the manifest in its
//                      annotations:
//                        fairbench.dev/results-format      "1" (this layout)
//                        fairbench.dev/results-generation  save counter
//                        fairbench.dev/results-parts       the part names, in order
//                        fairbench.dev/results-bytes       length of the text
//                        fairbench.dev/results-sha256      SHA-256 of the text
//   <run>-results-K    the following parts (K ≥ 1), each with its
//                      generation and "fairbench.dev/results-part: I/N"
//   <run>-report       data["report.md"], data["report.html"]
//                      (RenderMarkdown/RenderHtml of the record; gzip in
//                      binaryData "report.md.gz"/"report.html.gz" when the
//                      two texts pass part_bytes), written by SaveReport
//
// A part holds at most `part_bytes` (900 KiB) of compressed bytes: a
// ConfigMap holds at most 1 MiB. Every ConfigMap carries the labels
// app.kubernetes.io/managed-by=fairbench, fairbench.dev/run=<run> and
// fairbench.dev/record=results|report, and (given the run's uid) a
// controller owner reference to the BenchmarkRun, so deleting the run
// deletes them.
//
// A write that fails in a way that may pass (5xx, a timeout, a cut
// connection; a write that took effect but whose answer was lost) is
// retried, reading the ConfigMap again first when needed, and logged one
// line per retry. Save is crash-safe: the parts after the first are written under names the
// current manifest does not use, then the first ConfigMap (its part and the
// manifest, one write) is replaced, then results parts the new manifest does
// not name are deleted. A crash at any point leaves the previous record or
// the new one readable. Load refuses a torn or damaged record (a missing
// part, a part of another generation, undecodable data, a size or SHA-256
// that differs from the manifest) with an InvalidArgument naming the
// ConfigMap and the cause; it never returns part of a record. Nothing
// stored: nullopt. An API failure: the client's error as a Status
// (Unavailable when the server cannot be reached).
//
// SaveCell stores nothing: each CellRecord in the record carries its
// wrk-layout text (wrk_text) and the orchestrator saves the record right
// after SaveCell; `fairbench fetch` writes cells/*.txt from the record.
//
// Calls block on the API server. Thread-compatible (the orchestrator calls
// from one thread); the kube::Client must outlive the store.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "api/benchmark_run.h"
#include "common/backoff.h"
#include "controller/kube/client.h"
#include "controller/orchestrator/run_store.h"

namespace fairbench::controller {

struct ConfigMapRunStoreOptions {
  std::string ns;                  // the run's namespace; empty: the client's default namespace
  std::string run;                 // the BenchmarkRun's name
  std::string run_uid;             // its uid, for the owner reference; empty: no owner reference
  size_t part_bytes = 900 * 1024;  // compressed bytes per ConfigMap
  std::string field_manager = "fairbench-controller";
  // Writes that fail in a way that may pass (5xx, timeouts, cut
  // connections) are retried this many times per ConfigMap, with backoff.
  int max_transient_retries = 6;
  BackoffPolicy retry_backoff{std::chrono::milliseconds(200), std::chrono::milliseconds(5000), 2.0, 0.2};

  // ns, run and run_uid from the run's metadata.
  static ConfigMapRunStoreOptions ForRun(const api::BenchmarkRun& run);
};

// The two texts of the report ConfigMap.
struct StoredReport {
  std::string markdown;
  std::string html;
};

class ConfigMapRunStore final : public RunStore {
 public:
  static constexpr char kPartKey[] = "results.json.gz";
  static constexpr int kFormatVersion = 1;

  ConfigMapRunStore(kube::Client& client, ConfigMapRunStoreOptions options);

  Result<std::optional<report::RunRecord>> Load() override;
  Status Save(const report::RunRecord& record) override;
  // Stores nothing (see above).
  Status SaveCell(const api::Cell& cell, const report::CellRecord& record) override;

  // Writes <run>-report: RenderMarkdown and RenderHtml of `record`.
  [[nodiscard]] Status SaveReport(const report::RunRecord& record);
  // The report ConfigMap's texts; nullopt when there is none.
  Result<std::optional<StoredReport>> LoadReport();

  const std::string& ns() const { return ns_; }
  // "<run>-results-<index>" and "<run>-report".
  std::string PartName(size_t index) const;
  std::string ReportName() const;

 private:
  Result<std::optional<kube::ConfigMap>> Get(const std::string& name);
  // Creates `cm`, or replaces it (at `resource_version` when known).
  Status Put(kube::ConfigMap cm, const std::string& resource_version);
  kube::ConfigMap Skeleton(const std::string& name, const std::string& record_kind) const;
  std::string Describe(const std::string& name) const;  // "ConfigMap ns/name"

  kube::Client& client_;
  const ConfigMapRunStoreOptions options_;
  const std::string ns_;
};

// gzip (RFC 1952) of `bytes`, and back. Gunzip refuses output longer than
// `max_bytes` and anything that is not one complete gzip stream.
Result<std::string> Gzip(std::string_view bytes);
Result<std::string> Gunzip(std::string_view gzip, size_t max_bytes);
// Lower-case hex of the SHA-256 of `bytes`.
std::string Sha256Hex(std::string_view bytes);

}  // namespace fairbench::controller
