// Test peers for H2Connection: an HTTP/2 server built on nghttp2's own
// *server* session (an implementation independent of the client code
// under test), a frame scanner that reads frame headers off the wire by
// RFC 9113 §4.1 alone, and H2Wire, which moves bytes between a client and
// a server in memory through two scanners, optionally cutting the byte
// streams at chosen offsets.
//
// The server answers each complete request with `status` and a body of
// `response_body` bytes, or resets every `reset_every`-th stream, and can
// send GOAWAY after a given number of requests. Its counters are the
// truth the tests compare the client's outcomes with. Test code only (also
// used by the benchmark and the fuzzer's seed writer); not thread-safe.
#pragma once

#include <nghttp2/nghttp2.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace fairbench::agent {

class H2Connection;

struct H2TestServerOptions {
  uint32_t max_concurrent_streams = 100;  // SETTINGS_MAX_CONCURRENT_STREAMS
  uint32_t initial_window = 65535;        // SETTINGS_INITIAL_WINDOW_SIZE (request bodies)
  uint64_t response_body = 13;            // bytes in each response body
  uint16_t status = 200;
  // After the n-th complete request (1-based; 0: never): GOAWAY with that
  // request's stream id as last-stream-id. Streams above it are left
  // unanswered (nghttp2 closes them on the server side).
  uint64_t goaway_after = 0;
  // Every n-th stream by id (0: none; stream k is id 2k-1) is reset
  // (RST_STREAM reset_code) instead of answered once its request is complete.
  uint32_t reset_every = 0;
  uint32_t reset_code = NGHTTP2_INTERNAL_ERROR;
  // Every n-th stream by id (0: none) is never answered (a stalled server).
  uint32_t ignore_every = 0;
  // After the n-th complete request (0: never), a second SETTINGS lowers
  // SETTINGS_MAX_CONCURRENT_STREAMS to `lowered_streams`.
  uint64_t lower_after = 0;
  uint32_t lowered_streams = 1;
  // gRPC-shaped (or misshapen) responses: with `raw`, each response is
  // :status, then `headers`, no content-length; its DATA is exactly
  // `raw_body` (none if empty); `trailers`, if any, follow in a HEADERS
  // frame that ends the stream. Without trailers the last DATA (or, with no
  // body, the response HEADERS: a headers-only response) ends it.
  bool raw = false;
  std::string raw_body{};
  std::vector<std::pair<std::string, std::string>> headers{};
  std::vector<std::pair<std::string, std::string>> trailers{};
};

class H2TestServer {
 public:
  explicit H2TestServer(H2TestServerOptions options = {});
  ~H2TestServer();
  H2TestServer(const H2TestServer&) = delete;
  H2TestServer& operator=(const H2TestServer&) = delete;

  // False on a fatal nghttp2 error (a client that broke the protocol makes
  // nghttp2 queue a GOAWAY instead: see goaway_error()).
  bool Receive(const uint8_t* data, size_t len);
  std::span<const uint8_t> Output();
  void Consumed(size_t n);

  uint64_t requests() const { return requests_; }    // complete requests received
  uint64_t responses() const { return responses_; }  // responses sent in full (END_STREAM)
  uint64_t resets_sent() const { return resets_sent_; }
  uint64_t refused() const { return refused_; }                  // streams nghttp2 refused (over the limit)
  uint64_t resets_received() const { return resets_received_; }  // RST_STREAM from the client
  uint64_t request_body_bytes() const { return body_bytes_; }
  uint32_t open_streams() const { return open_; }
  uint32_t peak_open_streams() const { return peak_open_; }
  // Peak open streams since the client acknowledged the lowered limit
  // (0 before).
  uint32_t peak_open_after_lowering() const { return peak_after_lowering_; }
  bool lowering_acknowledged() const { return settings_acks_ >= 2; }
  int32_t goaway_last_stream_id() const { return goaway_last_; }
  uint32_t goaway_error() const { return goaway_error_; }  // of a GOAWAY the server sent
  // What the client announced (0 before its SETTINGS).
  uint32_t client_initial_window() const;
  uint32_t client_enable_push() const;
  // The :path of each complete request, in order.
  const std::vector<std::string>& paths() const { return paths_; }
  // The first stream's (id 1) header fields, pseudo-headers included, in
  // the order they came, and its DATA: what a client sends, as read here.
  const std::vector<std::pair<std::string, std::string>>& first_request_fields() const { return first_fields_; }
  const std::string& first_request_body() const { return first_body_; }

 private:
  void Respond(int32_t stream_id);
  static int OnBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user_data);
  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                      const uint8_t* value, size_t valuelen, uint8_t flags, void* user_data);
  static int OnFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* user_data);
  static int OnFrameSend(nghttp2_session*, const nghttp2_frame* frame, void* user_data);
  static int OnDataChunk(nghttp2_session*, uint8_t flags, int32_t stream_id, const uint8_t* data, size_t len,
                         void* user_data);
  static int OnStreamClose(nghttp2_session*, int32_t stream_id, uint32_t error_code, void* user_data);
  static ssize_t ReadBody(nghttp2_session*, int32_t stream_id, uint8_t* buf, size_t length, uint32_t* data_flags,
                          nghttp2_data_source* source, void* user_data);

  const H2TestServerOptions opt_;
  nghttp2_session* session_ = nullptr;
  std::vector<uint8_t> wbuf_;
  size_t woff_ = 0;
  std::string status_text_, length_text_;
  std::vector<nghttp2_nv> response_nv_;
  std::vector<nghttp2_nv> trailer_nv_;
  std::unordered_map<int32_t, uint64_t> body_left_;
  std::unordered_map<int32_t, std::string> stream_path_;
  std::vector<std::string> paths_;
  std::vector<std::pair<std::string, std::string>> first_fields_;
  std::string first_body_;
  uint64_t requests_ = 0, responses_ = 0, resets_sent_ = 0, refused_ = 0, body_bytes_ = 0, resets_received_ = 0;
  uint32_t open_ = 0, peak_open_ = 0, peak_after_lowering_ = 0;
  uint32_t settings_acks_ = 0;
  int32_t goaway_last_ = 0;
  uint32_t goaway_error_ = 0;
};

// Reads frame headers off one direction of a connection and counts what
// it sees. Knows only the frame layout (and the client preface), not
// nghttp2: an oracle independent of both peers.
class H2FrameScanner {
 public:
  // `client_to_server`: the stream starts with the 24-byte preface.
  explicit H2FrameScanner(bool client_to_server);
  void Feed(const uint8_t* data, size_t len);

  uint64_t frames(uint8_t type) const { return type < counts_.size() ? counts_[type] : 0; }
  // Stream ids of HEADERS frames that opened a stream, in order.
  const std::vector<int32_t>& opened() const { return opened_; }
  // GOAWAY last-stream-ids and RST_STREAM stream ids, in order.
  const std::vector<int32_t>& goaway_last_ids() const { return goaway_last_; }
  const std::vector<int32_t>& reset_ids() const { return reset_ids_; }
  // WINDOW_UPDATE increments on stream 0 and on other streams.
  uint64_t connection_window_increments() const { return conn_increments_; }
  uint64_t stream_window_updates() const { return stream_updates_; }
  // SETTINGS entries (identifier, value) of non-ACK SETTINGS frames.
  const std::vector<std::pair<uint16_t, uint32_t>>& settings() const { return settings_; }
  bool bad() const { return bad_; }  // a malformed preface or frame header

 private:
  void OnFrame();
  size_t preface_left_;
  std::vector<uint8_t> buf_;  // header then payload of the current frame
  std::array<uint64_t, 16> counts_{};
  std::vector<int32_t> opened_;
  int32_t last_opened_ = 0;
  std::vector<int32_t> goaway_last_;
  std::vector<int32_t> reset_ids_;
  uint64_t conn_increments_ = 0;
  uint64_t stream_updates_ = 0;
  std::vector<std::pair<uint16_t, uint32_t>> settings_;
  bool bad_ = false;
};

// Moves bytes between a client and a server through two scanners. With
// cuts (ascending offsets into one direction's byte stream), a chunk that
// spans a cut is delivered in two Receive calls.
struct H2Wire {
  H2FrameScanner up{true};     // client → server
  H2FrameScanner down{false};  // server → client
  std::vector<size_t> up_cuts, down_cuts;
  uint64_t up_bytes = 0, down_bytes = 0;
  bool client_ok = true, server_ok = true;

  // One round: the client's pending output to the server, then the
  // server's to the client. True if any byte moved.
  bool Pump(H2Connection& client, H2TestServer& server);
};

}  // namespace fairbench::agent
