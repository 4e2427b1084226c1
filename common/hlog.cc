#include "common/hlog.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <ctime>

#include "common/base64.h"

namespace fairbench {
namespace {

// "%.3f" whatever the locale (HistogramLogWriter formats with Locale.US).
std::string Fixed3(double v) {
  if (!std::isfinite(v)) v = 0;
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, 3);
  return std::string(buf, r.ptr);
}

// java.util.Date's toString() in UTC: "Sat Dec 05 23:01:05 UTC 2026".
std::string DateText(double seconds) {
  const auto t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  const size_t n = std::strftime(buf, sizeof buf, "%a %b %d %H:%M:%S UTC %Y", &tm);
  return std::string(buf, n);
}

std::optional<double> ParseDouble(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  double v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

// The number after "#[Name: " up to the next space, ',' or ']'.
std::optional<double> HeaderNumber(std::string_view line, std::string_view name) {
  line.remove_prefix(name.size());
  const size_t end = line.find_first_of(" ,]");
  return ParseDouble(line.substr(0, end));
}

}  // namespace

std::string HlogHeaderText(const HlogHeader& h) {
  std::string out;
  for (const std::string& c : h.comments) out += "#[" + c + "]\n";
  out += "#[Histogram log format version 1.3]\n";
  out += "#[StartTime: " + Fixed3(h.start_time_s) + " (seconds since epoch), " + DateText(h.start_time_s) + "]\n";
  out += "#[BaseTime: " + Fixed3(h.base_time_s) + " (seconds since epoch)]\n";
  out += "#[MaxValueDivisor: " + Fixed3(h.max_value_divisor) + "]\n";
  out += "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n";
  return out;
}

std::string HlogIntervalLine(const Histogram& h, double start_s, double length_s, double max_value_divisor,
                             std::string_view tag) {
  std::string out;
  if (!tag.empty()) out += "Tag=" + std::string(tag) + ",";
  out += Fixed3(start_s) + "," + Fixed3(length_s) + "," +
         Fixed3(static_cast<double>(h.max()) / (max_value_divisor > 0 ? max_value_divisor : 1.0)) + "," +
         Base64Encode(h.EncodeCompressed()) + "\n";
  return out;
}

Result<Hlog> ParseHlog(std::string_view text) {
  Hlog log;
  size_t line_no = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::string where = "hlog line " + std::to_string(line_no) + ": ";
    if (line.starts_with("#[StartTime: ")) {
      log.start_time_s = HeaderNumber(line, "#[StartTime: ");
      if (!log.start_time_s) return Status::InvalidArgument(where + "bad StartTime");
      continue;
    }
    if (line.starts_with("#[BaseTime: ")) {
      log.base_time_s = HeaderNumber(line, "#[BaseTime: ");
      if (!log.base_time_s) return Status::InvalidArgument(where + "bad BaseTime");
      continue;
    }
    if (line.starts_with("#[MaxValueDivisor: ")) {
      log.max_value_divisor = HeaderNumber(line, "#[MaxValueDivisor: ");
      if (!log.max_value_divisor) return Status::InvalidArgument(where + "bad MaxValueDivisor");
      continue;
    }
    if (line.empty() || line.starts_with("#") || line.starts_with("\"StartTimestamp\"")) continue;
    std::vector<std::string_view> fields;
    for (size_t start = 0;;) {
      const size_t comma = line.find(',', start);
      fields.push_back(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    HlogInterval in;
    if (!fields.empty() && fields.front().starts_with("Tag=")) {
      in.tag = std::string(fields.front().substr(4));
      fields.erase(fields.begin());
    }
    if (fields.size() != 4) return Status::InvalidArgument(where + "expected 4 fields after the tag");
    const auto start = ParseDouble(fields[0]);
    const auto length = ParseDouble(fields[1]);
    const auto max = ParseDouble(fields[2]);
    if (!start || !length || !max) return Status::InvalidArgument(where + "bad number");
    auto bytes = Base64Decode(fields[3]);
    if (!bytes.ok()) return Status::InvalidArgument(where + bytes.status().message());
    auto h = Histogram::DecodeCompressed(*bytes);
    if (!h.ok()) return Status::InvalidArgument(where + h.status().message());
    in.start_s = *start;
    in.length_s = *length;
    in.max = *max;
    in.histogram = std::move(*h);
    log.intervals.push_back(std::move(in));
  }
  return log;
}

Result<std::unique_ptr<HlogFile>> HlogFile::Create(const std::string& path, const HlogHeader& header) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IoError("cannot write '" + path + "': " + std::strerror(errno));
  std::unique_ptr<HlogFile> f(new HlogFile(fd, path, header.max_value_divisor));
  if (Status s = f->WriteAll(HlogHeaderText(header)); !s.ok()) return s;
  return f;
}

HlogFile::~HlogFile() { close(fd_); }

Status HlogFile::Append(const Histogram& histogram, double start_s, double length_s, std::string_view tag) {
  return WriteAll(HlogIntervalLine(histogram, start_s, length_s, max_value_divisor_, tag));
}

Status HlogFile::WriteAll(std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = write(fd_, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::IoError("cannot write '" + path_ + "': " + std::strerror(n < 0 ? errno : ENOSPC));
    text.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

}  // namespace fairbench
