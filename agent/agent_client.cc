#include "agent/agent_client.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <random>

#include "agent/grpc_call.h"
#include "agent/job_options.h"
#include "agent/request.h"
#include "agent/request_text.h"
#include "agent/script.h"
#include "agent/url.h"
#include "common/backoff.h"
#include "common/cpu_view.h"
#include "common/tls_files.h"
#include "common/wire.h"
#include "common/wrk_summary.h"
#include "common/wire_job.h"

namespace fairbench::agent {
namespace {

// gRPC keepalive: ping every 500 ms, give up after 500 ms without an
// answer, so a silent network failure stops the load within about a second.
grpc::ChannelArguments ChannelArgs() {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 500);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 500);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  args.SetInt(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, 64 * 1024 * 1024);
  return args;
}

}  // namespace

Result<std::shared_ptr<grpc::ChannelCredentials>> AgentCredentials(const AgentTls& tls) {
  if (!tls.enabled()) {
    if (!tls.cert_file.empty() || !tls.key_file.empty() || !tls.server_name.empty()) {
      return Status::InvalidArgument("--tls-cert, --tls-key and --tls-server-name need --tls-ca");
    }
    return grpc::InsecureChannelCredentials();
  }
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return Status::InvalidArgument("--tls-cert and --tls-key go together (the agent's client certificate)");
  }
  grpc::SslCredentialsOptions o;
  auto ca = tls::ReadCertificates(tls.ca_file, "--tls-ca");
  if (!ca.ok()) return ca.status();
  o.pem_root_certs = *ca;
  if (!tls.cert_file.empty()) {
    auto cert = tls::ReadCertificates(tls.cert_file, "--tls-cert");
    if (!cert.ok()) return cert.status();
    auto key = tls::ReadPrivateKey(tls.key_file, "--tls-key");
    if (!key.ok()) return key.status();
    if (Status s = tls::CheckKeyPair(*cert, *key, "--tls-cert and --tls-key"); !s.ok()) return s;
    o.pem_cert_chain = *cert;
    o.pem_private_key = *key;
  }
  return grpc::SslCredentials(o);
}

AgentClient::AgentClient(AgentClientOptions options) : options_(std::move(options)) {
  if (options_.agent_id.empty()) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    options_.agent_id = std::string(host) + "-" + std::to_string(getpid());
  }
  if (options_.node.empty()) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    options_.node = host;
  }
}

AgentClient::~AgentClient() {
  Shutdown();
  StopJob();
}

void AgentClient::Shutdown() {
  shutdown_ = true;
  std::lock_guard<std::mutex> lock(mu_);
  if (engine_ != nullptr) engine_->Stop();
  if (context_ != nullptr) context_->TryCancel();
}

bool AgentClient::Write(const v1::AgentMessage& msg) {
  std::lock_guard<std::mutex> lock(write_mu_);
  grpc::ClientReaderWriter<v1::AgentMessage, v1::ControllerMessage>* stream;
  {
    std::lock_guard<std::mutex> l(mu_);
    stream = stream_;
  }
  return stream != nullptr && stream->Write(msg);
}

Status AgentClient::Run() {
  // Redials: 100 ms doubling to 5 s, each stretched by up to half.
  Backoff backoff(BackoffPolicy{std::chrono::milliseconds(100), std::chrono::seconds(5), 2.0, 0.5},
                  static_cast<uint64_t>(getpid()));
  auto last_alive = std::chrono::steady_clock::now();
  while (!shutdown_) {
    const auto began = std::chrono::steady_clock::now();
    const Status s = Session();
    if (!s.ok()) return s;
    if (shutdown_) break;
    const auto now = std::chrono::steady_clock::now();
    if (now - began > std::chrono::seconds(5)) {
      backoff.Reset();  // the session was healthy for a while
      last_alive = now;
    }
    if (options_.give_up_after.count() > 0 && now - last_alive > options_.give_up_after) {
      return Status::Unavailable("no controller at " + options_.controller + " for " +
                                 std::to_string(options_.give_up_after.count()) + " ms");
    }
    std::this_thread::sleep_for(backoff.Next());
  }
  return Status::Ok();
}

Status AgentClient::Session() {
  // Read at every dial: a certificate renewed on disk is used from now on.
  auto credentials = AgentCredentials(options_.tls);
  if (!credentials.ok()) {
    // The files were readable at start (main checks): a rotation half done?
    spdlog::warn("TLS files: {} (retrying)", credentials.status().message());
    return Status::Ok();
  }
  grpc::ChannelArguments args = ChannelArgs();
  if (!options_.tls.server_name.empty()) args.SetSslTargetNameOverride(options_.tls.server_name);
  auto channel = grpc::CreateCustomChannel(options_.controller, *credentials, args);
  auto stub = v1::AgentHub::NewStub(channel);
  grpc::ClientContext context;
  auto stream = stub->Connect(&context);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutdown_) return Status::Ok();
    context_ = &context;
    stream_ = stream.get();
  }
  v1::AgentMessage hello;
  v1::Hello* h = hello.mutable_hello();
  h->set_agent_id(options_.agent_id);
  h->set_node(options_.node);
  h->set_cores(static_cast<uint32_t>(options_.cpus.empty() ? sysconf(_SC_NPROCESSORS_ONLN)
                                                           : static_cast<long>(options_.cpus.size())));
  h->set_version(FAIRBENCH_VERSION);
  h->set_token(options_.token);
  h->set_cpu_view(CpuViewToJson(ReadCpuView()).dump());
  Write(hello);

  bool welcomed = false;
  v1::ControllerMessage msg;
  while (stream->Read(&msg)) {
    switch (msg.body_case()) {
      case v1::ControllerMessage::kWelcome:
        welcomed = true;
        spdlog::info("connected to controller {} as {}", options_.controller, options_.agent_id);
        break;
      case v1::ControllerMessage::kLoadJob: StartJob(msg.load_job()); break;
      case v1::ControllerMessage::kCancel: {
        std::lock_guard<std::mutex> lock(mu_);
        if (engine_ != nullptr && msg.cancel().job_id() == job_id_) {
          spdlog::info("job {} cancelled: {}", job_id_, msg.cancel().reason());
          engine_->Stop();
        }
        break;
      }
      case v1::ControllerMessage::BODY_NOT_SET: break;
    }
  }
  // The stream is gone: no load without a controller (invariant 1).
  StopJob();
  {
    std::lock_guard<std::mutex> lock(mu_);
    context_ = nullptr;
    stream_ = nullptr;
  }
  const grpc::Status status = stream->Finish();
  if (status.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
    return Status::FailedPrecondition("controller " + options_.controller + " refused this agent (UNAUTHENTICATED): " +
                                      status.error_message() + "; check --token-file or FAIRBENCH_AGENT_TOKEN");
  }
  if (!shutdown_) {
    spdlog::warn("stream to controller {} ended{}: {}", options_.controller, welcomed ? "" : " before a welcome",
                 status.error_message().empty() ? "closed" : status.error_message());
  }
  return Status::Ok();
}

void AgentClient::StartJob(const v1::LoadJob& job) {
  std::string busy_with;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (engine_ != nullptr || !job_id_.empty()) {
      busy_with = job_id_;
    } else {
      job_id_ = job.job_id();
    }
  }
  if (!busy_with.empty()) {
    v1::AgentMessage busy;
    busy.mutable_job_failed()->set_job_id(job.job_id());
    busy.mutable_job_failed()->set_reason("agent busy with job " + busy_with);
    Write(busy);
    return;
  }
  if (job_thread_.joinable()) job_thread_.join();
  job_thread_ = std::thread([this, job] { RunJob(job); });
}

void AgentClient::RunJob(v1::LoadJob job) {
  auto fail = [&](const std::string& reason) {
    spdlog::error("job {} failed: {}", job.job_id(), reason);
    v1::AgentMessage m;
    m.mutable_job_failed()->set_job_id(job.job_id());
    m.mutable_job_failed()->set_reason(reason);
    Write(m);
    std::lock_guard<std::mutex> lock(mu_);
    job_id_.clear();
  };
  auto spec = wire::FromProto(job);
  if (!spec.ok()) return fail(spec.status().message());
  std::unique_ptr<Script> script;  // outlives the engine
  JobLocal local;
  local.cpus = options_.cpus;
  auto options = BuildEngineOptions(*spec, local, &script);
  if (!options.ok()) return fail(options.status().message());
  if (spec->probe) {
    // The script's first request, for the controller's check of the
    // endpoint; no load.
    v1::AgentMessage done;
    v1::JobDone* d = done.mutable_job_done();
    d->set_job_id(job.job_id());
    wire::ToProto(Counters{}, d->mutable_totals());
    auto parts = SplitRequests(script->FirstRequestText());
    if (!parts.ok()) return fail(parts.status().message());
    const RequestSpec& first = parts->front();
    v1::Request* r = d->mutable_first_request();
    r->set_method(first.method);
    r->set_target(first.target);
    for (const auto& [name, value] : first.headers) {
      v1::Header* h = r->add_headers();
      h->set_name(name);
      h->set_value(value);
    }
    r->set_body(first.body);
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_id_.clear();
    }
    Write(done);
    return;
  }
  Engine engine(std::move(*options));
  {
    std::lock_guard<std::mutex> lock(mu_);
    engine_ = &engine;
    if (shutdown_ || stream_ == nullptr) engine.Stop();
  }
  if (Status s = engine.Start(); !s.ok()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      engine_ = nullptr;
    }
    return fail(s.message());
  }
  spdlog::info("job {}: {} connections, {} threads against {}:{}", spec->job_id, spec->connections, spec->threads,
               spec->host, spec->port);
  Counters totals;
  RunTotals measured;
  measured.set_keep_timeline(false);
  uint64_t last_sequence = 0;
  while (auto snap = engine.NextSnapshot()) {
    totals.Add(snap->stats.counters);
    if (script != nullptr) measured.Add(*snap);  // for done()
    last_sequence = snap->sequence;
    v1::AgentMessage m;
    wire::ToProto(*snap, job.job_id(), m.mutable_snapshot());
    // The controller's offset for this agent spreads a cell's snapshots over
    // the interval; the last one goes at once, so the cell ends on time.
    if (spec->send_offset.count() > 0 && !engine.Ending()) engine.HoldUnlessStopped(spec->send_offset);
    if (!Write(m)) engine.Stop();  // the stream broke: stop within the interval
  }
  const EndReport end = engine.Finish();
  {
    std::lock_guard<std::mutex> lock(mu_);
    engine_ = nullptr;
    job_id_.clear();
  }
  v1::AgentMessage done;
  v1::JobDone* d = done.mutable_job_done();
  d->set_job_id(job.job_id());
  d->set_last_sequence(last_sequence);
  wire::ToProto(totals, d->mutable_totals());
  d->set_drained(end.drained);
  d->set_abandoned(end.abandoned);
  d->set_connections_peak(end.connections_peak);
  d->set_measure_seconds(end.measure_seconds);
  d->set_stopped_early(end.stopped_early);
  wire::ToProto(end.idle, d->mutable_idle());
  if (script != nullptr) {
    // The script's done(), with this agent's numbers; what it prints goes
    // to the controller, with the error that stopped the load if one did.
    std::string output;
    const std::string load_error = script->LoadError();
    if (Status s = script->Done(SummaryForDone(measured.measure(), end), &output); !s.ok()) {
      output += "error in done(): " + s.message() + "\n";
    }
    if (!load_error.empty()) output += "the load stopped: " + load_error + "\n";
    d->set_script_output(output);
  }
  Write(done);
  spdlog::info("job {} done: {} requests{}", job.job_id(), totals.requests,
               end.stopped_early ? " (stopped early)" : "");
}

void AgentClient::StopJob() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (engine_ != nullptr) engine_->Stop();
  }
  if (job_thread_.joinable()) job_thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  job_id_.clear();
}

}  // namespace fairbench::agent
