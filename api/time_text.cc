#include "api/time_text.h"

#include <charconv>
#include <cstdio>

#include "api/node.h"

namespace fairbench::api {
namespace {

bool Digits(std::string_view s, size_t pos, size_t n, int* out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

}  // namespace

Result<Time> ParseTime(std::string_view s) {
  const auto fail = [&] {
    return Status::InvalidArgument(Quote(s) + " is not an RFC 3339 time (e.g. \"2026-09-28T12:00:00Z\")");
  };
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!Digits(s, 0, 4, &year) || s.size() < 20 || s[4] != '-' || !Digits(s, 5, 2, &month) || s[7] != '-' ||
      !Digits(s, 8, 2, &day) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || !Digits(s, 11, 2, &hour) ||
      s[13] != ':' || !Digits(s, 14, 2, &minute) || s[16] != ':' || !Digits(s, 17, 2, &second)) {
    return fail();
  }
  const std::chrono::year_month_day ymd{std::chrono::year(year), std::chrono::month(static_cast<unsigned>(month)),
                                        std::chrono::day(static_cast<unsigned>(day))};
  if (!ymd.ok() || hour > 23 || minute > 59 || second > 60) return fail();
  // Time counts nanoseconds in 64 bits: 1677-09-21 to 2262-04-11. Beyond
  // that the conversion below would overflow.
  if (year < 1678 || year > 2261) {
    return Status::InvalidArgument(Quote(s) + " is outside the years 1678 to 2261 that a time can hold");
  }
  size_t i = 19;
  int64_t nanos = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    int n = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      if (n < 9) {
        nanos = nanos * 10 + (s[i] - '0');
        ++n;
      }
      ++i;
    }
    if (n == 0) return fail();
    for (; n < 9; ++n) nanos *= 10;
  }
  int offset_minutes = 0;
  if (i < s.size() && (s[i] == 'Z' || s[i] == 'z')) {
    ++i;
  } else if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    int oh = 0, om = 0;
    if (!Digits(s, i + 1, 2, &oh) || i + 3 >= s.size() || s[i + 3] != ':' || !Digits(s, i + 4, 2, &om) || oh > 23 ||
        om > 59) {
      return fail();
    }
    offset_minutes = (oh * 60 + om) * (s[i] == '-' ? -1 : 1);
    i += 6;
  } else {
    return fail();
  }
  if (i != s.size()) return fail();
  const auto days = std::chrono::sys_days(ymd);
  return Time(days) + std::chrono::hours(hour) + std::chrono::minutes(minute - offset_minutes) +
         std::chrono::seconds(second) + std::chrono::nanoseconds(nanos);
}

namespace {

// `fraction_digits`: -1 as many as needed (none for whole seconds), else
// exactly that many (0 to 9), truncated.
std::string Format(Time t, int fraction_digits) {
  const auto days = std::chrono::floor<std::chrono::days>(t);
  const std::chrono::year_month_day ymd{days};
  auto rest = t - days;
  const auto h = std::chrono::duration_cast<std::chrono::hours>(rest);
  rest -= h;
  const auto m = std::chrono::duration_cast<std::chrono::minutes>(rest);
  rest -= m;
  const auto sec = std::chrono::duration_cast<std::chrono::seconds>(rest);
  rest -= sec;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02d", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()), static_cast<int>(h.count()),
                static_cast<int>(m.count()), static_cast<int>(sec.count()));
  std::string out = buf;
  long long ns = static_cast<long long>(rest.count());
  if (fraction_digits != 0 && (ns > 0 || fraction_digits > 0)) {
    std::snprintf(buf, sizeof buf, ".%09lld", ns);
    std::string frac = buf;
    if (fraction_digits > 0) {
      frac.resize(static_cast<size_t>(1 + fraction_digits));
    } else {
      while (frac.back() == '0') frac.pop_back();
    }
    out += frac;
  }
  return out + "Z";
}

}  // namespace

std::string FormatTime(Time t) { return Format(t, -1); }
std::string FormatTimeSeconds(Time t) { return Format(t, 0); }
std::string FormatMicroTime(Time t) { return Format(t, 6); }

}  // namespace fairbench::api
