#include "controller/cli/progress.h"

#include "common/units.h"

namespace fairbench::controller {

std::string WithCommas(double v) {
  std::string digits = std::to_string(static_cast<long long>(v + 0.5));
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

void Progress::OnStage(const api::BenchmarkRun& run, const api::CurrentCell& c) {
  std::lock_guard<std::mutex> lock(mu_);
  total_ = static_cast<size_t>(run.status.progress.total);
  done_ = static_cast<size_t>(run.status.progress.completed);
  current_ = c;
  if (!tty_) {
    Line(Describe(c) + " · " + std::string(api::ToString(*c.stage)));
  } else {
    Redraw(0, 0);
  }
}

void Progress::OnLive(const api::CurrentCell& c, double rps, double elapsed) {
  std::lock_guard<std::mutex> lock(mu_);
  current_ = c;
  if (tty_) Redraw(rps, elapsed);
}

void Progress::OnCellDone(const report::RunRecord& record, const report::CellRecord& cell) {
  std::lock_guard<std::mutex> lock(mu_);
  done_ = record.cells.size();
  const api::CellResult& r = cell.result;
  std::string text = "[" + std::to_string(done_) + "/" + std::to_string(total_) + "] " + r.target + " · " + r.scenario +
                     " · " + std::to_string(r.connections) + " conns";
  if (r.repetition > 1) text += " · rep " + std::to_string(r.repetition);
  if (r.state == api::CellState::kSucceeded) {
    text += ": " + WithCommas(r.requests_per_second) + " req/s, avg " + FormatTimeUs(r.latency.mean) + ", p99 " +
            FormatTimeUs(r.latency.p99) + ", max " + FormatTimeUs(r.latency.max);
    const uint64_t errors = r.errors.Total();
    if (errors > 0) text += ", " + std::to_string(errors) + " errors";
    for (report::CellFlag f : cell.flags) text += " ⚑" + std::string(report::FlagName(f));
  } else {
    text += ": " + std::string(api::ToString(r.state)) + " (" + std::string(api::ToString(r.reason)) + ": " +
            r.message + ")";
  }
  Line(text);
}

void Progress::OnMessage(const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  Line(message);
}

void Progress::Finish() {
  std::lock_guard<std::mutex> lock(mu_);
  if (tty_ && drawn_) std::fputs("\r\033[K", out_);
}

std::string Progress::Describe(const api::CurrentCell& c) const {
  std::string s = c.target + " · " + c.scenario + " · " + std::to_string(c.connections) + " conns";
  if (c.repetition > 1) s += " · rep " + std::to_string(c.repetition);
  return s;
}

void Progress::Line(const std::string& text) {
  if (quiet_) return;
  if (tty_ && drawn_) std::fputs("\r\033[K", out_);
  std::fprintf(out_, "%s\n", text.c_str());
  drawn_ = false;
}

void Progress::Redraw(double rps, double elapsed) {
  if (quiet_ || !current_.stage) return;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1fs", elapsed);
  std::string text = "[" + std::to_string(done_ + 1) + "/" + std::to_string(total_) + "] " + Describe(current_) +
                     " · " + std::string(api::ToString(*current_.stage));
  if (elapsed > 0) text += " · " + std::string(buf);
  if (rps > 0) text += " · " + WithCommas(rps) + " req/s";
  std::fprintf(out_, "\r\033[K%s", text.c_str());
  std::fflush(out_);
  drawn_ = true;
}

}  // namespace fairbench::controller
