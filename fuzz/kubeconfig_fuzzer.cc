// The kubeconfig loader: the input is written to a file (two files merged,
// as $KUBECONFIG lists them, when it holds a "\n---8<---\n" line) beside a
// CA certificate, a key pair and a token file that relative paths may name,
// and loaded. No exec plugin runs at load time; a token file is read.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "controller/kube/kubeconfig.h"

namespace {

namespace fs = std::filesystem;

void Write(const fs::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
}

// A self-signed certificate and its key (openssl req -x509 -newkey ec
// -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 -subj /CN=fuzz-seeds),
// so that a kubeconfig naming them reaches the certificate checks.
constexpr char kCert[] = R"(-----BEGIN CERTIFICATE-----
MIIBfzCCASWgAwIBAgIUEZ5X+cFNpjbmra9uiYO4bHlE5oUwCgYIKoZIzj0EAwIw
FTETMBEGA1UEAwwKZnV6ei1zZWVkczAeFw0yNjEyMDEwODIzMDZaFw0zNjExMjgw
ODIzMDZaMBUxEzARBgNVBAMMCmZ1enotc2VlZHMwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAATFmFzzKrck4zHnVrOXsSQYwxzyOHhFfb6KcYuUHR9JvIS4UM77wMFk
xC82XXNI2d9xUH/39yeN5Y2XJnNbEby7o1MwUTAdBgNVHQ4EFgQUdGsWwYHuH0gW
Bpp1RQbNoKeFA64wHwYDVR0jBBgwFoAUdGsWwYHuH0gWBpp1RQbNoKeFA64wDwYD
VR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNIADBFAiAwSBANR51SrBHrvN5F9iBk
i5cASbgwX3Z4HVI7sj5m4AIhANxZ2qsFSpt3Tff5kk+xQQn8Da2+Qd9i82P1Sf7T
2z5K
-----END CERTIFICATE-----
)";
constexpr char kKey[] = R"(-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgKGbf1/cJ1Bd5SxNP
wBAXlpNsceixrPnopXjo4vYhRHKhRANCAATFmFzzKrck4zHnVrOXsSQYwxzyOHhF
fb6KcYuUHR9JvIS4UM77wMFkxC82XXNI2d9xUH/39yeN5Y2XJnNbEby7
-----END PRIVATE KEY-----
)";

// The fuzzer's files, removed when the process exits normally (a crash
// keeps them, with the input that caused it).
struct FuzzDir {
  fs::path path;
  ~FuzzDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

const fs::path& Dir() {
  static const FuzzDir dir = [] {
    fs::path d = fs::temp_directory_path() / ("fairbench-kubeconfig-fuzz-" + std::to_string(getpid()));
    fs::create_directories(d);
    Write(d / "ca.crt", kCert);
    Write(d / "client.crt", kCert);
    Write(d / "client.key", kKey);
    Write(d / "token", "fuzz-token\n");
    Write(d / "empty", "");
    return FuzzDir{d};
  }();
  return dir.path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  fairbench::kube::KubeconfigOptions options;
  constexpr std::string_view kSeparator = "\n---8<---\n";
  const size_t cut = text.find(kSeparator);
  Write(Dir() / "config", text.substr(0, cut));
  options.paths.push_back((Dir() / "config").string());
  if (cut != std::string_view::npos) {
    Write(Dir() / "config2", text.substr(cut + kSeparator.size()));
    options.paths.push_back((Dir() / "config2").string());
  }
  auto config = fairbench::kube::LoadKubeconfig(options);
  if (!config.ok() && config.status().message().empty()) std::abort();
  return 0;
}
