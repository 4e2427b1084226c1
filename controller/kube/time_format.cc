#include "controller/kube/time_format.h"

#include <cstdio>
#include <ctime>

namespace fairbench::kube {
namespace {

std::string Format(std::chrono::system_clock::time_point t, bool micro) {
  auto secs = std::chrono::time_point_cast<std::chrono::seconds>(t);
  if (secs > t) secs -= std::chrono::seconds(1);
  std::time_t tt = std::chrono::system_clock::to_time_t(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[48];
  size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::string out(buf, n);
  if (micro) {
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(t - secs).count();
    char frac[32];
    std::snprintf(frac, sizeof frac, ".%06lld", static_cast<long long>(us));
    out += frac;
  }
  return out + "Z";
}

}  // namespace

std::string FormatTime(std::chrono::system_clock::time_point t) { return Format(t, false); }
std::string FormatMicroTime(std::chrono::system_clock::time_point t) { return Format(t, true); }

Result<std::chrono::system_clock::time_point> ParseTime(const std::string& text) {
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, &consumed) != 6) {
    return Status::InvalidArgument("not an RFC 3339 time: \"" + text + "\"");
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  auto t = std::chrono::system_clock::from_time_t(timegm(&tm));
  size_t i = static_cast<size_t>(consumed);
  if (i < text.size() && text[i] == '.') {
    ++i;
    long long frac = 0;
    int digits = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      if (digits < 9) {
        frac = frac * 10 + (text[i] - '0');
        ++digits;
      }
      ++i;
    }
    while (digits < 9) {
      frac *= 10;
      ++digits;
    }
    t += std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(frac));
  }
  if (i < text.size() && (text[i] == 'Z' || text[i] == 'z')) return t;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) {
    int hh = 0, mm = 0;
    if (std::sscanf(text.c_str() + i + 1, "%2d:%2d", &hh, &mm) != 2) {
      return Status::InvalidArgument("bad zone offset in \"" + text + "\"");
    }
    auto off = std::chrono::hours(hh) + std::chrono::minutes(mm);
    return text[i] == '+' ? t - off : t + off;
  }
  return Status::InvalidArgument("missing zone in \"" + text + "\"");
}

}  // namespace fairbench::kube
