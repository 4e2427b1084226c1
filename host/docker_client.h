// DockerClient: the Docker Engine API over its unix socket, with libcurl
// (CURLOPT_UNIX_SOCKET_PATH), on versioned paths ("/v1.41/containers/create").
// Only what fairbench's Docker platform needs: images by name, containers
// created, started, stopped, inspected, listed by label, their logs and one
// sample of their stats, and removed.
//
// Errors are one line naming the cause:
//   - the socket missing, refusing, or not ours to open: Unavailable, with the
//     path and what to do ("... does not exist: no Docker engine runs here
//     (scripts/docker-engine start starts one)", "permission denied");
//   - the engine's own answer ({"message": "..."}): NotFound for 404 (no such
//     image or container), FailedPrecondition for 409 (a conflict), Internal
//     otherwise, with the engine's message.
//
// Thread-safe: each call uses an easy handle of its own.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace fairbench::docker {

// The engine's socket from a DOCKER_HOST value: "unix:///run/docker.sock"
// (or a bare absolute path) → "/run/docker.sock". Other schemes (tcp://,
// ssh://) are refused: fairbench's engines are local.
Result<std::string> SocketFromHost(std::string_view docker_host);

// The socket fairbench talks to by default: $DOCKER_HOST when set, else
// /var/run/docker.sock.
std::string DefaultDockerHost();

// The engine's log stream (application/vnd.docker.multiplexed-stream: an
// 8-byte header per frame — stream, 0, 0, 0, big-endian length — then the
// bytes) as the text of stdout and stderr in the order written. A cut frame
// keeps what arrived.
std::string DemultiplexLogs(std::string_view stream);

struct EngineAnswer {
  long status = 0;
  std::string body;
};

class DockerClient {
 public:
  explicit DockerClient(std::string socket_path, std::string api_version = "v1.41");

  const std::string& socket_path() const { return socket_; }

  // GET /version: the engine's version, API version, OS, kernel.
  Result<nlohmann::json> Version() const;
  // GET /images/{name}/json.
  Result<nlohmann::json> InspectImage(const std::string& image) const;
  // POST /containers/create?name=NAME: the new container's id.
  Result<std::string> CreateContainer(const std::string& name, const nlohmann::json& config) const;
  Status StartContainer(const std::string& id) const;
  // POST /containers/{id}/stop?t=SECONDS: SIGTERM (or the image's stop
  // signal), then SIGKILL after `grace`.
  Status StopContainer(const std::string& id, std::chrono::seconds grace) const;
  Status KillContainer(const std::string& id, std::string_view signal) const;
  // GET /containers/{id}/json.
  Result<nlohmann::json> InspectContainer(const std::string& id) const;
  // GET /containers/{id}/logs?stdout=1&stderr=1, demultiplexed.
  Result<std::string> Logs(const std::string& id) const;
  // GET /containers/{id}/stats?stream=false&one-shot=true.
  Result<nlohmann::json> Stats(const std::string& id) const;
  // GET /containers/json?all=1&filters={"label":["k=v",...]}.
  Result<nlohmann::json> ListContainers(const std::map<std::string, std::string>& labels) const;
  // A command run in a running container (POST /containers/{id}/exec, then
  // /exec/{id}/start detached, its state polled): its exit code, or
  // DeadlineExceeded when it runs longer than `timeout`.
  Result<int> Exec(const std::string& id, const std::vector<std::string>& argv,
                   std::chrono::milliseconds timeout) const;
  // DELETE /containers/{id}?force=1&v=1. A container already gone is fine.
  Status RemoveContainer(const std::string& id) const;

  // One request: "GET", "/containers/json" (the version is put in front).
  // Transport failures are Unavailable (DeadlineExceeded on timeout).
  Result<EngineAnswer> Do(std::string_view method, const std::string& path, const std::string& body,
                          std::chrono::milliseconds timeout) const;

 private:
  // The engine's answer as an error, naming what was asked ("create
  // container fairbench-x").
  static Status ErrorOf(const EngineAnswer& answer, const std::string& what);
  Result<nlohmann::json> GetJson(const std::string& path, const std::string& what) const;

  std::string socket_;
  std::string version_;
};

}  // namespace fairbench::docker
