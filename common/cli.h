// ParseCommandLine: CLI11 parsing with fairbench's conventions — help and
// version exit 0, every mistake is one line on stderr and exit code 2.
#pragma once

#include <cstdio>
#include <optional>

#include <CLI/CLI.hpp>

namespace fairbench {

// nullopt when parsing succeeded; otherwise the exit code to return.
inline std::optional<int> ParseCommandLine(CLI::App& app, int argc, char** argv, const char* program) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: %s (see --help)\n", program, e.what());
    return 2;
  }
  return std::nullopt;
}

}  // namespace fairbench
