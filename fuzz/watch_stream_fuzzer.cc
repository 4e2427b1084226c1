// A Kubernetes watch stream as the API server (or anything in between)
// might send it: Input is [split seed][body]. The body reaches the real
// Client::Watch through a transport that hands it over in pieces cut from
// the seed, and every event goes through the decoders the controller uses
// on watched objects: ObjectMeta, Pod, Node, Service, Lease, Event,
// ConfigMap, conditions, the informer's key, the resource version, the
// Status of an ERROR event, and BenchmarkRun (the operator's objects).
//
// Invariants besides no crash: the line splitter yields the same lines
// however the bytes are cut, and a decoded object's ToJson decodes to the
// same ToJson.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/loader.h"
#include "controller/kube/client.h"
#include "controller/kube/line_splitter.h"
#include "controller/kube/objects.h"
#include "controller/kube/resource.h"

namespace {

using namespace fairbench::kube;

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "watch_stream_fuzzer: %s\n", what);
  std::abort();
}

std::vector<std::string_view> Cut(std::string_view body, uint32_t seed) {
  std::vector<std::string_view> pieces;
  for (size_t at = 0; at < body.size();) {
    seed = seed * 1103515245u + 12345u;
    const uint32_t r = (seed >> 16) & 0x7fff;
    const size_t n = (r % 4 == 0) ? 1 + r % 300 : 1 + r % 24;
    pieces.push_back(body.substr(at, n));
    at += n;
  }
  return pieces;
}

// Serves one watch: the body in the given pieces, then a clean end.
class PiecesTransport final : public HttpTransport {
 public:
  explicit PiecesTransport(std::vector<std::string_view> pieces) : pieces_(std::move(pieces)) {}
  fairbench::Result<HttpResponse> Do(const HttpRequest&) override {
    return fairbench::Status::Unavailable("no requests but the watch");
  }
  fairbench::Result<HttpResponse> Stream(const HttpRequest&, const std::function<bool(std::string_view)>& on_data,
                                         std::stop_token) override {
    for (std::string_view p : pieces_) {
      if (!on_data(p)) break;
    }
    HttpResponse r;
    r.status = 200;
    return r;
  }

 private:
  std::vector<std::string_view> pieces_;
};

template <typename T>
void RoundTrip(const Json& object) {
  auto decoded = T::FromJson(object);
  if (!decoded.ok()) {
    if (decoded.status().message().empty()) Die("an error without a message");
    return;
  }
  const Json once = decoded->ToJson();
  auto again = T::FromJson(once);
  if (!again.ok()) Die("ToJson of a decoded object does not decode");
  if (again->ToJson() != once) Die("ToJson of a decoded object decodes differently");
}

void Decode(const WatchEvent& ev) {
  const Json& o = ev.object;
  (void)ev.ResourceVersion();
  (void)ObjectKey(o);
  (void)ObjectReference::Of(o);
  (void)ControllerReference(o);
  RoundTrip<ObjectMeta>(o.is_object() && o.contains("metadata") ? o["metadata"] : Json::object());
  RoundTrip<Pod>(o);
  RoundTrip<Node>(o);
  RoundTrip<Service>(o);
  RoundTrip<Lease>(o);
  RoundTrip<Event>(o);
  RoundTrip<ConfigMap>(o);
  if (o.is_object() && o.contains("status") && o["status"].is_object() && o["status"].contains("conditions") &&
      o["status"]["conditions"].is_array()) {
    for (const Json& c : o["status"]["conditions"]) RoundTrip<Condition>(c);
  }
  if (auto pod = Pod::FromJson(o); pod.ok()) {
    (void)pod->NodeName();
    (void)pod->status.FindCondition("Ready");
  }
  if (auto node = Node::FromJson(o); node.ok()) {
    (void)node->Ready();
    (void)node->Unschedulable();
  }
  if (auto svc = Service::FromJson(o); svc.ok()) (void)svc->ClusterIP();
  (void)fairbench::api::FromKubernetesObject(o);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint32_t seed = data[0];
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::vector<std::string_view> pieces = Cut(body, seed);

  // The splitter alone, with a small limit so that the limit is reached:
  // whole and in pieces, the same lines and the same verdict.
  constexpr size_t kLimit = 64;
  std::vector<std::string> whole_lines, piece_lines;
  LineSplitter whole(kLimit);
  const bool whole_fits = whole.Feed(body, [&](std::string_view l) { whole_lines.emplace_back(l); });
  LineSplitter split(kLimit);
  bool split_fits = true;
  for (std::string_view p : pieces) {
    if (!split.Feed(p, [&](std::string_view l) { piece_lines.emplace_back(l); })) {
      split_fits = false;
      break;
    }
  }
  if (whole_fits != split_fits) Die("the cut changed whether a line exceeds the limit");
  if (whole_fits && (whole_lines != piece_lines || whole.pending() != split.pending())) {
    Die("the cut changed the lines");
  }
  for (const std::string& l : whole_lines) {
    if (l.empty() || l.size() > kLimit || l.find('\n') != std::string::npos)
      Die("a line breaks the splitter's contract");
  }

  // The client's watch, end to end.
  RestConfig config;
  config.server = "http://fuzz.invalid";
  Client client(config, std::make_unique<PiecesTransport>(pieces));
  WatchOptions options;
  std::stop_source stop;
  (void)client.Watch(
      resources::Pods(), "default", options, [](WatchEvent&& ev) { Decode(ev); }, stop.get_token());
  return 0;
}
