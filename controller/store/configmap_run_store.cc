#include "controller/store/configmap_run_store.h"

#include <openssl/evp.h>
#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <set>
#include <vector>

#include <spdlog/spdlog.h>

#include "common/base64.h"
#include "common/backoff.h"
#include "common/clock.h"
#include "controller/report/html.h"
#include "controller/report/markdown.h"

namespace fairbench::controller {
namespace {

constexpr char kReportMarkdown[] = "report.md";
constexpr char kReportHtml[] = "report.html";
constexpr char kReportMarkdownGz[] = "report.md.gz";
constexpr char kReportHtmlGz[] = "report.html.gz";

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const size_t end = comma == std::string::npos ? text.size() : comma;
    out.push_back(text.substr(start, end - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string JoinList(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out += ',';
    out += s;
  }
  return out;
}

template <typename T>
std::optional<T> ParseNumber(const std::string& text) {
  T value{};
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || p != end || text.empty()) return std::nullopt;
  return value;
}

const std::string* Annotation(const kube::ConfigMap& cm, const char* key) {
  auto it = cm.metadata.annotations.find(key);
  return it == cm.metadata.annotations.end() ? nullptr : &it->second;
}

std::string PartLabel(size_t index, size_t count) { return std::to_string(index) + "/" + std::to_string(count); }

}  // namespace

Result<std::string> Gzip(std::string_view bytes) {
  z_stream zs{};
  // 15 + 16: a gzip header and trailer around the deflate stream.
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return Status::Internal("gzip: deflateInit2 failed");
  }
  std::string out;
  out.resize(deflateBound(&zs, static_cast<uLong>(bytes.size())) + 32);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  zs.avail_in = static_cast<uInt>(bytes.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  const size_t produced = zs.total_out;
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) return Status::Internal("gzip: deflate did not finish (" + std::to_string(rc) + ")");
  out.resize(produced);
  return out;
}

Result<std::string> Gunzip(std::string_view gzip, size_t max_bytes) {
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) return Status::Internal("gunzip: inflateInit2 failed");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gzip.data()));
  zs.avail_in = static_cast<uInt>(gzip.size());
  std::string out;
  char buf[64 * 1024];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      const std::string why = zs.msg != nullptr ? zs.msg : "error " + std::to_string(rc);
      inflateEnd(&zs);
      return Status::InvalidArgument(rc == Z_BUF_ERROR ? "the gzip data ends early"
                                                       : "the gzip data is corrupt: " + why);
    }
    out.append(buf, sizeof buf - zs.avail_out);
    if (out.size() > max_bytes) {
      inflateEnd(&zs);
      return Status::InvalidArgument("the gzip data holds more than the " + std::to_string(max_bytes) +
                                     " bytes the manifest announces");
    }
  }
  const bool trailing = zs.avail_in != 0;
  inflateEnd(&zs);
  if (trailing) return Status::InvalidArgument("unexpected bytes after the gzip data");
  return out;
}

std::string Sha256Hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &len, EVP_sha256(), nullptr);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

ConfigMapRunStoreOptions ConfigMapRunStoreOptions::ForRun(const api::BenchmarkRun& run) {
  ConfigMapRunStoreOptions o;
  o.ns = run.metadata.namespace_;
  o.run = run.metadata.name;
  o.run_uid = run.metadata.uid;
  return o;
}

ConfigMapRunStore::ConfigMapRunStore(kube::Client& client, ConfigMapRunStoreOptions options)
    : client_(client),
      options_(std::move(options)),
      ns_(options_.ns.empty() ? client.default_namespace() : options_.ns) {}

std::string ConfigMapRunStore::PartName(size_t index) const {
  return options_.run + "-results-" + std::to_string(index);
}

std::string ConfigMapRunStore::ReportName() const { return options_.run + "-report"; }

std::string ConfigMapRunStore::Describe(const std::string& name) const { return "ConfigMap " + ns_ + "/" + name; }

kube::ConfigMap ConfigMapRunStore::Skeleton(const std::string& name, const std::string& record_kind) const {
  kube::ConfigMap cm;
  cm.metadata.name = name;
  cm.metadata.namespace_ = ns_;
  cm.metadata.labels[api::label::kManagedBy] = api::label::kFairbench;
  cm.metadata.labels[api::label::kRun] = options_.run;
  cm.metadata.labels[api::label::kRecord] = record_kind;
  if (!options_.run_uid.empty()) {
    cm.metadata.owner_references.push_back(kube::OwnerReference{std::string(api::kApiVersion), std::string(api::kKind),
                                                                options_.run, options_.run_uid, true, true});
  }
  return cm;
}

Result<std::optional<kube::ConfigMap>> ConfigMapRunStore::Get(const std::string& name) {
  auto got = client_.Get(kube::resources::ConfigMaps(), ns_, name);
  if (!got.ok()) {
    if (got.reason() == kube::Reason::kNotFound) return std::optional<kube::ConfigMap>();
    return Status(got.error().ToStatus());
  }
  auto cm = kube::ConfigMap::FromJson(*got);
  if (!cm.ok()) return Status::InvalidArgument(Describe(name) + ": " + cm.status().message());
  return std::optional<kube::ConfigMap>(std::move(*cm));
}

Status ConfigMapRunStore::Put(kube::ConfigMap cm, const std::string& resource_version) {
  const kube::ResourceType r = kube::resources::ConfigMaps();
  kube::WriteOptions wo;
  wo.field_manager = options_.field_manager;
  std::string rv = resource_version;
  // A failure that may pass (5xx, a timeout, a cut connection) is retried
  // here: the client resends only what cannot have happened, and a lost
  // record would fail the run. Such a write may have taken effect all the
  // same, so the retry meets AlreadyExists (a create) or Conflict (an
  // update at the version read before): both mean "read it and replace it".
  // This store is the record's only writer, so its text wins.
  Backoff backoff(options_.retry_backoff);
  int transient = 0;
  auto retry = [&](const kube::ApiError& e, const char* verb) {
    if (!e.Retriable() || ++transient > options_.max_transient_retries) return false;
    const auto wait = backoff.Next();
    spdlog::warn("{} {}: {}; retrying in {} ms", verb, r.Path(ns_, rv.empty() ? "" : cm.metadata.name),
                 kube::RetryCause(e), std::chrono::duration_cast<std::chrono::milliseconds>(wait).count());
    SystemClock::Instance().SleepFor(wait);
    return true;
  };
  // Besides the transient failures: create, find it taken, replace at the
  // version read (and once more if it was deleted or changed meanwhile).
  for (int attempt = 0; attempt < 4;) {
    if (rv.empty()) {
      cm.metadata.resource_version.clear();
      auto created = client_.Create(r, ns_, cm.ToJson(), wo);
      if (created.ok()) return Status::Ok();
      if (retry(created.error(), "POST")) continue;
      if (created.reason() != kube::Reason::kAlreadyExists) {
        return Status(created.error().ToStatus());
      }
    } else {
      cm.metadata.resource_version = rv;
      auto updated = client_.Update(r, cm.ToJson(), wo);
      if (updated.ok()) return Status::Ok();
      if (retry(updated.error(), "PUT")) continue;
      if (updated.reason() == kube::Reason::kNotFound) {
        rv.clear();  // deleted meanwhile: create it
        ++attempt;
        continue;
      }
      if (updated.reason() != kube::Reason::kConflict) return Status(updated.error().ToStatus());
    }
    ++attempt;
    auto current = client_.Get(r, ns_, cm.metadata.name);
    if (!current.ok() && current.reason() == kube::Reason::kNotFound) {
      rv.clear();
      continue;
    }
    if (!current.ok()) return Status(current.error().ToStatus());
    rv = (*current)["metadata"].value("resourceVersion", "");
  }
  return Status::Unavailable(Describe(cm.metadata.name) +
                             ": changed or deleted concurrently on every attempt; not written");
}

Result<std::optional<report::RunRecord>> ConfigMapRunStore::Load() {
  using Record = std::optional<report::RunRecord>;
  const std::string first_name = PartName(0);
  auto first = Get(first_name);
  if (!first.ok()) return first.status();
  if (!first->has_value()) return Record();
  const kube::ConfigMap& head = **first;
  const std::string where = "the stored record of run " + ns_ + "/" + options_.run;
  auto damaged = [&](const std::string& why) { return Status::InvalidArgument(where + " is damaged: " + why); };

  const std::string* format = Annotation(head, api::annotation::kResultsFormat);
  const std::string* generation = Annotation(head, api::annotation::kResultsGeneration);
  const std::string* parts_text = Annotation(head, api::annotation::kResultsParts);
  const std::string* bytes_text = Annotation(head, api::annotation::kResultsBytes);
  const std::string* sha = Annotation(head, api::annotation::kResultsSha256);
  if (!format || !generation || !parts_text || !bytes_text || !sha) {
    return damaged(Describe(first_name) + " has no complete manifest (annotations " + api::annotation::kResultsFormat +
                   ", " + api::annotation::kResultsGeneration + ", " + api::annotation::kResultsParts + ", " +
                   api::annotation::kResultsBytes + ", " + api::annotation::kResultsSha256 + ")");
  }
  if (*format != std::to_string(kFormatVersion)) {
    return damaged(Describe(first_name) + " is in record format " + *format + "; this fairbench reads format " +
                   std::to_string(kFormatVersion));
  }
  const auto total_bytes = ParseNumber<size_t>(*bytes_text);
  if (!total_bytes)
    return damaged(Describe(first_name) + ": " + api::annotation::kResultsBytes + " is not a number: " + *bytes_text);
  const std::vector<std::string> names = SplitList(*parts_text);
  if (names.empty() || names[0] != first_name) {
    return damaged(Describe(first_name) + ": the manifest's part list does not start with " + first_name + ": " +
                   *parts_text);
  }

  std::string compressed;
  for (size_t i = 0; i < names.size(); ++i) {
    std::optional<kube::ConfigMap> fetched;
    const kube::ConfigMap* part = &head;
    const std::string label =
        "part " + std::to_string(i + 1) + " of " + std::to_string(names.size()) + " (" + Describe(names[i]) + ")";
    if (i > 0) {
      auto got = Get(names[i]);
      if (!got.ok()) return got.status();
      if (!got->has_value()) {
        return damaged(label + " is missing: a save was interrupted or the ConfigMap was deleted");
      }
      fetched = std::move(**got);
      part = &*fetched;
      const std::string* part_generation = Annotation(*part, api::annotation::kResultsGeneration);
      if (!part_generation || *part_generation != *generation) {
        return damaged(label + " belongs to save " + (part_generation ? *part_generation : std::string("(none)")) +
                       " but the manifest to save " + *generation + ": a torn write");
      }
    }
    auto data = part->binary_data.find(kPartKey);
    if (data == part->binary_data.end()) return damaged(label + " has no binaryData \"" + kPartKey + "\"");
    auto decoded = Base64Decode(data->second);
    if (!decoded.ok()) return damaged(label + ": " + decoded.status().message());
    compressed += *decoded;
  }
  auto text = Gunzip(compressed, *total_bytes);
  if (!text.ok()) return damaged(text.status().message());
  if (text->size() != *total_bytes) {
    return damaged("the record has " + std::to_string(text->size()) + " bytes, the manifest says " + *bytes_text);
  }
  if (Sha256Hex(*text) != *sha) return damaged("the record's SHA-256 differs from the manifest's");
  auto record = report::RunRecordFromJsonText(*text, Describe(first_name));
  if (!record.ok()) return damaged(record.status().message());
  return Record(std::move(*record));
}

Status ConfigMapRunStore::Save(const report::RunRecord& record) {
  const std::string text = report::ToJsonText(record);
  auto compressed = Gzip(text);
  if (!compressed.ok()) return compressed.status();
  const size_t per_part = std::max<size_t>(options_.part_bytes, 1);
  const size_t count = std::max<size_t>(1, (compressed->size() + per_part - 1) / per_part);

  // What is there now: the current manifest and every results part.
  kube::ListOptions lo;
  lo.label_selector =
      std::string(api::label::kRun) + "=" + options_.run + "," + api::label::kRecord + "=" + api::label::kResultsRecord;
  auto listed = client_.ListAll(kube::resources::ConfigMaps(), ns_, lo);
  if (!listed.ok()) return Status(listed.error().ToStatus());
  std::map<std::string, std::string> existing;  // name → resourceVersion
  std::set<std::string> in_use;                 // parts of the current manifest
  uint64_t generation = 0;
  for (const auto& item : listed->items) {
    auto cm = kube::ConfigMap::FromJson(item);
    if (!cm.ok()) continue;
    existing[cm->metadata.name] = cm->metadata.resource_version;
    if (cm->metadata.name != PartName(0)) continue;
    if (const std::string* g = Annotation(*cm, api::annotation::kResultsGeneration))
      generation = ParseNumber<uint64_t>(*g).value_or(0);
    if (const std::string* p = Annotation(*cm, api::annotation::kResultsParts)) {
      for (auto& n : SplitList(*p)) in_use.insert(std::move(n));
    }
  }
  ++generation;
  const std::string generation_text = std::to_string(generation);

  // Names for the parts after the first: the lowest indices the current
  // manifest does not use, so its parts stay intact until it is replaced.
  std::vector<std::string> names = {PartName(0)};
  for (size_t index = 1; names.size() < count; ++index) {
    if (!in_use.count(PartName(index))) names.push_back(PartName(index));
  }

  auto part = [&](size_t i) {
    kube::ConfigMap cm = Skeleton(names[i], api::label::kResultsRecord);
    cm.metadata.annotations[api::annotation::kResultsGeneration] = generation_text;
    cm.metadata.annotations[api::annotation::kResultsPart] = PartLabel(i, count);
    const size_t from = i * per_part;
    cm.binary_data[kPartKey] = Base64Encode(std::string_view(*compressed).substr(from, per_part));
    return cm;
  };
  auto version_of = [&](const std::string& name) {
    auto it = existing.find(name);
    return it == existing.end() ? std::string() : it->second;
  };
  for (size_t i = 1; i < count; ++i) {
    if (Status s = Put(part(i), version_of(names[i])); !s.ok()) return s;
  }
  kube::ConfigMap head = part(0);
  head.metadata.annotations[api::annotation::kResultsFormat] = std::to_string(kFormatVersion);
  head.metadata.annotations[api::annotation::kResultsParts] = JoinList(names);
  head.metadata.annotations[api::annotation::kResultsBytes] = std::to_string(text.size());
  head.metadata.annotations[api::annotation::kResultsSha256] = Sha256Hex(text);
  if (Status s = Put(std::move(head), version_of(names[0])); !s.ok()) return s;

  // Parts no manifest names any more (the previous save's, or a crashed
  // save's leftovers). The record is stored already: a failure here is
  // logged, not returned.
  const std::set<std::string> keep(names.begin(), names.end());
  for (const auto& [name, rv] : existing) {
    if (keep.count(name)) continue;
    kube::DeleteOptions del;
    del.precondition_resource_version = rv;
    auto deleted = client_.Delete(kube::resources::ConfigMaps(), ns_, name, del);
    if (!deleted.ok() && deleted.reason() != kube::Reason::kNotFound) {
      spdlog::warn("{}: not deleted (an unused part of an earlier record): {}", Describe(name),
                   deleted.error().ToString());
    }
  }
  return Status::Ok();
}

Status ConfigMapRunStore::SaveCell(const api::Cell& /*cell*/, const report::CellRecord& /*record*/) {
  return Status::Ok();
}

Status ConfigMapRunStore::SaveReport(const report::RunRecord& record) {
  const std::string markdown = report::RenderMarkdown(record);
  const std::string html = report::RenderHtml(record);
  kube::ConfigMap cm = Skeleton(ReportName(), api::label::kReportRecord);
  if (markdown.size() + html.size() <= options_.part_bytes) {
    cm.data[kReportMarkdown] = markdown;
    cm.data[kReportHtml] = html;
  } else {
    auto md_gz = Gzip(markdown);
    if (!md_gz.ok()) return md_gz.status();
    auto html_gz = Gzip(html);
    if (!html_gz.ok()) return html_gz.status();
    if (md_gz->size() + html_gz->size() > options_.part_bytes) {
      return Status::FailedPrecondition(Describe(ReportName()) + ": the report is too large for a ConfigMap (" +
                                        std::to_string(md_gz->size() + html_gz->size()) +
                                        " bytes compressed); the record holds every number (fairbench fetch)");
    }
    cm.binary_data[kReportMarkdownGz] = Base64Encode(*md_gz);
    cm.binary_data[kReportHtmlGz] = Base64Encode(*html_gz);
  }
  auto current = Get(ReportName());
  if (!current.ok()) return current.status();
  return Put(std::move(cm), current->has_value() ? (*current)->metadata.resource_version : std::string());
}

Result<std::optional<StoredReport>> ConfigMapRunStore::LoadReport() {
  auto cm = Get(ReportName());
  if (!cm.ok()) return cm.status();
  if (!cm->has_value()) return std::optional<StoredReport>();
  const kube::ConfigMap& c = **cm;
  StoredReport out;
  auto text = [&](const char* plain, const char* gz, std::string* dest) -> Status {
    if (auto it = c.data.find(plain); it != c.data.end()) {
      *dest = it->second;
      return Status::Ok();
    }
    auto it = c.binary_data.find(gz);
    if (it == c.binary_data.end()) {
      return Status::InvalidArgument(Describe(ReportName()) + " has neither " + plain + " nor " + gz);
    }
    auto bytes = Base64Decode(it->second);
    if (!bytes.ok())
      return Status::InvalidArgument(Describe(ReportName()) + ": " + gz + ": " + bytes.status().message());
    auto plain_text = Gunzip(*bytes, size_t{64} << 20);
    if (!plain_text.ok()) {
      return Status::InvalidArgument(Describe(ReportName()) + ": " + gz + ": " + plain_text.status().message());
    }
    *dest = std::move(*plain_text);
    return Status::Ok();
  };
  if (Status s = text(kReportMarkdown, kReportMarkdownGz, &out.markdown); !s.ok()) return s;
  if (Status s = text(kReportHtml, kReportHtmlGz, &out.html); !s.ok()) return s;
  return std::optional<StoredReport>(std::move(out));
}

}  // namespace fairbench::controller
