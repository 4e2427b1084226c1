#include "common/yaml_input.h"

#include <cstdint>
#include <cstdio>

namespace fairbench {
namespace {

// The length of the well-formed UTF-8 sequence at s[i], or 0.
size_t Utf8Length(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t n = 0;
  uint32_t cp = 0;
  if (c < 0x80) {
    return 1;
  } else if (c >= 0xc2 && c <= 0xdf) {
    n = 1;
    cp = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 2;
    cp = c & 0x0f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 3;
    cp = c & 0x07;
  } else {
    return 0;
  }
  for (size_t k = 1; k <= n; ++k) {
    if (i + k >= s.size()) return 0;
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3f);
  }
  // Overlong forms, surrogates and beyond U+10FFFF are not UTF-8.
  if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) return 0;
  return n + 1;
}

}  // namespace

std::optional<YamlTextFault> CheckYamlText(std::string_view text) {
  YamlTextFault fault;
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
      char code[8];
      std::snprintf(code, sizeof(code), "%02X", c);
      fault.what = std::string("control character U+00") + code +
                   " (YAML text holds only TAB, LF and CR raw; in a double-quoted string write it as \\x" + code + ")";
    } else if (const size_t n = Utf8Length(text, i); n == 0) {
      fault.what = "not UTF-8 text";
    } else {
      if (c == '\n') {
        ++fault.line;
        fault.column = 1;
      } else {
        fault.column += static_cast<int>(n);
      }
      i += n;
      continue;
    }
    fault.offset = i;
    return fault;
  }
  return std::nullopt;
}

}  // namespace fairbench
