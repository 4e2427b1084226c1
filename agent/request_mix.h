// The --requests file of "fairbench-agent load": a weighted request mix in
// YAML. Part of the agent's command line, not of the engine.
#pragma once

#include <string>
#include <vector>

#include "agent/request.h"
#include "common/status.h"

namespace fairbench::agent {

// Loads a weighted request mix:
//   requests:
//     - name: hello            # optional
//       method: GET            # default GET
//       path: /                # required, starts with "/"
//       headers: {Accept: text/plain}
//       body: '...'            # or bodyFile: file (relative to the YAML file)
//       weight: 3              # default 1
// Errors name the file, line and column.
Result<std::vector<RequestSpec>> LoadRequestMix(const std::string& path);

}  // namespace fairbench::agent
