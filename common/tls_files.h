// PEM files for the agent stream's TLS: read and checked before gRPC sees
// them, so that a wrong path, a file of the wrong kind or a key that does
// not belong to its certificate is an error naming the flag, not a TLS
// handshake that fails later with an OpenSSL message.
//
// Plain functions; thread-safe.
#pragma once

#include <string>

#include "common/status.h"

namespace fairbench::tls {

// The PEM text of `path`, which must hold at least one certificate
// (a chain, or a bundle of CAs). `flag` names the option in errors.
Result<std::string> ReadCertificates(const std::string& path, const std::string& flag);
// The PEM text of `path`, which must hold a private key.
Result<std::string> ReadPrivateKey(const std::string& path, const std::string& flag);
// OK when `key_pem` is the private key of the first certificate of
// `cert_pem`; `flags` names both options in the error ("--tls-cert and --tls-key").
Status CheckKeyPair(const std::string& cert_pem, const std::string& key_pem, const std::string& flags);

}  // namespace fairbench::tls
