// gRPC's half of the Worker (agent/worker.h): a complete HTTP/2 response
// read as a gRPC call.
#include "agent/grpc_frame.h"
#include "agent/worker.h"

namespace fairbench::agent {

bool Worker::GrpcCall(const H2Outcome& o) {
  GrpcCounts& g = cur_.counters.grpc;
  switch (o.grpc_error) {
    case GrpcFrameError::kNone: break;
    case GrpcFrameError::kBadFlag: ++g.bad_flag; return false;
    case GrpcFrameError::kTooLarge: ++g.too_large; return false;
    case GrpcFrameError::kTruncated: ++g.truncated; return false;
  }
  int code = o.grpc_status;
  if (code == H2Outcome::kBadGrpcStatus) {
    ++g.bad_status;
    return false;
  }
  if (code == H2Outcome::kNoGrpcStatus) {
    // No grpc-status: an HTTP error (a proxy's 503, a 404 from a server
    // that is not gRPC) is what gRPC's clients make of it; a 200 without
    // trailers is a broken call.
    if (o.status == 200) {
      ++g.no_status;
      return false;
    }
    code = GrpcStatusFromHttp(o.status);
  }
  if (opt_.grpc_unary && code == 0 && o.grpc_messages != 1) {
    ++g.unary_messages;
    return false;
  }
  if (code < kGrpcStatusCodes) ++g.status[static_cast<size_t>(code)];
  else ++g.status_other;
  g.messages += o.grpc_messages;
  if (o.grpc_messages > 0) {
    // From the same start as the call's latency: its submission, or at a
    // constant rate the time it was due.
    const auto start = static_cast<int64_t>(opt_.rate > 0 ? o.cookie2 : o.cookie);
    cur_.first_message.Record((o.first_message_ns - start) / 1000);
    cur_.last_message.Record((o.last_message_ns - start) / 1000);
  }
  return true;
}

}  // namespace fairbench::agent
