// HttpConnection: a deliberately plain HTTP/1.1 client over one blocking
// TCP socket, for tests that must see exactly what a server sends.
//
// It writes the bytes it is given (nothing added), and reads one response
// at a time: status line, headers, then a body delimited by Content-Length,
// chunked encoding (extensions and trailers kept) or the connection's close.
// Every read has a deadline. Failures are values: a reset or an early close
// is IoError (with the bytes seen so far), a deadline DeadlineExceeded, a
// malformed response InvalidArgument. Not thread-safe; move-only.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace fairbench::testing {

struct HttpResponse {
  std::string version;  // "HTTP/1.1"
  int status = 0;
  std::string reason;
  std::vector<std::pair<std::string, std::string>> headers;  // in order, as sent
  std::vector<std::pair<std::string, std::string>> trailers;
  std::string body;  // decoded (chunk framing removed)
  bool chunked = false;
  bool close_delimited = false;
  size_t wire_bytes = 0;  // bytes of this response on the wire, headers included

  // First header with that name (case-insensitive), or "".
  std::string Header(std::string_view name) const;
  bool HasHeader(std::string_view name) const;
};

// "METHOD path HTTP/1.1", Host, the headers, Content-Length when body is
// not empty (or when the method is POST/PUT), then the body.
std::string BuildRequest(std::string_view method, std::string_view path, std::string_view host,
                         const std::vector<std::pair<std::string, std::string>>& headers = {},
                         std::string_view body = {});

class HttpConnection {
 public:
  static Result<HttpConnection> Connect(const std::string& host, uint16_t port,
                                        std::chrono::milliseconds timeout = std::chrono::seconds(5));

  HttpConnection(HttpConnection&& other) noexcept;
  HttpConnection& operator=(HttpConnection&& other) noexcept;
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;
  ~HttpConnection();

  Status Send(std::string_view bytes);
  // head_response: the request was HEAD, so no body follows the headers.
  Result<HttpResponse> ReadResponse(std::chrono::milliseconds timeout = std::chrono::seconds(5),
                                    bool head_response = false);
  Result<HttpResponse> RoundTrip(std::string_view request, std::chrono::milliseconds timeout = std::chrono::seconds(5));

  // Waits for the peer to close: true on EOF or reset (with no unread
  // data), false if bytes arrive or the timeout passes first.
  bool WaitForClose(std::chrono::milliseconds timeout);
  // Closes now; with reset, sends RST (SO_LINGER 0) instead of FIN.
  void Close(bool reset = false);

  int fd() const { return fd_; }
  // Bytes received but not consumed by a response yet.
  const std::string& buffered() const { return buf_; }

 private:
  explicit HttpConnection(int fd) : fd_(fd) {}
  // Appends at least one byte to buf_; EOF is IoError("closed").
  Status Fill(std::chrono::steady_clock::time_point deadline);
  Result<std::string> ReadLine(std::chrono::steady_clock::time_point deadline);

  int fd_ = -1;
  std::string buf_;
  size_t consumed_ = 0;  // bytes of the current response taken from buf_
};

}  // namespace fairbench::testing
