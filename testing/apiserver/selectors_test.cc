#include "testing/apiserver/selectors.h"

#include <gtest/gtest.h>

namespace fairbench::apiserver {
namespace {

using nlohmann::json;

bool Match(const std::string& sel, const json& labels) {
  auto s = LabelSelector::Parse(sel);
  EXPECT_TRUE(s.ok()) << sel << ": " << s.status().ToString();
  return s.ok() && s->Matches(labels);
}

TEST(LabelSelector, EqualityAndSetForms) {
  json l = {{"app", "web"}, {"tier", "front"}, {"n", "7"}};
  EXPECT_TRUE(Match("app=web", l));
  EXPECT_TRUE(Match("app==web", l));
  EXPECT_FALSE(Match("app!=web", l));
  EXPECT_TRUE(Match("app!=db", l));
  EXPECT_TRUE(Match("missing!=x", l));  // absent keys satisfy !=
  EXPECT_TRUE(Match("tier in (front, back)", l));
  EXPECT_FALSE(Match("tier notin (front)", l));
  EXPECT_TRUE(Match("app,!missing", l));
  EXPECT_FALSE(Match("!app", l));
  EXPECT_TRUE(Match("app=web,tier in (front),!missing", l));
  EXPECT_TRUE(Match("n>5", l));
  EXPECT_FALSE(Match("n<5", l));
  EXPECT_TRUE(Match("", l));
  EXPECT_FALSE(Match("app=web", nullptr));
}

TEST(LabelSelector, RejectsMalformed) {
  EXPECT_FALSE(LabelSelector::Parse("app in (a").ok());
  EXPECT_FALSE(LabelSelector::Parse("app foo (a)").ok());
  EXPECT_FALSE(LabelSelector::Parse("a=b,,c").ok());
  EXPECT_FALSE(LabelSelector::Parse("a=b c").ok());
  EXPECT_FALSE(LabelSelector::Parse("n>x").ok());
}

TEST(FieldSelector, SupportedFieldsOnly) {
  std::vector<std::string> allowed = {"metadata.name", "status.phase"};
  json pod = {{"metadata", {{"name", "p1"}}}, {"status", {{"phase", "Running"}}}};
  auto s = FieldSelector::Parse("metadata.name=p1,status.phase!=Failed", allowed);
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->Matches(pod));
  auto bad = FieldSelector::Parse("spec.color=red", allowed);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("field label not supported: spec.color"), std::string::npos);
}

}  // namespace
}  // namespace fairbench::apiserver
