#include "api/benchmark_run.h"

#include "api/schema.h"

namespace fairbench::api {

const std::string& Request::EffectiveBody() const {
  static const std::string kEmpty;
  if (body.has_value()) return *body;
  if (body_file.has_value()) return body_file_content;
  return kEmpty;
}

std::string_view ToString(RunPhase v) { return schema::NameOf(v); }
std::string_view ToString(Stage v) { return schema::NameOf(v); }
std::string_view ToString(CellState v) { return schema::NameOf(v); }
std::string_view ToString(ConditionStatus v) { return schema::NameOf(v); }
std::string_view ToString(RepetitionOrder v) { return schema::NameOf(v); }
std::string_view ToString(IdleWaitMode v) { return schema::NameOf(v); }
std::string_view ToString(LimiterKind v) { return schema::NameOf(v); }
std::string_view ToString(GrpcCode v) { return schema::NameOf(v); }

RepetitionOrder EffectiveRepetitionOrder(const BenchmarkRunSpec& spec) {
  if (spec.repetition_order) return *spec.repetition_order;
  return spec.repetitions > 1 ? RepetitionOrder::kInterleaved : RepetitionOrder::kSequential;
}

std::string Script::Name(const std::string& scenario) const {
  if (file) return *file;
  if (config_map_ref) return "configmap/" + config_map_ref->name + "/" + config_map_ref->key;
  return scenario + ".inline.lua";
}

}  // namespace fairbench::api
