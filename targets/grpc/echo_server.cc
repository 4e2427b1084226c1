#include "targets/grpc/echo_server.h"

#include <grpcpp/alarm.h>
#include <grpcpp/ext/health_check_service_server_builder_option.h>
#include <grpcpp/health_check_service_interface.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "echo.grpc.pb.h"

namespace fairbench::targets {
namespace {

using fairbench::echo::v1::Echo;
using fairbench::echo::v1::EchoReply;
using fairbench::echo::v1::EchoRequest;
using fairbench::echo::v1::StatsReply;
using fairbench::echo::v1::StatsRequest;

// What both APIs share: the request's reading of the server's defaults and
// the counts.
struct Shared {
  const EchoServerOptions* opt;
  EchoCounts* counts;
  RequestCounter* counter;

  uint32_t Delay(const EchoRequest& r) const { return r.delay_ms() != 0 ? r.delay_ms() : opt->delay_ms; }
  uint32_t Messages(const EchoRequest& r) const {
    if (r.status() != 0) return 0;
    return r.messages() != 0 ? r.messages() : opt->stream_messages;
  }
  static grpc::Status StatusOf(const EchoRequest& r) {
    if (r.status() <= 0 || r.status() > 16) return grpc::Status::OK;
    return grpc::Status(static_cast<grpc::StatusCode>(r.status()), r.error_message());
  }
  static void Fill(const EchoRequest& r, uint32_t index, EchoReply* reply) {
    if (r.reply_bytes() != 0) reply->set_payload(std::string(r.reply_bytes(), 'x'));
    else reply->set_payload(r.payload());
    reply->set_index(index);
  }
  void Count(bool unary, const grpc::Status& s) const {
    (unary ? counts->unary : counts->stream).fetch_add(1, std::memory_order_relaxed);
    const int code = static_cast<int>(s.error_code());
    if (code >= 0 && code <= 16) counts->by_status[static_cast<size_t>(code)].fetch_add(1, std::memory_order_relaxed);
    counter->Increment();
  }
  void Stats(StatsReply* reply) const {
    reply->set_unary_calls(counts->unary.load());
    reply->set_stream_calls(counts->stream.load());
    reply->set_stream_messages(counts->stream_messages.load());
    for (const auto& n : counts->by_status) reply->add_by_status(n.load());
  }
};

Result<std::string> ReadPem(const std::string& path, const std::string& flag) {
  if (path.empty()) return Status::InvalidArgument(flag + ": needed for TLS (--tls-cert and --tls-key go together)");
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in || ss.str().empty()) return Status::InvalidArgument(flag + ": cannot read '" + path + "'");
  return ss.str();
}

std::chrono::system_clock::time_point After(uint32_t ms) {
  return std::chrono::system_clock::now() + std::chrono::milliseconds(ms);
}

// ---------------------------------------------------------------- callback

// A unary call: its status after the delay (an Alarm: no thread waits).
class UnaryReactor final : public grpc::ServerUnaryReactor {
 public:
  UnaryReactor(const Shared* sh, grpc::Status status, uint32_t delay_ms) : sh_(sh), status_(std::move(status)) {
    if (delay_ms == 0) {
      End();
    } else {
      alarm_.Set(After(delay_ms), [this](bool) { End(); });
    }
  }
  void OnCancel() override { alarm_.Cancel(); }
  void OnDone() override { delete this; }

 private:
  void End() {
    sh_->Count(true, status_);
    Finish(status_);
  }
  const Shared* sh_;
  grpc::Status status_;
  grpc::Alarm alarm_;
};

// A server-streaming call: `n` replies, each after the delay, then the status.
class StreamReactor final : public grpc::ServerWriteReactor<EchoReply> {
 public:
  StreamReactor(const Shared* sh, const EchoRequest& request)
      : sh_(sh),
        request_(request),
        status_(Shared::StatusOf(request)),
        n_(sh->Messages(request)),
        delay_ms_(sh->Delay(request)) {
    Next();
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      End(grpc::Status(grpc::StatusCode::CANCELLED, "the client went away"));
      return;
    }
    sh_->counts->stream_messages.fetch_add(1, std::memory_order_relaxed);
    ++sent_;
    Next();
  }
  void OnCancel() override { alarm_.Cancel(); }
  void OnDone() override { delete this; }

 private:
  void Next() {
    if (sent_ == n_ && !(n_ == 0 && !waited_)) {
      End(status_);
      return;
    }
    if (delay_ms_ == 0) {
      Write(true);
      return;
    }
    alarm_.Set(After(delay_ms_), [this](bool ok) { Write(ok); });
  }
  void Write(bool ok) {
    waited_ = true;
    if (!ok) {
      End(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled"));
      return;
    }
    if (sent_ == n_) {  // a call that writes nothing, after its one delay
      End(status_);
      return;
    }
    Shared::Fill(request_, sent_, &reply_);
    StartWrite(&reply_);
  }
  void End(const grpc::Status& s) {
    sh_->Count(false, s);
    Finish(s);
  }
  const Shared* sh_;
  EchoRequest request_;
  EchoReply reply_;
  grpc::Status status_;
  uint32_t n_;
  uint32_t delay_ms_;
  uint32_t sent_ = 0;
  bool waited_ = false;
  grpc::Alarm alarm_;
};

class CallbackEcho final : public Echo::CallbackService {
 public:
  explicit CallbackEcho(Shared sh) : sh_(sh) {}
  grpc::ServerUnaryReactor* Unary(grpc::CallbackServerContext*, const EchoRequest* request, EchoReply* reply) override {
    grpc::Status status = Shared::StatusOf(*request);
    if (status.ok()) Shared::Fill(*request, 0, reply);
    return new UnaryReactor(&sh_, std::move(status), sh_.Delay(*request));
  }
  grpc::ServerWriteReactor<EchoReply>* ServerStream(grpc::CallbackServerContext*, const EchoRequest* request) override {
    return new StreamReactor(&sh_, *request);
  }
  grpc::ServerUnaryReactor* Stats(grpc::CallbackServerContext* ctx, const StatsRequest*, StatsReply* reply) override {
    sh_.Stats(reply);
    grpc::ServerUnaryReactor* r = ctx->DefaultReactor();
    r->Finish(grpc::Status::OK);
    return r;
  }

 private:
  Shared sh_;
};

// -------------------------------------------------------------------- sync

class SyncEcho final : public Echo::Service {
 public:
  explicit SyncEcho(Shared sh) : sh_(sh) {}
  grpc::Status Unary(grpc::ServerContext*, const EchoRequest* request, EchoReply* reply) override {
    Sleep(sh_.Delay(*request));
    grpc::Status status = Shared::StatusOf(*request);
    if (status.ok()) Shared::Fill(*request, 0, reply);
    sh_.Count(true, status);
    return status;
  }
  grpc::Status ServerStream(grpc::ServerContext* ctx, const EchoRequest* request,
                            grpc::ServerWriter<EchoReply>* writer) override {
    const uint32_t n = sh_.Messages(*request);
    const uint32_t delay = sh_.Delay(*request);
    grpc::Status status = Shared::StatusOf(*request);
    if (n == 0) Sleep(delay);
    EchoReply reply;
    for (uint32_t i = 0; i < n; ++i) {
      Sleep(delay);
      Shared::Fill(*request, i, &reply);
      if (ctx->IsCancelled() || !writer->Write(reply)) {
        status = grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
        break;
      }
      sh_.counts->stream_messages.fetch_add(1, std::memory_order_relaxed);
    }
    sh_.Count(false, status);
    return status;
  }
  grpc::Status Stats(grpc::ServerContext*, const StatsRequest*, StatsReply* reply) override {
    sh_.Stats(reply);
    return grpc::Status::OK;
  }

 private:
  static void Sleep(uint32_t ms) {
    if (ms != 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  }
  Shared sh_;
};

}  // namespace

EchoServer::EchoServer(const EchoServerOptions& options, RequestCounter* counter) : opt_(options), counter_(counter) {}

EchoServer::~EchoServer() { Stop(); }

Status EchoServer::Start() {
  const Shared sh{&opt_, &counts_, counter_};
  if (opt_.api == GrpcApi::kCallback) {
    service_ = std::make_unique<CallbackEcho>(sh);
  } else {
    service_ = std::make_unique<SyncEcho>(sh);
  }
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  const std::string host = opt_.host.find(':') != std::string::npos ? "[" + opt_.host + "]" : opt_.host;
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (!opt_.tls_cert.empty() || !opt_.tls_key.empty()) {
    auto cert = ReadPem(opt_.tls_cert, "--tls-cert");
    if (!cert.ok()) return cert.status();
    auto key = ReadPem(opt_.tls_key, "--tls-key");
    if (!key.ok()) return key.status();
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({*key, *cert});
    credentials = grpc::SslServerCredentials(ssl);
  }
  int selected = 0;
  builder.AddListeningPort(host + ":" + std::to_string(opt_.port), credentials, &selected);
  builder.RegisterService(service_.get());
  if (opt_.api == GrpcApi::kSync) {
    // The synchronous API: --threads completion queues, each polled by up
    // to two threads; handler threads grow with the calls in flight, as
    // the API does by default (a thread cap would refuse calls with
    // RESOURCE_EXHAUSTED).
    builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::NUM_CQS, opt_.threads);
    builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, 1);
    builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, 2);
  }
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || selected == 0) {
    server_.reset();
    return Status::Unavailable("cannot listen on " + host + ":" + std::to_string(opt_.port));
  }
  port_ = static_cast<uint16_t>(selected);
  server_->GetHealthCheckService()->SetServingStatus("fairbench.echo.v1.Echo", true);
  return Status::Ok();
}

void EchoServer::Stop() {
  if (server_ == nullptr) return;
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server_->Wait();
  server_.reset();
}

}  // namespace fairbench::targets
