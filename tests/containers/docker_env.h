// What the container tests share: the engine (scripts/docker-engine, which
// the `containers.engine` fixture starts), the docker CLI as an independent
// view of it, and the images the `containers.images` fixture builds from
// this build's binaries (scripts/images --prebuilt: each Dockerfile's real
// runtime stage), tagged fairbench.test/NAME:test.
#pragma once

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "controller/kube/exec_credential.h"

namespace fairbench::containers {

inline const std::filesystem::path kRoot = FAIRBENCH_SOURCE_DIR;

inline std::string Image(const std::string& name) { return "fairbench.test/" + name + ":test"; }

inline std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

inline std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// DOCKER_HOST of the engine the fixture started (or the one that answered).
inline const std::string& DockerHost() {
  static const std::string host = [] {
    if (const char* e = std::getenv("DOCKER_HOST"); e != nullptr && *e != '\0') return std::string(e);
    auto r = kube::RunCommand((kRoot / "scripts/docker-engine").string(), {"env"}, {}, std::chrono::seconds(30));
    if (!r.ok() || r->exit_code != 0) return std::string();
    const std::string out = Trim(r->out);
    return out.rfind("DOCKER_HOST=", 0) == 0 ? out.substr(12) : std::string();
  }();
  return host;
}

// `docker ARGS` against that engine.
inline kube::CommandResult Docker(const std::vector<std::string>& args,
                                  std::chrono::milliseconds timeout = std::chrono::seconds(120)) {
  auto r = kube::RunCommand("docker", args, {{"DOCKER_HOST", DockerHost()}}, timeout);
  if (!r.ok()) return kube::CommandResult{-1, "", r.status().message()};
  return *r;
}

inline nlohmann::json Inspect(const std::string& what) {
  auto r = Docker({"inspect", what});
  if (r.exit_code != 0) return nlohmann::json();
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  return j.is_array() && !j.empty() ? j[0] : nlohmann::json();
}

// The ids of the containers (running or not) with this label.
inline std::vector<std::string> ContainersLabelled(const std::string& label, bool running_only = false) {
  std::vector<std::string> args = {"ps", "-q", "--no-trunc", "--filter", "label=" + label};
  if (!running_only) args.insert(args.begin() + 1, "-a");
  auto r = Docker(args);
  std::vector<std::string> ids;
  std::istringstream in(r.out);
  std::string id;
  while (in >> id) ids.push_back(id);
  return ids;
}

// Fails the test (not skips it) when there is no engine: the fixtures start
// one, and CI must run these tests.
#define FAIRBENCH_NEED_ENGINE()                                                                          \
  do {                                                                                                   \
    ASSERT_FALSE(::fairbench::containers::DockerHost().empty())                                          \
        << "no Docker engine answers: scripts/docker-engine start (ctest runs it as containers.engine)"; \
  } while (0)

}  // namespace fairbench::containers
