#include "testing/support/nginx_fixture.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <thread>

#include "testing/support/ports.h"

namespace fairbench::testing {
namespace {

constexpr const char* kEchoModule = "/usr/lib/nginx/modules/ngx_http_echo_module.so";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

template <typename T>
bool ParseNumber(std::string_view s, T* out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace

Result<AccessLogEntry> ParseAccessLogLine(const std::string& line) {
  std::vector<std::string_view> f;
  std::string_view rest = line;
  while (true) {
    auto tab = rest.find('\t');
    f.push_back(rest.substr(0, tab));
    if (tab == std::string_view::npos) break;
    rest.remove_prefix(tab + 1);
  }
  AccessLogEntry e;
  if ((f.size() != 8 && f.size() != 10) || !ParseNumber(f[3], &e.status) || !ParseNumber(f[4], &e.request_length) ||
      !ParseNumber(f[5], &e.bytes_sent) || !ParseNumber(f[6], &e.connection) ||
      !ParseNumber(f[7], &e.connection_requests)) {
    return Status::InvalidArgument("not a fixture access log line: " + line);
  }
  try {
    e.msec = std::stod(std::string(f[0]));
  } catch (const std::exception&) {
    return Status::InvalidArgument("bad $msec in access log line: " + line);
  }
  e.method = std::string(f[1]);
  e.uri = std::string(f[2]);
  if (f.size() == 10) {
    e.ssl_protocol = std::string(f[8]);
    e.ssl_session_reused = std::string(f[9]);
  }
  return e;
}

std::string NginxFixture::RenderConfig(const NginxOptions& o, uint16_t port, const std::string& dir) {
  std::ostringstream c;
  c << "# Written by fairbench's NginxFixture; everything lives in " << dir << ".\n"
    << "daemon off;\n"
    << "master_process on;\n"
    << "worker_processes " << o.worker_processes << ";\n";
  if (!o.worker_cpu_affinity.empty()) c << "worker_cpu_affinity " << o.worker_cpu_affinity << ";\n";
  if (o.worker_rlimit_nofile > 0) c << "worker_rlimit_nofile " << o.worker_rlimit_nofile << ";\n";
  c << "pid " << dir << "/nginx.pid;\n"
    << "error_log " << dir << "/error.log notice;\n"
    << "load_module " << kEchoModule << ";\n"
    << "events { worker_connections " << o.worker_connections << "; }\n"
    << "http {\n"
    << "  log_format fairbench '$msec\\t$request_method\\t$request_uri\\t$status\\t$request_length"
       "\\t$bytes_sent\\t$connection\\t$connection_requests\\t$ssl_protocol\\t$ssl_session_reused';\n"
    // No buffer= parameter: every line is written when its request ends.
    << "  access_log " << dir << "/access.log fairbench;\n"
    << "  keepalive_requests " << o.keepalive_requests << ";\n"
    << "  keepalive_timeout " << o.keepalive_timeout.count() << "s;\n"
    << "  client_body_buffer_size 1m;\n"
    << "  client_max_body_size 16m;\n";
  for (const char* t : {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"}) {
    c << "  " << t << "_temp_path " << dir << "/" << t << "_temp;\n";
  }
  c << "  map \"$http_content_length$http_transfer_encoding\" $fairbench_has_body { \"\" 0; default 1; }\n"
    << "  server {\n"
    << "    listen " << o.host << ":" << port;
  if (o.listen_backlog > 0) c << " backlog=" << o.listen_backlog;
  if (o.tls) c << " ssl";
  if (o.http2) c << " http2";
  c << ";\n";
  if (o.http2) c << "    http2_max_concurrent_streams " << o.http2_max_concurrent_streams << ";\n";
  if (o.tls) {
    c << "    ssl_certificate " << o.tls->certificate << ";\n"
      << "    ssl_certificate_key " << o.tls->certificate_key << ";\n"
      << "    ssl_protocols " << o.tls->protocols << ";\n"
      << "    ssl_session_tickets " << (o.tls->session_tickets ? "on" : "off") << ";\n"
      << "    ssl_session_cache shared:fairbench:1m;\n";
  }
  c  // A request with a body is answered by the echo module after reading it
      // all, so that $request_length counts the body; nginx's `return` would
      // answer first and discard the body afterwards.
      << "    location = / {\n"
      << "      default_type text/plain;\n"
      << "      if ($fairbench_has_body = 0) { return 200 'Hello, World!'; }\n"
      << "      echo_read_request_body;\n"
      << "      echo -n 'Hello, World!';\n"
      << "    }\n";
  for (int code = 200; code <= 599; ++code) {
    c << "    location = /status/" << code << " { return " << code << "; }\n";
  }
  c << "    location / {\n"
    << "      default_type text/plain;\n"
    << "      if ($fairbench_has_body = 0) { return 200 'ok'; }\n"
    << "      echo_read_request_body;\n"
    << "      echo -n 'ok';\n"
    << "    }\n"
    << "  }\n"
    << "}\n";
  return c.str();
}

NginxFixture::NginxFixture(NginxOptions options) : options_(std::move(options)) {}

NginxFixture::~NginxFixture() {
  // A destructor has nobody to report to; Stop kills what is left anyway.
  if (running()) (void)Stop(std::chrono::seconds(2));
}

std::string NginxFixture::access_log_path() const { return dir_ ? dir_->File("access.log") : ""; }
std::string NginxFixture::error_log_path() const { return dir_ ? dir_->File("error.log") : ""; }
std::string NginxFixture::ErrorLog() const { return dir_ ? ReadFile(error_log_path()) : ""; }

Status NginxFixture::Start() {
  if (running()) return Status::FailedPrecondition("nginx already running");
  if (access(options_.nginx_path.c_str(), X_OK) != 0) {
    return Status::FailedPrecondition(options_.nginx_path +
                                      " not found or not executable: install Debian's nginx (scripts/setup does)");
  }
  if (access(kEchoModule, R_OK) != 0) {
    return Status::FailedPrecondition(std::string(kEchoModule) + " missing: install libnginx-mod-http-echo");
  }
  // A free port can be taken between our probe and nginx's bind: retry then.
  constexpr int kAttempts = 3;
  for (int attempt = 1;; ++attempt) {
    auto dir = TempDir::Create("fairbench-nginx");
    if (!dir.ok()) return dir.status();
    // Workers run as nobody when we are root; they must reach the temp paths.
    chmod(dir->path().c_str(), 0755);
    uint16_t port = options_.port;
    if (port == 0) {
      auto free_port = FreeLoopbackPort();
      if (!free_port.ok()) return free_port.status();
      port = *free_port;
    }
    std::string conf = RenderConfig(options_, port, dir->path().string());
    {
      std::ofstream out(dir->File("nginx.conf"));
      out << conf;
      if (!out) return Status::IoError("cannot write " + dir->File("nginx.conf"));
    }
    SubprocessOptions sp;
    sp.argv = {options_.nginx_path,     "-p", dir->path().string(),  "-c",
               dir->File("nginx.conf"), "-e", dir->File("error.log")};
    sp.stdout_to = Redirect::File(dir->File("stdout.log"));
    sp.stderr_to = Redirect::File(dir->File("stderr.log"));
    auto process = Subprocess::Start(std::move(sp));
    if (!process.ok()) return process.status();
    dir_ = std::move(*dir);
    process_ = std::move(*process);
    port_ = port;
    config_ = std::move(conf);

    auto deadline = std::chrono::steady_clock::now() + options_.start_timeout;
    while (true) {
      if (PortAccepts(options_.host, port_)) return Status::Ok();
      if (auto exited = process_->Poll()) {
        std::string log = ReadFile(dir_->File("stderr.log")) + ErrorLog();
        bool in_use = log.find("Address already in use") != std::string::npos;
        if (in_use && options_.port == 0 && attempt < kAttempts) break;  // next attempt
        return Status::Unavailable("nginx exited (" + exited->ToString() + ") during start: " + log);
      }
      if (std::chrono::steady_clock::now() > deadline) {
        process_->Terminate(SIGKILL, std::chrono::seconds(1));
        return Status::DeadlineExceeded("nginx did not accept on port " + std::to_string(port_) + ": " + ErrorLog());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
}

Result<std::vector<AccessLogEntry>> NginxFixture::StopAndReadAccessLog() {
  const Status stopped = Stop();
  if (!stopped.ok()) return stopped;
  return AccessLog();
}

Status NginxFixture::Stop(std::chrono::milliseconds grace) {
  if (!process_) return Status::FailedPrecondition("nginx was not started");
  if (!running()) {
    auto st = process_->Poll();
    return st && st->success() ? Status::Ok() : Status::Unavailable("nginx had already exited: " + ErrorLog());
  }
  // SIGQUIT: workers finish the requests in flight and write their log lines.
  if (Status s = process_->Kill(SIGQUIT); !s.ok()) return s;
  auto r = process_->Wait(grace);
  if (!r.ok()) {
    r = process_->Terminate(SIGTERM, std::chrono::seconds(2));
    // Whatever happened, the workers must not outlive the test.
    (void)process_->Kill(SIGKILL, /*to_group=*/true);
    if (!r.ok()) return r.status();
    return Status::DeadlineExceeded("nginx did not stop gracefully within " + std::to_string(grace.count()) +
                                    " ms; ended with " + r->ToString());
  }
  if (!r->success()) return Status::Internal("nginx ended with " + r->ToString() + ": " + ErrorLog());
  return Status::Ok();
}

Result<std::vector<AccessLogEntry>> NginxFixture::AccessLog() const {
  if (!dir_) return Status::FailedPrecondition("nginx was not started");
  std::string text = ReadFile(access_log_path());
  std::vector<AccessLogEntry> entries;
  size_t pos = 0;
  while (true) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) break;  // a line still being written
    auto e = ParseAccessLogLine(text.substr(pos, eol - pos));
    if (!e.ok()) return e.status();
    entries.push_back(std::move(*e));
    pos = eol + 1;
  }
  return entries;
}

Result<std::vector<AccessLogEntry>> NginxFixture::WaitForAccessLog(size_t count,
                                                                   std::chrono::milliseconds timeout) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    auto entries = AccessLog();
    if (!entries.ok() || entries->size() >= count) return entries;
    if (std::chrono::steady_clock::now() > deadline) {
      return Status::DeadlineExceeded("access log has " + std::to_string(entries->size()) + " of " +
                                      std::to_string(count) + " lines");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace fairbench::testing
