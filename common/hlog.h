// Hlog: HdrHistogram interval logs (`.hlog`), the text format of
// HdrHistogram's HistogramLogWriter (log format version 1.3) that its
// HistogramLogReader, HistogramLogProcessor and the other implementations'
// readers (hdr-histogram-js, HdrHistogram_rust) read:
//
//   #[Logged with fairbench …]                     any comments
//   #[Histogram log format version 1.3]
//   #[StartTime: 1764975665.123 (seconds since epoch), Sat Dec 05 23:01:05 UTC 2026]
//   #[BaseTime: 1764975665.123 (seconds since epoch)]
//   #[MaxValueDivisor: 1000.000]
//   "StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"
//   [Tag=warmup,]0.000,1.000,2.345,HISTFAAAA…
//
// One line per interval: its start in seconds after BaseTime, its length in
// seconds, its largest value divided by MaxValueDivisor, and the interval's
// histogram in V2 compressed encoding (common/histogram.h), base64.
// Readers ignore the max column and every '#' line but StartTime and
// BaseTime; MaxValueDivisor (a comment HdrHistogram_rust writes) records
// the divisor used. fairbench's values are microseconds: with divisor 1000
// the max column is in milliseconds, and HistogramLogProcessor shows
// milliseconds with `-outputValueUnitRatio 1000` (its default, 1e6, assumes
// nanoseconds). A Tag= prefix marks intervals that tools skip unless asked
// for that tag (HistogramLogProcessor -tag NAME).
//
// HlogFile writes a log to disk one whole line per write(2): a process that
// dies loses no interval it had appended. Not thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/histogram.h"
#include "common/status.h"

namespace fairbench {

struct HlogHeader {
  std::vector<std::string> comments;  // each written as "#[TEXT]", first
  double start_time_s = 0;            // seconds since the epoch: when the log's first interval began
  double base_time_s = 0;             // what the intervals' start times are relative to
  double max_value_divisor = 1000.0;  // µs values, max column in ms
};

// The header lines, legend included.
std::string HlogHeaderText(const HlogHeader& header);

// One interval line ("\n"-terminated). `tag` must be free of commas and
// white space (empty: no tag).
std::string HlogIntervalLine(const Histogram& histogram, double start_s, double length_s, double max_value_divisor,
                             std::string_view tag = {});

// A log read back (HistogramLogReader's rules: '#' lines and the legend
// skipped, an optional Tag= field, four fields after it), with fairbench's
// own decoder.
struct HlogInterval {
  std::string tag;  // empty: none
  double start_s = 0;
  double length_s = 0;
  double max = 0;  // as written (divided)
  Histogram histogram;
};
struct Hlog {
  std::optional<double> start_time_s;
  std::optional<double> base_time_s;
  std::optional<double> max_value_divisor;
  std::vector<HlogInterval> intervals;
};
Result<Hlog> ParseHlog(std::string_view text);

class HlogFile {
 public:
  // Creates (or truncates) `path` and writes the header.
  static Result<std::unique_ptr<HlogFile>> Create(const std::string& path, const HlogHeader& header);
  ~HlogFile();
  HlogFile(const HlogFile&) = delete;
  HlogFile& operator=(const HlogFile&) = delete;

  // Appends one interval (see HlogIntervalLine).
  Status Append(const Histogram& histogram, double start_s, double length_s, std::string_view tag = {});
  const std::string& path() const { return path_; }

 private:
  HlogFile(int fd, std::string path, double max_value_divisor)
      : fd_(fd), path_(std::move(path)), max_value_divisor_(max_value_divisor) {}
  Status WriteAll(std::string_view text);

  int fd_;
  std::string path_;
  double max_value_divisor_;
};

}  // namespace fairbench
