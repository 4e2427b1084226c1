#include "controller/cli/hlog_recorder.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "api/cells.h"

namespace fairbench::controller {
namespace {

// api::Cell::Key() of the cell.
std::string Key(const api::CurrentCell& c) { return api::CellOf(c).Key(); }

}  // namespace

std::string HlogRecorder::FileName(const api::CurrentCell& cell, int measurement) {
  std::string name = Key(cell);
  std::replace(name.begin(), name.end(), '/', '_');
  if (measurement > 1) name += "-" + std::to_string(measurement);
  return name + ".hlog";
}

void HlogRecorder::Close() {
  file_.reset();
  opened_ = false;
}

void HlogRecorder::OnStage(const api::BenchmarkRun&, const api::CurrentCell& current) {
  if (current.stage != api::Stage::kWarmingUp) return;
  MutexLock lock(mu_);
  Close();
  const std::string key = Key(current);
  measurement_ = key == key_ ? measurement_ + 1 : 1;
  key_ = key;
}

void HlogRecorder::OnCellDone(const report::RunRecord&, const report::CellRecord&) {
  MutexLock lock(mu_);
  Close();
}

void HlogRecorder::OnInterval(const std::string& run, const api::CurrentCell& cell, const Snapshot& merged,
                              api::Time end) {
  MutexLock lock(mu_);
  const std::string key = Key(cell);
  if (key != key_) {  // no warming-up stage seen for it
    Close();
    key_ = key;
    measurement_ = 1;
  }
  if (!opened_) {
    opened_ = true;
    const std::string path = (dir_ / FileName(cell, measurement_)).string();
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) {
      spdlog::warn("no HdrHistogram log for cell {}: cannot create '{}': {}", key, dir_.string(), ec.message());
      return;
    }
    // The intervals' zero: the load's start, on the wall clock.
    const double base =
        (static_cast<double>(end.time_since_epoch().count()) - static_cast<double>(merged.end_ns)) / 1e9;
    HlogHeader header;
    header.comments = {comment_ + ", run " + run + ", cell " + key +
                       ": latency in microseconds (Interval_Max in ms), "
                       "warmup intervals tagged warmup"};
    header.start_time_s = base;
    header.base_time_s = base;
    header.max_value_divisor = 1000.0;
    auto created = HlogFile::Create(path, header);
    if (!created.ok()) {
      spdlog::warn("no HdrHistogram log for cell {}: {}", key, created.status().message());
      return;
    }
    file_ = std::move(*created);
  }
  if (!file_) return;
  const Status s = file_->Append(merged.stats.latency, static_cast<double>(merged.start_ns) / 1e9,
                                 static_cast<double>(merged.end_ns - merged.start_ns) / 1e9,
                                 merged.phase == Phase::kWarmup ? "warmup" : "");
  if (!s.ok()) {
    spdlog::warn("HdrHistogram log of cell {} given up: {}", key, s.message());
    file_.reset();
  }
}

}  // namespace fairbench::controller
