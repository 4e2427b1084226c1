#include "targets/common/target_main.h"

#include <gnu/libc-version.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "targets/common/request_counter.h"

namespace fairbench::targets {
namespace {

RequestCounter g_counter;
std::atomic<bool> g_counting{false};  // set before the server starts

}  // namespace

std::optional<uint64_t> ParseUserId(std::string_view text) {
  if (text.empty() || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  uint64_t id = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return id;
}

std::string AllocatorFact() {
  const char* preload = std::getenv("LD_PRELOAD");
  std::string glibc = std::string("glibc malloc (glibc ") + gnu_get_libc_version() + ")";
  if (preload == nullptr || *preload == '\0') return glibc;
  return std::string("LD_PRELOAD=") + preload + " (replaces " + glibc + " where it defines malloc)";
}

std::optional<int> ParseTargetCommandLine(CLI::App& app, int argc, char** argv, TargetFlags* flags,
                                          const std::function<std::string(const TargetFlags&)>& facts) {
  const bool describe =
      std::any_of(argv + 1, argv + argc, [](const char* arg) { return std::string_view(arg) == "--describe"; });
  AddTargetFlags(app, flags);
  bool describe_flag = false;
  app.add_flag("--describe", describe_flag, "print this build's fairness facts as one JSON object and exit");
  if (describe) app.get_option("--port")->required(false);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (describe) {
    std::printf("%s\n", facts(*flags).c_str());
    std::fflush(stdout);
    return 0;
  }
  return std::nullopt;
}

void PrintFacts(const std::string& facts_json) {
  std::printf("fairbench-target-facts: %s\n", facts_json.c_str());
  std::fflush(stdout);
}

Result<std::unique_ptr<SampledRequestLog>> StartServing(const std::string& path) {
  std::signal(SIGPIPE, SIG_IGN);
  auto log = SampledRequestLog::Start(path, &g_counter);
  if (log.ok() && *log != nullptr) g_counting.store(true, std::memory_order_release);
  return log;
}

void CountRequest() {
  if (g_counting.load(std::memory_order_relaxed)) g_counter.Increment();
}

}  // namespace fairbench::targets
