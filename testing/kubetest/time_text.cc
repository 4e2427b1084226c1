#include "testing/kubetest/time_text.h"

#include "common/api/time_text.h"

namespace fairbench::kubetest {

std::string FormatTime(std::chrono::system_clock::time_point t) { return api::FormatTimeSeconds(t); }

std::optional<std::chrono::system_clock::time_point> ParseTime(const std::string& text) {
  auto t = api::ParseTime(text);
  if (!t.ok()) return std::nullopt;
  return *t;
}

std::string HumanDuration(std::chrono::seconds d) {
  long long seconds = d.count();
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 60 * 2) return std::to_string(seconds) + "s";
  long long minutes = seconds / 60;
  if (minutes < 10) {
    long long s = seconds % 60;
    return s == 0 ? std::to_string(minutes) + "m" : std::to_string(minutes) + "m" + std::to_string(s) + "s";
  }
  if (minutes < 60 * 3) return std::to_string(minutes) + "m";
  long long hours = minutes / 60;
  if (hours < 8) {
    long long m = minutes % 60;
    return m == 0 ? std::to_string(hours) + "h" : std::to_string(hours) + "h" + std::to_string(m) + "m";
  }
  if (hours < 48) return std::to_string(hours) + "h";
  if (hours < 24 * 8) {
    long long h = hours % 24;
    return h == 0 ? std::to_string(hours / 24) + "d" : std::to_string(hours / 24) + "d" + std::to_string(h) + "h";
  }
  if (hours < 24 * 365 * 2) return std::to_string(hours / 24) + "d";
  if (hours < 24 * 365 * 8) {
    long long dy = (hours / 24) % 365;
    return dy == 0 ? std::to_string(hours / 24 / 365) + "y"
                   : std::to_string(hours / 24 / 365) + "y" + std::to_string(dy) + "d";
  }
  return std::to_string(hours / 24 / 365) + "y";
}

}  // namespace fairbench::kubetest
