// H2Connection: the client side of one HTTP/2 connection as a codec — bytes
// in, bytes out, no socket. A worker feeds it what it read (Receive) and
// writes what it asks for (Output, then Consumed), so the same code serves
// h2c with prior knowledge over a plain socket and h2 over TLS (ALPN "h2").
// Built on nghttp2's session API (nghttp2_session_mem_recv/mem_send).
//
// Streams. The connection keeps up to `max_streams` requests in flight
// (--streams), never more than the server's SETTINGS_MAX_CONCURRENT_STREAMS:
// it submits nothing before the server's first SETTINGS frame, and follows
// later SETTINGS (a lowered limit stops new streams until enough close).
// Each request carries two values of the caller's (cookie and cookie2: for
// instance the time it was sent and the time it was due) that come back
// with its outcome, so per-stream latency goes into the same histograms as
// HTTP/1.x.
//
// Outcomes. Every submitted request ends exactly once as an H2Outcome,
// appended to outcomes() by Receive, Output, Cancel or Fail; the caller
// handles them and clears the vector (its capacity is kept). Either a
// complete response (status, body bytes) — reported as soon as it is
// complete, even if the stream stays open while the rest of a request body
// goes out (it counts toward the stream limit until then) — or an error of
// one H2Error kind: GOAWAY (the server's GOAWAY left the stream
// unprocessed: its id is above the last-stream-id), RST_STREAM (the server
// reset the stream), protocol (the server broke HTTP/2: the stream, or the
// whole connection, is dead), closed (the transport ended with the stream
// open: Fail), or cancelled (the caller gave up on it: Cancel).
//
// Reads may end anywhere: nghttp2 is given the input one frame at a time,
// and what it queues in reply (a RST_STREAM for a malformed response, a
// GOAWAY) is framed before the next frame is read, so the outcomes do not
// depend on where reads end (fuzz/h2_client_fuzzer.cc checks it).
//
// In a worker's loop, per connection: after connecting, write Output();
// on readable, Receive() what was read and handle outcomes() (latency from
// the cookie); then, once per turn of the loop, Submit() while CanSubmit()
// (every free slot: N streams stay in flight, as h2load's -m N) and write
// Output() once, so that the streams answered in one batch of events go out
// in one write; on EOF or an error, Fail(kClosed); when !Alive() (after a
// GOAWAY, once the open streams are done) close and reconnect. A request
// past its timeout is Cancel()ed.
//
// Flow control: the connection announces `stream_window` as
// SETTINGS_INITIAL_WINDOW_SIZE and raises (or lowers) the connection
// window to `connection_window` with a WINDOW_UPDATE; nghttp2 then sends
// WINDOW_UPDATEs as DATA is consumed. Response bodies are counted, never
// copied.
//
// Costs. Request header arrays are built once (H2Request); per-stream state
// lives in a fixed table of `max_streams` slots; the outcome vector and the
// output buffer are reused. What nghttp2 allocates per stream is its own.
//
// gRPC (H2Options::grpc): each stream's DATA also goes through a
// GrpcMessageReader (agent/grpc_frame.h): messages are counted, the clock
// the caller last gave (set_clock) is kept for the first and the last one,
// and a framing error is kept. The grpc-status of the HEADERS frame that
// ends the stream (the trailers, or a Trailers-Only response) is the
// call's; one in HEADERS that do not end the stream does not count. All of
// it comes back in the outcome (grpc_*), for the caller to classify.
//
// Not thread-safe: one connection belongs to one worker thread. Requests
// passed to Submit must outlive the connection (or at least the streams).
#pragma once

#include <nghttp2/nghttp2.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "agent/grpc_frame.h"
#include "agent/h2_request.h"
#include "common/status.h"

namespace fairbench::agent {

// How a stream ended; the engine maps each kind to a counter.
enum class H2Error : uint8_t {
  kNone = 0,   // a complete response
  kGoaway,     // refused by the server's GOAWAY (stream id above its last-stream-id)
  kRstStream,  // reset by the server (RST_STREAM, any error code)
  kProtocol,   // the server broke HTTP/2 (a malformed response or frame)
  kClosed,     // the connection ended with the stream still open
  kCancelled,  // the caller gave up on it (Cancel: a timeout)
};
inline constexpr int kH2ErrorKinds = 6;
const char* H2ErrorName(H2Error e);

struct H2Outcome {
  int32_t stream_id = 0;
  H2Error error = H2Error::kNone;
  uint16_t status = 0;      // the final :status; 0 if none arrived
  uint32_t error_code = 0;  // the server's RST_STREAM or GOAWAY error code; 0 otherwise
  uint32_t request = 0;     // the caller's request index given to Submit
  uint64_t body_bytes = 0;  // DATA payload received (padding excluded)
  uint64_t cookie = 0;      // the caller's, from Submit
  uint64_t cookie2 = 0;     // the caller's second, from Submit
  // Only with H2Options::capture: the final response's header fields
  // (pseudo-headers left out) and its body.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // Only with H2Options::grpc: the grpc-status of the frame that ended the
  // stream (kNoGrpcStatus: none; kBadGrpcStatus: not a number), the
  // response messages, the first framing error, and the clock at the first
  // and the last message (0 without one).
  static constexpr int32_t kNoGrpcStatus = -1;
  static constexpr int32_t kBadGrpcStatus = -2;
  int32_t grpc_status = kNoGrpcStatus;
  GrpcFrameError grpc_error = GrpcFrameError::kNone;
  uint32_t grpc_messages = 0;
  int64_t first_message_ns = 0;
  int64_t last_message_ns = 0;
};

struct H2Options {
  uint32_t max_streams = 100;          // --streams: concurrent streams on this connection
  uint32_t stream_window = 65535;      // SETTINGS_INITIAL_WINDOW_SIZE we announce
  uint32_t connection_window = 65535;  // the connection's receive window
  uint32_t header_table_size = 4096;   // SETTINGS_HEADER_TABLE_SIZE we announce
  // Keep each response's headers and body for the caller (a script's
  // response()); otherwise bodies are counted, never copied.
  bool capture = false;
  // gRPC: read each response as gRPC messages and a grpc-status (see above).
  bool grpc = false;
  uint32_t grpc_max_message = 4u << 20;  // --max-message-size
};

// Checks the options; InvalidArgument names the flag.
Status ValidateH2Options(const H2Options& o);

class H2Connection {
 public:
  // Writes the connection preface and our SETTINGS into the output.
  static Result<std::unique_ptr<H2Connection>> Create(const H2Options& options);
  ~H2Connection();
  H2Connection(const H2Connection&) = delete;
  H2Connection& operator=(const H2Connection&) = delete;

  // A new stream may start now: the server's SETTINGS arrived, fewer streams
  // than min(max_streams, the server's limit) are open, no GOAWAY was
  // received and the connection has not failed.
  bool CanSubmit() const;
  // A Cancel()ed stream holds its slot until Output() with its RST_STREAM
  // has been written (Consumed).
  // Starts a request (CanSubmit() must hold; otherwise returns 0). Returns
  // the stream id. `request` must outlive the stream. `index`, `cookie` and
  // `cookie2` come back in its outcome.
  int32_t Submit(const H2Request& request, uint32_t index, uint64_t cookie, uint64_t cookie2 = 0);
  // The same for a request made for this stream alone (a script's): the
  // connection keeps it until the stream is closed.
  int32_t Submit(std::shared_ptr<const H2Request> request, uint32_t index, uint64_t cookie, uint64_t cookie2 = 0);

  // Bytes read from the transport. Appends the streams that ended to
  // outcomes(). False when the connection failed (the server broke the
  // protocol or nghttp2 ran out of memory): the open streams have then been
  // appended as kProtocol and the caller should write what Output() still
  // holds (a GOAWAY) and close.
  bool Receive(const uint8_t* data, size_t len);

  // Output() stops gathering frames once it holds this many bytes: a large
  // request body (or a server with a huge window) must not balloon the
  // buffer. It may end up to one frame past the mark.
  static constexpr size_t kOutputHighWater = 256 * 1024;

  // The bytes to write now (frames nghttp2 queued), valid until the next
  // call of a non-const method. Empty when there is nothing to send.
  std::span<const uint8_t> Output();
  // `n` bytes of Output() were written.
  void Consumed(size_t n);

  // The transport ended or failed: every open stream is appended as `why`
  // (normally kClosed). The connection is dead afterwards.
  void Fail(H2Error why);

  // gRPC: the time of the bytes the next Receive gets (the caller's clock).
  void set_clock(int64_t now_ns) { clock_ns_ = now_ns; }

  // Streams that ended since the caller last cleared the vector.
  std::vector<H2Outcome>& outcomes() { return outcomes_; }
  // Gives up on a stream (a request timed out): its outcome is appended
  // now as kCancelled and a RST_STREAM(CANCEL) is queued; it counts toward
  // the stream limit until nghttp2 has sent that. False if the stream is
  // not open or already has its outcome.
  bool Cancel(int32_t stream_id);
  // Calls f(stream_id, cookie) for each stream still waiting for its
  // outcome (a worker finds those past their timeout). f must not call back
  // into the connection.
  template <typename F>
  void ForEachWaiting(F&& f) const {
    for (const Slot& s : slots_) {
      if (s.in_use && !s.reported) f(s.stream_id, s.cookie);
    }
  }
  // Sends GOAWAY(NO_ERROR) (queued in Output) and refuses new streams; the
  // open streams still finish.
  void Shutdown();

  // True while the connection is worth keeping: not failed and, after a
  // GOAWAY (either way), as long as streams are open or bytes are pending.
  bool Alive() const;
  bool failed() const { return failed_; }
  const char* error_message() const { return error_message_; }

  uint32_t open_streams() const { return open_; }
  // min(max_streams, the server's SETTINGS_MAX_CONCURRENT_STREAMS).
  uint32_t stream_limit() const;
  bool settings_received() const { return settings_received_; }
  bool goaway_received() const { return goaway_received_; }
  int32_t goaway_last_stream_id() const { return goaway_last_stream_id_; }

  // Frames received, for counters and tests.
  uint64_t goaways_received() const { return goaways_; }
  uint64_t rst_streams_received() const { return rst_streams_; }
  uint64_t bytes_received() const { return bytes_in_; }
  uint64_t bytes_sent() const { return bytes_out_; }

 private:
  struct Slot {
    const H2Request* request = nullptr;
    std::shared_ptr<const H2Request> owned;                    // Submit(shared_ptr): kept until the stream closes
    std::vector<std::pair<std::string, std::string>> headers;  // capture
    std::string body;                                          // capture
    int32_t stream_id = 0;
    uint32_t index = 0;
    uint64_t cookie = 0;
    uint64_t cookie2 = 0;
    uint64_t body_bytes = 0;
    size_t body_sent = 0;
    uint32_t rst_code = 0;
    uint16_t status = 0;
    // What ended it first, as seen in the bytes received (kNone: nothing
    // yet): the server's RST_STREAM, or a response nghttp2 found malformed.
    // nghttp2 closes a malformed stream only when its own RST_STREAM goes
    // out, so a GOAWAY or RST_STREAM read in the same piece must not win.
    H2Error cause = H2Error::kNone;
    // gRPC: the reader of its DATA, the grpc-status of the HEADERS frame
    // being read and of the one that ended the stream, message times.
    GrpcMessageReader grpc;
    int32_t grpc_pending = H2Outcome::kNoGrpcStatus;
    int32_t grpc_status = H2Outcome::kNoGrpcStatus;
    int64_t first_ns = 0;
    int64_t last_ns = 0;
    bool reported = false;  // its outcome is out (the stream may still be sending a body)
    bool in_use = false;
  };

  explicit H2Connection(const H2Options& options);
  Status Init();
  Slot* SlotOf(int32_t stream_id);
  // Gathers the frames nghttp2 has queued into wbuf_ (up to a high water).
  void Flush();
  // Appends the stream's outcome (once); Finish also frees the slot.
  void Report(Slot* s, H2Error error, uint32_t error_code);
  void Finish(Slot* s, H2Error error, uint32_t error_code);
  void FailOpen(H2Error why);

  // nghttp2 callbacks (static trampolines; `user_data` is the connection).
  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                      const uint8_t* value, size_t valuelen, uint8_t flags, void* user_data);
  static int OnFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* user_data);
  static int OnDataChunk(nghttp2_session*, uint8_t flags, int32_t stream_id, const uint8_t* data, size_t len,
                         void* user_data);
  static int OnStreamClose(nghttp2_session*, int32_t stream_id, uint32_t error_code, void* user_data);
  static int OnInvalidFrame(nghttp2_session*, const nghttp2_frame* frame, int lib_error_code, void* user_data);
  static int OnFrameSend(nghttp2_session*, const nghttp2_frame* frame, void* user_data);
  static int OnFrameNotSend(nghttp2_session*, const nghttp2_frame* frame, int lib_error_code, void* user_data);
  static ssize_t ReadBody(nghttp2_session*, int32_t stream_id, uint8_t* buf, size_t length, uint32_t* data_flags,
                          nghttp2_data_source* source, void* user_data);

  const H2Options opt_;
  nghttp2_session* session_ = nullptr;
  std::vector<Slot> slots_;
  std::vector<Slot*> free_;
  std::vector<H2Outcome> outcomes_;
  std::vector<uint8_t> wbuf_;
  size_t woff_ = 0;
  uint32_t open_ = 0;
  // Where the server's byte stream is: a frame header being read, or how
  // much of the current frame's payload is still to come.
  static constexpr size_t kFrameHeader = 9;
  uint8_t header_[kFrameHeader] = {};
  size_t header_have_ = 0;
  uint32_t payload_left_ = 0;
  bool settings_received_ = false;
  bool goaway_received_ = false;
  bool shutdown_ = false;
  bool failed_ = false;
  int32_t goaway_last_stream_id_ = 0;
  uint32_t goaway_code_ = 0;
  const char* error_message_ = "";
  int64_t clock_ns_ = 0;
  uint64_t goaways_ = 0;
  uint64_t rst_streams_ = 0;
  uint64_t bytes_in_ = 0;
  uint64_t bytes_out_ = 0;
};

}  // namespace fairbench::agent
