#include "agent/request_mix.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace fairbench::agent {
namespace {

class MixFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("fairbench-mix-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const auto p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  std::filesystem::path dir_;
};

TEST_F(MixFileTest, LoadsAWeightedMixWithBodyFiles) {
  Write("body.json", R"({"k":1})");
  const std::string path = Write("mix.yaml", R"(requests:
  - name: hello
    path: /
    weight: 3
  - method: POST
    path: /api/echo
    headers: {Content-Type: application/json}
    bodyFile: body.json
)");
  auto mix = LoadRequestMix(path);
  ASSERT_TRUE(mix.ok()) << mix.status().ToString();
  ASSERT_EQ(mix->size(), 2u);
  EXPECT_EQ((*mix)[0].name, "hello");
  EXPECT_EQ((*mix)[0].weight, 3u);
  EXPECT_EQ((*mix)[1].method, "POST");
  EXPECT_EQ((*mix)[1].body, R"({"k":1})");
  EXPECT_EQ((*mix)[1].headers.at(0).first, "Content-Type");
}

TEST_F(MixFileTest, ErrorsNameTheLineAndField) {
  auto bad_yaml = LoadRequestMix(Write("a.yaml", "requests:\n  - path: /\n    weight: [1\n"));
  ASSERT_FALSE(bad_yaml.ok());
  EXPECT_NE(bad_yaml.status().message().find("a.yaml:"), std::string::npos) << bad_yaml.status().message();

  auto unknown = LoadRequestMix(Write("b.yaml", "requests:\n  - path: /\n    wieght: 2\n"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("b.yaml:3:5: requests[0].wieght: unknown field"), std::string::npos)
      << unknown.status().message();

  auto no_path = LoadRequestMix(Write("c.yaml", "requests:\n  - method: GET\n"));
  ASSERT_FALSE(no_path.ok());
  EXPECT_NE(no_path.status().message().find("requests[0].path: required"), std::string::npos);

  auto bad_weight = LoadRequestMix(Write("d.yaml", "requests:\n  - path: /\n    weight: 0\n"));
  ASSERT_FALSE(bad_weight.ok());
  EXPECT_NE(bad_weight.status().message().find("d.yaml:3:13: requests[0].weight: must be between 1"), std::string::npos)
      << bad_weight.status().message();

  auto missing_body = LoadRequestMix(Write("e.yaml", "requests:\n  - path: /\n    bodyFile: nope.json\n"));
  ASSERT_FALSE(missing_body.ok());
  EXPECT_NE(missing_body.status().message().find("cannot read"), std::string::npos);

  // A raw control character is not YAML (and yaml-cpp would misread a NUL):
  // refused where it is. Binary bodies go in a bodyFile.
  auto control = LoadRequestMix(Write("g.yaml", std::string("requests:\n  - path: /\n    body: a\0_b\n", 37)));
  ASSERT_FALSE(control.ok());
  EXPECT_NE(control.status().message().find("g.yaml:3:12: control character U+0000"), std::string::npos)
      << control.status().message();

  EXPECT_FALSE(LoadRequestMix((dir_ / "absent.yaml").string()).ok());
  EXPECT_FALSE(LoadRequestMix(Write("f.yaml", "requests: []\n")).ok());
}

}  // namespace
}  // namespace fairbench::agent
