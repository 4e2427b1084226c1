#include "controller/kube/kubeconfig.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "common/base64.h"
#include "common/yaml_input.h"
#include "controller/kube/exec_credential.h"

namespace fairbench::kube {
namespace {

struct Entry {
  YAML::Node node;
  std::string base_dir;
  std::string file;
};

struct Merged {
  std::map<std::string, Entry> clusters, users, contexts;
  std::string current_context;
  std::vector<std::string> files;
};

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string Scalar(const YAML::Node& n, const char* key) {
  if (!n || !n.IsMap() || !n[key] || !n[key].IsScalar()) return "";
  return n[key].as<std::string>();
}

// n[key] when n is a map that has it, else an undefined (false) node.
// Indexing a map for a key it lacks gives an invalid node, and assigning
// one throws; an undefined node assigns and reads as absent.
YAML::Node Child(const YAML::Node& n, const char* key) {
  if (!n || !n.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  YAML::Node c = n[key];
  return c ? c : YAML::Node(YAML::NodeType::Undefined);
}

bool Flag(const YAML::Node& n, const char* key) {
  std::string v = Scalar(n, key);
  return v == "true" || v == "True";
}

std::string Resolve(const std::string& path, const std::string& base_dir) {
  if (path.empty() || path[0] == '/' || base_dir.empty()) return path;
  return (std::filesystem::path(base_dir) / path).string();
}

Status MergeFile(const std::string& path, Merged* m) {
  auto text = ReadSmallFile(path, 16 << 20);
  if (!text.ok()) return Status::IoError("kubeconfig: " + text.status().message());
  if (const auto fault = CheckYamlText(*text)) {
    return Status::InvalidArgument("kubeconfig " + path + ":" + std::to_string(fault->line) + ":" +
                                   std::to_string(fault->column) + ": not valid YAML: " + fault->what);
  }
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument("kubeconfig " + path + ": not valid YAML: " + e.what());
  }
  if (!root || root.IsNull()) return Status::Ok();
  if (!root.IsMap()) return Status::InvalidArgument("kubeconfig " + path + ": not a YAML mapping");
  std::string base = std::filesystem::path(path).parent_path().string();
  m->files.push_back(path);
  auto take = [&](const char* list, const char* inner, std::map<std::string, Entry>* into) -> Status {
    if (!root[list]) return Status::Ok();
    if (!root[list].IsSequence())
      return Status::InvalidArgument("kubeconfig " + path + ": " + list + " must be a list");
    for (const auto& item : root[list]) {
      std::string name = Scalar(item, "name");
      if (name.empty()) return Status::InvalidArgument("kubeconfig " + path + ": an entry of " + list + " has no name");
      into->emplace(name, Entry{Child(item, inner), base, path});  // first definition wins
    }
    return Status::Ok();
  };
  for (auto [list, inner, into] :
       {std::tuple{"clusters", "cluster", &m->clusters}, std::tuple{"users", "user", &m->users},
        std::tuple{"contexts", "context", &m->contexts}}) {
    Status s = take(list, inner, into);
    if (!s.ok()) return s;
  }
  if (m->current_context.empty()) m->current_context = Scalar(root, "current-context");
  return Status::Ok();
}

// certificate-authority-data wins over certificate-authority, and so on.
Result<std::string> DataOrFile(const Entry& e, const char* data_key, const char* file_key, const std::string& what) {
  std::string data = Scalar(e.node, data_key);
  // Some tools wrap long base64 values; the line breaks carry no data.
  data.erase(std::remove_if(data.begin(), data.end(), [](unsigned char c) { return std::isspace(c); }), data.end());
  if (!data.empty()) {
    auto decoded = Base64Decode(data);
    if (!decoded.ok()) return Status::InvalidArgument(what + ": " + data_key + " is not valid base64");
    return decoded;
  }
  std::string file = Scalar(e.node, file_key);
  if (file.empty()) return std::string();
  auto content = ReadSmallFile(Resolve(file, e.base_dir));
  if (!content.ok()) return Status::IoError(what + ": " + file_key + ": " + content.status().message());
  return content;
}

}  // namespace

std::vector<std::string> DefaultKubeconfigPaths() {
  std::vector<std::string> out;
  const char* env = std::getenv("KUBECONFIG");
  if (env && *env) {
    std::string list = env;
    size_t start = 0;
    while (start <= list.size()) {
      size_t colon = list.find(':', start);
      std::string p = list.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      if (!p.empty()) out.push_back(p);
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
    return out;
  }
  const char* home = std::getenv("HOME");
  out.push_back(std::string(home ? home : "") + "/.kube/config");
  return out;
}

namespace {

Result<RestConfig> Load(const KubeconfigOptions& options) {
  const bool explicit_paths = !options.paths.empty();
  std::vector<std::string> paths = explicit_paths ? options.paths : DefaultKubeconfigPaths();
  Merged m;
  for (const auto& p : paths) {
    std::error_code ec;
    // Files named by $KUBECONFIG that do not exist are skipped, as kubectl does.
    if (!explicit_paths && !std::filesystem::exists(p, ec)) continue;
    Status s = MergeFile(p, &m);
    if (!s.ok()) return s;
  }
  if (m.files.empty()) return Status::NotFound("no kubeconfig found (looked at " + Join(paths) + ")");
  std::string context = options.context.empty() ? m.current_context : options.context;
  if (context.empty()) {
    return Status::InvalidArgument("kubeconfig has no current-context (files: " + Join(m.files) +
                                   "); choose a context");
  }
  auto ctx = m.contexts.find(context);
  if (ctx == m.contexts.end()) {
    return Status::NotFound("context \"" + context + "\" not found in kubeconfig (files: " + Join(m.files) + ")");
  }
  std::string cluster_name = Scalar(ctx->second.node, "cluster");
  auto cluster = m.clusters.find(cluster_name);
  if (cluster == m.clusters.end()) {
    return Status::NotFound("cluster \"" + cluster_name + "\" of context \"" + context + "\" not found in kubeconfig");
  }
  RestConfig cfg;
  cfg.server = Scalar(cluster->second.node, "server");
  if (cfg.server.empty()) return Status::InvalidArgument("cluster \"" + cluster_name + "\" has no server");
  std::string what = "cluster \"" + cluster_name + "\"";
  auto ca = DataOrFile(cluster->second, "certificate-authority-data", "certificate-authority", what);
  if (!ca.ok()) return ca.status();
  cfg.tls.ca_pem = *ca;
  cfg.tls.server_name = Scalar(cluster->second.node, "tls-server-name");
  cfg.tls.insecure = Flag(cluster->second.node, "insecure-skip-tls-verify");
  std::string ns = Scalar(ctx->second.node, "namespace");
  if (!ns.empty()) cfg.default_namespace = ns;

  Clock& clock = options.clock ? *options.clock : SystemClock::Instance();
  std::string user_name = Scalar(ctx->second.node, "user");
  if (!user_name.empty()) {
    auto user = m.users.find(user_name);
    if (user == m.users.end()) {
      return Status::NotFound("user \"" + user_name + "\" of context \"" + context + "\" not found in kubeconfig");
    }
    const Entry& u = user->second;
    std::string uwhat = "user \"" + user_name + "\"";
    auto cert = DataOrFile(u, "client-certificate-data", "client-certificate", uwhat);
    if (!cert.ok()) return cert.status();
    auto key = DataOrFile(u, "client-key-data", "client-key", uwhat);
    if (!key.ok()) return key.status();
    cfg.tls.client_cert_pem = *cert;
    cfg.tls.client_key_pem = *key;
    std::string token = Scalar(u.node, "token");
    std::string token_file = Scalar(u.node, "tokenFile");
    if (!token.empty()) {
      cfg.credentials = std::make_shared<StaticToken>(token);
    } else if (!token_file.empty()) {
      auto source = std::make_shared<TokenFile>(Resolve(token_file, u.base_dir), clock);
      auto first = source->Get();
      if (!first.ok()) return Status::IoError(uwhat + ": tokenFile: " + first.status().message());
      cfg.credentials = source;
    } else if (Child(u.node, "exec")) {
      const YAML::Node e = Child(u.node, "exec");
      ExecConfig ec;
      ec.api_version = Scalar(e, "apiVersion");
      ec.command = Scalar(e, "command");
      if (ec.command.empty()) return Status::InvalidArgument(uwhat + ": exec.command is required");
      if (ec.api_version.empty()) return Status::InvalidArgument(uwhat + ": exec.apiVersion is required");
      try {
        if (e["args"]) {
          for (const auto& a : e["args"]) ec.args.push_back(a.as<std::string>());
        }
        if (e["env"]) {
          for (const auto& v : e["env"]) ec.env.emplace_back(Scalar(v, "name"), Scalar(v, "value"));
        }
      } catch (const YAML::Exception& ex) {
        return Status::InvalidArgument(uwhat + ": exec.args/env: " + ex.what());
      }
      std::string mode = Scalar(e, "interactiveMode");
      if (!mode.empty()) ec.interactive_mode = mode;
      ec.provide_cluster_info = Flag(e, "provideClusterInfo");
      ec.cluster_server = cfg.server;
      ec.base_dir = u.base_dir;
      cfg.credentials = std::make_shared<ExecCredentialSource>(std::move(ec), clock);
    }
  }
  Status valid = cfg.Validate();
  if (!valid.ok()) return Status::InvalidArgument("kubeconfig context \"" + context + "\": " + valid.message());
  return cfg;
}

}  // namespace

Result<RestConfig> LoadKubeconfig(const KubeconfigOptions& options) {
  // The checks above read nodes as they are meant to be; whatever shape
  // they missed is an error in the file, never an exception out of here.
  try {
    return Load(options);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(std::string("kubeconfig: unexpected structure: ") + e.what());
  }
}

}  // namespace fairbench::kube
