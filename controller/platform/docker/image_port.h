// Image ports: whether a target's `port` is where the server in its
// container will listen, told from the image before anything starts.
//
// On the Docker platform a container shares the host's network, so its
// server listens where the image's command tells it to. An image says which
// port it serves in its config (EXPOSE; Config.ExposedPorts of the engine's
// inspect). A target that sets `port` to something else without handing
// that port to the server ("{port}" in command, args or an env value, or
// the number itself written there) would start, answer nothing on `port`,
// and fail every cell NotReady once the readiness timeout ran out: that is
// refused up front instead, naming spec.targets[i].port and the fix.
//
//   - no exposed TCP port: nothing to compare, no check;
//   - several: `port` may be any of them.
//
// Pure functions but CheckImagePorts, which asks the engine; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/benchmark_run.h"
#include "common/status.h"
#include "host/docker_client.h"

namespace fairbench::controller {

// The TCP ports an image exposes: the keys of Config.ExposedPorts in the
// engine's inspect of it ("8080/tcp" and a bare "8080" are TCP; "53/udp" is
// not), ascending, each once. Empty when it exposes none.
std::vector<int32_t> ExposedTcpPorts(const nlohmann::json& image_inspect);

// Whether the target's command, args or env hand the port to its server:
// "{port}" anywhere in them, or `port` itself as a whole number
// ("--port=9000", ":9000"; not 19000).
bool PassesPortToServer(const api::Target& target);

// spec.targets[index].port against the ports the target's image exposes
// (`exposed`, from ExposedTcpPorts): OK when it is one of them, when the
// image exposes none, or when the port is passed to the server; otherwise
// InvalidArgument naming the field, the image's ports and the fix.
Status CheckTargetPort(const api::Target& target, size_t index, const std::vector<int32_t>& exposed);

// CheckTargetPort for every target of `spec`, each against its image as the
// engine has it: the first mistake. Only port mistakes are reported here:
// an image the engine does not have is passed over (its target's deploy
// says so, and the other targets run), and an engine that does not answer
// ends the check at once (creating the platform says so).
Status CheckImagePorts(const docker::DockerClient& client, const api::BenchmarkRunSpec& spec);

}  // namespace fairbench::controller
