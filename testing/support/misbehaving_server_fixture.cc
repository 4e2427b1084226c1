#include "testing/support/misbehaving_server_fixture.h"

#include <signal.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "testing/support/bin_dir.h"
#include "testing/support/ports.h"

namespace fairbench::testing {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Result<uint16_t> MisbehavingServerFixture::RefusedPort() { return FreeLoopbackPort(); }

Result<std::unique_ptr<MisbehavingServerFixture>> MisbehavingServerFixture::Start(MisbehavingFixtureOptions options) {
  auto dir = TempDir::Create("fairbench-misbehaving");
  if (!dir.ok()) return dir.status();
  if (options.binary.empty()) options.binary = BinaryPath("fairbench-test-misbehaving-server");

  SubprocessOptions sp;
  sp.argv = {options.binary,
             "--port",
             "0",
             "--host",
             options.host,
             "--mode",
             std::string(ModeName(options.mode)),
             "--delay",
             std::to_string(options.delay.count()) + "ms",
             "--stats-file",
             dir->File("stats.json")};
  sp.stdout_to = Redirect::File(dir->File("stdout.log"));
  sp.stderr_to = Redirect::File(dir->File("stderr.log"));
  auto process = Subprocess::Start(std::move(sp));
  if (!process.ok()) return process.status();

  std::unique_ptr<MisbehavingServerFixture> f(
      new MisbehavingServerFixture(options, std::move(*dir), std::move(*process)));
  // Wait for "listening on HOST:PORT mode M".
  auto deadline = std::chrono::steady_clock::now() + options.start_timeout;
  while (true) {
    std::string out = ReadFile(f->dir_.File("stdout.log"));
    auto at = out.find("listening on ");
    auto eol = out.find('\n', at == std::string::npos ? 0 : at);
    if (at != std::string::npos && eol != std::string::npos) {
      std::string line = out.substr(at, eol - at);
      auto colon = line.rfind(':', line.find(" mode "));
      f->port_ = static_cast<uint16_t>(std::stoi(line.substr(colon + 1)));
      return f;
    }
    if (auto st = f->process_.Poll()) {
      return Status::Unavailable("misbehaving server exited (" + st->ToString() + "): " + f->Output());
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return Status::DeadlineExceeded("misbehaving server did not start: " + f->Output());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

std::string MisbehavingServerFixture::Output() const {
  return ReadFile(dir_.File("stdout.log")) + ReadFile(dir_.File("stderr.log"));
}

Result<MisbehavingStats> MisbehavingServerFixture::ReadStatsFile() const {
  std::string text = ReadFile(dir_.File("stats.json"));
  if (text.empty()) return Status::NotFound("no stats file yet");
  return MisbehavingStats::FromJson(text);
}

Result<MisbehavingStats> MisbehavingServerFixture::Stats(std::chrono::milliseconds timeout) {
  if (!process_.running()) return Status::FailedPrecondition("misbehaving server is not running");
  if (Status s = process_.Kill(SIGUSR1); !s.ok()) return s;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    auto stats = ReadStatsFile();
    if (stats.ok() && stats->snapshot > last_snapshot_) {
      last_snapshot_ = stats->snapshot;
      return stats;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return Status::DeadlineExceeded("no new stats snapshot: " + Output());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

Result<MisbehavingStats> MisbehavingServerFixture::Stop(std::chrono::milliseconds timeout) {
  if (!process_.running()) return Status::FailedPrecondition("misbehaving server is not running");
  if (Status s = process_.Kill(SIGTERM); !s.ok()) return s;
  auto exit = process_.Wait(timeout);
  if (!exit.ok()) return exit.status();
  if (!exit->success()) {
    return Status::Internal("misbehaving server ended with " + exit->ToString() + ": " + Output());
  }
  auto stats = ReadStatsFile();
  if (stats.ok()) last_snapshot_ = stats->snapshot;
  return stats;
}

}  // namespace fairbench::testing
