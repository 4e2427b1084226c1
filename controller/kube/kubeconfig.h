// kubeconfig loading (KUBE-API.md §8): `$KUBECONFIG` (a ':'-separated list,
// merged — the first definition of a cluster, user or context wins, as does
// the first non-empty current-context) or ~/.kube/config; relative paths
// resolve against the file that names them; `*-data` (base64) wins over the
// file path. Produces a validated RestConfig.
//
// Errors say which file and which entry is wrong: a missing context, an
// unreadable file, a bad certificate.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "common/clock.h"
#include "controller/kube/rest_config.h"

namespace fairbench::kube {

struct KubeconfigOptions {
  // Files to merge; empty = $KUBECONFIG, else ~/.kube/config.
  std::vector<std::string> paths;
  std::string context;     // overrides current-context
  Clock* clock = nullptr;  // for token files and exec plugins; null = system clock
};

Result<RestConfig> LoadKubeconfig(const KubeconfigOptions& options = {});

// The files $KUBECONFIG names, or ~/.kube/config.
std::vector<std::string> DefaultKubeconfigPaths();

}  // namespace fairbench::kube
