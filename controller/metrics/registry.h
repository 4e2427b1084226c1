// MetricRegistry: the controller's metric families and their series, as the
// /metrics endpoint serves them.
//
// Families are declared once (name, help, type, label names; a histogram's
// bucket bounds) and addressed by the returned id. Series are created on
// first use and keyed by their label values, which must match the declared
// label names in number; a wrong count, an invalid or duplicate name are
// programming errors and abort. Callers keep the label values bounded (run,
// target, scenario, connection level — never URLs or ids): whoever creates a
// series also removes it (Remove, RemoveWhere), so cardinality stays bounded.
//
// Collectors are functions run at the start of every Collect(), outside the
// registry's lock, to refresh values that are read rather than pushed
// (process statistics, connected agents). Collect() returns a copy sorted by
// family name, series by label values.
//
// Thread-safe: one mutex, held only to copy or update values.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "controller/metrics/metric_family.h"

namespace fairbench::metrics {

class MetricRegistry {
 public:
  using FamilyId = size_t;
  using LabelValues = std::vector<std::string>;

  FamilyId AddCounter(std::string name, std::string help, std::vector<std::string> label_names = {});
  FamilyId AddGauge(std::string name, std::string help, std::vector<std::string> label_names = {});
  // `bounds`: finite upper bounds in base units, strictly ascending.
  FamilyId AddHistogram(std::string name, std::string help, std::vector<std::string> label_names,
                        std::vector<double> bounds);

  // Counter or gauge. Set replaces the value (a counter's caller keeps it
  // monotonic); Add adds to it (creating the series at 0).
  void Set(FamilyId family, const LabelValues& labels, double value);
  void Add(FamilyId family, const LabelValues& labels, double delta);
  // Histogram: replaces the series' cumulative bucket counts (one per bound),
  // observation count and sum.
  void SetHistogram(FamilyId family, const LabelValues& labels, std::vector<uint64_t> cumulative, uint64_t count,
                    double sum);
  // Removes one series; nothing happens if it does not exist.
  void Remove(FamilyId family, const LabelValues& labels);
  // Removes, from every family with a label `label_name`, the series whose
  // value for it is `value`. Returns how many went.
  size_t RemoveWhere(const std::string& label_name, const std::string& value);

  void AddCollector(std::function<void()> collector);
  std::vector<MetricFamily> Collect() const;

  // The value of a counter or gauge series, if it exists (for tests and the
  // end-of-run report).
  bool Get(FamilyId family, const LabelValues& labels, double* value) const;
  size_t series_count() const;

 private:
  struct Family {
    MetricFamily meta;  // series left empty; they live in `series`
    std::map<LabelValues, Series> series;
  };
  FamilyId Declare(std::string name, std::string help, MetricType type, std::vector<std::string> label_names,
                   std::vector<double> bounds);
  Series& At(FamilyId family, const LabelValues& labels, MetricType expected) REQUIRES(mu_);

  mutable Mutex mu_;
  std::vector<Family> families_ GUARDED_BY(mu_);
  std::vector<std::function<void()>> collectors_ GUARDED_BY(mu_);
};

}  // namespace fairbench::metrics
