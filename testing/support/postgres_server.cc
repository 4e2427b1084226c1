#include "testing/support/postgres_server.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "testing/support/ports.h"

namespace fairbench::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// The newest of Debian's PostgreSQL versions installed; "" for none.
std::string NewestBinDir() {
  std::error_code ec;
  int best = -1;
  std::string dir;
  for (const auto& e : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string bin = e.path().string() + "/bin";
    if (std::stoi(name) > best && fs::exists(bin + "/initdb", ec) && fs::exists(bin + "/postgres", ec)) {
      best = std::stoi(name);
      dir = bin;
    }
  }
  return dir;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Tail(const std::string& text, size_t n = 600) {
  return text.size() <= n ? text : "…" + text.substr(text.size() - n);
}

// PostgreSQL refuses root: as root, the server's programs run as nobody.
struct ServerUser {
  bool switch_user = false;
  uid_t uid = 0;
  gid_t gid = 0;
};

ServerUser WhoRunsTheServer() {
  ServerUser u;
  if (geteuid() != 0) return u;
  const passwd* pw = getpwnam("nobody");
  u.switch_user = true;
  u.uid = pw != nullptr ? pw->pw_uid : 65534;
  u.gid = pw != nullptr ? pw->pw_gid : 65534;
  return u;
}

std::vector<std::string> AsServerUser(const ServerUser& u, std::vector<std::string> argv) {
  if (!u.switch_user) return argv;
  std::vector<std::string> wrapped = {"/usr/bin/setpriv", "--reuid=" + std::to_string(u.uid),
                                      "--regid=" + std::to_string(u.gid), "--clear-groups", "--"};
  wrapped.insert(wrapped.end(), argv.begin(), argv.end());
  return wrapped;
}

// Runs a program to its end (bounded); its stdout, or its stderr as the error.
Result<std::string> RunToEnd(std::vector<std::string> argv, const std::string& stderr_file,
                             std::chrono::milliseconds timeout) {
  SubprocessOptions o;
  o.argv = std::move(argv);
  o.env = {{"LC_ALL", "C.UTF-8"}, {"PGCONNECT_TIMEOUT", "5"}};
  o.stdout_to = Redirect::Pipe();
  o.stderr_to = Redirect::File(stderr_file);
  auto p = Subprocess::Start(o);
  if (!p.ok()) return p.status();
  auto out = p->ReadStdout(timeout);
  auto st = p->Wait(timeout);
  if (!st.ok()) {
    (void)p->Terminate(SIGKILL, 1s);  // the destructor reaps it either way
    return Status::DeadlineExceeded(o.argv[0] + " did not finish in time");
  }
  if (!st->success()) {
    return Status::Unavailable(o.argv[0] + " failed (" + st->ToString() + "): " + Tail(ReadFile(stderr_file)));
  }
  return out.ok() ? *out : std::string();
}

std::atomic<int> psql_calls{0};

}  // namespace

Result<std::unique_ptr<PostgresServer>> PostgresServer::Start() {
  std::unique_ptr<PostgresServer> s(new PostgresServer());
  s->bin_dir_ = NewestBinDir();
  if (s->bin_dir_.empty()) {
    return Status::FailedPrecondition("no PostgreSQL server in /usr/lib/postgresql/*/bin: install Debian's postgresql");
  }
  if (!fs::exists("/usr/bin/psql")) return Status::FailedPrecondition("no /usr/bin/psql: install Debian's postgresql");
  auto dir = TempDir::Create("fairbench-pg");
  if (!dir.ok()) return dir.status();
  s->dir_.emplace(std::move(*dir));
  const ServerUser user = WhoRunsTheServer();
  const std::string root = s->dir_->path().string();
  if (user.switch_user && chown(root.c_str(), user.uid, user.gid) != 0) {
    return Status::IoError("chown " + root + " to nobody failed");
  }
  s->data_dir_ = root + "/data";
  s->socket_dir_ = root;

  auto init =
      RunToEnd(AsServerUser(user, {s->bin_dir_ + "/initdb", "-D", s->data_dir_, "-U", "postgres", "--auth-local=trust",
                                   "--auth-host=trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"}),
               root + "/initdb.err", 60s);
  if (!init.ok()) return Status::Unavailable("initdb: " + init.status().message());
  // The password login over TCP; everything else trusted (a test server on
  // loopback, gone with the test).
  {
    std::ofstream hba(s->data_dir_ + "/pg_hba.conf", std::ios::trunc);
    hba << "local all all trust\n"
        << "host all " << kPasswordUser << " 127.0.0.1/32 scram-sha-256\n"
        << "host all all 127.0.0.1/32 trust\n";
  }

  // The port is free when picked, but another process may take it first:
  // a server that cannot bind is started again on another.
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto port = FreeLoopbackPort();
    if (!port.ok()) return port.status();
    s->port_ = *port;
    const std::string log = root + "/postgres.log";
    SubprocessOptions o;
    o.argv = AsServerUser(user, {s->bin_dir_ + "/postgres", "-D", s->data_dir_, "-p", std::to_string(s->port_), "-k",
                                 s->socket_dir_, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=on", "-c",
                                 "synchronous_commit=on", "-c", "max_connections=40", "-c", "logging_collector=off"});
    o.env = {{"LC_ALL", "C.UTF-8"}};
    o.stdout_to = Redirect::File(log, true);
    o.stderr_to = Redirect::File(log, true);
    auto p = Subprocess::Start(o);
    if (!p.ok()) return p.status();
    s->postgres_.emplace(std::move(*p));
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    bool ready = false;
    while (std::chrono::steady_clock::now() < deadline) {
      if (s->postgres_->Poll()) break;  // exited: see the log
      if (s->Psql("postgres", "SELECT 1").ok()) {
        ready = true;
        break;
      }
      std::this_thread::sleep_for(50ms);
    }
    if (ready) break;
    const std::string why = Tail(ReadFile(log));
    s->postgres_.reset();
    if (why.find("could not bind") == std::string::npos || attempt == 2) {
      return Status::Unavailable("postgres did not start: " + why);
    }
  }
  auto role = s->Psql("postgres", std::string("CREATE ROLE ") + kPasswordUser + " LOGIN PASSWORD '" + kPassword + "'");
  if (!role.ok()) return role.status();
  return s;
}

PostgresServer::~PostgresServer() {
  if (postgres_ && postgres_->running()) {
    (void)RunToEnd(AsServerUser(WhoRunsTheServer(),
                                {bin_dir_ + "/pg_ctl", "stop", "-D", data_dir_, "-m", "immediate", "-w", "-t", "10"}),
                   dir_->File("pg_ctl.err"), 15s);  // best effort: the group is killed next
    (void)postgres_->Terminate(SIGKILL, 1s);
  }
  postgres_.reset();
}

std::string PostgresServer::Url(const std::string& database) const {
  return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/" + database;
}

std::string PostgresServer::PasswordUrl(const std::string& database, const std::string& password) const {
  return std::string("postgresql://") + kPasswordUser + ":" + password + "@127.0.0.1:" + std::to_string(port_) + "/" +
         database;
}

Result<std::string> PostgresServer::CreateDatabase(const std::string& name, const std::string& owner) {
  auto r = Psql("postgres", "CREATE DATABASE \"" + name + "\" OWNER \"" + owner + "\"");
  if (!r.ok()) return r.status();
  return Url(name);
}

Result<std::string> PostgresServer::Psql(const std::string& database, const std::string& sql) const {
  const std::string err = dir_->File("psql." + std::to_string(getpid()) + "." + std::to_string(++psql_calls) + ".err");
  auto out = RunToEnd({"/usr/bin/psql", "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-h", socket_dir_, "-p",
                       std::to_string(port_), "-U", "postgres", "-d", database, "-c", sql},
                      err, 30s);
  std::error_code ec;
  fs::remove(err, ec);
  return out;
}

}  // namespace fairbench::testing
