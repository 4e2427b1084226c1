// ResolveProgram: which file a target's command runs.
//
// A program named with a slash ("./server", "/usr/sbin/nginx",
// "build/bin/x") is used as it is (relative to the target's working
// directory). A bare name ("fairbench-target-nginx") is looked up next to
// the fairbench binary first — so the examples work from any checkout,
// build folder or installation — and then on PATH.
#pragma once

#include <string>

#include "common/status.h"

namespace fairbench::controller {

// The path to execute; NotFound naming every place searched.
Result<std::string> ResolveProgram(const std::string& program, const std::string& program_dir,
                                   const std::string& path_env);

}  // namespace fairbench::controller
