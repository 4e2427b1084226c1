#include "controller/metrics/write_request.h"

#include <snappy.h>

#include <algorithm>
#include <map>

#include "fairbench/prompb/remote_write.pb.h"

namespace fairbench::metrics {

std::string EncodeWriteRequest(const std::vector<RemoteSample>& samples) {
  // Gather by sorted label set; keep the first-seen order of series so
  // that the request reads in the order samples were produced.
  std::map<RemoteLabels, size_t> index;
  std::vector<RemoteLabels> order;
  std::vector<std::vector<const RemoteSample*>> by_series;
  for (const RemoteSample& s : samples) {
    RemoteLabels sorted;
    // An empty value is no label (remote write does not take one).
    for (const auto& label : s.labels) {
      if (!label.second.empty()) sorted.push_back(label);
    }
    std::sort(sorted.begin(), sorted.end());
    auto [it, inserted] = index.try_emplace(sorted, order.size());
    if (inserted) {
      order.push_back(std::move(sorted));
      by_series.emplace_back();
    }
    by_series[it->second].push_back(&s);
  }
  prompb::WriteRequest request;
  for (size_t i = 0; i < order.size(); ++i) {
    prompb::TimeSeries* ts = request.add_timeseries();
    for (const auto& [name, value] : order[i]) {
      prompb::Label* l = ts->add_labels();
      l->set_name(name);
      l->set_value(value);
    }
    auto& list = by_series[i];
    std::stable_sort(list.begin(), list.end(),
                     [](const RemoteSample* a, const RemoteSample* b) { return a->timestamp_ms < b->timestamp_ms; });
    for (const RemoteSample* s : list) {
      prompb::Sample* out = ts->add_samples();
      out->set_value(s->value);
      out->set_timestamp(s->timestamp_ms);
    }
  }
  std::string bytes;
  request.SerializeToString(&bytes);
  return bytes;
}

std::string SnappyCompress(std::string_view bytes) {
  std::string out;
  snappy::Compress(bytes.data(), bytes.size(), &out);
  return out;
}

Result<std::string> SnappyUncompress(std::string_view bytes) {
  std::string out;
  if (!snappy::Uncompress(bytes.data(), bytes.size(), &out)) return Status::InvalidArgument("not a snappy block");
  return out;
}

Result<std::vector<RemoteSample>> DecodeWriteRequest(std::string_view bytes) {
  prompb::WriteRequest request;
  if (!request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return Status::InvalidArgument("not a WriteRequest");
  }
  std::vector<RemoteSample> out;
  for (const prompb::TimeSeries& ts : request.timeseries()) {
    RemoteLabels labels;
    for (const prompb::Label& l : ts.labels()) labels.emplace_back(l.name(), l.value());
    for (const prompb::Sample& s : ts.samples()) out.push_back({labels, s.value(), s.timestamp()});
  }
  return out;
}

}  // namespace fairbench::metrics
