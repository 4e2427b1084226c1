// The images built from this repository's source — images/controller,
// images/agent and the reference targets targets/{beast,cpp-httplib-debian,nginx} —
// and scripts/images, which builds them (and nothing else: the study's
// frameworks are images a user brings).
//
// Dockerfiles (read as text): multi-stage; the build stage FROM
// debian:bookworm installs exactly scripts/setup's build_packages and is the
// same in all six; the runtime stage FROM debian:bookworm-slim copies the
// binaries the build stage installs, runs them as a numeric non-root user
// through an exec-form ENTRYPOINT, carries the OCI labels from the build
// args, and does nothing a read-only root file system would break.
//
// Runtime packages (against the binaries built in this checkout, on this
// Debian 12 machine): every library a binary links (objdump -p) belongs to
// a package the runtime stage installs or the base image has; every library
// it loads (ldd) comes with those packages' dependencies; and no package is
// installed that no binary needs. The agent image carries the static
// fairbench-nofile where the controller looks for it.
//
// A read-only root, in practice: under strace, the agent, the controller
// (starting) and the reference targets (serving) write nothing, the nginx
// target nothing outside $TMPDIR. examples/quickstart.yaml runs in a
// cluster on the reference targets' images.
//
// scripts/images: one build per image with the labels' build args
// (--dry-run), the commands it runs through a stand-in docker or podman, and
// one clear line when neither is installed.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "api/loader.h"
#include "controller/kube/exec_credential.h"
#include "controller/platform/kubernetes/pod_templates.h"
#include "testing/support/bin_dir.h"
#include "testing/support/http_client.h"
#include "testing/support/ports.h"
#include "testing/support/subprocess.h"
#include "testing/support/temp_dir.h"
#if defined(__SANITIZE_ADDRESS__)
#include "testing/sanitizers/child_reports.h"
#endif

namespace fairbench {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const fs::path kRoot = FAIRBENCH_SOURCE_DIR;

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Trim(std::string s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> Words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::vector<std::string> Lines(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::string Join(const std::set<std::string>& s) {
  std::string out;
  for (const std::string& x : s) out += (out.empty() ? "" : " ") + x;
  return out;
}

// ------------------------------------------------------------ Dockerfiles

struct Instruction {
  std::string keyword;  // upper case
  std::string args;     // continuation lines joined
};

struct Stage {
  std::string image;                      // FROM's image
  std::string name;                       // AS name, or ""
  std::vector<Instruction> instructions;  // after FROM
};

// Comment lines go (also inside a continuation, as Docker drops them);
// a trailing backslash joins the next line.
std::vector<Stage> ParseDockerfile(const std::string& text) {
  std::vector<Instruction> all;
  std::string pending;
  for (const std::string& raw : Lines(text)) {
    const std::string line = Trim(raw);
    if (line.empty() || line[0] == '#') continue;
    if (line.back() == '\\') {
      pending += line.substr(0, line.size() - 1) + " ";
      continue;
    }
    const std::string whole = pending + line;
    pending.clear();
    const size_t sp = whole.find_first_of(" \t");
    Instruction i;
    i.keyword = whole.substr(0, sp);
    std::transform(i.keyword.begin(), i.keyword.end(), i.keyword.begin(), ::toupper);
    i.args = sp == std::string::npos ? "" : Trim(whole.substr(sp));
    all.push_back(std::move(i));
  }
  std::vector<Stage> stages;
  for (Instruction& i : all) {
    if (i.keyword == "FROM") {
      const std::vector<std::string> w = Words(i.args);
      Stage s;
      s.image = w.empty() ? "" : w[0];
      if (w.size() == 3 && (w[1] == "AS" || w[1] == "as")) s.name = w[2];
      stages.push_back(std::move(s));
    } else if (!stages.empty()) {
      stages.back().instructions.push_back(std::move(i));
    }
  }
  return stages;
}

std::vector<std::string> Args(const Stage& s, const std::string& keyword) {
  std::vector<std::string> out;
  for (const Instruction& i : s.instructions) {
    if (i.keyword == keyword) out.push_back(i.args);
  }
  return out;
}

// The commands of a RUN, split on "&&".
std::vector<std::string> Commands(const std::string& run) {
  std::vector<std::string> out;
  size_t at = 0;
  while (true) {
    const size_t amp = run.find("&&", at);
    out.push_back(Trim(run.substr(at, amp == std::string::npos ? std::string::npos : amp - at)));
    if (amp == std::string::npos) break;
    at = amp + 2;
  }
  return out;
}

// The packages every `apt-get install` of the stage names.
std::set<std::string> AptInstalls(const Stage& s) {
  std::set<std::string> out;
  for (const std::string& run : Args(s, "RUN")) {
    for (const std::string& cmd : Commands(run)) {
      const std::vector<std::string> w = Words(cmd);
      if (w.size() < 2 || w[0] != "apt-get") continue;
      const auto install = std::find(w.begin(), w.end(), "install");
      if (install == w.end()) continue;
      for (auto it = install + 1; it != w.end(); ++it) {
        if (!it->empty() && (*it)[0] != '-') out.insert(*it);
      }
    }
  }
  return out;
}

// scripts/setup's build_packages=( ... ).
std::set<std::string> SetupBuildPackages() {
  std::set<std::string> out;
  bool in = false;
  for (std::string line : Lines(Read(kRoot / "scripts" / "setup"))) {
    if (const size_t hash = line.find('#'); hash != std::string::npos) line = line.substr(0, hash);
    line = Trim(line);
    if (!in) {
      if (line.rfind("build_packages=(", 0) == 0) {
        in = true;
        line = line.substr(16);
      } else {
        continue;
      }
    }
    const bool last = line.find(')') != std::string::npos;
    if (last) line = line.substr(0, line.find(')'));
    for (const std::string& w : Words(line)) out.insert(w);
    if (last) break;
  }
  return out;
}

// "/usr/local/bin/X" targets of `COPY --from=build /out/X /usr/local/bin/X`.
std::vector<std::string> CopiedBinaries(const Stage& runtime) {
  std::vector<std::string> out;
  const std::regex copy(R"(^--from=build\s+/out/(\S+)\s+/usr/local/bin/(\S+)$)");
  for (const std::string& args : Args(runtime, "COPY")) {
    std::smatch m;
    EXPECT_TRUE(std::regex_match(args, m, copy)) << "COPY " << args;
    if (m.empty()) continue;
    EXPECT_EQ(m[1], m[2]) << "COPY " << args;
    out.push_back(m[2]);
  }
  return out;
}

struct Image {
  std::string name;
  std::string dockerfile;             // relative to the root
  std::vector<std::string> binaries;  // the first one is the entrypoint
};

std::ostream& operator<<(std::ostream& os, const Image& i) { return os << i.name; }

const std::vector<Image>& FairbenchImages() {
  static const std::vector<Image> images = {
      {"fairbench-controller", "images/controller/Dockerfile", {"fairbench-controller"}},
      {"fairbench-agent", "images/agent/Dockerfile", {"fairbench-agent", "fairbench-nofile"}},
      {"fairbench-target-beast", "targets/beast/Dockerfile", {"fairbench-target-beast"}},
      {"fairbench-target-cpp-httplib-debian",
       "targets/cpp-httplib-debian/Dockerfile",
       {"fairbench-target-cpp-httplib-debian"}},
      {"fairbench-target-nginx", "targets/nginx/Dockerfile", {"fairbench-target-nginx"}},
      {"fairbench-target-grpc", "targets/grpc/Dockerfile", {"fairbench-target-grpc"}},
  };
  return images;
}

// ----------------------------------------------- libraries and packages

std::string Tool(const std::string& name) {
  for (const char* dir : {"/usr/bin", "/bin", "/usr/sbin", "/sbin"}) {
    const fs::path p = fs::path(dir) / name;
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return testing::FindTool(name);
}

kube::CommandResult RunTool(const std::string& tool, const std::vector<std::string>& args) {
  auto r = kube::RunCommand(tool, args, {{"LC_ALL", "C"}}, 60s);
  EXPECT_TRUE(r.ok()) << tool << ": " << r.status().ToString();
  return r.ok() ? *r : kube::CommandResult{};
}

// DT_NEEDED entries (objdump -p).
std::vector<std::string> Needed(const std::string& elf) {
  std::vector<std::string> out;
  for (const std::string& line : Lines(RunTool(Tool("objdump"), {"-p", elf}).out)) {
    const std::vector<std::string> w = Words(line);
    if (w.size() == 2 && w[0] == "NEEDED") out.push_back(w[1]);
  }
  return out;
}

struct Loaded {
  bool dynamic = true;
  std::map<std::string, std::string> path_of;  // soname -> path (the loader included)
  std::vector<std::string> missing;            // "not found"
};

// What the loader loads (ldd), directly or not.
Loaded Ldd(const std::string& elf) {
  Loaded out;
  const kube::CommandResult r = RunTool(Tool("ldd"), {elf});
  if ((r.out + r.err).find("not a dynamic executable") != std::string::npos ||
      (r.out + r.err).find("statically linked") != std::string::npos) {
    out.dynamic = false;
    return out;
  }
  const std::regex arrow(R"(^\s*(\S+)\s+=>\s+(\S+)(\s+\(0x[0-9a-f]+\))?\s*$)");
  const std::regex bare(R"(^\s*(/\S+)\s+\(0x[0-9a-f]+\)\s*$)");
  for (const std::string& line : Lines(r.out)) {
    std::smatch m;
    if (line.find("not found") != std::string::npos) {
      out.missing.push_back(Trim(line));
    } else if (std::regex_match(line, m, arrow)) {
      out.path_of[m[1]] = m[2];
    } else if (std::regex_match(line, m, bare)) {
      out.path_of[fs::path(m[1].str()).filename()] = m[1];
    }
  }
  return out;
}

// The Debian package owning each path (dpkg -S), trying the path as given,
// resolved, and with /lib and /usr/lib swapped (Debian 12's usrmerge: a file
// may be listed under either).
std::map<std::string, std::string> PackagesOf(const std::set<std::string>& paths) {
  auto variants = [](const std::string& p) {
    std::vector<std::string> v = {p};
    std::error_code ec;
    const std::string real = fs::canonical(p, ec).string();
    if (!ec && real != p) v.push_back(real);
    for (size_t i = 0, n = v.size(); i < n; ++i) {
      if (v[i].rfind("/usr/", 0) == 0) v.push_back(v[i].substr(4));
      else v.push_back("/usr" + v[i]);
    }
    return v;
  };
  std::set<std::string> asked;
  for (const std::string& p : paths) {
    for (const std::string& v : variants(p)) asked.insert(v);
  }
  std::vector<std::string> args = {"-S"};
  args.insert(args.end(), asked.begin(), asked.end());
  std::map<std::string, std::string> owner;  // variant -> package
  for (const std::string& line : Lines(RunTool(Tool("dpkg"), args).out)) {
    if (line.rfind("diversion ", 0) == 0) continue;
    const size_t colon_space = line.find(": ");
    if (colon_space == std::string::npos) continue;
    std::string pkg = line.substr(0, line.find_first_of(",:"));
    owner[line.substr(colon_space + 2)] = pkg;
  }
  std::map<std::string, std::string> out;
  for (const std::string& p : paths) {
    for (const std::string& v : variants(p)) {
      if (owner.count(v)) {
        out[p] = owner[v];
        break;
      }
    }
  }
  return out;
}

// Every installed package apt would install with `roots`: Depends and
// Pre-Depends, followed through every alternative that is installed here.
std::set<std::string> DependsClosure(const std::set<std::string>& roots) {
  std::set<std::string> seen = roots;
  std::set<std::string> frontier = roots;
  const std::regex name(R"(^\s*([a-z0-9][a-z0-9+.-]*))");
  while (!frontier.empty()) {
    std::vector<std::string> args = {"-W", "-f=${Package}\t${Depends}, ${Pre-Depends}\n"};
    args.insert(args.end(), frontier.begin(), frontier.end());
    frontier.clear();
    for (const std::string& line : Lines(RunTool(Tool("dpkg-query"), args).out)) {
      const size_t tab = line.find('\t');
      if (tab == std::string::npos) continue;
      std::string deps = line.substr(tab + 1);
      for (char& c : deps) {
        if (c == '|') c = ',';
      }
      std::istringstream in(deps);
      for (std::string dep; std::getline(in, dep, ',');) {
        std::smatch m;
        if (!std::regex_search(dep, m, name)) continue;
        if (seen.insert(m[1]).second) frontier.insert(m[1]);
      }
    }
  }
  return seen;
}

// In debian:bookworm-slim already (apt, which it ships, links them).
const std::set<std::string> kBaseImagePackages = {"libc6", "libgcc-s1", "libstdc++6"};

bool HaveDebianTools() {
  for (const char* t : {"objdump", "ldd", "dpkg", "dpkg-query"}) {
    if (Tool(t).empty()) return false;
  }
  return access("/var/lib/dpkg/status", R_OK) == 0;
}

// Files besides the binaries that the image must hold: for the nginx
// target, the nginx it starts and the echo module its config loads, as the
// built launcher says.
std::vector<std::string> RuntimeFiles(const Image& image) {
  if (image.name != "fairbench-target-nginx") return {};
  const std::string launcher = testing::BinaryPath("fairbench-target-nginx");
  std::vector<std::string> out;
  std::smatch m;
  const std::string help = RunTool(launcher, {"--help"}).out;
  if (std::regex_search(help, m, std::regex(R"(--nginx\s+TEXT=(\S+))"))) out.push_back(m[1]);
  const std::string config = RunTool(launcher, {"--print-config", "--port", "8080"}).out;
  if (std::regex_search(config, m, std::regex(R"(load_module\s+([^;\s]+);)"))) out.push_back(m[1]);
  EXPECT_EQ(out.size(), 2u) << "the launcher's nginx and echo module:\n" << help << config;
  return out;
}

// ------------------------------------------------------------ the tests

class DockerfileTest : public ::testing::TestWithParam<Image> {
 protected:
  void SetUp() override {
    text_ = Read(kRoot / GetParam().dockerfile);
    ASSERT_FALSE(text_.empty()) << GetParam().dockerfile;
    stages_ = ParseDockerfile(text_);
    ASSERT_GE(stages_.size(), 2u) << GetParam().dockerfile << " is not multi-stage";
  }
  const Stage& build() const { return stages_.front(); }
  const Stage& runtime() const { return stages_.back(); }

  std::string text_;
  std::vector<Stage> stages_;
};

TEST_P(DockerfileTest, BuildsOnBookwormAndRunsOnBookwormSlim) {
  EXPECT_EQ(stages_.size(), 2u);
  EXPECT_EQ(build().image, "debian:bookworm");
  EXPECT_EQ(build().name, "build");
  EXPECT_EQ(runtime().image, "debian:bookworm-slim");
  EXPECT_EQ(runtime().name, "");
  EXPECT_EQ(text_.find(":latest"), std::string::npos);
}

TEST_P(DockerfileTest, BuildStageInstallsSetupsBuildPackages) {
  const std::set<std::string> setup = SetupBuildPackages();
  ASSERT_GE(setup.size(), 10u) << "no build_packages=( ... ) in scripts/setup";
  EXPECT_EQ(Join(AptInstalls(build())), Join(setup)) << "the build stage's apt-get install differs from scripts/setup";
}

TEST_P(DockerfileTest, BuildStageIsTheSameInEveryImage) {
  // One build stage for the six images: the engine's layer cache compiles
  // the project once, and every image holds binaries of the same build.
  const std::vector<Stage> first = ParseDockerfile(Read(kRoot / FairbenchImages().front().dockerfile));
  ASSERT_FALSE(first.empty());
  ASSERT_EQ(build().instructions.size(), first.front().instructions.size());
  for (size_t i = 0; i < build().instructions.size(); ++i) {
    EXPECT_EQ(build().instructions[i].keyword + " " + build().instructions[i].args,
              first.front().instructions[i].keyword + " " + first.front().instructions[i].args);
  }
}

TEST_P(DockerfileTest, BuildStageBuildsTheRepositoryAndTheRuntimeCopiesItsBinaries) {
  const std::vector<std::string> copy = Args(build(), "COPY");
  ASSERT_EQ(copy.size(), 1u);
  EXPECT_EQ(copy[0], ". /src/fairbench") << "the build stage builds the checkout";
  std::string build_run;
  for (const std::string& run : Args(build(), "RUN")) {
    if (run.find("cmake --build") != std::string::npos) build_run = run;
  }
  EXPECT_NE(build_run.find("cmake --preset release"), std::string::npos) << build_run;
  const std::vector<std::string> binaries = CopiedBinaries(runtime());
  EXPECT_EQ(binaries, GetParam().binaries);
  for (const std::string& b : binaries) {
    EXPECT_NE(build_run.find(" " + b + " "), std::string::npos) << b << " is not built: " << build_run;
    EXPECT_NE((build_run + " ").find("build/bin/" + b + " "), std::string::npos)
        << b << " is not installed into /out: " << build_run;
  }
}

TEST_P(DockerfileTest, RunsAsANumericNonRootUserWithoutAShell) {
  const std::vector<std::string> user = Args(runtime(), "USER");
  ASSERT_EQ(user.size(), 1u);
  std::smatch m;
  ASSERT_TRUE(std::regex_match(user[0], m, std::regex(R"(([0-9]+)(:([0-9]+))?)"))) << "USER " << user[0];
  EXPECT_NE(std::stoul(m[1]), 0u) << "USER " << user[0];
  // Exec form: the binary itself is PID 1, no /bin/sh -c.
  const std::vector<std::string> entrypoint = Args(runtime(), "ENTRYPOINT");
  ASSERT_EQ(entrypoint.size(), 1u);
  EXPECT_EQ(entrypoint[0], "[\"/usr/local/bin/" + GetParam().binaries.front() + "\"]");
  for (const std::string& cmd : Args(runtime(), "CMD")) {
    EXPECT_TRUE(cmd.size() >= 2 && cmd.front() == '[' && cmd.back() == ']') << "CMD not in exec form: " << cmd;
  }
  EXPECT_TRUE(Args(runtime(), "SHELL").empty());
  EXPECT_TRUE(Args(runtime(), "HEALTHCHECK").empty()) << "a HEALTHCHECK CMD would need a shell or curl";
}

TEST_P(DockerfileTest, CarriesTheOciLabelsFromTheBuildArgs) {
  // ARGs declared before FROM do not reach the stage: they must be in it.
  const std::vector<std::string> arg = Args(runtime(), "ARG");
  for (const char* name : {"FAIRBENCH_SOURCE", "FAIRBENCH_VERSION", "FAIRBENCH_REVISION"}) {
    EXPECT_TRUE(std::any_of(arg.begin(), arg.end(), [&](const std::string& a) { return a.rfind(name, 0) == 0; }))
        << "ARG " << name;
  }
  std::string labels;
  for (const std::string& l : Args(runtime(), "LABEL")) labels += l + " ";
  for (const std::string& label :
       std::vector<std::string>{"org.opencontainers.image.source=\"$FAIRBENCH_SOURCE\"",
                                "org.opencontainers.image.version=\"$FAIRBENCH_VERSION\"",
                                "org.opencontainers.image.revision=\"$FAIRBENCH_REVISION\"",
                                "org.opencontainers.image.title=\"" + GetParam().name + "\""}) {
    EXPECT_NE(labels.find(label), std::string::npos) << label;
  }
}

TEST_P(DockerfileTest, NeedsNoWritableRootFileSystem) {
  // Nothing to mount, no working folder made or chowned for the user, no
  // HOME or TMPDIR moved: the programs write nothing outside /tmp (the nginx
  // launcher's work folder) and what their flags name.
  for (const Stage& s : stages_) EXPECT_TRUE(Args(s, "VOLUME").empty());
  EXPECT_TRUE(Args(runtime(), "WORKDIR").empty());
  for (const std::string& env : Args(runtime(), "ENV")) ADD_FAILURE() << "ENV " << env;
  for (const std::string& run : Args(runtime(), "RUN")) {
    for (const std::string& cmd : Commands(run)) {
      const bool apt = cmd.rfind("apt-get update", 0) == 0 || cmd.rfind("apt-get install", 0) == 0 ||
                       cmd == "rm -rf /var/lib/apt/lists/*";
      EXPECT_TRUE(apt) << "the runtime stage only installs packages, not: " << cmd;
    }
  }
}

constexpr const char* kSanitizerBuild = "a sanitizer build: its binaries link libasan and libubsan, the images' do not";

TEST_P(DockerfileTest, RuntimePackagesHoldEveryLibraryTheBuiltBinariesLoad) {
  if (!RELEASE_BINARIES) GTEST_SKIP() << kSanitizerBuild;
  if (!HaveDebianTools()) GTEST_SKIP() << "needs objdump, ldd and dpkg (Debian)";
  const Image& image = GetParam();
  const std::set<std::string> listed = AptInstalls(runtime());
  std::set<std::string> available = listed;
  available.insert(kBaseImagePackages.begin(), kBaseImagePackages.end());
  const std::set<std::string> with_depends = DependsClosure(available);

  std::set<std::string> needed;  // packages some binary or file of the image needs directly
  std::vector<std::pair<std::string, Loaded>> elves;
  for (const std::string& b : image.binaries) {
    const std::string path = testing::BinaryPath(b);
    ASSERT_TRUE(fs::exists(path)) << path << ": build it (cmake --build build --target " << b << ")";
    Loaded loaded = Ldd(path);
    EXPECT_TRUE(loaded.missing.empty()) << b << ": " << loaded.missing.front();
    std::set<std::string> paths;
    std::map<std::string, std::string> soname_path;
    for (const std::string& soname : Needed(path)) {
      ASSERT_TRUE(loaded.path_of.count(soname)) << b << " links " << soname << ", which ldd did not resolve";
      soname_path[soname] = loaded.path_of[soname];
      paths.insert(loaded.path_of[soname]);
    }
    const auto owner = PackagesOf(paths);
    for (const auto& [soname, p] : soname_path) {
      ASSERT_TRUE(owner.count(p)) << p << " (" << soname << ") belongs to no Debian package";
      const std::string& pkg = owner.at(p);
      EXPECT_TRUE(available.count(pkg)) << image.dockerfile << ": " << b << " links " << soname << " (" << p
                                        << "): add " << pkg << " to the runtime stage's apt-get install";
      needed.insert(pkg);
    }
    elves.emplace_back(b, std::move(loaded));
  }
  const std::vector<std::string> files = RuntimeFiles(image);
  const auto file_owner = PackagesOf({files.begin(), files.end()});
  for (const std::string& f : files) {
    ASSERT_TRUE(file_owner.count(f)) << f << " belongs to no Debian package";
    EXPECT_TRUE(listed.count(file_owner.at(f)))
        << image.dockerfile << ": " << f << " comes with " << file_owner.at(f) << ", which the runtime stage lacks";
    needed.insert(file_owner.at(f));
    elves.emplace_back(f, Ldd(f));
  }
  // Everything loaded, however indirectly, arrives with those packages.
  for (const auto& [what, loaded] : elves) {
    std::set<std::string> paths;
    for (const auto& [soname, p] : loaded.path_of) paths.insert(p);
    const auto owner = PackagesOf(paths);
    for (const auto& [soname, p] : loaded.path_of) {
      if (!owner.count(p)) {
        ADD_FAILURE() << what << " loads " << p << ", which belongs to no Debian package";
        continue;
      }
      EXPECT_TRUE(with_depends.count(owner.at(p)))
          << image.dockerfile << ": " << what << " loads " << soname << " from " << owner.at(p)
          << ", which the runtime packages do not bring";
    }
  }
  // Only what is needed: a slim runtime.
  for (const std::string& pkg : listed) {
    EXPECT_TRUE(needed.count(pkg)) << image.dockerfile << ": " << pkg
                                   << " is installed but no binary links it (needed: " << Join(needed) << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(Images, DockerfileTest, ::testing::ValuesIn(FairbenchImages()),
                         [](const ::testing::TestParamInfo<Image>& param) {
                           std::string n = param.param.name;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(AgentImageTest, CarriesTheStaticNofileHelperWhereTheControllerLooksForIt) {
  const std::vector<Stage> stages = ParseDockerfile(Read(kRoot / "images" / "agent" / "Dockerfile"));
  ASSERT_GE(stages.size(), 2u);
  const std::string helper_path = controller::k8s::TargetPodParams{}.helper_path;
  bool copied = false;
  for (const std::string& copy : Args(stages.back(), "COPY")) {
    if (copy == "--from=build /out/fairbench-nofile " + helper_path) copied = true;
  }
  EXPECT_TRUE(copied) << "the agent image has no fairbench-nofile at " << helper_path;
  // Static: a target pod runs it in the target's image, which may have no
  // libc at all.
  if (!RELEASE_BINARIES) GTEST_SKIP() << kSanitizerBuild;
  if (!HaveDebianTools()) GTEST_SKIP() << "needs objdump and ldd";
  const std::string nofile = testing::BinaryPath("fairbench-nofile");
  ASSERT_TRUE(fs::exists(nofile)) << nofile;
  EXPECT_TRUE(Needed(nofile).empty());
  EXPECT_FALSE(Ldd(nofile).dynamic);
}

TEST(QuickstartTest, RunsInAClusterOnTheReferenceTargetImages) {
  // examples/quickstart.yaml names the images scripts/images builds by
  // default and starts each through its image's entrypoint binary (a
  // command, so that it runs under fairbench-nofile), listening on every
  // address of the pod. Every reference image is used, and nginx's once per
  // protocol: its flags match the target's scheme and protocol.
  for (const api::Platform platform : {api::Platform::kKubernetes, api::Platform::kLocal}) {
    api::LoadOptions options;
    options.validation.platform = platform;
    auto run = api::LoadRunFile(kRoot / "examples" / "quickstart.yaml", options);
    ASSERT_TRUE(run.ok()) << run.status().message();
    if (platform == api::Platform::kLocal) continue;
    std::set<std::string> images_used;
    std::set<std::pair<std::string, std::string>> protocols;  // (scheme, protocol)
    for (const api::Target& t : run->spec.targets) {
      const std::string prefix = "ghcr.io/fairbench/", suffix = ":" FAIRBENCH_VERSION;
      ASSERT_EQ(t.image.rfind(prefix, 0), 0u) << t.image;
      ASSERT_GT(t.image.size(), prefix.size() + suffix.size()) << t.image;
      ASSERT_EQ(t.image.substr(t.image.size() - suffix.size()), suffix) << t.image;
      const std::string name = t.image.substr(prefix.size(), t.image.size() - prefix.size() - suffix.size());
      const std::string target_prefix = "fairbench-target-";
      ASSERT_EQ(name.rfind(target_prefix, 0), 0u) << t.name << " runs " << name << ", not a reference target";
      EXPECT_EQ(t.name.rfind(name.substr(target_prefix.size()), 0), 0u) << t.name << " runs " << name;
      images_used.insert(name);
      const auto image = std::find_if(FairbenchImages().begin(), FairbenchImages().end(),
                                      [&](const Image& i) { return i.name == name; });
      ASSERT_NE(image, FairbenchImages().end()) << name << " has no image";
      const std::vector<Stage> stages = ParseDockerfile(Read(kRoot / image->dockerfile));
      ASSERT_FALSE(stages.empty());
      const std::vector<std::string> entrypoint = Args(stages.back(), "ENTRYPOINT");
      ASSERT_EQ(entrypoint.size(), 1u);
      ASSERT_FALSE(t.command.empty());
      EXPECT_EQ("[\"" + t.command[0] + "\"]", entrypoint[0]);
      const std::string args = [&] {
        std::string a;
        for (const std::string& c : t.command) a += c + " ";
        return a;
      }();
      EXPECT_NE(args.find(" --host 0.0.0.0 "), std::string::npos) << args;
      EXPECT_NE(args.find(" --port {port} "), std::string::npos) << args;
      const std::string protocol(ToString(t.protocol.value_or(Protocol::kHttp1)));
      const std::string scheme(ToString(t.scheme));
      const bool tls = args.find(" --tls ") != std::string::npos;
      const bool http2 = args.find(" --http2 ") != std::string::npos;
      EXPECT_EQ(tls, scheme == "https") << t.name << ": " << args;
      EXPECT_EQ(http2, protocol != "http1") << t.name << ": " << args;
      if (t.local) {
        std::string local;
        for (const std::string& c : t.local->command) local += c + " ";
        EXPECT_EQ(local.find(" --tls ") != std::string::npos, tls) << t.name << ": " << local;
        EXPECT_EQ(local.find(" --http2 ") != std::string::npos, http2) << t.name << ": " << local;
      }
      protocols.insert({scheme, protocol});
    }
    for (const Image& i : FairbenchImages()) {
      // The gRPC target is loaded by `fairbench-agent load --grpc`; a
      // BenchmarkRun has no gRPC targets yet.
      if (i.name.rfind("fairbench-target-", 0) == 0 && i.name != "fairbench-target-grpc") {
        EXPECT_TRUE(images_used.count(i.name)) << i.name << " unused";
      }
    }
    // HTTP/1.1, HTTPS, h2 and h2c.
    const std::set<std::pair<std::string, std::string>> all = {
        {"http", "http1"}, {"https", "http1"}, {"https", "h2"}, {"http", "h2c"}};
    EXPECT_EQ(protocols, all);
  }
}

// ------------------------------------------- a read-only root, in practice

// The programs of the images run here under strace: every path they open
// for writing, create, rename or remove is recorded, and only /dev and
// (for the nginx target) $TMPDIR may be touched — what a read-only root
// file system with a writable /tmp allows.
class ReadOnlyRootTest : public ::testing::Test {
 protected:
  void SetUp() override {
#if defined(__SANITIZE_THREAD__)
    // TSan's runtime itself maps a file it creates in $TMPDIR
    // (tsan.rodata.PID) into every process: a write the images' binaries
    // never make.
    GTEST_SKIP() << "a ThreadSanitizer build: its runtime writes $TMPDIR/tsan.rodata.*";
#endif
    strace_ = Tool("strace");
    if (strace_.empty()) GTEST_SKIP() << "strace not found (scripts/setup installs it)";
    auto probe = kube::RunCommand(strace_, {"-f", "-qq", "-o", "/dev/null", "true"}, {}, 10s);
    if (!probe.ok() || probe->exit_code != 0) GTEST_SKIP() << "strace cannot trace here (ptrace not permitted)";
    auto dir = testing::TempDir::Create("fairbench-images-rofs");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_ = std::make_unique<testing::TempDir>(std::move(*dir));
    tmpdir_ = dir_->path() / "tmp";
    fs::create_directories(tmpdir_);
  }

  Result<testing::Subprocess> Start(const std::vector<std::string>& argv) {
    testing::SubprocessOptions o;
    o.argv = {strace_,
              "-f",
              "-ff",
              "-qq",
              "-y",
              "-o",
              dir_->File("trace"),
              "-e",
              "trace=open,openat,creat,mkdir,mkdirat,rename,renameat,renameat2,unlink,unlinkat,rmdir,link,linkat,"
              "symlink,symlinkat,truncate",
              "--"};
    o.argv.insert(o.argv.end(), argv.begin(), argv.end());
    o.env = {{"TMPDIR", tmpdir_.string()}, {"HOME", "/nonexistent"}};
#if defined(__SANITIZE_ADDRESS__)
    // LeakSanitizer stops the world with ptrace, which strace already holds:
    // under strace it can only fail at exit ("does not work under ptrace").
    // The traced program runs without it; the rest of ASan and UBSan stay on.
    const char* asan = std::getenv("ASAN_OPTIONS");
    o.env["ASAN_OPTIONS"] = std::string(asan != nullptr ? asan : "") + ":detect_leaks=0";
#endif
    o.working_dir = "/";
    o.stdout_to = testing::Redirect::File(dir_->File("stdout"));
    o.stderr_to = testing::Redirect::File(dir_->File("stderr"));
    return testing::Subprocess::Start(o);
  }

  // Every path written, created, renamed or removed, from the traces of
  // every process (strace -ff writes one file per process).
  std::set<std::string> Written() {
    std::set<std::string> out;
    const std::regex call(R"(^(\w+)\((.*)\)\s+=\s+(.*)$)");
    const std::regex quoted(R"re("((?:[^"\\]|\\.)*)")re");
    const std::regex dirfd(R"(^(AT_FDCWD|-?[0-9]+<([^>]*)>),)");
    for (const auto& e : fs::directory_iterator(dir_->path())) {
      if (e.path().filename().string().rfind("trace.", 0) != 0) continue;
      for (const std::string& line : Lines(Read(e.path()))) {
        std::smatch m;
        if (!std::regex_match(line, m, call)) continue;
        const std::string name = m[1], args = m[2];
        if ((name == "open" || name == "openat") &&
            !std::regex_search(args, std::regex("O_WRONLY|O_RDWR|O_CREAT|O_TRUNC"))) {
          continue;
        }
        std::smatch d;
        std::string base;
        if (name.size() > 2 && name.substr(name.size() - 2) == "at" && std::regex_search(args, d, dirfd) &&
            d[2].matched) {
          base = d[2];
        }
        for (auto it = std::sregex_iterator(args.begin(), args.end(), quoted); it != std::sregex_iterator(); ++it) {
          std::string path = (*it)[1];
          if (!path.empty() && path[0] != '/') path = (base.empty() ? "<cwd>" : base) + "/" + path;
          out.insert(path);
          if (name == "open" || name == "openat" || name == "creat" || name.rfind("mkdir", 0) == 0 ||
              name.rfind("unlink", 0) == 0 || name == "rmdir" || name == "truncate") {
            break;  // one path argument
          }
        }
      }
    }
    return out;
  }

  void ExpectWritesOnlyUnder(const std::set<std::string>& allowed) {
    // The sanitizer runtime, given a log_path (testing/sanitizers/
    // child_reports.h), makes sure at start that its directory exists: one
    // mkdir per ancestor, each failing with EEXIST. Those attempts are its,
    // not the program's; a report it writes there fails the test anyway.
    std::set<std::string> runtime_dirs;
#if defined(__SANITIZE_ADDRESS__)
    for (fs::path d = testing::ChildReportsDir(); !d.empty() && d != d.root_path(); d = d.parent_path()) {
      runtime_dirs.insert(d.string());
    }
#endif
    for (const std::string& p : Written()) {
      bool ok = p.rfind("/dev/", 0) == 0 || runtime_dirs.count(p) > 0;
      for (const std::string& a : allowed) ok = ok || p.rfind(a + "/", 0) == 0;
      EXPECT_TRUE(ok) << "writes " << p << ", which a read-only root file system forbids\n" << Output();
    }
  }

  // What the program printed (spdlog writes to stdout).
  std::string Output() { return Read(dir_->File("stdout")) + Read(dir_->File("stderr")); }

  // Starts `binary`, waits for an answer to GET / (with `tls`, only for the
  // port to accept: the files were written before nginx listened), stops it.
  void ServeOnce(const std::string& binary, const std::vector<std::string>& extra = {}, bool tls = false) {
    auto port = testing::FreeLoopbackPort();
    ASSERT_TRUE(port.ok());
    std::vector<std::string> argv = {testing::BinaryPath(binary), "--host",    "127.0.0.1", "--port",
                                     std::to_string(*port),       "--threads", "1"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto p = Start(argv);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    bool served = false;
    for (int i = 0; i < 100 && !served; ++i) {
      if (tls) {
        served = testing::PortAccepts("127.0.0.1", *port);
        if (!served) std::this_thread::sleep_for(100ms);
        continue;
      }
      auto c = testing::HttpConnection::Connect("127.0.0.1", *port, 1s);
      if (c.ok()) {
        auto r = c->RoundTrip(testing::BuildRequest("GET", "/", "127.0.0.1"));
        served = r.ok() && r->status == 200;
      }
      if (!served) std::this_thread::sleep_for(100ms);
    }
    EXPECT_TRUE(served) << binary << " did not answer\n" << Output();
    ASSERT_TRUE(p->Kill(SIGTERM, /*to_group=*/true).ok());
    auto status = p->Wait(15s);
    ASSERT_TRUE(status.ok()) << status.status().ToString();
  }

  std::string strace_;
  std::unique_ptr<testing::TempDir> dir_;
  fs::path tmpdir_;
};

TEST_F(ReadOnlyRootTest, AgentWritesNothing) {
  auto p = Start({testing::BinaryPath("fairbench-agent"), "--controller", "127.0.0.1:1", "--token", "t", "--id", "a",
                  "--give-up-after", "0.5"});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  auto status = p->Wait(20s);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  ExpectWritesOnlyUnder({});
}

TEST_F(ReadOnlyRootTest, ControllerWritesNothingWhileStarting) {
  const std::string kubeconfig = dir_->File("kubeconfig");
  std::ofstream(kubeconfig)
      << "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
         "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1', insecure-skip-tls-verify: true}}]\n"
         "users: [{name: u, user: {token: t}}]\n"
         "contexts: [{name: c, context: {cluster: c, user: u}}]\n";
  auto p = Start({testing::BinaryPath("fairbench-controller"), "--kubeconfig", kubeconfig, "--metrics-address",
                  "127.0.0.1:0", "--agent-listen", "127.0.0.1:0"});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  // Until it has tried the API server (and waits to try again).
  const bool tried = [&] {
    for (int i = 0; i < 100; ++i) {
      if (Output().find("127.0.0.1:1") != std::string::npos) return true;
      std::this_thread::sleep_for(100ms);
    }
    return false;
  }();
  EXPECT_TRUE(tried) << Output();
  ASSERT_TRUE(p->Kill(SIGTERM, /*to_group=*/true).ok());
  auto status = p->Wait(15s);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  ExpectWritesOnlyUnder({});
}

TEST_F(ReadOnlyRootTest, BeastAndHttplibTargetsWriteNothing) {
  ServeOnce("fairbench-target-beast");
  ServeOnce("fairbench-target-cpp-httplib-debian");
  ExpectWritesOnlyUnder({});
}

TEST_F(ReadOnlyRootTest, NginxTargetWritesOnlyUnderTmpdir) {
  ServeOnce("fairbench-target-nginx");
  const std::set<std::string> written = Written();
  EXPECT_TRUE(std::any_of(written.begin(), written.end(), [&](const std::string& p) {
    return p.rfind(tmpdir_.string() + "/", 0) == 0;
  })) << "nginx's work folder is not under $TMPDIR";
  ExpectWritesOnlyUnder({tmpdir_.string()});
}

// The self-signed certificate of --tls goes into the work folder as well.
TEST_F(ReadOnlyRootTest, NginxTargetWithTlsWritesOnlyUnderTmpdir) {
  ServeOnce("fairbench-target-nginx", {"--tls", "--http2"}, /*tls=*/true);
  const std::set<std::string> written = Written();
  EXPECT_TRUE(std::any_of(written.begin(), written.end(), [&](const std::string& p) {
    return p.rfind(tmpdir_.string() + "/", 0) == 0 && p.size() > 8 && p.substr(p.size() - 8) == "/tls.key";
  })) << "no tls.key under $TMPDIR";
  ExpectWritesOnlyUnder({tmpdir_.string()});
}

// scripts/quickstart builds only what it runs (scripts/setup --targets).
// Catches: a program added to examples/quickstart.yaml (or fairbench's own
// two) that the quick start does not build — on a fresh machine its cells
// would fail to deploy —, a name in the list that is no CMake target (the
// build would stop).
TEST(QuickstartTest, BuildsEveryProgramItRunsAndNothingElse) {
  const std::string script = Read(kRoot / "scripts" / "quickstart");
  const std::string flag = "scripts/setup --targets ";
  const size_t at = script.find(flag);
  ASSERT_NE(at, std::string::npos) << "scripts/quickstart does not name what it builds";
  std::set<std::string> built;
  std::stringstream list(script.substr(at + flag.size(), script.find('\n', at) - at - flag.size()));
  for (std::string name; std::getline(list, name, ',');) built.insert(name);
  std::set<std::string> run = {"fairbench", "fairbench-agent"};
  api::LoadOptions options;
  options.validation.platform = api::Platform::kLocal;
  auto quickstart = api::LoadRunFile(kRoot / "examples" / "quickstart.yaml", options);
  ASSERT_TRUE(quickstart.ok()) << quickstart.status().message();
  for (const api::Target& t : quickstart->spec.targets) {
    ASSERT_TRUE(t.local.has_value() && !t.local->command.empty()) << t.name;
    run.insert(t.local->command[0]);
  }
  EXPECT_EQ(built, run);
  for (const std::string& name : built) EXPECT_TRUE(fs::exists(testing::BinaryPath(name))) << name;
}

TEST(SetupTest, BuildPackagesAreAmongWhatSetupInstalls) {
  // build_packages must be part of the list scripts/setup installs.
  const std::string setup = Read(kRoot / "scripts" / "setup");
  EXPECT_NE(setup.find("\"${build_packages[@]}\""), std::string::npos);
}

// ------------------------------------------------------------ scripts/images

class ImagesScriptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::TempDir::Create("fairbench-images");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_ = std::make_unique<testing::TempDir>(std::move(*dir));
    // A PATH holding bash and nothing else (no git, no engine) unless a
    // test adds a stand-in engine.
    bin_ = dir_->path() / "bin";
    fs::create_directories(bin_);
    const std::string bash = Tool("bash");
    ASSERT_FALSE(bash.empty());
    fs::create_symlink(bash, bin_ / "bash");
    log_ = dir_->File("engine.log");
  }

  // A stand-in engine: logs each call's arguments; `docker info` exits with `info_exit`.
  void FakeEngine(const std::string& name, int info_exit = 0) {
    const fs::path p = bin_ / name;
    std::ofstream(p) << "#!/bin/sh\nprintf '%s\\n' \"" << name << " $*\" >> \"$FAKE_ENGINE_LOG\"\n"
                     << "if [ \"$1\" = info ]; then exit " << info_exit << "; fi\nexit 0\n";
    fs::permissions(p, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  }
  void AddGit() {
    const std::string git = Tool("git");
    if (!git.empty()) fs::create_symlink(git, bin_ / "git");
  }

  kube::CommandResult Images(const std::vector<std::string>& args) {
    auto r = kube::RunCommand((kRoot / "scripts" / "images").string(), args,
                              {{"PATH", bin_.string()}, {"FAKE_ENGINE_LOG", log_}}, 30s);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : kube::CommandResult{};
  }
  // What the script asked the engine, less its checks of the base images.
  std::vector<std::string> EngineCalls() {
    std::vector<std::string> out;
    for (const std::string& line : Lines(Read(log_))) {
      if (line.find(" image inspect ") == std::string::npos) out.push_back(line);
    }
    return out;
  }
  std::vector<std::string> AllEngineCalls() { return Lines(Read(log_)); }

  std::unique_ptr<testing::TempDir> dir_;
  fs::path bin_;
  std::string log_;
};

// Every Dockerfile of the repository: images/*/ and targets/*/.
std::set<std::string> AllDockerfiles() {
  std::set<std::string> out;
  for (const char* top : {"images", "targets"}) {
    for (const auto& e : fs::directory_iterator(kRoot / top)) {
      if (e.is_directory() && fs::exists(e.path() / "Dockerfile")) {
        out.insert(fs::relative(e.path() / "Dockerfile", kRoot).string());
      }
    }
  }
  return out;
}

TEST_F(ImagesScriptTest, DryRunPrintsOneBuildPerImageWithTheLabels) {
  const auto r = Images({"--dry-run", "--registry", "example.org/fairbench", "--version", "1.2.3", "--source",
                         "https://example.org/fairbench.git", "--revision", "0123abc"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string root = kRoot.string();
  const std::regex build(R"(^docker build --network host -f (\S+) -t example\.org/fairbench/([a-z0-9-]+):(\S+) )"
                         R"(--build-arg FAIRBENCH_SOURCE=https://example\.org/fairbench\.git )"
                         R"(--build-arg FAIRBENCH_VERSION=1\.2\.3 --build-arg FAIRBENCH_REVISION=0123abc (\S+)$)");
  std::set<std::string> dockerfiles;
  std::map<std::string, std::string> tags;
  for (const std::string& line : Lines(r.out)) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, build)) << line;
    EXPECT_EQ(m[4], root) << "the context is the repository's root";
    ASSERT_EQ(m[1].str().rfind(root + "/", 0), 0u) << line;
    EXPECT_TRUE(dockerfiles.insert(m[1].str().substr(root.size() + 1)).second) << "built twice: " << line;
    tags[m[2]] = m[3];
  }
  EXPECT_EQ(Join(dockerfiles), Join(AllDockerfiles())) << "scripts/images must build every Dockerfile, once";
  for (const Image& image : FairbenchImages()) {
    EXPECT_EQ(tags[image.name], "1.2.3") << image.name;
    EXPECT_TRUE(dockerfiles.count(image.dockerfile)) << image.dockerfile;
  }
  EXPECT_EQ(tags.size(), FairbenchImages().size());
  EXPECT_TRUE(EngineCalls().empty()) << "a dry run runs nothing";
}

TEST_F(ImagesScriptTest, DefaultsNameTheAgentImageTheControllerRuns) {
  AddGit();
  const auto r = Images({"--dry-run", "--only", "fairbench-agent"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 1u) << r.out;
  // fairbench-controller's default --agent-image (controller/operator/controller_main.cc).
  EXPECT_NE(lines[0].find(" -t ghcr.io/fairbench/fairbench-agent:" FAIRBENCH_VERSION " "), std::string::npos)
      << lines[0];
  EXPECT_NE(lines[0].find("--build-arg FAIRBENCH_VERSION=" FAIRBENCH_VERSION " "), std::string::npos) << lines[0];
  const std::string git = Tool("git");
  if (git.empty()) return;
  auto head = kube::RunCommand(git, {"-C", kRoot.string(), "rev-parse", "HEAD"}, {}, 10s);
  if (!head.ok() || head->exit_code != 0) return;  // not a git checkout
  EXPECT_NE(lines[0].find("--build-arg FAIRBENCH_REVISION=" + Trim(head->out)), std::string::npos) << lines[0];
}

TEST_F(ImagesScriptTest, OnlyPicksImagesAndPushFollowsEachBuild) {
  auto r = Images({"--dry-run", "--revision", "r", "--only", "fairbench-target-nginx,fairbench-agent", "--push"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 4u) << r.out;
  EXPECT_EQ(lines[0].rfind("docker build --network host -f " + (kRoot / "images/agent/Dockerfile").string(), 0), 0u)
      << lines[0];
  EXPECT_EQ(lines[1], "docker push ghcr.io/fairbench/fairbench-agent:" FAIRBENCH_VERSION);
  EXPECT_EQ(lines[2].rfind("docker build --network host -f " + (kRoot / "targets/nginx/Dockerfile").string(), 0), 0u)
      << lines[2];
  EXPECT_EQ(lines[3], "docker push ghcr.io/fairbench/fairbench-target-nginx:" FAIRBENCH_VERSION);

  r = Images({"--dry-run", "--revision", "r", "--only", "fairbench"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Lines(r.out).size(), FairbenchImages().size()) << r.out;

  r = Images({"--dry-run", "--only", "fairbench-nope"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown image 'fairbench-nope'"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

// The study's frameworks are images a user brings: scripts/images builds
// none of them, and has no option that fetches their sources. Catches: a
// framework image (or its --sources) coming back.
TEST_F(ImagesScriptTest, BuildsNoFrameworkImage) {
  auto r = Images({"--dry-run", "--only", "frameworks"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown image 'frameworks'"), std::string::npos) << r.err;
  r = Images({"--dry-run", "--sources", "/tmp"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown option --sources"), std::string::npos) << r.err;
  for (const char* framework : {"hical", "drogon", "crow", "oatpp", "cpp-httplib", "cinatra"}) {
    r = Images({"--dry-run", "--only", framework});
    EXPECT_EQ(r.exit_code, 2) << framework;
  }
}

TEST_F(ImagesScriptTest, SaysPlainlyWhenNeitherDockerNorPodmanIsInstalled) {
  const auto r = Images({"--revision", "r"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(r.out.empty()) << r.out;
  const std::vector<std::string> lines = Lines(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_EQ(lines[0].rfind("images: neither docker nor podman is installed", 0), 0u) << lines[0];
}

TEST_F(ImagesScriptTest, SaysPlainlyWhenDockersDaemonDoesNotAnswer) {
  FakeEngine("docker", /*info_exit=*/1);
  const auto r = Images({"--revision", "r"});
  EXPECT_EQ(r.exit_code, 1);
  const std::vector<std::string> lines = Lines(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_NE(lines[0].find("daemon is not reachable"), std::string::npos) << lines[0];
  EXPECT_EQ(EngineCalls(), std::vector<std::string>{"docker info"}) << "nothing built";
}

TEST_F(ImagesScriptTest, RunsTheCommandsItPrints) {
  FakeEngine("docker");
  FakeEngine("podman");
  const std::vector<std::string> args = {"--revision", "r", "--only", "fairbench-controller,fairbench-target-beast",
                                         "--push"};
  std::vector<std::string> dry = args;
  dry.push_back("--dry-run");
  const auto printed = Images(dry);
  ASSERT_EQ(printed.exit_code, 0) << printed.err;
  const auto r = Images(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> calls = EngineCalls();
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.front(), "docker info") << "docker is used when its daemon answers";
  calls.erase(calls.begin());
  EXPECT_EQ(calls, Lines(printed.out));
  EXPECT_NE(r.out.find("built and pushed ghcr.io/fairbench/fairbench-controller:" FAIRBENCH_VERSION
                       " ghcr.io/fairbench/fairbench-target-beast:" FAIRBENCH_VERSION),
            std::string::npos)
      << r.out;
}

// A base image the engine lacks and cannot pull (no registry, and
// `scripts/docker-engine start` has not made Debian's yet): each image that
// needs it is skipped with one line naming the base and the pull's error,
// nothing is built, and the run ends 1 when no image could be built.
// Catches: the whole script failing at the first missing base (set -e)
// with the engine's error alone, a skip without its reason, a skipped image
// reported built.
TEST_F(ImagesScriptTest, AnImageWhoseBaseCannotBeHadIsSkippedWithTheReason) {
  const fs::path p = bin_ / "docker";
  std::ofstream(p)
      << "#!/bin/sh\nprintf '%s\\n' \"docker $*\" >> \"$FAKE_ENGINE_LOG\"\n"
      << "case \"$1 $2 $3\" in\n"
      << "  'image inspect debian:bookworm-slim') exit 1 ;;\n"
      << "  'pull debian:bookworm-slim ') echo 'Error response from daemon: no route to registry' >&2; exit 1 ;;\n"
      << "esac\nexit 0\n";
  fs::permissions(p, fs::perms::owner_all);
  auto r = Images({"--revision", "r", "--only", "fairbench-agent,fairbench-target-nginx"});
  EXPECT_EQ(r.exit_code, 1) << "nothing could be built";
  for (const char* name : {"fairbench-agent", "fairbench-target-nginx"}) {
    EXPECT_NE(r.err.find(std::string("images: skipping ") + name +
                         ": its base image debian:bookworm-slim (Error response from daemon: no route to registry) "
                         "is not in the engine and cannot be pulled"),
              std::string::npos)
        << r.err;
  }
  EXPECT_NE(r.out.find("images: skipped fairbench-agent fairbench-target-nginx"), std::string::npos) << r.out;
  for (const std::string& call : EngineCalls()) EXPECT_EQ(call.find(" build "), std::string::npos) << call;
}

TEST_F(ImagesScriptTest, UsesPodmanWhenDockerIsMissing) {
  FakeEngine("podman");
  const auto r = Images({"--revision", "r", "--only", "fairbench-target-nginx"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> calls = EngineCalls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].rfind("podman build --network host -f " + (kRoot / "targets/nginx/Dockerfile").string() +
                               " -t ghcr.io/fairbench/fairbench-target-nginx:" FAIRBENCH_VERSION " ",
                           0),
            0u)
      << calls[0];
}

}  // namespace
}  // namespace fairbench
