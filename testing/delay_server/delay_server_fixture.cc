#include "testing/delay_server/delay_server_fixture.h"

#include <signal.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "testing/support/bin_dir.h"

namespace fairbench::testing {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Nanos(std::chrono::nanoseconds d) { return std::to_string(d.count()) + "ns"; }

}  // namespace

Result<std::unique_ptr<DelayServerFixture>> DelayServerFixture::Start(DelayFixtureOptions options) {
  auto dir = TempDir::Create("fairbench-delay");
  if (!dir.ok()) return dir.status();
  if (options.binary.empty()) options.binary = BinaryPath("fairbench-test-delay-server");

  SubprocessOptions sp;
  if (!options.cpus.empty()) {
    std::string list;
    for (int c : options.cpus) list += (list.empty() ? "" : ",") + std::to_string(c);
    sp.argv = {"taskset", "-c", list};
  }
  for (const std::string& a :
       {options.binary, std::string("--port"), std::string("0"), std::string("--host"), options.host,
        std::string("--delay"), Nanos(options.delay), std::string("--stall-every"), std::to_string(options.stall_every),
        std::string("--stall"), Nanos(options.stall), std::string("--records"), dir->File("records.txt")}) {
    sp.argv.push_back(a);
  }
  if (options.record_requests) sp.argv.push_back("--record-requests");
  if (options.index_header) sp.argv.push_back("--index-header");
  sp.stdout_to = Redirect::File(dir->File("stdout.log"));
  sp.stderr_to = Redirect::File(dir->File("stderr.log"));
  auto process = Subprocess::Start(std::move(sp));
  if (!process.ok()) return process.status();

  std::unique_ptr<DelayServerFixture> f(new DelayServerFixture(options, std::move(*dir), std::move(*process)));
  const auto deadline = std::chrono::steady_clock::now() + options.start_timeout;
  while (true) {
    const std::string out = ReadFile(f->dir_.File("stdout.log"));
    const auto at = out.find("listening on ");
    const auto eol = out.find('\n', at == std::string::npos ? 0 : at);
    if (at != std::string::npos && eol != std::string::npos) {
      const std::string line = out.substr(at, eol - at);
      f->port_ = static_cast<uint16_t>(std::stoi(line.substr(line.rfind(':') + 1)));
      return f;
    }
    if (auto st = f->process_.Poll()) {
      return Status::Unavailable("delay server exited (" + st->ToString() + "): " + f->Output());
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return Status::DeadlineExceeded("delay server did not start: " + f->Output());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

std::string DelayServerFixture::Output() const {
  return ReadFile(dir_.File("stdout.log")) + ReadFile(dir_.File("stderr.log"));
}

Result<DelayRecords> DelayServerFixture::ReadRecords() const {
  const std::string text = ReadFile(dir_.File("records.txt"));
  if (text.empty()) return Status::NotFound("no records file yet");
  return DelayRecords::FromText(text);
}

Result<DelayRecords> DelayServerFixture::Records(std::chrono::milliseconds timeout) {
  if (!process_.running()) return Status::FailedPrecondition("delay server is not running");
  if (Status s = process_.Kill(SIGUSR1); !s.ok()) return s;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    auto records = ReadRecords();
    if (records.ok() && records->snapshot > last_snapshot_) {
      last_snapshot_ = records->snapshot;
      return records;
    }
    if (std::chrono::steady_clock::now() > deadline)
      return Status::DeadlineExceeded("no new records snapshot: " + Output());
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

Result<DelayRecords> DelayServerFixture::Stop(std::chrono::milliseconds timeout) {
  if (!process_.running()) return Status::FailedPrecondition("delay server is not running");
  if (Status s = process_.Kill(SIGTERM); !s.ok()) return s;
  auto exit = process_.Wait(timeout);
  if (!exit.ok()) return exit.status();
  if (!exit->success()) return Status::Internal("delay server ended with " + exit->ToString() + ": " + Output());
  auto records = ReadRecords();
  if (records.ok()) last_snapshot_ = records->snapshot;
  return records;
}

}  // namespace fairbench::testing
