#include "api/conditions.h"

namespace fairbench::api {

bool SetCondition(std::vector<Condition>& conditions, Condition condition, Time now) {
  for (Condition& existing : conditions) {
    if (existing.type != condition.type) continue;
    const bool transition = existing.status != condition.status;
    if (transition) {
      existing.status = condition.status;
      existing.last_transition_time = condition.last_transition_time.value_or(now);
    }
    const bool changed = existing.reason != condition.reason || existing.message != condition.message ||
                         existing.observed_generation != condition.observed_generation;
    existing.reason = std::move(condition.reason);
    existing.message = std::move(condition.message);
    existing.observed_generation = condition.observed_generation;
    return transition || changed;
  }
  if (!condition.last_transition_time.has_value()) condition.last_transition_time = now;
  conditions.push_back(std::move(condition));
  return true;
}

const Condition* FindCondition(const std::vector<Condition>& conditions, std::string_view type) {
  for (const Condition& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

bool IsConditionTrue(const std::vector<Condition>& conditions, std::string_view type) {
  const Condition* c = FindCondition(conditions, type);
  return c != nullptr && c->status == ConditionStatus::kTrue;
}

}  // namespace fairbench::api
