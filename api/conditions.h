// Conditions: status.conditions maintained the way Kubernetes' meta.SetStatusCondition does.
//
// A condition's lastTransitionTime changes only when its status changes, so
// that "Ready for 3h" means what it says; reason, message and
// observedGeneration are refreshed on every set.
#pragma once

#include <string_view>
#include <vector>

#include "api/benchmark_run.h"

namespace fairbench::api {

// Adds `condition`, or updates the one of the same type. Returns true when
// anything changed (the caller then writes the status).
bool SetCondition(std::vector<Condition>& conditions, Condition condition, Time now);
const Condition* FindCondition(const std::vector<Condition>& conditions, std::string_view type);
bool IsConditionTrue(const std::vector<Condition>& conditions, std::string_view type);

}  // namespace fairbench::api
