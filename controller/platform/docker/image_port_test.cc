// Whether a target's port is where its image's server listens: the ports an
// image's config exposes, the port handed to the server through command,
// args or env, the error's field and fix; and the whole check of a run
// against a stand-in engine on a unix socket (an image per path).
#include "controller/platform/docker/image_port.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <thread>

#include <gtest/gtest.h>

namespace fairbench::controller {
namespace {

nlohmann::json ImageExposing(const nlohmann::json& exposed) { return {{"Config", {{"ExposedPorts", exposed}}}}; }

api::Target Target(int32_t port) {
  api::Target t;
  t.name = "nginx";
  t.image = "example.org/nginx:1";
  t.port = port;
  return t;
}

// Catches: a "/udp" port taken for the server's, the "/tcp" suffix not
// stripped (no port read at all), an image without EXPOSE (null) read as
// an error, ports left unsorted or repeated.
TEST(ExposedTcpPorts, TheTcpPortsOfTheImagesConfig) {
  EXPECT_EQ(ExposedTcpPorts(ImageExposing({{"8443/tcp", nlohmann::json::object()},
                                           {"8080/tcp", nlohmann::json::object()},
                                           {"53/udp", nlohmann::json::object()},
                                           {"9000", nlohmann::json::object()},
                                           {"x/tcp", nlohmann::json::object()},
                                           {"70000/tcp", nlohmann::json::object()}})),
            (std::vector<int32_t>{8080, 8443, 9000}));
  EXPECT_TRUE(ExposedTcpPorts(ImageExposing(nullptr)).empty());
  EXPECT_TRUE(ExposedTcpPorts(nlohmann::json::object()).empty());
  EXPECT_TRUE(ExposedTcpPorts(ImageExposing({{"53/udp", nlohmann::json::object()}})).empty());
}

// The issue's case: nginx's image serves 8080, the run says 42881 and no
// command: refused, naming the field, the image's port and both fixes.
// Catches: the check skipped when command and args are empty, the field
// path or the index wrong, a message without the fix.
TEST(CheckTargetPort, APortTheImageDoesNotServeIsRefusedWithTheFix) {
  const Status s = CheckTargetPort(Target(42881), 3, {8080});
  ASSERT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "spec.targets[3].port: 42881 is not where image example.org/nginx:1 listens: it listens on 8080 (its "
            "EXPOSE), and neither command, args nor env give its server \"{port}\" or 42881: set port: 8080, or pass "
            "--port {port} (args: [--port, \"{port}\"])");
  EXPECT_TRUE(CheckTargetPort(Target(8080), 3, {8080}).ok());
}

// Catches: "{port}" looked for in args only (command and env values pass
// it too), a literal port not accepted (beast's `args: [--port, "80"]`
// with port: 80), a number matched inside a longer one (19000 for 9000).
TEST(CheckTargetPort, APortPassedToTheServerIsAccepted) {
  api::Target t = Target(42881);
  t.args = {"--host", "127.0.0.1", "--port", "{port}"};
  EXPECT_TRUE(CheckTargetPort(t, 0, {8080}).ok());
  t = Target(42881);
  t.command = {"/bin/sh", "-c", "exec server --listen=:{port}"};
  EXPECT_TRUE(CheckTargetPort(t, 0, {8080}).ok());
  t = Target(42881);
  t.env = {{"PORT", "{port}"}};
  EXPECT_TRUE(CheckTargetPort(t, 0, {8080}).ok());
  t = Target(42881);
  t.args = {"--listen=0.0.0.0:42881"};
  EXPECT_TRUE(CheckTargetPort(t, 0, {8080}).ok());
  t = Target(9000);
  t.args = {"--port", "19000"};
  EXPECT_FALSE(CheckTargetPort(t, 0, {8080}).ok());
  t.env = {{"LISTEN", "9000"}};
  EXPECT_TRUE(CheckTargetPort(t, 0, {8080}).ok());
}

// Catches: an image without EXPOSE refused (nothing says where it
// listens), only the first of several exposed ports accepted.
TEST(CheckTargetPort, NoExposedPortIsNoCheckAndAnyOfSeveralWill) {
  EXPECT_TRUE(CheckTargetPort(Target(42881), 0, {}).ok());
  EXPECT_TRUE(CheckTargetPort(Target(8443), 0, {8080, 8443}).ok());
  const Status s = CheckTargetPort(Target(9000), 1, {8080, 8443, 9443});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("spec.targets[1].port: 9000 is not where image example.org/nginx:1 listens: it listens "
                             "on 8080, 8443 or 9443 (its EXPOSE)"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("set port to one of them (port: 8080), or pass --port {port}"), std::string::npos)
      << s.message();
}

// A stand-in engine: each connection gets the answer of the first path
// fragment its request line holds (404 otherwise); it counts requests.
class StandInEngine {
 public:
  StandInEngine(std::string path, std::map<std::string, std::string> answers)
      : path_(std::move(path)), answers_(std::move(answers)) {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path_.c_str());
    bound_ = bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && listen(fd_, 8) == 0;
    thread_ = std::thread([this] {
      for (;;) {
        const int c = accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        std::string request;
        char buf[4096];
        while (request.find("\r\n\r\n") == std::string::npos) {
          const ssize_t n = read(c, buf, sizeof buf);
          if (n <= 0) break;
          request.append(buf, static_cast<size_t>(n));
        }
        ++requests_;
        std::string body = R"({"message":"No such image"})";
        int status = 404;
        const std::string line = request.substr(0, request.find("\r\n"));
        for (const auto& [fragment, answer] : answers_) {
          if (line.find(fragment) != std::string::npos) {
            body = answer;
            status = 200;
            break;
          }
        }
        const std::string out =
            "HTTP/1.1 " + std::to_string(status) +
            " X\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
            "\r\nConnection: close\r\n\r\n" + body;
        (void)!write(c, out.data(), out.size());
        close(c);
      }
    });
  }
  ~StandInEngine() {
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
  }
  bool bound() const { return bound_; }
  int requests() const { return requests_; }

 private:
  std::string path_;
  std::map<std::string, std::string> answers_;
  int fd_ = -1;
  bool bound_ = false;
  std::atomic<int> requests_{0};
  std::thread thread_;
};

// Catches: an image the engine lacks stopping the check (or refusing the
// run: its deploy reports it, and the other targets run), a target after
// the first left unchecked, the index of the wrong target named.
TEST(CheckImagePorts, EveryTargetAgainstItsImageInTheEngine) {
  char t[] = "/tmp/image-port-test-XXXXXX";
  const std::string dir = mkdtemp(t);
  const std::string sock = dir + "/e.sock";
  {
    StandInEngine engine(sock,
                         {{"/images/example.org%2Fgood%3A1/json", R"({"Config":{"ExposedPorts":{"8080/tcp":{}}}})"},
                          {"/images/example.org%2Fnginx%3A1/json", R"({"Config":{"ExposedPorts":{"8080/tcp":{}}}})"}});
    ASSERT_TRUE(engine.bound());
    api::BenchmarkRunSpec spec;
    spec.targets = {Target(42881), Target(8080), Target(42881)};
    spec.targets[0].image = "example.org/ghost:1";  // not in the engine
    spec.targets[1].image = "example.org/good:1";
    const Status s = CheckImagePorts(docker::DockerClient(sock), spec);
    ASSERT_EQ(s.code(), Status::Code::kInvalidArgument);
    EXPECT_EQ(s.message().rfind("spec.targets[2].port: 42881 is not where image example.org/nginx:1 listens", 0), 0u)
        << s.message();
    EXPECT_EQ(engine.requests(), 3);
    spec.targets[2].port = 8080;
    EXPECT_TRUE(CheckImagePorts(docker::DockerClient(sock), spec).ok());
  }
  // No engine: not this check's to report (creating the platform does).
  std::filesystem::remove(sock);
  api::BenchmarkRunSpec spec;
  spec.targets = {Target(42881)};
  EXPECT_TRUE(CheckImagePorts(docker::DockerClient(sock), spec).ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fairbench::controller
