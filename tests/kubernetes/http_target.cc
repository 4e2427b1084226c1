// fairbench-test-http: the smallest HTTP server a target pod can run on a
// real node — every request on a connection gets "200 ok", one connection
// at a time. A static binary: the one file of its image (scripts/kube-node
// image), started by fairbench-nofile as a target's command.
//
//   fairbench-test-http --port N
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  int port = 0;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--port") == 0) port = std::atoi(argv[i + 1]);
  }
  if (port <= 0 || port > 65535) {
    std::fprintf(stderr, "usage: fairbench-test-http --port N\n");
    return 2;
  }
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  if (bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(s, 64) != 0) {
    std::perror("fairbench-test-http: bind/listen");
    return 1;
  }
  std::printf("listening on port %d\n", port);
  std::fflush(stdout);
  for (;;) {
    const int c = accept(s, nullptr, nullptr);
    if (c < 0) continue;
    std::string in;
    char buf[4096];
    for (;;) {
      const ssize_t n = read(c, buf, sizeof buf);
      if (n <= 0) break;
      in.append(buf, static_cast<size_t>(n));
      size_t end;
      while ((end = in.find("\r\n\r\n")) != std::string::npos) {
        in.erase(0, end + 4);
        static const char kAnswer[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok";
        if (write(c, kAnswer, sizeof kAnswer - 1) < 0) break;
      }
    }
    close(c);
  }
}
