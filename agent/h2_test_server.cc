#include "agent/h2_test_server.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "agent/h2_connection.h"

namespace fairbench::agent {
namespace {

constexpr size_t kPrefaceLen = 24;
constexpr char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr size_t kFrameHeader = 9;

char kFill[16384];

[[noreturn]] void Die(const char* what, int rv) {
  std::fprintf(stderr, "H2TestServer: %s: %s\n", what, nghttp2_strerror(rv));
  std::abort();
}

nghttp2_nv Nv(const char* name, const std::string& value) {
  return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(name)),
                    reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), std::strlen(name), value.size(),
                    NGHTTP2_NV_FLAG_NONE};
}

}  // namespace

H2TestServer::H2TestServer(H2TestServerOptions options) : opt_(options) {
  std::memset(kFill, 'x', sizeof(kFill));
  nghttp2_session_callbacks* cbs = nullptr;
  if (int rv = nghttp2_session_callbacks_new(&cbs); rv != 0) Die("callbacks", rv);
  nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, &OnBeginHeaders);
  nghttp2_session_callbacks_set_on_header_callback(cbs, &OnHeader);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, &OnFrameRecv);
  nghttp2_session_callbacks_set_on_frame_send_callback(cbs, &OnFrameSend);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, &OnDataChunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, &OnStreamClose);
  if (int rv = nghttp2_session_server_new(&session_, cbs, this); rv != 0) Die("server_new", rv);
  nghttp2_session_callbacks_del(cbs);
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, opt_.max_concurrent_streams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, opt_.initial_window},
  };
  if (int rv = nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, 2); rv != 0) Die("settings", rv);
  status_text_ = std::to_string(opt_.status);
  length_text_ = std::to_string(opt_.response_body);
  response_nv_ = {Nv(":status", status_text_), Nv("content-length", length_text_)};
  if (opt_.raw) {
    response_nv_.pop_back();
    for (const auto& [name, value] : opt_.headers) response_nv_.push_back(Nv(name.c_str(), value));
    for (const auto& [name, value] : opt_.trailers) trailer_nv_.push_back(Nv(name.c_str(), value));
  }
}

H2TestServer::~H2TestServer() { nghttp2_session_del(session_); }

bool H2TestServer::Receive(const uint8_t* data, size_t len) {
  const ssize_t rv = nghttp2_session_mem_recv(session_, data, len);
  return rv >= 0;
}

std::span<const uint8_t> H2TestServer::Output() {
  if (woff_ == wbuf_.size()) {
    wbuf_.clear();
    woff_ = 0;
  }
  while (wbuf_.size() - woff_ < 256 * 1024) {
    const uint8_t* p = nullptr;
    const ssize_t n = nghttp2_session_mem_send(session_, &p);
    if (n <= 0) break;
    wbuf_.insert(wbuf_.end(), p, p + n);
  }
  return {wbuf_.data() + woff_, wbuf_.size() - woff_};
}

void H2TestServer::Consumed(size_t n) { woff_ += std::min(n, wbuf_.size() - woff_); }

uint32_t H2TestServer::client_initial_window() const {
  return nghttp2_session_get_remote_settings(session_, NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE);
}

uint32_t H2TestServer::client_enable_push() const {
  return nghttp2_session_get_remote_settings(session_, NGHTTP2_SETTINGS_ENABLE_PUSH);
}

void H2TestServer::Respond(int32_t stream_id) {
  ++requests_;
  // Past the GOAWAY: nghttp2 closes these streams once the GOAWAY is sent.
  if (goaway_last_ != 0 && stream_id > goaway_last_) return;
  // By stream number (client streams are 1, 3, 5, ...), not by arrival:
  // which streams are reset must not depend on how bytes were cut.
  const uint64_t number = (static_cast<uint64_t>(stream_id) + 1) / 2;
  if (opt_.ignore_every != 0 && number % opt_.ignore_every == 0) return;
  if (opt_.reset_every != 0 && number % opt_.reset_every == 0) {
    if (int rv = nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream_id, opt_.reset_code); rv != 0) {
      Die("rst_stream", rv);
    }
  } else {
    nghttp2_data_provider body;
    body.source.ptr = nullptr;
    body.read_callback = &ReadBody;
    const uint64_t body_size = opt_.raw ? opt_.raw_body.size() : opt_.response_body;
    body_left_[stream_id] = body_size;
    const bool has_data = body_size > 0 || !trailer_nv_.empty();
    const int rv = nghttp2_submit_response(session_, stream_id, response_nv_.data(), response_nv_.size(),
                                           has_data ? &body : nullptr);
    if (rv != 0) Die("submit_response", rv);
  }
  if (opt_.lower_after != 0 && requests_ == opt_.lower_after) {
    const nghttp2_settings_entry lowered[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, opt_.lowered_streams}};
    if (int rv = nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, lowered, 1); rv != 0) Die("settings", rv);
  }
  if (opt_.goaway_after != 0 && requests_ == opt_.goaway_after) {
    goaway_last_ = stream_id;
    if (int rv = nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_NO_ERROR, nullptr, 0); rv != 0) {
      Die("goaway", rv);
    }
  }
}

int H2TestServer::OnBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
  auto* self = static_cast<H2TestServer*>(user_data);
  if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
    ++self->open_;
    self->peak_open_ = std::max(self->peak_open_, self->open_);
    if (self->settings_acks_ >= 2) self->peak_after_lowering_ = std::max(self->peak_after_lowering_, self->open_);
  }
  return 0;
}

int H2TestServer::OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                           const uint8_t* value, size_t valuelen, uint8_t, void* user_data) {
  auto* self = static_cast<H2TestServer*>(user_data);
  if (frame->hd.type == NGHTTP2_HEADERS && frame->hd.stream_id == 1) {
    self->first_fields_.emplace_back(std::string(reinterpret_cast<const char*>(name), namelen),
                                     std::string(reinterpret_cast<const char*>(value), valuelen));
  }
  if (frame->hd.type == NGHTTP2_HEADERS && namelen == 5 && std::memcmp(name, ":path", 5) == 0) {
    self->stream_path_[frame->hd.stream_id].assign(reinterpret_cast<const char*>(value), valuelen);
  }
  return 0;
}

int H2TestServer::OnFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
  auto* self = static_cast<H2TestServer*>(user_data);
  if (frame->hd.type == NGHTTP2_RST_STREAM) ++self->resets_received_;
  if (frame->hd.type == NGHTTP2_SETTINGS && (frame->hd.flags & NGHTTP2_FLAG_ACK) != 0) ++self->settings_acks_;
  if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
      (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) {
    auto it = self->stream_path_.find(frame->hd.stream_id);
    if (it != self->stream_path_.end()) {
      self->paths_.push_back(std::move(it->second));
      self->stream_path_.erase(it);
    }
    self->Respond(frame->hd.stream_id);
  }
  return 0;
}

int H2TestServer::OnFrameSend(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
  auto* self = static_cast<H2TestServer*>(user_data);
  switch (frame->hd.type) {
    case NGHTTP2_HEADERS:
    case NGHTTP2_DATA:
      if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) ++self->responses_;
      break;
    case NGHTTP2_RST_STREAM:
      if (frame->rst_stream.error_code == NGHTTP2_REFUSED_STREAM) {
        ++self->refused_;
      } else {
        ++self->resets_sent_;
      }
      break;
    case NGHTTP2_GOAWAY:
      if (frame->goaway.error_code != NGHTTP2_NO_ERROR) self->goaway_error_ = frame->goaway.error_code;
      break;
    default: break;
  }
  return 0;
}

int H2TestServer::OnDataChunk(nghttp2_session*, uint8_t, int32_t stream_id, const uint8_t* data, size_t len,
                              void* user_data) {
  auto* self = static_cast<H2TestServer*>(user_data);
  self->body_bytes_ += len;
  if (stream_id == 1) self->first_body_.append(reinterpret_cast<const char*>(data), len);
  return 0;
}

int H2TestServer::OnStreamClose(nghttp2_session*, int32_t stream_id, uint32_t, void* user_data) {
  auto* self = static_cast<H2TestServer*>(user_data);
  self->body_left_.erase(stream_id);
  self->stream_path_.erase(stream_id);
  // Only streams whose HEADERS were accepted were counted open.
  if (self->open_ > 0) --self->open_;
  return 0;
}

ssize_t H2TestServer::ReadBody(nghttp2_session* session, int32_t stream_id, uint8_t* buf, size_t length,
                               uint32_t* data_flags, nghttp2_data_source*, void* user_data) {
  auto* self = static_cast<H2TestServer*>(user_data);
  uint64_t& left = self->body_left_[stream_id];
  const size_t n = static_cast<size_t>(std::min<uint64_t>({left, length, sizeof(kFill)}));
  if (self->opt_.raw) {
    std::memcpy(buf, self->opt_.raw_body.data() + (self->opt_.raw_body.size() - left), n);
  } else {
    std::memcpy(buf, kFill, n);
  }
  left -= n;
  if (left == 0) {
    *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    if (!self->trailer_nv_.empty()) {
      *data_flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
      if (int rv = nghttp2_submit_trailer(session, stream_id, self->trailer_nv_.data(), self->trailer_nv_.size());
          rv != 0) {
        Die("submit_trailer", rv);
      }
    }
  }
  return static_cast<ssize_t>(n);
}

H2FrameScanner::H2FrameScanner(bool client_to_server) : preface_left_(client_to_server ? kPrefaceLen : 0) {}

void H2FrameScanner::Feed(const uint8_t* data, size_t len) {
  while (len > 0 && !bad_) {
    if (preface_left_ > 0) {
      const size_t at = kPrefaceLen - preface_left_;
      const size_t n = std::min(len, preface_left_);
      if (std::memcmp(data, kPreface + at, n) != 0) bad_ = true;
      preface_left_ -= n;
      data += n;
      len -= n;
      continue;
    }
    size_t need = kFrameHeader;
    if (buf_.size() >= kFrameHeader) {
      need += (size_t{buf_[0]} << 16) | (size_t{buf_[1]} << 8) | buf_[2];
    }
    const size_t n = std::min(len, need - buf_.size());
    buf_.insert(buf_.end(), data, data + n);
    data += n;
    len -= n;
    if (buf_.size() == kFrameHeader) {
      const size_t payload = (size_t{buf_[0]} << 16) | (size_t{buf_[1]} << 8) | buf_[2];
      if (payload > (1u << 24) - 1) bad_ = true;
      if (payload == 0) OnFrame();
    } else if (buf_.size() > kFrameHeader && buf_.size() == need) {
      OnFrame();
    }
  }
}

void H2FrameScanner::OnFrame() {
  const uint8_t type = buf_[3];
  const uint8_t flags = buf_[4];
  const int32_t stream = static_cast<int32_t>(
      ((uint32_t{buf_[5]} << 24) | (uint32_t{buf_[6]} << 16) | (uint32_t{buf_[7]} << 8) | buf_[8]) & 0x7fffffffu);
  const uint8_t* p = buf_.data() + kFrameHeader;
  const size_t len = buf_.size() - kFrameHeader;
  auto u32 = [](const uint8_t* q) {
    return (uint32_t{q[0]} << 24) | (uint32_t{q[1]} << 16) | (uint32_t{q[2]} << 8) | q[3];
  };
  if (type < counts_.size()) ++counts_[type];
  switch (type) {
    case 0x1:  // HEADERS: a new stream when its id is above every earlier one
      if (stream > last_opened_) {
        opened_.push_back(stream);
        last_opened_ = stream;
      }
      break;
    case 0x3:  // RST_STREAM
      reset_ids_.push_back(stream);
      break;
    case 0x4:  // SETTINGS
      if ((flags & 0x1) == 0) {
        for (size_t i = 0; i + 6 <= len; i += 6) {
          settings_.emplace_back(static_cast<uint16_t>((p[i] << 8) | p[i + 1]), u32(p + i + 2));
        }
      }
      break;
    case 0x7:  // GOAWAY
      if (len >= 8) goaway_last_.push_back(static_cast<int32_t>(u32(p) & 0x7fffffffu));
      break;
    case 0x8:  // WINDOW_UPDATE
      if (len >= 4) {
        if (stream == 0) {
          conn_increments_ += u32(p) & 0x7fffffffu;
        } else {
          ++stream_updates_;
        }
      }
      break;
    default: break;
  }
  buf_.clear();
}

namespace {

// Delivers [data, data+len), which sits at `offset` of its direction's
// stream, cutting it at every cut inside it.
template <typename Deliver>
void DeliverCut(const uint8_t* data, size_t len, uint64_t offset, const std::vector<size_t>& cuts, Deliver deliver) {
  size_t from = 0;
  for (size_t cut : cuts) {
    if (cut <= offset + from) continue;
    if (cut >= offset + len) break;
    const size_t at = cut - offset;
    deliver(data + from, at - from);
    from = at;
  }
  deliver(data + from, len - from);
}

}  // namespace

bool H2Wire::Pump(H2Connection& client, H2TestServer& server) {
  bool moved = false;
  std::span<const uint8_t> up_bytes_now = client.Output();
  if (!up_bytes_now.empty()) {
    moved = true;
    const size_t n = up_bytes_now.size();
    up.Feed(up_bytes_now.data(), n);
    DeliverCut(up_bytes_now.data(), n, up_bytes, up_cuts,
               [&](const uint8_t* p, size_t l) { server_ok = server.Receive(p, l) && server_ok; });
    up_bytes += n;
    client.Consumed(n);
  }
  std::span<const uint8_t> down_bytes_now = server.Output();
  if (!down_bytes_now.empty()) {
    moved = true;
    const size_t n = down_bytes_now.size();
    down.Feed(down_bytes_now.data(), n);
    DeliverCut(down_bytes_now.data(), n, down_bytes, down_cuts,
               [&](const uint8_t* p, size_t l) { client_ok = client.Receive(p, l) && client_ok; });
    down_bytes += n;
    server.Consumed(n);
  }
  return moved;
}

}  // namespace fairbench::agent
