// Certificates for HTTPS tests, made at run time with the openssl command
// (`openssl req -x509 …`), the way a user makes a self-signed one; nothing
// is checked in.
//
// MakeTestCertificates(dir) writes into `dir`:
//   self.crt, self.key     a self-signed certificate for localhost / 127.0.0.1
//   ca.crt, ca.key         a CA
//   server.crt, server.key a certificate for localhost / 127.0.0.1 signed by ca.crt
// Blocking; call it before the servers start.
#pragma once

#include <string>

#include "common/status.h"

namespace fairbench::testing {

struct TestCertificates {
  std::string self_cert, self_key;
  std::string ca_cert;
  std::string server_cert, server_key;
};

Result<TestCertificates> MakeTestCertificates(const std::string& dir);

// One set per process, made on the first call in a temp dir that is
// removed at exit; later calls return the same files (or the same error).
// Thread-safe.
Result<const TestCertificates*> SharedTestCertificates();

}  // namespace fairbench::testing
