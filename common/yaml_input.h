#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace fairbench {

// What is wrong with YAML text before yaml-cpp sees it, for every YAML file
// fairbench reads (run files, kubeconfigs, request mixes).
//
// yaml-cpp 0.7 enforces neither rule:
//  - Text that is not UTF-8 passes through into strings, which then cannot
//    go on as JSON (the operator's objects, the record).
//  - A raw C0 control character (below U+0020) other than TAB, LF and CR
//    is not YAML (YAML 1.2 §5.1), and yaml-cpp misreads NUL: in a plain
//    scalar it takes NUL as its escape character, so "\0_" becomes a lone
//    byte 0xA0 (its reading of the escape "\_"), which is not UTF-8 either.
// kubectl refuses both ("control characters are not allowed", "invalid
// leading UTF-8 octet", ...), and so does fairbench, naming where. kubectl's
// reader also refuses the rest of what is outside YAML's printable set (DEL,
// the C1 controls but NEL, U+FFFE, U+FFFF); fairbench lets those pass, as
// yaml-cpp reads them as they are and JSON carries them.
struct YamlTextFault {
  size_t offset = 0;  // of the first offending byte
  int line = 1;       // 1-based
  int column = 1;     // 1-based, in bytes
  // "not UTF-8 text", or "control character U+00XX (how to write it)".
  std::string what;
};

std::optional<YamlTextFault> CheckYamlText(std::string_view text);

}  // namespace fairbench
