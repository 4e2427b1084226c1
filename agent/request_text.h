// Request texts: HTTP/1.1 requests given as wire text (what a wrk script's
// request() returns, or wrk.format() builds), read back into their parts.
//
// A text holds one request or several back to back (pipelined). Each is a
// request line "METHOD target HTTP/1.x", header lines "Name: value", a blank
// line, and a body of Content-Length bytes (none without the header). Lines
// end in CRLF or a bare LF, as HTTP parsers accept. A chunked request body
// is refused: the engine writes texts as they are and needs their length.
//
// CountRequests is on the engine's path for every text a request() returns:
// one pass over the heads, no allocation. SplitRequests gives the parts (for
// HTTP/2, where a text becomes a stream, and for checks before the load).
// Errors say what is wrong and show the text, cut short.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "agent/request.h"
#include "common/status.h"

namespace fairbench::agent {

// The number of complete requests in `text` (≥ 1), or InvalidArgument
// saying why the text is not one or more HTTP/1.x requests.
Result<uint32_t> CountRequests(std::string_view text);

// Every request of `text`, as specs (headers in their order, Host among
// them when the text has one; Content-Length kept only when it disagrees
// with nothing: it always matches the body here, so it is dropped and
// re-derived by whoever builds the request again).
Result<std::vector<RequestSpec>> SplitRequests(std::string_view text);

// `text` as a short printable quote: control characters escaped (\r, \n,
// \xNN), cut after `limit` characters with "…".
std::string QuoteText(std::string_view text, size_t limit = 80);

}  // namespace fairbench::agent
