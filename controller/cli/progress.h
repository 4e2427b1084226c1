// Progress: what `fairbench run` shows on the terminal while it works — one
// line redrawn in place on a terminal (the cell, its stage, live
// requests/s), a plain line per stage otherwise, and a line per finished
// cell. Nothing when quiet. Thread-safe.
#pragma once

#include <cstdio>
#include <mutex>
#include <string>

#include "controller/orchestrator/run_observer.h"

namespace fairbench::controller {

// 1234567.4 → "1,234,567".
std::string WithCommas(double v);

class Progress final : public RunObserver {
 public:
  Progress(bool tty, bool quiet, std::FILE* out = stderr) : tty_(tty), quiet_(quiet), out_(out) {}

  void OnStage(const api::BenchmarkRun& run, const api::CurrentCell& c) override;
  void OnLive(const api::CurrentCell& c, double rps, double elapsed) override;
  void OnCellDone(const report::RunRecord& record, const report::CellRecord& cell) override;
  void OnMessage(const std::string& message) override;
  // Clears a line left drawn.
  void Finish();

 private:
  std::string Describe(const api::CurrentCell& c) const;
  void Line(const std::string& text);
  void Redraw(double rps, double elapsed);

  const bool tty_;
  const bool quiet_;
  std::FILE* const out_;
  std::mutex mu_;
  size_t total_ = 0;
  size_t done_ = 0;
  api::CurrentCell current_;
  bool drawn_ = false;
};

}  // namespace fairbench::controller
