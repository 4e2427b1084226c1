// gRPC messages through a descriptor set (common/grpc_message.h): a
// descriptor set is a user's file (a ConfigMap in a cluster), its JSON
// message theirs too, and a reply the server's.
//
// Input: [4 bytes: N, little-endian][N bytes: a FileDescriptorSet][the
// rest: a JSON message, and the same bytes as a reply]. For each method of
// a set that loads (16 at most): the JSON encoded as its input, the bytes
// decoded as its output (both JSON forms), the bytes checked as its input.
// Besides crashes and sanitizer reports, an error that is not one line
// aborts, as does an encoded message that does not parse as the type it
// was encoded as, or a method that Methods() lists and Method() refuses for
// another reason than its streaming kind.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/grpc_message.h"

namespace {

using fairbench::DescriptorSet;
using fairbench::Status;

[[noreturn]] void Die(const char* what, const std::string& detail) {
  std::fprintf(stderr, "grpc_message_fuzzer: %s: %s\n", what, detail.c_str());
  std::abort();
}

void OneLine(const Status& st) {
  if (!st.ok() && st.message().find('\n') != std::string::npos) Die("an error of more than one line", st.message());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const size_t n = static_cast<size_t>(data[0]) | static_cast<size_t>(data[1]) << 8 |
                   static_cast<size_t>(data[2]) << 16 | static_cast<size_t>(data[3]) << 24;
  if (n > size - 4) return 0;
  const std::string set_bytes(reinterpret_cast<const char*>(data + 4), n);
  const std::string_view rest(reinterpret_cast<const char*>(data + 4 + n), size - 4 - n);
  auto set = fairbench::LoadDescriptorSet(set_bytes, "fuzz.desc");
  OneLine(set.status());
  if (!set.ok()) return 0;
  int tried = 0;
  for (const std::string& name : set->Methods()) {
    if (++tried > 16) break;
    auto m = set->Method(name);
    OneLine(m.status());
    if (!m.ok()) {
      if (m.status().message().find("streaming; only unary") == std::string::npos) {
        Die("a listed method refused", m.status().message());
      }
      continue;
    }
    auto encoded = set->EncodeJson(*m, rest);
    OneLine(encoded.status());
    if (encoded.ok()) {
      const Status parses = set->CheckParses(*m, *encoded, "encoded");
      if (!parses.ok()) Die("an encoded message that does not parse", parses.message());
    }
    OneLine(set->DecodeToJson(*m, rest).status());
    OneLine(set->DecodeToJson(*m, rest, {.print_default_values = true, .proto_field_names = true}).status());
    OneLine(set->CheckParses(*m, rest, "reply"));
  }
  return 0;
}
