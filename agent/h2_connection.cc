#include "agent/h2_connection.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "common/load_rules.h"

namespace fairbench::agent {
namespace {

constexpr uint32_t kMaxWindow = (1u << 31) - 1;  // RFC 9113 §6.9.1

}  // namespace

const char* H2ErrorName(H2Error e) {
  switch (e) {
    case H2Error::kNone: return "none";
    case H2Error::kGoaway: return "goaway";
    case H2Error::kRstStream: return "rst_stream";
    case H2Error::kProtocol: return "protocol";
    case H2Error::kClosed: return "closed";
    case H2Error::kCancelled: return "cancelled";
  }
  return "unknown";
}

Status ValidateH2Options(const H2Options& o) {
  if (!load_rules::InRange(load_rules::Count::kStreams, o.max_streams)) {
    return Status::InvalidArgument("--streams must be between 1 and " +
                                   std::to_string(load_rules::RangeOf(load_rules::Count::kStreams).max) + ", got " +
                                   std::to_string(o.max_streams));
  }
  if (o.stream_window == 0 || o.stream_window > kMaxWindow) {
    return Status::InvalidArgument("--h2-stream-window must be between 1 and 2147483647, got " +
                                   std::to_string(o.stream_window));
  }
  if (o.connection_window == 0 || o.connection_window > kMaxWindow) {
    return Status::InvalidArgument("--h2-connection-window must be between 1 and 2147483647, got " +
                                   std::to_string(o.connection_window));
  }
  return Status::Ok();
}

Result<std::unique_ptr<H2Connection>> H2Connection::Create(const H2Options& options) {
  if (Status s = ValidateH2Options(options); !s.ok()) return s;
  std::unique_ptr<H2Connection> c(new H2Connection(options));
  if (Status s = c->Init(); !s.ok()) return s;
  return c;
}

H2Connection::H2Connection(const H2Options& options) : opt_(options) {}

H2Connection::~H2Connection() {
  if (session_ != nullptr) nghttp2_session_del(session_);
}

Status H2Connection::Init() {
  nghttp2_session_callbacks* cbs = nullptr;
  if (nghttp2_session_callbacks_new(&cbs) != 0) return Status::Internal("nghttp2: out of memory");
  nghttp2_session_callbacks_set_on_header_callback(cbs, &OnHeader);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, &OnFrameRecv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, &OnDataChunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, &OnStreamClose);
  nghttp2_session_callbacks_set_on_frame_not_send_callback(cbs, &OnFrameNotSend);
  nghttp2_session_callbacks_set_on_frame_send_callback(cbs, &OnFrameSend);
  nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(cbs, &OnInvalidFrame);
  nghttp2_option* option = nullptr;
  if (nghttp2_option_new(&option) != 0) {
    nghttp2_session_callbacks_del(cbs);
    return Status::Internal("nghttp2: out of memory");
  }
  // Push is refused in our SETTINGS; a server that pushes anyway breaks the protocol.
  nghttp2_option_set_max_reserved_remote_streams(option, 0);
  const int rv = nghttp2_session_client_new2(&session_, cbs, this, option);
  nghttp2_option_del(option);
  nghttp2_session_callbacks_del(cbs);
  if (rv != 0) return Status::Internal(std::string("nghttp2_session_client_new2: ") + nghttp2_strerror(rv));

  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, opt_.stream_window},
      {NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, opt_.header_table_size},
  };
  if (int r = nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, std::size(settings)); r != 0) {
    return Status::Internal(std::string("nghttp2_submit_settings: ") + nghttp2_strerror(r));
  }
  if (opt_.connection_window != NGHTTP2_INITIAL_CONNECTION_WINDOW_SIZE) {
    const int r = nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0,
                                                        static_cast<int32_t>(opt_.connection_window));
    if (r != 0) return Status::Internal(std::string("nghttp2_session_set_local_window_size: ") + nghttp2_strerror(r));
  }
  slots_.resize(opt_.max_streams);
  for (Slot& s : slots_) s.grpc = GrpcMessageReader(opt_.grpc_max_message);
  free_.reserve(slots_.size());
  for (size_t i = slots_.size(); i > 0; --i) free_.push_back(&slots_[i - 1]);
  outcomes_.reserve(slots_.size());
  wbuf_.reserve(16 * 1024);
  Flush();
  return Status::Ok();
}

uint32_t H2Connection::stream_limit() const {
  const uint32_t remote = nghttp2_session_get_remote_settings(session_, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
  return std::min(opt_.max_streams, remote);
}

bool H2Connection::CanSubmit() const {
  return settings_received_ && !goaway_received_ && !shutdown_ && !failed_ && open_ < stream_limit();
}

int32_t H2Connection::Submit(const H2Request& request, uint32_t index, uint64_t cookie, uint64_t cookie2) {
  if (!CanSubmit() || free_.empty()) return 0;
  Slot* s = free_.back();
  free_.pop_back();
  s->request = &request;
  s->index = index;
  s->cookie = cookie;
  s->cookie2 = cookie2;
  s->body_bytes = 0;
  s->body_sent = 0;
  s->rst_code = 0;
  s->status = 0;
  s->cause = H2Error::kNone;
  s->reported = false;
  s->in_use = true;
  if (opt_.capture) {
    s->headers.clear();
    s->body.clear();
  }
  if (opt_.grpc) {
    s->grpc.Reset();
    s->grpc_pending = H2Outcome::kNoGrpcStatus;
    s->grpc_status = H2Outcome::kNoGrpcStatus;
    s->first_ns = 0;
    s->last_ns = 0;
  }
  nghttp2_data_provider body;
  body.source.ptr = s;
  body.read_callback = &ReadBody;
  const int32_t id = nghttp2_submit_request(session_, nullptr, request.headers(), request.header_count(),
                                            request.body().empty() ? nullptr : &body, s);
  if (id <= 0) {
    // Stream ids exhausted (2^30 requests on one connection) or no memory:
    // this connection takes no more; the caller reconnects once it drains.
    s->in_use = false;
    free_.push_back(s);
    shutdown_ = true;
    return 0;
  }
  s->stream_id = id;
  ++open_;
  return id;
}

int32_t H2Connection::Submit(std::shared_ptr<const H2Request> request, uint32_t index, uint64_t cookie,
                             uint64_t cookie2) {
  if (!CanSubmit() || free_.empty()) return 0;
  Slot* s = free_.back();
  const int32_t id = Submit(*request, index, cookie, cookie2);
  if (id != 0) s->owned = std::move(request);
  return id;
}

bool H2Connection::Receive(const uint8_t* data, size_t len) {
  if (failed_) return false;
  bytes_in_ += len;
  // One frame at a time, framing what nghttp2 queued in reply (SETTINGS
  // ACK, WINDOW_UPDATE, PING ACK, a RST_STREAM for a malformed response, a
  // GOAWAY for a protocol error) before the next frame is read. Given the
  // whole read at once, nghttp2 would read the next frames with its
  // replies still unsent, and a stream it resets would still be open to
  // them: what the client concludes would depend on where reads end.
  while (len > 0 && !failed_) {
    size_t n = 0;  // bytes up to the end of the current frame, or all
    bool frame_end = false;
    while (n < len && !frame_end) {
      if (payload_left_ > 0) {
        const auto take = static_cast<uint32_t>(std::min<size_t>(payload_left_, len - n));
        payload_left_ -= take;
        n += take;
        frame_end = payload_left_ == 0;
        continue;
      }
      header_[header_have_++] = data[n++];
      if (header_have_ == kFrameHeader) {
        header_have_ = 0;
        payload_left_ = (uint32_t{header_[0]} << 16) | (uint32_t{header_[1]} << 8) | header_[2];
        frame_end = payload_left_ == 0;
      }
    }
    const ssize_t rv = nghttp2_session_mem_recv(session_, data, n);
    if (rv < 0) {
      failed_ = true;
      error_message_ = nghttp2_strerror(static_cast<int>(rv));
      FailOpen(H2Error::kProtocol);
      return false;
    }
    data += n;
    len -= n;
    if (nghttp2_session_want_write(session_) != 0) Flush();
  }
  return !failed_;
}

void H2Connection::Flush() {
  if (woff_ > 0 && woff_ == wbuf_.size()) {
    wbuf_.clear();
    woff_ = 0;
  }
  while (wbuf_.size() - woff_ < kOutputHighWater) {
    const uint8_t* p = nullptr;
    const ssize_t n = nghttp2_session_mem_send(session_, &p);
    if (n < 0) {
      if (!failed_) {
        failed_ = true;
        error_message_ = nghttp2_strerror(static_cast<int>(n));
        FailOpen(H2Error::kProtocol);
      }
      return;
    }
    if (n == 0) return;
    wbuf_.insert(wbuf_.end(), p, p + n);
  }
}

std::span<const uint8_t> H2Connection::Output() {
  Flush();
  return {wbuf_.data() + woff_, wbuf_.size() - woff_};
}

void H2Connection::Consumed(size_t n) {
  n = std::min(n, wbuf_.size() - woff_);
  woff_ += n;
  bytes_out_ += n;
  if (woff_ == wbuf_.size()) {
    wbuf_.clear();
    woff_ = 0;
  }
}

void H2Connection::Fail(H2Error why) {
  if (!failed_) {
    failed_ = true;
    error_message_ = "the connection ended";
  }
  FailOpen(why);
}

bool H2Connection::Cancel(int32_t stream_id) {
  if (failed_) return false;
  Slot* s = SlotOf(stream_id);
  if (s == nullptr) {
    // Submitted but not framed yet: nghttp2 opens the stream when its
    // HEADERS go out.
    for (Slot& slot : slots_) {
      if (slot.in_use && slot.stream_id == stream_id) s = &slot;
    }
  }
  if (s == nullptr || !s->in_use || s->reported) return false;
  Report(s, H2Error::kCancelled, 0);
  // If the HEADERS are still queued nghttp2 drops them and closes the
  // stream; either way OnStreamClose frees the slot.
  (void)nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
  return true;
}

void H2Connection::Shutdown() {
  if (shutdown_ || failed_) return;
  shutdown_ = true;
  // Tells the server no more streams come (the last-stream-id is about
  // server-initiated streams: none); the session ends once the open
  // streams are done.
  (void)nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(session_),
                              NGHTTP2_NO_ERROR, nullptr, 0);
}

bool H2Connection::Alive() const {
  if (failed_) return false;
  if (woff_ < wbuf_.size()) return true;
  return nghttp2_session_want_read(session_) != 0 || nghttp2_session_want_write(session_) != 0;
}

void H2Connection::Report(Slot* s, H2Error error, uint32_t error_code) {
  if (s->reported) return;
  s->reported = true;
  H2Outcome o;
  o.stream_id = s->stream_id;
  o.error = error;
  o.status = s->status;
  o.error_code = error_code;
  o.request = s->index;
  o.body_bytes = s->body_bytes;
  o.cookie = s->cookie;
  o.cookie2 = s->cookie2;
  if (opt_.grpc) {
    o.grpc_status = s->grpc_status;
    // A complete response that stopped inside a message is truncated; a
    // stream that failed otherwise is counted by its HTTP/2 error.
    o.grpc_error = error == H2Error::kNone ? s->grpc.End() : s->grpc.error();
    o.grpc_messages = s->grpc.messages();
    o.first_message_ns = s->first_ns;
    o.last_message_ns = s->last_ns;
  }
  if (opt_.capture) {
    o.headers = std::move(s->headers);
    o.body = std::move(s->body);
    s->headers.clear();
    s->body.clear();
  }
  outcomes_.push_back(std::move(o));
}

void H2Connection::Finish(Slot* s, H2Error error, uint32_t error_code) {
  Report(s, error, error_code);
  s->in_use = false;
  s->request = nullptr;
  s->owned.reset();
  free_.push_back(s);
  --open_;
}

void H2Connection::FailOpen(H2Error why) {
  for (Slot& s : slots_) {
    if (!s.in_use) continue;
    // nghttp2 calls nothing on a deleted session's streams, but the
    // session may still frame a GOAWAY: it must not find the slot.
    (void)nghttp2_session_set_stream_user_data(session_, s.stream_id, nullptr);
    Finish(&s, why, 0);
  }
}

H2Connection::Slot* H2Connection::SlotOf(int32_t stream_id) {
  void* p = nghttp2_session_get_stream_user_data(session_, stream_id);
  return static_cast<Slot*>(p);
}

int H2Connection::OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                           const uint8_t* value, size_t valuelen, uint8_t, void* user_data) {
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  const bool is_status = namelen == 7 && std::memcmp(name, ":status", 7) == 0;
  auto* self = static_cast<H2Connection*>(user_data);
  const bool is_grpc_status = self->opt_.grpc && namelen == 11 && std::memcmp(name, "grpc-status", 11) == 0;
  if (!is_status && !is_grpc_status && !self->opt_.capture) return 0;
  Slot* s = self->SlotOf(frame->hd.stream_id);
  if (s == nullptr) return 0;
  if (is_grpc_status) {
    const int code = ParseGrpcStatus(std::string_view(reinterpret_cast<const char*>(value), valuelen));
    s->grpc_pending = code < 0 ? H2Outcome::kBadGrpcStatus : code;
  }
  if (!is_status) {
    if (self->opt_.capture && namelen > 0 && name[0] != ':') {
      s->headers.emplace_back(std::string(reinterpret_cast<const char*>(name), namelen),
                              std::string(reinterpret_cast<const char*>(value), valuelen));
    }
    return 0;
  }
  if (self->opt_.capture) s->headers.clear();  // an interim response's fields are not the final one's
  // nghttp2's HTTP messaging checks make it three digits.
  uint16_t status = 0;
  for (size_t i = 0; i < valuelen; ++i) status = static_cast<uint16_t>(status * 10 + (value[i] - '0'));
  s->status = status;
  return 0;
}

int H2Connection::OnFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
  auto* self = static_cast<H2Connection*>(user_data);
  switch (frame->hd.type) {
    case NGHTTP2_SETTINGS:
      if ((frame->hd.flags & NGHTTP2_FLAG_ACK) == 0) self->settings_received_ = true;
      break;
    case NGHTTP2_GOAWAY:
      // nghttp2 closes the streams above last_stream_id right after this.
      ++self->goaways_;
      self->goaway_received_ = true;
      self->goaway_last_stream_id_ = frame->goaway.last_stream_id;
      self->goaway_code_ = frame->goaway.error_code;
      break;
    case NGHTTP2_RST_STREAM:
      ++self->rst_streams_;
      if (Slot* s = self->SlotOf(frame->hd.stream_id); s != nullptr && s->cause == H2Error::kNone) {
        s->cause = H2Error::kRstStream;
        s->rst_code = frame->rst_stream.error_code;
      }
      break;
    case NGHTTP2_HEADERS:
    case NGHTTP2_DATA:
      if (self->opt_.grpc && frame->hd.type == NGHTTP2_HEADERS) {
        // Only the HEADERS frame that ends the stream carries the call's status.
        if (Slot* s = self->SlotOf(frame->hd.stream_id); s != nullptr) {
          if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) s->grpc_status = s->grpc_pending;
          s->grpc_pending = H2Outcome::kNoGrpcStatus;
        }
      }
      if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) {
        // The response is complete: it counts now, even if the stream
        // stays open while the rest of a request body goes out (the
        // server may answer before reading it all).
        if (Slot* s = self->SlotOf(frame->hd.stream_id); s != nullptr && s->status >= 200) {
          self->Report(s, H2Error::kNone, 0);
        }
      }
      break;
    default: break;
  }
  return 0;
}

int H2Connection::OnDataChunk(nghttp2_session*, uint8_t, int32_t stream_id, const uint8_t* data, size_t len,
                              void* user_data) {
  auto* self = static_cast<H2Connection*>(user_data);
  if (Slot* s = self->SlotOf(stream_id)) {
    s->body_bytes += len;
    if (self->opt_.capture) s->body.append(reinterpret_cast<const char*>(data), len);
    if (self->opt_.grpc && s->grpc.Feed(data, len) > 0) {
      if (s->first_ns == 0) s->first_ns = self->clock_ns_;
      s->last_ns = self->clock_ns_;
    }
  }
  return 0;
}

int H2Connection::OnStreamClose(nghttp2_session*, int32_t stream_id, uint32_t error_code, void* user_data) {
  auto* self = static_cast<H2Connection*>(user_data);
  Slot* s = self->SlotOf(stream_id);
  if (s == nullptr || !s->in_use) return 0;
  if (s->reported) {
    // Its response was complete (Report'ed then); the server may since
    // have reset it (NO_ERROR: it needs no more of the request body).
    self->Finish(s, H2Error::kNone, 0);
  } else if (s->cause == H2Error::kRstStream) {
    self->Finish(s, H2Error::kRstStream, s->rst_code);
  } else if (s->cause == H2Error::kProtocol) {
    self->Finish(s, H2Error::kProtocol, 0);
  } else if (self->goaway_received_ && stream_id > self->goaway_last_stream_id_) {
    self->Finish(s, H2Error::kGoaway, self->goaway_code_);
  } else {
    // nghttp2 reset it: a malformed response (bad :status, a content-length
    // that the DATA contradicts, ...), or the session is ending. Its code
    // is ours, not the server's: whether nghttp2 saw a stream or a
    // connection error first can depend on how the bytes arrived.
    (void)error_code;
    self->Finish(s, H2Error::kProtocol, 0);
  }
  return 0;
}

int H2Connection::OnInvalidFrame(nghttp2_session*, const nghttp2_frame* frame, int, void* user_data) {
  // A frame nghttp2 refused: for a stream, it queues a RST_STREAM and
  // closes the stream when that is sent.
  auto* self = static_cast<H2Connection*>(user_data);
  if (frame->hd.stream_id == 0) return 0;
  if (Slot* s = self->SlotOf(frame->hd.stream_id); s != nullptr && s->cause == H2Error::kNone) {
    s->cause = H2Error::kProtocol;
  }
  return 0;
}

int H2Connection::OnFrameSend(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
  auto* self = static_cast<H2Connection*>(user_data);
  if (frame->hd.type == NGHTTP2_GOAWAY && frame->goaway.error_code != NGHTTP2_NO_ERROR && !self->failed_) {
    // nghttp2 ends the connection over something the server sent; the open
    // streams will get nothing more.
    self->failed_ = true;
    self->error_message_ = nghttp2_http2_strerror(frame->goaway.error_code);
    self->FailOpen(H2Error::kProtocol);
  }
  return 0;
}

int H2Connection::OnFrameNotSend(nghttp2_session*, const nghttp2_frame* frame, int lib_error_code, void* user_data) {
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  auto* self = static_cast<H2Connection*>(user_data);
  // A request whose HEADERS never left: if nghttp2 opened no stream for it,
  // no close callback follows, so it ends here.
  if (self->SlotOf(frame->hd.stream_id) != nullptr) return 0;
  for (Slot& s : self->slots_) {
    if (!s.in_use || s.stream_id != frame->hd.stream_id) continue;
    const bool goaway = lib_error_code == NGHTTP2_ERR_START_STREAM_NOT_ALLOWED && self->goaway_received_;
    self->Finish(&s, goaway ? H2Error::kGoaway : H2Error::kClosed, goaway ? self->goaway_code_ : 0);
    break;
  }
  return 0;
}

ssize_t H2Connection::ReadBody(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* data_flags,
                               nghttp2_data_source* source, void*) {
  auto* s = static_cast<Slot*>(source->ptr);
  // A slot already handed back (the connection failed): reset the stream.
  if (!s->in_use) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  const std::string& body = s->request->body();
  const size_t n = std::min(length, body.size() - s->body_sent);
  std::memcpy(buf, body.data() + s->body_sent, n);
  s->body_sent += n;
  if (s->body_sent == body.size()) *data_flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
}

}  // namespace fairbench::agent
