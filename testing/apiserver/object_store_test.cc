#include "testing/apiserver/object_store.h"

#include <gtest/gtest.h>

namespace fairbench::apiserver {
namespace {

using nlohmann::json;

json Obj(const std::string& name, const std::string& color) {
  return {{"metadata", {{"name", name}, {"namespace", "ns"}, {"labels", {{"color", color}}}}}};
}

std::vector<json> Drain(WatchChannel& ch) {
  std::vector<json> out;
  for (;;) {
    auto item = ch.Next(std::chrono::milliseconds(0));
    if (item.kind != WatchChannel::Item::Kind::kLine) break;
    out.push_back(json::parse(item.line));
  }
  return out;
}

WatchSpec Spec(const std::string& selector) {
  WatchSpec s;
  s.storage_key = "/things";
  s.labels = *LabelSelector::Parse(selector);
  s.render = [](const json& o) { return o; };
  s.kind = "Thing";
  s.api_version = "v1";
  s.bookmarks = true;
  return s;
}

TEST(ObjectStore, GlobalCounterAndHistory) {
  ObjectStore store(100);
  uint64_t start = store.current_rv();
  const json& a = store.Create("/things", Obj("a", "red"));
  EXPECT_EQ(a["metadata"]["resourceVersion"], std::to_string(start + 1));
  store.Create("/other", Obj("z", "red"));
  json b = Obj("a", "blue");
  store.Update("/things", b);
  EXPECT_EQ(store.current_rv(), start + 3);
  auto then = store.ListAt("/things", "", start + 1);
  ASSERT_TRUE(then.has_value());
  ASSERT_EQ(then->size(), 1u);
  EXPECT_EQ((*then)[0]["metadata"]["labels"]["color"], "red");
  auto before = store.ListAt("/things", "", start);
  ASSERT_TRUE(before.has_value());
  EXPECT_TRUE(before->empty());
}

TEST(ObjectStore, WatchSelectorTransitionsAndBookmarks) {
  ObjectStore store(100);
  auto far = std::chrono::steady_clock::now() + std::chrono::hours(1);
  auto ch = store.Watch(Spec("color=red"), store.current_rv(), 100, far);
  ASSERT_TRUE(ch);
  store.Create("/things", Obj("a", "blue"));  // not matching: nothing
  store.Update("/things", Obj("a", "red"));   // starts matching: ADDED
  store.Update("/things", Obj("a", "red"));   // MODIFIED
  store.Update("/things", Obj("a", "blue"));  // stops matching: DELETED
  store.SendBookmarks();
  auto events = Drain(*ch);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0]["type"], "ADDED");
  EXPECT_EQ(events[1]["type"], "MODIFIED");
  EXPECT_EQ(events[2]["type"], "DELETED");
  EXPECT_EQ(events[2]["object"]["metadata"]["labels"]["color"], "blue");
  EXPECT_EQ(events[3]["type"], "BOOKMARK");
  EXPECT_EQ(events[3]["object"]["metadata"]["resourceVersion"], std::to_string(store.current_rv()));
}

TEST(ObjectStore, WatchFromOldRvReplaysAndCompactionExpires) {
  ObjectStore store(3);
  uint64_t start = store.current_rv();
  for (int i = 0; i < 5; ++i) store.Create("/things", Obj("o" + std::to_string(i), "red"));
  auto far = std::chrono::steady_clock::now() + std::chrono::hours(1);
  EXPECT_EQ(store.Watch(Spec(""), start, 100, far), nullptr);
  auto ch = store.Watch(Spec(""), store.current_rv() - 2, 100, far);
  ASSERT_TRUE(ch);
  EXPECT_EQ(Drain(*ch).size(), 2u);
  EXPECT_FALSE(store.ListAt("/things", "", start).has_value());
  auto initial = store.Watch(Spec(""), std::nullopt, 100, far);
  EXPECT_EQ(Drain(*initial).size(), 5u);
}

}  // namespace
}  // namespace fairbench::apiserver
