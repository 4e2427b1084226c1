#include "controller/platform/docker/image_port.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string_view>

#include "common/json_read.h"

namespace fairbench::controller {
namespace {

bool IsDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// `number` in `text` with no digit right before or after it.
bool MentionsNumber(std::string_view text, std::string_view number) {
  for (size_t at = text.find(number); at != std::string_view::npos; at = text.find(number, at + 1)) {
    const size_t end = at + number.size();
    if ((at == 0 || !IsDigit(text[at - 1])) && (end == text.size() || !IsDigit(text[end]))) return true;
  }
  return false;
}

std::string PortList(const std::vector<int32_t>& ports) {
  std::string out;
  for (size_t i = 0; i < ports.size(); ++i) {
    if (i > 0) out += i + 1 == ports.size() ? " or " : ", ";
    out += std::to_string(ports[i]);
  }
  return out;
}

}  // namespace

std::vector<int32_t> ExposedTcpPorts(const nlohmann::json& image_inspect) {
  const nlohmann::json& exposed = json_read::Object(json_read::Object(image_inspect, "Config"), "ExposedPorts");
  std::vector<int32_t> ports;
  for (const auto& item : exposed.items()) {
    const std::string_view k = item.key();
    const size_t slash = k.find('/');
    const std::string_view number = k.substr(0, slash);
    if (slash != std::string_view::npos && k.substr(slash + 1) != "tcp") continue;
    int32_t port = 0;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), port);
    if (ec != std::errc() || end != number.data() + number.size() || port < 1 || port > 65535) continue;
    ports.push_back(port);
  }
  std::sort(ports.begin(), ports.end());
  ports.erase(std::unique(ports.begin(), ports.end()), ports.end());
  return ports;
}

bool PassesPortToServer(const api::Target& target) {
  const std::string number = std::to_string(target.port);
  const auto passes = [&](std::string_view text) {
    return text.find("{port}") != std::string_view::npos || MentionsNumber(text, number);
  };
  for (const auto* list : {&target.command, &target.args}) {
    if (std::any_of(list->begin(), list->end(), passes)) return true;
  }
  return std::any_of(target.env.begin(), target.env.end(), [&](const auto& kv) { return passes(kv.second); });
}

Status CheckTargetPort(const api::Target& target, size_t index, const std::vector<int32_t>& exposed) {
  if (exposed.empty()) return Status::Ok();
  if (std::find(exposed.begin(), exposed.end(), target.port) != exposed.end()) return Status::Ok();
  if (PassesPortToServer(target)) return Status::Ok();
  const std::string port = std::to_string(target.port);
  const std::string set = exposed.size() == 1 ? "set port: " + std::to_string(exposed[0])
                                              : "set port to one of them (port: " + std::to_string(exposed[0]) + ")";
  return Status::InvalidArgument("spec.targets[" + std::to_string(index) + "].port: " + port + " is not where image " +
                                 target.image + " listens: it listens on " + PortList(exposed) +
                                 " (its EXPOSE), and neither command, args nor env give its server \"{port}\" or " +
                                 port + ": " + set + ", or pass --port {port} (args: [--port, \"{port}\"])");
}

Status CheckImagePorts(const docker::DockerClient& client, const api::BenchmarkRunSpec& spec) {
  for (size_t i = 0; i < spec.targets.size(); ++i) {
    const api::Target& target = spec.targets[i];
    if (target.image.empty()) continue;
    auto image = client.InspectImage(target.image);
    if (!image.ok()) {
      const Status::Code code = image.status().code();
      if (code == Status::Code::kUnavailable || code == Status::Code::kDeadlineExceeded) return Status::Ok();
      continue;
    }
    if (Status s = CheckTargetPort(target, i, ExposedTcpPorts(*image)); !s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace fairbench::controller
