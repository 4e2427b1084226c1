#include "controller/hub/grpc_server.h"

#include "common/tls_files.h"

namespace fairbench::controller {

Result<std::shared_ptr<grpc::ServerCredentials>> HubCredentials(const HubTls& tls) {
  if (!tls.enabled()) {
    if (!tls.key_file.empty() || !tls.client_ca_file.empty()) {
      return Status::InvalidArgument("--hub-tls-key and --hub-tls-client-ca need --hub-tls-cert");
    }
    return grpc::InsecureServerCredentials();
  }
  if (tls.key_file.empty()) return Status::InvalidArgument("--hub-tls-cert needs --hub-tls-key");
  auto cert = tls::ReadCertificates(tls.cert_file, "--hub-tls-cert");
  if (!cert.ok()) return cert.status();
  auto key = tls::ReadPrivateKey(tls.key_file, "--hub-tls-key");
  if (!key.ok()) return key.status();
  if (Status s = tls::CheckKeyPair(*cert, *key, "--hub-tls-cert and --hub-tls-key"); !s.ok()) return s;
  grpc::SslServerCredentialsOptions o(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  o.pem_key_cert_pairs.push_back({*key, *cert});
  if (!tls.client_ca_file.empty()) {
    auto ca = tls::ReadCertificates(tls.client_ca_file, "--hub-tls-client-ca");
    if (!ca.ok()) return ca.status();
    o.pem_root_certs = *ca;
    o.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(o);
}

Result<GrpcServer> StartGrpcServer(grpc::Service* service, const std::string& address,
                                   const GrpcServerOptions& options) {
  auto credentials = HubCredentials(options.tls);
  if (!credentials.ok()) return credentials.status();
  grpc::ServerBuilder builder;
  GrpcServer out;
  builder.AddListeningPort(address, *credentials, &out.port);
  builder.RegisterService(service);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 1000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 1000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 100);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, static_cast<int>(options.handshake_timeout.count()));
  // Beyond this gRPC ends the stream with RESOURCE_EXHAUSTED before the hub
  // sees the message.
  builder.SetMaxReceiveMessageSize(options.max_receive_message_bytes);
  // One process per agent port: with SO_REUSEPORT a second controller could
  // bind it too and the kernel would split the agents between the two.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  out.server = builder.BuildAndStart();
  if (!out.server || out.port == 0) return Status::Unavailable("cannot listen for agents on " + address);
  return out;
}

}  // namespace fairbench::controller
