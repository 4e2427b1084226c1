// Pieces of a pod spec that the test kubelet interprets as Kubernetes does,
// kept apart from processes and the API so that they are tested on their
// own: `$(VAR)` expansion (k8s.io/kubernetes third_party/forked/golang/
// expansion), the argv of a container from its image and command/args, the
// pod's QoS class (pkg/apis/core/helper/qos), CPU and memory quantities,
// the image → argv map of --images, and the mapping of volume mount paths
// onto host directories.
//
// Plain functions and values; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace fairbench::kubelet {

using Json = nlohmann::json;

// `$(NAME)` → lookup(NAME) when it has a value, else left as written;
// `$$` → `$`; any other `$` is kept.
std::string Expand(std::string_view input, const std::function<std::optional<std::string>(const std::string&)>& lookup);
// Expansion against an ordered environment (a later definition wins).
std::string ExpandWith(std::string_view input, const std::vector<std::pair<std::string, std::string>>& env);

enum class QosClass { kGuaranteed, kBurstable, kBestEffort };
const char* QosClassName(QosClass q);
// From spec.containers and spec.initContainers: cpu and memory requests and
// limits (a missing request defaults to the limit, as API defaulting does).
QosClass ComputeQos(const Json& pod_spec);

// "500m" → 500, "2" → 2000, "0.5" → 500.
Result<int64_t> ParseCpuMillis(std::string_view quantity);
// "1Gi", "512Mi", "100M", "1024" → bytes.
Result<int64_t> ParseMemoryBytes(std::string_view quantity);

// What an image runs: ENTRYPOINT and CMD.
struct ImageEntry {
  std::vector<std::string> entrypoint;
  std::vector<std::string> cmd;
};
using ImageMap = std::map<std::string, ImageEntry>;
// A YAML or JSON map: image → argv (taken as the ENTRYPOINT), or image →
// {entrypoint: [...], cmd: [...]}.
Result<ImageMap> LoadImageMap(const std::string& path);
Result<ImageMap> ParseImageMap(std::string_view text);
// Kubernetes' rule: command replaces ENTRYPOINT (and drops CMD); args
// replace CMD.
std::vector<std::string> ComposeArgv(const ImageEntry& image, const Json& container);

// Each (mount path, host dir): every occurrence of the mount path as a whole
// path prefix ("/data", "/data/x", "--out=/data/x"; not "/database") is
// replaced with the host directory.
std::string SubstituteMounts(const std::string& text, const std::vector<std::pair<std::string, std::string>>& mounts);

// Sums of requests (defaulted from limits) over a pod's containers.
struct PodRequests {
  int64_t cpu_millis = 0;
  int64_t memory_bytes = 0;
};
PodRequests ComputeRequests(const Json& pod_spec);

}  // namespace fairbench::kubelet
