#include "host/docker_client.h"

#include <curl/curl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>

#include "common/json_read.h"

namespace fairbench::docker {
namespace {

size_t Collect(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

std::string Escape(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      static const char* hex = "0123456789ABCDEF";
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

// Why the socket cannot be reached, as the person at the machine would put it.
std::string SocketTrouble(const std::string& socket, const std::string& curl_error) {
  struct stat st {};
  if (stat(socket.c_str(), &st) != 0) {
    return "the Docker engine's socket " + socket +
           " does not exist: no Docker engine runs here (scripts/docker-engine start starts one; --docker-host names "
           "another)";
  }
  if (!S_ISSOCK(st.st_mode)) return socket + " is not a unix socket (--docker-host names the Docker engine's socket)";
  if (access(socket.c_str(), R_OK | W_OK) != 0 && errno == EACCES) {
    return "permission denied on the Docker engine's socket " + socket +
           " (run as root, or as a member of the group that owns it)";
  }
  return "the Docker engine does not answer on " + socket + " (" + curl_error + ")";
}

}  // namespace

Result<std::string> SocketFromHost(std::string_view host) {
  std::string_view h = host;
  if (h.rfind("unix://", 0) == 0) h.remove_prefix(7);
  if (h.empty() || h.front() != '/') {
    return Status::InvalidArgument("the Docker engine must be a local unix socket (unix:///path/docker.sock), not '" +
                                   std::string(host) + "'");
  }
  return std::string(h);
}

std::string DefaultDockerHost() {
  const char* env = std::getenv("DOCKER_HOST");
  if (env != nullptr && *env != '\0') return env;
  return "unix:///var/run/docker.sock";
}

std::string DemultiplexLogs(std::string_view stream) {
  std::string out;
  while (stream.size() >= 8) {
    const auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(stream[i])); };
    const uint32_t length = b(4) << 24 | b(5) << 16 | b(6) << 8 | b(7);
    stream.remove_prefix(8);
    const size_t take = std::min<size_t>(length, stream.size());
    out.append(stream.substr(0, take));
    stream.remove_prefix(take);
  }
  return out;
}

DockerClient::DockerClient(std::string socket_path, std::string api_version)
    : socket_(std::move(socket_path)), version_(std::move(api_version)) {}

Result<EngineAnswer> DockerClient::Do(std::string_view method, const std::string& path, const std::string& body,
                                      std::chrono::milliseconds timeout) const {
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> h(curl_easy_init(), curl_easy_cleanup);
  if (!h) return Status::Internal("curl_easy_init failed");
  char error[CURL_ERROR_SIZE] = {};
  EngineAnswer answer;
  // The host part is ignored on a unix socket; the engine wants some name.
  const std::string url = "http://docker/" + version_ + path;
  const std::string m(method);
  curl_easy_setopt(h.get(), CURLOPT_UNIX_SOCKET_PATH, socket_.c_str());
  curl_easy_setopt(h.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(h.get(), CURLOPT_CUSTOMREQUEST, m.c_str());
  curl_easy_setopt(h.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h.get(), CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(h.get(), CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_easy_setopt(h.get(), CURLOPT_CONNECTTIMEOUT_MS, 5000L);
  curl_easy_setopt(h.get(), CURLOPT_WRITEFUNCTION, Collect);
  curl_easy_setopt(h.get(), CURLOPT_WRITEDATA, &answer.body);
  curl_slist* headers = nullptr;
  if (m == "POST" || !body.empty()) {
    headers = curl_slist_append(headers, "Content-Type: application/json");
    curl_easy_setopt(h.get(), CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(h.get(), CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  headers = curl_slist_append(headers, "Expect:");
  curl_easy_setopt(h.get(), CURLOPT_HTTPHEADER, headers);
  const CURLcode rc = curl_easy_perform(h.get());
  curl_slist_free_all(headers);
  if (rc != CURLE_OK) {
    const std::string detail = error[0] != '\0' ? error : curl_easy_strerror(rc);
    if (rc == CURLE_OPERATION_TIMEDOUT) {
      return Status::DeadlineExceeded("the Docker engine on " + socket_ + " did not answer " + m + " " + path +
                                      " within " + std::to_string(timeout.count()) + " ms");
    }
    if (rc == CURLE_COULDNT_CONNECT) return Status::Unavailable(SocketTrouble(socket_, detail));
    return Status::Unavailable("the Docker engine on " + socket_ + ": " + m + " " + path + ": " + detail);
  }
  curl_easy_getinfo(h.get(), CURLINFO_RESPONSE_CODE, &answer.status);
  return answer;
}

Status DockerClient::ErrorOf(const EngineAnswer& answer, const std::string& what) {
  std::string message;
  auto j = nlohmann::json::parse(answer.body, nullptr, false);
  if (!j.is_discarded()) message = json_read::String(j, "message");
  if (message.empty()) message = answer.body.substr(0, 200);
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  const std::string text =
      what + ": " + message + " (HTTP " + std::to_string(answer.status) + " from the Docker engine)";
  if (answer.status == 404) return Status::NotFound(text);
  if (answer.status == 409) return Status::FailedPrecondition(text);
  if (answer.status == 400) return Status::InvalidArgument(text);
  return Status::Internal(text);
}

Result<nlohmann::json> DockerClient::GetJson(const std::string& path, const std::string& what) const {
  auto a = Do("GET", path, "", std::chrono::seconds(30));
  if (!a.ok()) return a.status();
  if (a->status != 200) return ErrorOf(*a, what);
  auto j = nlohmann::json::parse(a->body, nullptr, false);
  if (j.is_discarded()) return Status::Internal(what + ": the Docker engine's answer is not JSON");
  return j;
}

Result<nlohmann::json> DockerClient::Version() const { return GetJson("/version", "version"); }

Result<nlohmann::json> DockerClient::InspectImage(const std::string& image) const {
  return GetJson("/images/" + Escape(image) + "/json", "image " + image);
}

Result<std::string> DockerClient::CreateContainer(const std::string& name, const nlohmann::json& config) const {
  auto a = Do("POST", "/containers/create?name=" + Escape(name), config.dump(), std::chrono::seconds(60));
  if (!a.ok()) return a.status();
  if (a->status != 201) return ErrorOf(*a, "create container " + name);
  auto j = nlohmann::json::parse(a->body, nullptr, false);
  const std::string id = j.is_discarded() ? "" : json_read::String(j, "Id");
  if (id.empty()) return Status::Internal("create container " + name + ": no Id in the Docker engine's answer");
  return id;
}

Status DockerClient::StartContainer(const std::string& id) const {
  auto a = Do("POST", "/containers/" + Escape(id) + "/start", "", std::chrono::seconds(60));
  if (!a.ok()) return a.status();
  if (a->status != 204 && a->status != 304) return ErrorOf(*a, "start container " + id.substr(0, 12));
  return Status::Ok();
}

Status DockerClient::StopContainer(const std::string& id, std::chrono::seconds grace) const {
  auto a = Do("POST", "/containers/" + Escape(id) + "/stop?t=" + std::to_string(grace.count()), "",
              grace + std::chrono::seconds(30));
  if (!a.ok()) return a.status();
  if (a->status != 204 && a->status != 304) return ErrorOf(*a, "stop container " + id.substr(0, 12));
  return Status::Ok();
}

Status DockerClient::KillContainer(const std::string& id, std::string_view signal) const {
  auto a = Do("POST", "/containers/" + Escape(id) + "/kill?signal=" + Escape(signal), "", std::chrono::seconds(30));
  if (!a.ok()) return a.status();
  if (a->status != 204) return ErrorOf(*a, "kill container " + id.substr(0, 12));
  return Status::Ok();
}

Result<nlohmann::json> DockerClient::InspectContainer(const std::string& id) const {
  return GetJson("/containers/" + Escape(id) + "/json", "container " + id.substr(0, 12));
}

Result<std::string> DockerClient::Logs(const std::string& id) const {
  auto a = Do("GET", "/containers/" + Escape(id) + "/logs?stdout=1&stderr=1", "", std::chrono::seconds(60));
  if (!a.ok()) return a.status();
  if (a->status != 200) return ErrorOf(*a, "logs of container " + id.substr(0, 12));
  return DemultiplexLogs(a->body);
}

Result<nlohmann::json> DockerClient::Stats(const std::string& id) const {
  return GetJson("/containers/" + Escape(id) + "/stats?stream=false&one-shot=true",
                 "stats of container " + id.substr(0, 12));
}

Result<nlohmann::json> DockerClient::ListContainers(const std::map<std::string, std::string>& labels) const {
  nlohmann::json filter = nlohmann::json::array();
  for (const auto& [k, v] : labels) filter.push_back(v.empty() ? k : k + "=" + v);
  const nlohmann::json filters = {{"label", filter}};
  return GetJson("/containers/json?all=1&filters=" + Escape(filters.dump()), "list containers");
}

Result<int> DockerClient::Exec(const std::string& id, const std::vector<std::string>& argv,
                               std::chrono::milliseconds timeout) const {
  const nlohmann::json create = {{"Cmd", argv}, {"AttachStdout", false}, {"AttachStderr", false}};
  auto a = Do("POST", "/containers/" + Escape(id) + "/exec", create.dump(), std::chrono::seconds(30));
  if (!a.ok()) return a.status();
  if (a->status != 201) return ErrorOf(*a, "exec in container " + id.substr(0, 12));
  auto j = nlohmann::json::parse(a->body, nullptr, false);
  const std::string exec = j.is_discarded() ? "" : json_read::String(j, "Id");
  if (exec.empty()) return Status::Internal("exec in container " + id.substr(0, 12) + ": no Id in the answer");
  auto started = Do("POST", "/exec/" + Escape(exec) + "/start", R"({"Detach":true})", std::chrono::seconds(30));
  if (!started.ok()) return started.status();
  if (started->status != 200 && started->status != 204) return ErrorOf(*started, "start exec " + exec.substr(0, 12));
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (true) {
    auto state = GetJson("/exec/" + Escape(exec) + "/json", "exec " + exec.substr(0, 12));
    if (!state.ok()) return state.status();
    if (!state->value("Running", false) && state->contains("ExitCode") && (*state)["ExitCode"].is_number_integer()) {
      return (*state)["ExitCode"].get<int>();
    }
    if (std::chrono::steady_clock::now() >= until) {
      return Status::DeadlineExceeded("exec in container " + id.substr(0, 12) + " ran longer than " +
                                      std::to_string(timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

Status DockerClient::RemoveContainer(const std::string& id) const {
  auto a = Do("DELETE", "/containers/" + Escape(id) + "?force=1&v=1", "", std::chrono::seconds(60));
  if (!a.ok()) return a.status();
  if (a->status == 404) return Status::Ok();
  // 409: removal already in progress (AutoRemove, another caller).
  if (a->status != 204 && a->status != 409) return ErrorOf(*a, "remove container " + id.substr(0, 12));
  return Status::Ok();
}

}  // namespace fairbench::docker
