// The pure parts of ConfigMapRunStore: gzip both ways and SHA-256.
#include <gtest/gtest.h>

#include <random>

#include "controller/store/configmap_run_store.h"

namespace fairbench::controller {
namespace {

// Catches: gzip output that is not a gzip stream (wrong window bits) or a
// round trip that alters bytes.
TEST(Gzip, RoundTripsAndWritesTheGzipMagic) {
  std::mt19937_64 rng(3);
  std::string text;
  for (int i = 0; i < 200000; ++i) text += static_cast<char>('a' + rng() % 7);
  auto gz = Gzip(text);
  ASSERT_TRUE(gz.ok());
  ASSERT_GE(gz->size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>((*gz)[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>((*gz)[1]), 0x8b);
  auto back = Gunzip(*gz, text.size());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, text);
  auto empty = Gzip("");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(Gunzip(*empty, 0).value(), "");
}

// Catches: a truncated stream, trailing bytes or an oversized output
// accepted (a torn record would load partly).
TEST(Gzip, RefusesTruncatedTrailingAndOversized) {
  auto gz = Gzip(std::string(100000, 'x'));
  ASSERT_TRUE(gz.ok());
  EXPECT_FALSE(Gunzip(gz->substr(0, gz->size() / 2), 100000).ok());
  EXPECT_FALSE(Gunzip(*gz + "junk", 100000).ok());
  auto big = Gunzip(*gz, 99999);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("more than"), std::string::npos);
  EXPECT_FALSE(Gunzip("not gzip at all", 100).ok());
}

// Catches: a digest that is not SHA-256 in lower-case hex.
TEST(Sha256Hex, MatchesKnownDigests) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

}  // namespace
}  // namespace fairbench::controller
