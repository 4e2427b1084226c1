#include "controller/metrics/registry.h"
#include "common/mutex.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>

namespace fairbench::metrics {
namespace {

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "fairbench: metric registry: %s\n", why.c_str());
  std::abort();
}

}  // namespace

MetricRegistry::FamilyId MetricRegistry::Declare(std::string name, std::string help, MetricType type,
                                                 std::vector<std::string> label_names, std::vector<double> bounds) {
  if (!IsValidMetricName(name)) Die("invalid metric name '" + name + "'");
  std::set<std::string> seen;
  for (const std::string& l : label_names) {
    if (!IsValidLabelName(l) || !seen.insert(l).second) Die(name + ": invalid or duplicate label name '" + l + "'");
  }
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!(bounds[i] < 1e308) || (i > 0 && !(bounds[i] > bounds[i - 1])))
      Die(name + ": bounds must ascend and be finite");
  }
  MutexLock lock(mu_);
  for (const Family& f : families_) {
    if (f.meta.name == name) Die("metric '" + name + "' declared twice");
  }
  Family f;
  f.meta.name = std::move(name);
  f.meta.help = std::move(help);
  f.meta.type = type;
  f.meta.label_names = std::move(label_names);
  f.meta.bounds = std::move(bounds);
  families_.push_back(std::move(f));
  return families_.size() - 1;
}

MetricRegistry::FamilyId MetricRegistry::AddCounter(std::string name, std::string help,
                                                    std::vector<std::string> label_names) {
  return Declare(std::move(name), std::move(help), MetricType::kCounter, std::move(label_names), {});
}
MetricRegistry::FamilyId MetricRegistry::AddGauge(std::string name, std::string help,
                                                  std::vector<std::string> label_names) {
  return Declare(std::move(name), std::move(help), MetricType::kGauge, std::move(label_names), {});
}
MetricRegistry::FamilyId MetricRegistry::AddHistogram(std::string name, std::string help,
                                                      std::vector<std::string> label_names,
                                                      std::vector<double> bounds) {
  return Declare(std::move(name), std::move(help), MetricType::kHistogram, std::move(label_names), std::move(bounds));
}

Series& MetricRegistry::At(FamilyId family, const LabelValues& labels, MetricType expected) {
  if (family >= families_.size()) Die("unknown family id");
  Family& f = families_[family];
  if (f.meta.type != expected && !(expected == MetricType::kGauge && f.meta.type == MetricType::kCounter)) {
    Die(f.meta.name + ": wrong operation for a " + TypeName(f.meta.type));
  }
  if (labels.size() != f.meta.label_names.size()) Die(f.meta.name + ": wrong number of label values");
  auto [it, inserted] = f.series.try_emplace(labels);
  if (inserted) {
    it->second.label_values = labels;
    if (f.meta.type == MetricType::kHistogram) it->second.buckets.assign(f.meta.bounds.size(), 0);
  }
  return it->second;
}

void MetricRegistry::Set(FamilyId family, const LabelValues& labels, double value) {
  MutexLock lock(mu_);
  At(family, labels, MetricType::kGauge).value = value;
}

void MetricRegistry::Add(FamilyId family, const LabelValues& labels, double delta) {
  MutexLock lock(mu_);
  At(family, labels, MetricType::kGauge).value += delta;
}

void MetricRegistry::SetHistogram(FamilyId family, const LabelValues& labels, std::vector<uint64_t> cumulative,
                                  uint64_t count, double sum) {
  MutexLock lock(mu_);
  Series& s = At(family, labels, MetricType::kHistogram);
  if (cumulative.size() != families_[family].meta.bounds.size())
    Die(families_[family].meta.name + ": wrong bucket count");
  s.buckets = std::move(cumulative);
  s.count = count;
  s.sum = sum;
}

void MetricRegistry::Remove(FamilyId family, const LabelValues& labels) {
  MutexLock lock(mu_);
  if (family < families_.size()) families_[family].series.erase(labels);
}

size_t MetricRegistry::RemoveWhere(const std::string& label_name, const std::string& value) {
  MutexLock lock(mu_);
  size_t removed = 0;
  for (Family& f : families_) {
    const auto& names = f.meta.label_names;
    const auto pos = std::find(names.begin(), names.end(), label_name);
    if (pos == names.end()) continue;
    const size_t i = static_cast<size_t>(pos - names.begin());
    for (auto it = f.series.begin(); it != f.series.end();) {
      if (it->first[i] == value) {
        it = f.series.erase(it);
        ++removed;
      } else {
        ++it;
      }
    }
  }
  return removed;
}

void MetricRegistry::AddCollector(std::function<void()> collector) {
  MutexLock lock(mu_);
  collectors_.push_back(std::move(collector));
}

std::vector<MetricFamily> MetricRegistry::Collect() const {
  std::vector<std::function<void()>> collectors;
  {
    MutexLock lock(mu_);
    collectors = collectors_;
  }
  for (const auto& c : collectors) c();
  std::vector<MetricFamily> out;
  {
    MutexLock lock(mu_);
    out.reserve(families_.size());
    for (const Family& f : families_) {
      MetricFamily m = f.meta;
      m.series.reserve(f.series.size());
      for (const auto& [labels, s] : f.series) m.series.push_back(s);
      out.push_back(std::move(m));
    }
  }
  std::sort(out.begin(), out.end(), [](const MetricFamily& a, const MetricFamily& b) { return a.name < b.name; });
  return out;
}

bool MetricRegistry::Get(FamilyId family, const LabelValues& labels, double* value) const {
  MutexLock lock(mu_);
  if (family >= families_.size()) return false;
  const auto it = families_[family].series.find(labels);
  if (it == families_[family].series.end()) return false;
  *value = it->second.value;
  return true;
}

size_t MetricRegistry::series_count() const {
  MutexLock lock(mu_);
  size_t n = 0;
  for (const Family& f : families_) n += f.series.size();
  return n;
}

}  // namespace fairbench::metrics
