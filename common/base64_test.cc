#include "common/base64.h"

#include <gtest/gtest.h>

namespace fairbench {
namespace {

TEST(Base64Test, Rfc4648Vectors) {
  const std::pair<const char*, const char*> vectors[] = {{"", ""},
                                                         {"f", "Zg=="},
                                                         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},
                                                         {"foob", "Zm9vYg=="},
                                                         {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(Base64Encode(plain), encoded);
    auto d = Base64Decode(encoded);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(*d, plain);
  }
}

TEST(Base64Test, BinaryRoundTripAndErrors) {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  EXPECT_EQ(*Base64Decode(Base64Encode(all)), all);
  EXPECT_FALSE(Base64Decode("abc").ok());
  EXPECT_FALSE(Base64Decode("ab$=").ok());
  EXPECT_FALSE(Base64Decode("a=bc").ok());
}

}  // namespace
}  // namespace fairbench
