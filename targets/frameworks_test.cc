// The study's six frameworks as targets (targets/<framework>/), read as
// source: no framework is installed or built for these.
//
// Each server builds its JSON with its framework's own facility; each
// server's CMake finds an installed framework (its CMake package, or a
// header folder) and builds nothing of the framework's own; no framework
// has a Dockerfile or other recipe here; examples/study-local.yaml and
// examples/study-docker.yaml are examples/study.yaml's run with the
// commands and images a user brings. The servers themselves are run by
// framework_servers_test, against binaries a user points it at.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "api/loader.h"

namespace fairbench::targets {
namespace {

const std::filesystem::path kSourceDir = FAIRBENCH_SOURCE_DIR;

struct Framework {
  std::string name;  // targets/<name>/, fairbench-target-<name>
  // What the server's source must use to build its JSON: the framework's
  // own facility (cpp-httplib has none; the study used nlohmann-json).
  std::vector<std::string> json_tokens;
  // How its CMake finds the framework: a call of fairbench_require_package
  // (an installed CMake package) or a find_path of a header folder.
  std::string finds;
};

std::ostream& operator<<(std::ostream& os, const Framework& f) { return os << f.name; }

const std::vector<Framework>& Frameworks() {
  static const std::vector<Framework> frameworks = {
      {"hical", {"boost::json::"}, "fairbench_require_package(hical "},
      {"drogon", {"Json::Value", "newHttpJsonResponse"}, "fairbench_require_package(Drogon "},
      {"crow", {"crow::json::wvalue", "crow::json::load"}, "find_path(FAIRBENCH_CROW_INCLUDE_DIR crow.h"},
      {"oatpp", {"DTO_FIELD", "createDtoResponse", "ObjectMapper"}, "fairbench_require_package(oatpp "},
      {"cpp-httplib", {"nlohmann::json"}, "find_path(FAIRBENCH_HTTPLIB_INCLUDE_DIR httplib.h"},
      {"cinatra", {"iguana::to_json", "REFLECTION("}, "find_path(FAIRBENCH_YLT_INCLUDE_DIR "},
  };
  return frameworks;
}

std::string NameOf(const ::testing::TestParamInfo<Framework>& info) {
  std::string name = info.param.name;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// CMake's text without its comments (a '#' to the end of the line).
std::string WithoutComments(const std::string& cmake) {
  std::istringstream in(cmake);
  std::string out;
  for (std::string line; std::getline(in, line);) out += line.substr(0, line.find('#')) + "\n";
  return out;
}

// What would fetch, unpack or build another project's source in CMake.
const std::vector<std::string>& BuildsOtherSources() {
  static const std::vector<std::string> words = {
      "add_subdirectory", "FetchContent", "ExternalProject", "execute_process", "DOWNLOAD", "try_compile",
  };
  return words;
}

// A server's main() is in <framework>_main.cc, '-' written '_'.
std::string MainFile(std::string name) {
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name + "_main.cc";
}

class FrameworkSourceTest : public ::testing::TestWithParam<Framework> {};

TEST_P(FrameworkSourceTest, ServerBuildsItsJsonWithTheFrameworksOwnFacility) {
  const Framework& f = GetParam();
  const std::string source = ReadFile(kSourceDir / "targets" / f.name / MainFile(f.name));
  ASSERT_FALSE(source.empty());
  for (const std::string& token : f.json_tokens) {
    EXPECT_NE(source.find(token), std::string::npos) << f.name << " does not use " << token;
  }
  if (f.name != "cpp-httplib") {
    EXPECT_EQ(source.find("nlohmann"), std::string::npos) << f.name << " builds JSON with nlohmann-json";
  }
  // Every endpoint of the study is there, and the four worker threads.
  for (const char* path : {"\"/\"", "\"/api/status\"", "\"/api/echo\""}) {
    EXPECT_NE(source.find(path), std::string::npos) << path;
  }
  EXPECT_NE(source.find("/users/"), std::string::npos);
  // --describe (and the flags every target takes) through the one parser.
  EXPECT_NE(source.find("ParseTargetCommandLine("), std::string::npos);
}

// Catches: a server's CMake that fetches or builds its framework again
// (add_subdirectory of a checkout, FetchContent, ExternalProject), a
// framework image or other recipe back in targets/<framework>/.
TEST_P(FrameworkSourceTest, CMakeFindsAnInstalledFrameworkAndBuildsNoneOfIt) {
  const Framework& f = GetParam();
  const std::filesystem::path dir = kSourceDir / "targets" / f.name;
  const std::string cmake = WithoutComments(ReadFile(dir / "CMakeLists.txt"));
  ASSERT_FALSE(cmake.empty()) << dir / "CMakeLists.txt";
  EXPECT_NE(cmake.find("include(${CMAKE_CURRENT_SOURCE_DIR}/../common/framework.cmake)"), std::string::npos);
  EXPECT_NE(cmake.find("fairbench_framework_server(" + f.name), std::string::npos);
  EXPECT_NE(cmake.find(f.finds), std::string::npos) << f.name << " does not find its framework by " << f.finds;
  for (const std::string& word : BuildsOtherSources()) {
    EXPECT_EQ(cmake.find(word), std::string::npos) << "targets/" << f.name << "/CMakeLists.txt: " << word;
  }
  // The server and its CMake, nothing else.
  std::set<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.insert(e.path().filename().string());
  EXPECT_EQ(files, (std::set<std::string>{"CMakeLists.txt", MainFile(f.name)})) << dir;
}

INSTANTIATE_TEST_SUITE_P(Frameworks, FrameworkSourceTest, ::testing::ValuesIn(Frameworks()), NameOf);

TEST(FrameworkCMakeTest, SharedPartBuildsOnlyThisRepositorysFiles) {
  for (const char* file : {"framework.cmake", "sources.cmake"}) {
    const std::string cmake = WithoutComments(ReadFile(kSourceDir / "targets" / "common" / file));
    ASSERT_FALSE(cmake.empty()) << file;
    for (const std::string& word : BuildsOtherSources()) {
      EXPECT_EQ(cmake.find(word), std::string::npos) << "targets/common/" << file << ": " << word;
    }
  }
}

// ------------------------------------------------------------------ the study's examples

// examples/study-local.yaml is the study's run with the servers a user
// brings as local commands: the same scenarios, load, resources and
// nofile, each server by its bare name (found next to fairbench, then on
// PATH). Catches: the example drifting from the study, a command that
// points into a folder some script of this repository would fill.
TEST(StudyLocalTest, IsTheStudysRunWithLocalCommands) {
  api::LoadOptions local_options;
  local_options.validation.platform = api::Platform::kLocal;
  auto local = api::LoadRunFile(kSourceDir / "examples" / "study-local.yaml", local_options);
  ASSERT_TRUE(local.ok()) << local.status().message();
  api::LoadOptions cluster_options;
  cluster_options.validation.platform = api::Platform::kKubernetes;
  auto cluster = api::LoadRunFile(kSourceDir / "examples" / "study.yaml", cluster_options);
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();

  const api::BenchmarkRunSpec& l = local->spec;
  const api::BenchmarkRunSpec& c = cluster->spec;
  EXPECT_EQ(l.scenarios, c.scenarios);
  EXPECT_EQ(l.load, c.load);
  EXPECT_EQ(l.repetitions, c.repetitions);
  EXPECT_EQ(l.cooldown, c.cooldown);
  ASSERT_EQ(l.targets.size(), c.targets.size());
  for (size_t i = 0; i < l.targets.size(); ++i) {
    const api::Target& t = l.targets[i];
    EXPECT_EQ(t.name, c.targets[i].name);
    EXPECT_EQ(t.resources, c.targets[i].resources) << t.name;
    EXPECT_EQ(t.nofile, c.targets[i].nofile) << t.name;
    ASSERT_TRUE(t.local.has_value()) << t.name;
    EXPECT_TRUE(t.local->working_dir.empty()) << t.name;
    EXPECT_EQ(t.local->command,
              (std::vector<std::string>{"fairbench-target-" + t.name, "--port", "{port}", "--threads", "4"}));
  }
}

// examples/study-docker.yaml is the study as its author ran it: the same
// scenarios, load, resources and images as examples/study.yaml (images a
// user brings: scripts/images builds none of them), nofile 65536, each on
// a free loopback port. Catches: the example drifting from the study, an
// image name only this example uses.
TEST(StudyDockerTest, IsTheStudysRunWithTheStudysImages) {
  api::LoadOptions docker_options;
  docker_options.validation.platform = api::Platform::kDocker;
  auto docker = api::LoadRunFile(kSourceDir / "examples" / "study-docker.yaml", docker_options);
  ASSERT_TRUE(docker.ok()) << docker.status().message();
  api::LoadOptions cluster_options;
  cluster_options.validation.platform = api::Platform::kKubernetes;
  auto cluster = api::LoadRunFile(kSourceDir / "examples" / "study.yaml", cluster_options);
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  const api::BenchmarkRunSpec& d = docker->spec;
  const api::BenchmarkRunSpec& c = cluster->spec;
  EXPECT_EQ(d.scenarios, c.scenarios);
  EXPECT_EQ(d.load, c.load);
  EXPECT_EQ(d.repetitions, c.repetitions);
  ASSERT_EQ(d.targets.size(), c.targets.size());
  for (size_t i = 0; i < d.targets.size(); ++i) {
    const api::Target& t = d.targets[i];
    EXPECT_EQ(t.name, c.targets[i].name);
    EXPECT_EQ(t.resources, c.targets[i].resources) << t.name;
    EXPECT_EQ(t.nofile, 65536) << t.name;
    EXPECT_EQ(t.image, c.targets[i].image) << t.name;
    EXPECT_EQ(t.args, (std::vector<std::string>{"--host", "127.0.0.1", "--port", "{port}", "--threads", "4"}));
  }
}

}  // namespace
}  // namespace fairbench::targets
