#include "testing/support/time_scale.h"

#include <cstdlib>

namespace fairbench::testing {

double TimeScale() {
  static const double scale = [] {
    const char* env = std::getenv("FAIRBENCH_TIME_SCALE");
    if (env == nullptr) return 1.0;
    char* end = nullptr;
    double v = std::strtod(env, &end);
    return (end != env && *end == '\0' && v >= 1.0) ? v : 1.0;
  }();
  return scale;
}

}  // namespace fairbench::testing
