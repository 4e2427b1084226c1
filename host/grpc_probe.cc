// GCC 12 sees a null dereference in grpc++'s async unary call set-up
// (call_op_set.h, the ops' pointers filled from a placement-new'd set)
// once PrepareUnaryCall is inlined here; the headers are not ours.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wnull-dereference"
#endif
#include "host/grpc_probe.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>
#include <grpc/grpc.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/tls_certificate_verifier.h>
#include <grpcpp/security/tls_credentials_options.h>

#include <algorithm>
#include <memory>

#include "common/grpc_message.h"

namespace fairbench::host {
namespace {

using Clock = std::chrono::system_clock;

std::shared_ptr<grpc::ChannelCredentials> Credentials(bool tls) {
  if (!tls) return grpc::InsecureChannelCredentials();
  // No root certificates are read and none is checked: the target's
  // certificate is taken as it is, its name included.
  grpc::experimental::TlsChannelCredentialsOptions options;
  options.set_verify_server_certs(false);
  options.set_check_call_host(false);
  options.set_certificate_verifier(std::make_shared<grpc::experimental::NoOpCertificateVerifier>());
  return grpc::experimental::TlsCredentials(options);
}

std::string Address(const std::string& host, uint16_t port) {
  const bool v6 = host.find(':') != std::string::npos && host.front() != '[';
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::shared_ptr<grpc::Channel> NewChannel(const std::string& address, bool tls) {
  grpc::ChannelArguments args;
  // Its own connection, never one that a concurrent probe's channel holds
  // (which could be waiting out a reconnect backoff).
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  args.SetInt(GRPC_ARG_SERVICE_CONFIG_DISABLE_RESOLUTION, 1);
  args.SetInt(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, 64 << 20);
  return grpc::CreateCustomChannel(address, Credentials(tls), args);
}

// Text for an error line: anything but printable ASCII shown as '?'.
std::string Printable(std::string text) {
  for (char& c : text) {
    if (c < 0x20 || c == 0x7f) c = '?';
  }
  return text;
}

// Connected (READY) before the deadline, or Unavailable with what gRPC says
// of the failed attempt.
Status Connect(grpc::Channel* channel, grpc::GenericStub* stub, const std::string& address,
               Clock::time_point deadline) {
  grpc_connectivity_state state = channel->GetState(/*try_to_connect=*/true);
  while (state != GRPC_CHANNEL_READY) {
    if (state == GRPC_CHANNEL_TRANSIENT_FAILURE || state == GRPC_CHANNEL_SHUTDOWN) break;
    if (!channel->WaitForStateChange(state, deadline)) {
      return Status::Unavailable("no gRPC connection to " + address + " within the time");
    }
    state = channel->GetState(/*try_to_connect=*/true);
  }
  if (state == GRPC_CHANNEL_READY) return Status::Ok();
  // A call on a channel in TRANSIENT_FAILURE fails at once with the last
  // connection error: its text says why.
  grpc::ClientContext context;
  context.set_deadline(std::min(deadline, Clock::now() + std::chrono::milliseconds(200)));
  grpc::CompletionQueue cq;
  const grpc::ByteBuffer request;
  grpc::ByteBuffer reply;
  grpc::Status status;
  auto call = stub->PrepareUnaryCall(&context, "/grpc.health.v1.Health/Check", request, &cq);
  call->StartCall();
  call->Finish(&reply, &status, reinterpret_cast<void*>(1));
  void* tag = nullptr;
  bool ok = false;
  cq.Next(&tag, &ok);
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  const std::string why = Printable(status.error_message());
  return Status::Unavailable("no gRPC connection to " + address + (why.empty() ? "" : ": " + why));
}

std::string Bytes(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (!buffer.Dump(&slices).ok()) return out;
  for (const grpc::Slice& s : slices) out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

grpc::ByteBuffer Buffer(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

Status CheckMetadata(const std::string& key, const std::string& value) {
  const bool key_ok = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
  });
  if (!key_ok) return Status::InvalidArgument("metadata key '" + Printable(key) + "': only a-z, 0-9, '-', '_' and '.'");
  if (key.rfind("grpc-", 0) == 0 || key == "content-type" || key == "te" || key == "user-agent") {
    return Status::InvalidArgument("metadata key '" + key + "' is gRPC's own");
  }
  const bool binary = key.size() > 4 && key.compare(key.size() - 4, 4, "-bin") == 0;
  if (!binary && !std::all_of(value.begin(), value.end(), [](char c) { return c >= 0x20 && c < 0x7f; })) {
    return Status::InvalidArgument("metadata '" + key + "': a value of printable ASCII (or a key ending in -bin)");
  }
  return Status::Ok();
}

// One finished step of an async call.
bool Await(grpc::CompletionQueue* cq) {
  void* tag = nullptr;
  bool ok = false;
  return cq->Next(&tag, &ok) && ok;
}

// gRPC's library, initialised once for the process: otherwise the last
// channel of a probe would shut it down (on a thread of its own) and the
// next probe start it again.
void InitGrpcOnce() {
  static const bool initialised = [] {
    grpc_init();
    return true;
  }();
  (void)initialised;
}

Result<GrpcCallResult> Call(const GrpcProbeRequest& r, const std::string& path) {
  InitGrpcOnce();
  const auto deadline = Clock::now() + r.deadline;
  const std::string address = Address(r.host, r.port);
  auto channel = NewChannel(address, r.tls);
  grpc::GenericStub stub(channel);
  if (auto st = Connect(channel.get(), &stub, address, deadline); !st.ok()) return st;

  grpc::ClientContext context;
  context.set_deadline(deadline);
  for (const auto& [k, v] : r.metadata) context.AddMetadata(k, v);
  grpc::CompletionQueue cq;
  grpc::Status status;
  GrpcCallResult out;
  const auto keep = [&out](const grpc::ByteBuffer& buffer) {
    ++out.message_count;
    if (out.messages.size() < GrpcCallResult::kMaxKeptMessages) out.messages.push_back(Bytes(buffer));
  };
  if (!r.server_streaming) {
    const grpc::ByteBuffer request = Buffer(r.message);
    grpc::ByteBuffer reply;
    auto call = stub.PrepareUnaryCall(&context, path, request, &cq);
    call->StartCall();
    call->Finish(&reply, &status, reinterpret_cast<void*>(1));
    Await(&cq);
    if (status.ok()) keep(reply);
  } else {
    // A server-streaming call on the wire: one message, the half-close,
    // then replies until the status.
    auto call = stub.PrepareCall(&context, path, &cq);
    call->StartCall(reinterpret_cast<void*>(1));
    if (Await(&cq)) {
      call->WriteLast(Buffer(r.message), grpc::WriteOptions(), reinterpret_cast<void*>(2));
      if (Await(&cq)) {
        grpc::ByteBuffer reply;
        for (;;) {
          call->Read(&reply, reinterpret_cast<void*>(3));
          if (!Await(&cq)) break;
          keep(reply);
        }
      }
    }
    call->Finish(&status, reinterpret_cast<void*>(4));
    Await(&cq);
  }
  cq.Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (cq.Next(&tag, &ok)) {
  }
  out.grpc_code = static_cast<int>(status.error_code());
  out.grpc_message = status.error_message();
  return out;
}

namespace wire = google::protobuf::internal;

// grpc-go's names of the codes, as the kubelet's messages print them.
const char* GoCodeName(int code) {
  static const char* const kNames[] = {
      "OK",       "Canceled",       "Unknown",          "InvalidArgument",   "DeadlineExceeded",
      "NotFound", "AlreadyExists",  "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
      "Aborted",  "OutOfRange",     "Unimplemented",    "Internal",          "Unavailable",
      "DataLoss", "Unauthenticated"};
  return code >= 0 && code < static_cast<int>(std::size(kNames)) ? kNames[code] : "Unknown";
}

// A duration as Go's %v prints it: 1s, 1.5s, 500ms.
std::string GoDuration(std::chrono::milliseconds d) {
  const long long ms = d.count();
  if (ms == 0) return "0s";
  if (ms < 1000) return std::to_string(ms) + "ms";
  std::string out = std::to_string(ms / 1000);
  if (ms % 1000 != 0) {
    std::string frac = std::to_string(1000 + ms % 1000).substr(1);
    while (frac.back() == '0') frac.pop_back();
    out += "." + frac;
  }
  return out + "s";
}

// HealthCheckResponse {ServingStatus status = 1}, read by hand (Debian's
// gRPC ships no health.proto); unknown fields skipped.
bool ParseHealthResponse(const std::string& bytes, int* status) {
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  *status = 0;
  while (uint32_t tag = in.ReadTag()) {
    if (tag == wire::WireFormatLite::MakeTag(1, wire::WireFormatLite::WIRETYPE_VARINT)) {
      uint64_t v = 0;
      if (!in.ReadVarint64(&v)) return false;
      *status = static_cast<int>(static_cast<int32_t>(v));
    } else if (!wire::WireFormatLite::SkipField(&in, tag)) {
      return false;
    }
  }
  return in.CurrentPosition() == static_cast<int>(bytes.size());
}

}  // namespace

std::string ServingStatusName(ServingStatus status) {
  switch (status) {
    case ServingStatus::kUnknown: return "UNKNOWN";
    case ServingStatus::kServing: return "SERVING";
    case ServingStatus::kNotServing: return "NOT_SERVING";
    case ServingStatus::kServiceUnknown: return "SERVICE_UNKNOWN";
  }
  return std::to_string(static_cast<int>(status));
}

std::string HealthStatus::Describe() const {
  if (grpc_code == 12) {
    return "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): " + grpc_message;
  }
  if (grpc_code == 4) return "timeout: health rpc did not complete within " + GoDuration(timeout);
  if (grpc_code != 0) {
    return std::string("error: health rpc probe failed: rpc error: code = ") + GoCodeName(grpc_code) +
           " desc = " + grpc_message;
  }
  if (serving != ServingStatus::kServing)
    return "service unhealthy (responded with \"" + ServingStatusName(serving) + "\")";
  return "service healthy";
}

Result<HealthStatus> GrpcHealthCheck(const std::string& host, uint16_t port, bool tls, const std::string& service,
                                     std::chrono::milliseconds timeout) {
  GrpcProbeRequest r;
  r.host = host;
  r.port = port;
  r.tls = tls;
  r.deadline = timeout;
  // HealthCheckRequest {string service = 1}.
  if (!service.empty()) {
    google::protobuf::io::StringOutputStream stream(&r.message);
    google::protobuf::io::CodedOutputStream out(&stream);
    wire::WireFormatLite::WriteString(1, service, &out);
  }
  if (r.deadline.count() <= 0) return Status::InvalidArgument("the health check's timeout must be > 0");
  auto call = Call(r, "/grpc.health.v1.Health/Check");
  if (!call.ok()) return call.status();
  HealthStatus h;
  h.timeout = timeout;
  h.grpc_code = call->grpc_code;
  h.grpc_message = call->grpc_message;
  if (h.grpc_code == 0) {
    int status = 0;
    if (call->messages.size() != 1 || !ParseHealthResponse(call->messages[0], &status)) {
      h.grpc_code = 13;  // INTERNAL, as a gRPC client says of a reply it cannot parse
      h.grpc_message = "the reply is not a grpc.health.v1.HealthCheckResponse";
    } else {
      h.serving = static_cast<ServingStatus>(status);
    }
  }
  return h;
}

Result<GrpcCallResult> GrpcProbeCall(const GrpcProbeRequest& r) {
  auto name = ParseGrpcMethodName(r.method);
  if (!name.ok()) return name.status();
  if (r.deadline.count() <= 0) return Status::InvalidArgument("the call's deadline must be > 0");
  for (const auto& [k, v] : r.metadata) {
    if (auto st = CheckMetadata(k, v); !st.ok()) return st;
  }
  return Call(r, name->path());
}

}  // namespace fairbench::host
