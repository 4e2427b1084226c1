#include "testing/apiserver/token_auth_file.h"

#include <gtest/gtest.h>

namespace fairbench::apiserver {
namespace {

// Catches: kube-apiserver's token file read differently here (quoted
// groups, a missing uid), so that a file one can pass to a real server
// gives other identities in tests.
TEST(TokenAuthFile, ReadsKubeApiserverFormat) {
  auto users = ParseTokenAuthFile(
      "t1,admin,1,\"system:masters\"\n"
      "t2,system:serviceaccount:fb:ctl,2,\"system:serviceaccounts,system:serviceaccounts:fb\"\r\n"
      "\n"
      "t3,plain,3\n");
  ASSERT_TRUE(users.ok()) << users.status().ToString();
  ASSERT_EQ(users->size(), 3u);
  EXPECT_EQ((*users)[0].token, "t1");
  EXPECT_EQ((*users)[0].groups, std::vector<std::string>{"system:masters"});
  EXPECT_EQ((*users)[1].name, "system:serviceaccount:fb:ctl");
  EXPECT_EQ((*users)[1].groups, (std::vector<std::string>{"system:serviceaccounts", "system:serviceaccounts:fb"}));
  EXPECT_EQ((*users)[2].uid, "3");
  EXPECT_TRUE((*users)[2].groups.empty());
}

TEST(TokenAuthFile, RefusesShortLines) {
  auto users = ParseTokenAuthFile("t1,admin,1\nt2,bob\n");
  ASSERT_FALSE(users.ok());
  EXPECT_NE(users.status().message().find("line 2"), std::string::npos) << users.status().message();
  EXPECT_FALSE(ParseTokenAuthFile(",admin,1\n").ok());
  EXPECT_FALSE(ParseTokenAuthFile("t,admin,1,\"open\n").ok());
}

}  // namespace
}  // namespace fairbench::apiserver
