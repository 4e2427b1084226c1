#include "controller/platform/local/program_path.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

namespace fairbench::controller {
namespace {

bool IsExecutableFile(const std::filesystem::path& p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(p.c_str(), X_OK) == 0;
}

}  // namespace

Result<std::string> ResolveProgram(const std::string& program, const std::string& program_dir,
                                   const std::string& path_env) {
  if (program.empty()) return Status::InvalidArgument("the command's program is empty");
  if (program.find('/') != std::string::npos) return program;
  std::string searched;
  if (!program_dir.empty()) {
    const std::filesystem::path beside = std::filesystem::path(program_dir) / program;
    if (IsExecutableFile(beside)) return beside.string();
    searched = program_dir;
  }
  std::stringstream dirs(path_env);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) dir = ".";
    const std::filesystem::path candidate = std::filesystem::path(dir) / program;
    if (IsExecutableFile(candidate)) return candidate.string();
  }
  if (!path_env.empty()) searched += (searched.empty() ? "" : ", then PATH ") + path_env;
  return Status::NotFound("program '" + program + "' not found (searched " + (searched.empty() ? "nothing" : searched) +
                          ")");
}

}  // namespace fairbench::controller
