// VerifyScenario: one request of each of a scenario's requests against a
// running target, checked against the scenario's expect before any load (a
// failing endpoint is reported, never loaded).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "api/cells.h"
#include "common/protocol.h"
#include "common/status.h"

namespace fairbench::controller {

// Status, content type, body (exact) or JSON equality. OK, or a one-line
// description of the mismatch ("GET /: expected status 200, got 404").
// `https`: over TLS, the certificate not verified.
// `protocol`: http1, h2 (ALPN must choose h2) or h2c (prior knowledge), as
// the agents will speak.
// With vary, "{n}" in the request and the expectation is one number of the
// scenario's seed.
Status VerifyScenario(const std::string& host, uint16_t port, Scheme scheme, const api::ScenarioSettings& settings,
                      Protocol protocol = Protocol::kHttp1);

// A scenario with vary, on a plain HTTP/1.1 target: its request (with a
// number for "{n}") sent once more with "Connection: close", and the answer
// read to the end of the connection with our own parser (libcurl would
// cut or refuse a body that disagrees with its Content-Length). Sets
// content_length and body_bytes when the two disagree, and date_missing;
// every other field is left at zero. Unavailable when the target did not
// answer within `timeout`.
Result<api::AnswerChecks> ReadAnswerToEnd(const std::string& host, uint16_t port, const api::ScenarioSettings& settings,
                                          std::chrono::milliseconds timeout = std::chrono::seconds(5));

// "{n}" in `text` replaced by `n`.
std::string SubstituteVaryToken(std::string text, std::string_view n);
// The number VerifyScenario and ReadAnswerToEnd put in for "{n}".
std::string VerifyNumber(const api::ScenarioSettings& settings);

}  // namespace fairbench::controller
