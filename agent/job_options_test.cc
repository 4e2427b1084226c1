// The two front doors of the agent build the same engine options: the
// `load` command's flags (JobFromFlags) and a hub's job with the same
// settings both go through BuildEngineOptions. Against 127.0.0.1 only (the
// builder resolves the target; nothing is dialled).
#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>

#include "agent/job_options.h"
#include "agent/load_command.h"

namespace fairbench::agent {
namespace {

// Every setting of the options that a job or a flag can reach, as text, so
// that a difference shows up by name in the failure.
std::string Describe(const EngineOptions& o) {
  std::ostringstream s;
  for (const SocketAddress& a : o.addresses) s << "address " << a.ToString() << "\n";
  for (const BuiltRequest& r : o.requests) {
    s << "request " << r.name << " head=" << r.head << " weight=" << r.weight << "\n" << r.bytes << "\n";
  }
  s << "threads=" << o.threads << " connections=" << o.connections << " warmup=" << o.warmup.count()
    << " duration=" << o.duration.count() << " timeout=" << o.timeout.count() << " interval=" << o.interval.count()
    << " keep_alive=" << o.keep_alive << " pipeline=" << o.pipeline << " rate=" << o.rate
    << " idle_wait=" << static_cast<int>(o.idle_wait) << " offset=" << o.connection_offset
    << " total=" << o.total_connections << " start=" << o.start_at.has_value() << "\n";
  s << "cpus=";
  for (int c : o.cpus) s << c << ",";
  s << "\ntls enabled=" << o.tls.enabled << " sni=" << o.tls.server_name << " verify=" << o.tls.verify
    << " ca=" << o.tls.ca_file << " name=" << o.tls.verify_name << " alpn_h2=" << o.tls.alpn_h2 << "\n";
  s << "protocol=" << HttpProtocolName(o.protocol) << " streams=" << o.h2.max_streams
    << " stream_window=" << o.h2.stream_window << " connection_window=" << o.h2.connection_window
    << " grpc=" << o.h2.grpc << " grpc_max=" << o.h2.grpc_max_message << " unary=" << o.grpc_unary
    << " h2_requests=" << o.h2_requests.size() << "\n";
  for (const auto& r : o.h2_requests) s << "h2 request " << (r != nullptr) << "\n";
  s << "vary=" << (o.vary != nullptr);
  if (o.vary) s << " seed=" << o.vary->seed << " every=" << o.vary->verify_every;
  s << " script=" << (o.script != nullptr) << "\n";
  return s.str();
}

std::string FromFlags(const LoadFlags& flags) {
  auto load = JobFromFlags(flags);
  EXPECT_TRUE(load.ok()) << load.status().message();
  if (!load.ok()) return "";
  std::unique_ptr<Script> script;
  auto options = BuildEngineOptions(load->job, load->local, &script);
  EXPECT_TRUE(options.ok()) << options.status().message();
  return options.ok() ? Describe(*options) : "";
}

std::string FromJob(const wire::JobSpec& job, const JobLocal& local = {}) {
  std::unique_ptr<Script> script;
  auto options = BuildEngineOptions(job, local, &script);
  EXPECT_TRUE(options.ok()) << options.status().message();
  return options.ok() ? Describe(*options) : "";
}

// Catches: a setting the CLI applies that a hub's job cannot express, or
// one the builder takes from the job but the CLI never puts in it (e.g.
// -H, --rate, --idle-wait or --cpus lost between the flags and the job).
TEST(JobOptionsTest, FlagsAndJobWithTheSameSettingsBuildEqualOptions) {
  LoadFlags flags;
  flags.url = "http://127.0.0.1:8080/path?q=1";
  flags.threads = "3";
  flags.connections = "9";
  flags.duration = "4s";
  flags.warmup = "1s";
  flags.timeout = "3s";
  flags.headers = {"X-Test: 1"};
  flags.method = "PUT";
  flags.body = "hello";
  flags.rate = 120;
  flags.idle_wait = "nap";
  flags.cpus = "0";

  wire::JobSpec job;
  job.host = "127.0.0.1";
  job.port = 8080;
  job.requests = {wire::JobRequest{"", "PUT", "/path?q=1", {{"X-Test", "1"}}, "hello", 1}};
  job.connections = 9;
  job.threads = 3;
  job.duration = std::chrono::seconds(4);
  job.warmup = std::chrono::seconds(1);
  job.timeout = std::chrono::seconds(3);
  job.rate = 120;
  job.idle_wait = IdleWaitMode::kNap;
  JobLocal local;
  local.cpus = {0};

  EXPECT_EQ(FromFlags(flags), FromJob(job, local));
}

// Catches: the gRPC deadline's longer timeout, the streams or the call's
// HTTP/2 settings applied on one path only.
TEST(JobOptionsTest, GrpcFlagsAndJobBuildEqualOptions) {
  LoadFlags flags;
  flags.url = "http://127.0.0.1:50051";
  flags.threads = "2";
  flags.connections = "2";
  flags.grpc = "pkg.Echo/Unary";
  flags.metadata = {"X-Tenant: a"};
  flags.deadline = "5s";
  flags.streams = "8";

  wire::JobSpec job;
  job.host = "127.0.0.1";
  job.port = 50051;
  job.protocol = Protocol::kH2c;
  job.streams = 8;
  job.connections = 2;
  job.threads = 2;
  job.grpc = wire::JobGrpc{"pkg.Echo/Unary",        "",       {{"x-tenant", "a"}},
                           std::chrono::seconds(5), 4u << 20, GrpcCallKind::kUnknown};

  const std::string from_flags = FromFlags(flags);
  EXPECT_EQ(from_flags, FromJob(job));
  EXPECT_NE(from_flags.find("timeout=6000000000"), std::string::npos) << from_flags;
}

// Catches: --busy-poll no longer meaning --idle-wait poll in the job, or
// --vary-every's plan dropped on the way to the job.
TEST(JobOptionsTest, FlagsBecomeTheJobsFields) {
  LoadFlags flags;
  flags.url = "http://127.0.0.1:8080/item/{n}";
  flags.busy_poll = true;
  flags.vary_every = 7;
  flags.vary_seed = 42;
  flags.expect_body = "item {n}";
  auto load = JobFromFlags(flags);
  ASSERT_TRUE(load.ok()) << load.status().message();
  EXPECT_EQ(load->job.idle_wait, IdleWaitMode::kPoll);
  ASSERT_TRUE(load->job.vary.has_value());
  EXPECT_EQ(*load->job.vary, (wire::JobVary{42, 7, "item {n}", false}));
  EXPECT_EQ(load->job.EffectiveHostHeader(), "127.0.0.1:8080");
  EXPECT_TRUE(load->local.port_implicit == false);
}

// Catches: a flag error no longer named as the CLI names it.
TEST(JobOptionsTest, FlagErrorsNameTheFlag) {
  LoadFlags flags;
  flags.url = "http://127.0.0.1:8080/";
  flags.idle_wait = "sometimes";
  auto load = JobFromFlags(flags);
  ASSERT_FALSE(load.ok());
  EXPECT_EQ(load.status().message(), "--idle-wait: must be auto, block, nap or poll, got 'sometimes'");
}

}  // namespace
}  // namespace fairbench::agent
