// DockerClient without an engine: the log stream's framing, DOCKER_HOST's
// forms, and what each kind of unreachable socket says; the engine's error
// answers through a stand-in engine on a unix socket (one canned answer per
// connection, and the request it got).
#include "host/docker_client.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

namespace fairbench::docker {
namespace {

std::string Frame(char stream, std::string_view text) {
  std::string f = {stream, 0, 0, 0};
  const uint32_t n = static_cast<uint32_t>(text.size());
  f += static_cast<char>(n >> 24);
  f += static_cast<char>(n >> 16);
  f += static_cast<char>(n >> 8);
  f += static_cast<char>(n);
  f += text;
  return f;
}

// Catches: the length read little-endian, the header kept in the text, a
// stream id other than 1 dropped (stderr lost), a cut frame dropped whole.
TEST(DemultiplexLogs, StdoutAndStderrInOrderWithoutHeaders) {
  const std::string big(300, 'x');  // a length above 255: the byte order matters
  const std::string stream = Frame(1, "out 1\n") + Frame(2, "err 1\n") + Frame(1, big) + Frame(2, "cut frame");
  EXPECT_EQ(DemultiplexLogs(stream), "out 1\nerr 1\n" + big + "cut frame");
  EXPECT_EQ(DemultiplexLogs(stream.substr(0, stream.size() - 4)), "out 1\nerr 1\n" + big + "cut f");
  EXPECT_EQ(DemultiplexLogs(""), "");
}

// Catches: the unix:// prefix kept in the path, a tcp:// host taken as a path.
TEST(SocketFromHost, UnixSocketsOnly) {
  EXPECT_EQ(*SocketFromHost("unix:///run/x/docker.sock"), "/run/x/docker.sock");
  EXPECT_EQ(*SocketFromHost("/var/run/docker.sock"), "/var/run/docker.sock");
  auto tcp = SocketFromHost("tcp://127.0.0.1:2375");
  ASSERT_FALSE(tcp.ok());
  EXPECT_NE(tcp.status().message().find("unix socket"), std::string::npos) << tcp.status().message();
  EXPECT_FALSE(SocketFromHost("unix://relative.sock").ok());
}

class TempDir {
 public:
  TempDir() {
    char t[] = "/tmp/docker-client-test-XXXXXX";
    path_ = mkdtemp(t);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Catches: a missing socket reported as a bare curl error (no cause, no
// remedy), a file that is not a socket reported as "does not answer".
TEST(DockerClient, AnUnreachableSocketSaysWhy) {
  TempDir dir;
  DockerClient missing(dir.path() + "/docker.sock");
  auto v = missing.Version();
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), Status::Code::kUnavailable);
  EXPECT_NE(v.status().message().find(dir.path() + "/docker.sock does not exist: no Docker engine runs here"),
            std::string::npos)
      << v.status().message();

  std::ofstream(dir.path() + "/file.sock") << "not a socket";
  DockerClient file(dir.path() + "/file.sock");
  v = file.Version();
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("is not a unix socket"), std::string::npos) << v.status().message();

  // A socket nobody listens on any more.
  const std::string dead = dir.path() + "/dead.sock";
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", dead.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  close(fd);
  v = DockerClient(dead).Version();
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("the Docker engine does not answer on " + dead), std::string::npos)
      << v.status().message();
}

// A stand-in engine: answers each connection with `answer` and keeps the
// request line it read.
class StandIn {
 public:
  StandIn(std::string path, std::string answer) : path_(std::move(path)), answer_(std::move(answer)) {
    fd_ = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path_.c_str());
    bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    listen(fd_, 4);
    thread_ = std::thread([this] {
      const int c = accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      char buf[4096];
      const ssize_t n = read(c, buf, sizeof buf);
      if (n > 0) request_.assign(buf, static_cast<size_t>(n));
      (void)!write(c, answer_.data(), answer_.size());
      close(c);
    });
  }
  ~StandIn() {
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
  }
  std::string request() {
    thread_.join();
    thread_ = std::thread([] {});
    return request_;
  }

 private:
  std::string path_, answer_, request_;
  int fd_;
  std::thread thread_;
};

std::string Answer(int status, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(status) +
         " X\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

// Catches: an unversioned path, the image name not escaped, a 404 taken for
// success or reported without the engine's message.
TEST(DockerClient, TheEnginesErrorIsItsMessageWithAKind) {
  TempDir dir;
  const std::string sock = dir.path() + "/e.sock";
  {
    StandIn engine(sock, Answer(404, R"({"message":"No such image: example.org/x:1"})"));
    auto r = DockerClient(sock).InspectImage("example.org/x:1");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Status::Code::kNotFound);
    EXPECT_EQ(r.status().message(),
              "image example.org/x:1: No such image: example.org/x:1 (HTTP 404 from the Docker engine)");
    EXPECT_EQ(engine.request().rfind("GET /v1.41/images/example.org%2Fx%3A1/json HTTP/1.1\r\n", 0), 0u);
  }
  std::filesystem::remove(sock);
  {
    StandIn engine(sock, Answer(409, R"({"message":"Conflict. The container name is already in use"})"));
    auto r = DockerClient(sock).CreateContainer("fairbench-x", {{"Image", "i"}});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Status::Code::kFailedPrecondition);
    const std::string req = engine.request();
    EXPECT_EQ(req.rfind("POST /v1.41/containers/create?name=fairbench-x HTTP/1.1\r\n", 0), 0u) << req;
    EXPECT_NE(req.find(R"({"Image":"i"})"), std::string::npos) << req;
  }
  std::filesystem::remove(sock);
  {
    StandIn engine(sock, Answer(201, R"({"Id":"abc123","Warnings":[]})"));
    auto r = DockerClient(sock).CreateContainer("y", {{"Image", "i"}});
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(*r, "abc123");
  }
}

}  // namespace
}  // namespace fairbench::docker
