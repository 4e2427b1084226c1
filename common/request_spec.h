// RequestSpec: one request of a load as its settings say it (method, target,
// headers, body, its share of a mix) — the one struct for it: a load job
// carries these (wire::JobRequest, common/wire_job.h), the agent's `load`
// command reads them from its flags or a mix file, and the engine builds
// each into wire bytes once before the run (agent/request.h). Plain value.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fairbench {

struct RequestSpec {
  std::string name;  // label in reports; empty: "METHOD target"
  std::string method = "GET";
  std::string target = "/";  // path and query
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  uint32_t weight = 1;  // share in a weighted mix

  bool operator==(const RequestSpec&) const = default;
};

}  // namespace fairbench
