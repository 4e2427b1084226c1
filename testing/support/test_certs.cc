#include "testing/support/test_certs.h"

#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "testing/support/subprocess.h"
#include "testing/support/temp_dir.h"

namespace fairbench::testing {
namespace {

// `args` starts with "openssl".
Status RunOpenssl(const std::vector<std::string>& args, const std::string& dir) {
  SubprocessOptions o;
  o.argv = args;
  o.working_dir = dir;
  o.stdout_to = Redirect::File(dir + "/openssl.log");
  o.stderr_to = Redirect::File(dir + "/openssl.log");
  auto p = Subprocess::Start(std::move(o));
  if (!p.ok())
    return Status::FailedPrecondition("cannot run openssl (install Debian's openssl): " + p.status().message());
  auto st = p->Wait(std::chrono::seconds(30));
  if (!st.ok()) return st.status();
  if (!st->success()) {
    std::ifstream in(dir + "/openssl.log");
    std::stringstream log;
    log << in.rdbuf();
    return Status::Internal("openssl " + args[1] + " failed (" + st->ToString() + "): " + log.str());
  }
  return Status::Ok();
}

}  // namespace

Result<TestCertificates> MakeTestCertificates(const std::string& dir) {
  const std::string san = "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1";
  if (Status s = RunOpenssl(
          {"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
           "self.key", "-out", "self.crt", "-days", "2", "-subj", "/CN=localhost", "-addext", san},
          dir);
      !s.ok()) {
    return s;
  }
  if (Status s = RunOpenssl({"openssl",
                             "req",
                             "-x509",
                             "-newkey",
                             "ec",
                             "-pkeyopt",
                             "ec_paramgen_curve:P-256",
                             "-nodes",
                             "-keyout",
                             "ca.key",
                             "-out",
                             "ca.crt",
                             "-days",
                             "2",
                             "-subj",
                             "/CN=fairbench test CA",
                             "-addext",
                             "basicConstraints=critical,CA:TRUE",
                             "-addext",
                             "keyUsage=critical,keyCertSign"},
                            dir);
      !s.ok()) {
    return s;
  }
  if (Status s = RunOpenssl({"openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                             "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"},
                            dir);
      !s.ok()) {
    return s;
  }
  {
    std::ofstream ext(dir + "/server.ext");
    ext << san << "\n";
    if (!ext) return Status::IoError("cannot write " + dir + "/server.ext");
  }
  if (Status s = RunOpenssl({"openssl", "x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                             "-CAcreateserial", "-out", "server.crt", "-days", "2", "-extfile", "server.ext"},
                            dir);
      !s.ok()) {
    return s;
  }
  TestCertificates c;
  c.self_cert = dir + "/self.crt";
  c.self_key = dir + "/self.key";
  c.ca_cert = dir + "/ca.crt";
  c.server_cert = dir + "/server.crt";
  c.server_key = dir + "/server.key";
  return c;
}

Result<const TestCertificates*> SharedTestCertificates() {
  struct Shared {
    std::optional<TempDir> dir;  // removed when the process exits (static destruction)
    Result<TestCertificates> certs = Status::Internal("not made");
  };
  static const Shared shared = [] {
    Shared s;
    auto dir = TempDir::Create("fairbench-test-certs");
    if (!dir.ok()) {
      s.certs = dir.status();
      return s;
    }
    s.dir.emplace(std::move(*dir));
    s.certs = MakeTestCertificates(s.dir->path().string());
    return s;
  }();
  if (!shared.certs.ok()) return shared.certs.status();
  return &*shared.certs;
}

}  // namespace fairbench::testing
