// DescribeEnvironment: the facts about this machine that a report prints next
// to its numbers (host, kernel, CPU model, CPUs, memory, fairbench version).
#pragma once

#include "controller/report/run_record.h"

namespace fairbench::controller {

report::Environment DescribeEnvironment(const std::string& platform, const std::string& version);

}  // namespace fairbench::controller
