// VerifyScenario: one request of each of a scenario's requests against a
// running target, checked against the scenario's expect before any load (a
// failing endpoint is reported, never loaded).
#pragma once

#include <cstdint>
#include <string>

#include "common/api/cells.h"
#include "common/protocol.h"
#include "common/status.h"

namespace fairbench::controller {

// Status, content type, body (exact) or JSON equality. OK, or a one-line
// description of the mismatch ("GET /: expected status 200, got 404").
// `https`: over TLS, the certificate not verified.
// `protocol`: http1, h2 (ALPN must choose h2) or h2c (prior knowledge), as
// the agents will speak.
Status VerifyScenario(const std::string& host, uint16_t port, bool https, const api::ScenarioSettings& settings,
                      Protocol protocol = Protocol::kHttp1);

}  // namespace fairbench::controller
