#include "agent/auth/bearer_token.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "tests/support/temp_dir.h"

namespace hawk::auth {
namespace {

using hawk::testing::TempDir;
using hawk::testing::WriteFile;

TEST(ConstantTimeEqualsTest, ComparesWholeStrings) {
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_TRUE(ConstantTimeEquals("s3cret", "s3cret"));
  EXPECT_FALSE(ConstantTimeEquals("s3cret", "s3cres"));
  EXPECT_FALSE(ConstantTimeEquals("s3cret", "s3cret2"));
  EXPECT_FALSE(ConstantTimeEquals("s3cret", ""));
  EXPECT_FALSE(ConstantTimeEquals("", "x"));
  // A string padded with the byte the loop pads the shorter one with is still different.
  EXPECT_FALSE(ConstantTimeEquals(std::string("ab\0", 3), "ab"));
}

TEST(BearerTokenOfTest, ReadsTheSchemeInAnyCase) {
  EXPECT_EQ(BearerTokenOf("Bearer abc"), "abc");
  EXPECT_EQ(BearerTokenOf("bearer   abc"), "abc");
  EXPECT_EQ(BearerTokenOf("BEARER abc.def-_~+/="), "abc.def-_~+/=");
  EXPECT_EQ(BearerTokenOf("Bearer "), absl::nullopt);
  EXPECT_EQ(BearerTokenOf("Bearer"), absl::nullopt);
  EXPECT_EQ(BearerTokenOf("Basic YWxhZGRpbjpvcGVuc2VzYW1l"), absl::nullopt);
  EXPECT_EQ(BearerTokenOf("Bearerabc"), absl::nullopt);
}

TEST(ParseTokenFileTest, DropsSurroundingWhitespaceAndRefusesWhatIsNoToken) {
  EXPECT_EQ(*ParseTokenFile("tok-1\n", "/t"), "tok-1");
  EXPECT_EQ(*ParseTokenFile("  tok-1 \r\n", "/t"), "tok-1");
  for (const char* bad : {"", "\n", "two words", "line\nbreak", "tab\there", "caf\xc3\xa9"}) {
    absl::StatusOr<std::string> token = ParseTokenFile(bad, "/run/secrets/token");
    ASSERT_FALSE(token.ok()) << bad;
    EXPECT_NE(token.status().message().find("--token-file /run/secrets/token: "), std::string::npos)
        << token.status();
  }
  EXPECT_FALSE(ParseTokenFile(std::string(4097, 'a'), "/t").ok());
  EXPECT_TRUE(ParseTokenFile(std::string(4096, 'a'), "/t").ok());
}

TEST(TokenFileTest, AMissingOrEmptyFileIsAnErrorAtStart) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<TokenFile>> missing = TokenFile::Open(dir.File("token"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(dir.File("token")), std::string::npos);
  ASSERT_TRUE(WriteFile(dir.File("token"), "\n"));
  absl::StatusOr<std::unique_ptr<TokenFile>> empty = TokenFile::Open(dir.File("token"));
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("empty"), std::string::npos);
}

TEST(TokenFileTest, AllowsOnlyTheTokenOfTheFile) {
  TempDir dir;
  ASSERT_TRUE(WriteFile(dir.File("token"), "tok-1\n"));
  absl::StatusOr<std::unique_ptr<TokenFile>> file = TokenFile::Open(dir.File("token"));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_TRUE((*file)->Allows("Bearer tok-1"));
  EXPECT_FALSE((*file)->Allows("Bearer tok-2"));
  EXPECT_FALSE((*file)->Allows("Bearer tok-1x"));
  EXPECT_FALSE((*file)->Allows("tok-1"));
  EXPECT_FALSE((*file)->Allows(absl::nullopt));
}

// The kubelet mounts a Secret as `token -> ..data/token` with `..data -> ..<timestamp>`, and
// rotates it by pointing `..data` at a new directory: the same path, another file.
TEST(TokenFileTest, ARotatedSecretTakesEffectWithTheNextRequest) {
  TempDir dir;
  ASSERT_EQ(::mkdir(dir.File("..2026_1").c_str(), 0700), 0);
  ASSERT_TRUE(WriteFile(dir.File("..2026_1/token"), "tok-1"));
  ASSERT_EQ(::symlink("..2026_1", dir.File("..data").c_str()), 0);
  ASSERT_EQ(::symlink("..data/token", dir.File("token").c_str()), 0);
  absl::StatusOr<std::unique_ptr<TokenFile>> file = TokenFile::Open(dir.File("token"));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_TRUE((*file)->Allows("Bearer tok-1"));

  ASSERT_EQ(::mkdir(dir.File("..2026_2").c_str(), 0700), 0);
  ASSERT_TRUE(WriteFile(dir.File("..2026_2/token"), "tok-2"));
  ASSERT_EQ(::symlink("..2026_2", dir.File("..data_tmp").c_str()), 0);
  ASSERT_EQ(std::rename(dir.File("..data_tmp").c_str(), dir.File("..data").c_str()), 0);
  EXPECT_FALSE((*file)->Allows("Bearer tok-1"));
  EXPECT_TRUE((*file)->Allows("Bearer tok-2"));
}

TEST(TokenFileTest, AnUnusableRotationKeepsTheTokenInForce) {
  TempDir dir;
  ASSERT_TRUE(WriteFile(dir.File("token"), "tok-1"));
  absl::StatusOr<std::unique_ptr<TokenFile>> file = TokenFile::Open(dir.File("token"));
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE(WriteFile(dir.File("token"), "   \n"));
  EXPECT_TRUE((*file)->Allows("Bearer tok-1"));
  EXPECT_FALSE((*file)->Allows("Bearer "));
  ASSERT_EQ(::unlink(dir.File("token").c_str()), 0);
  EXPECT_TRUE((*file)->Allows("Bearer tok-1"));
  ASSERT_TRUE(WriteFile(dir.File("token"), "tok-3"));
  EXPECT_TRUE((*file)->Allows("Bearer tok-3"));
  EXPECT_FALSE((*file)->Allows("Bearer tok-1"));
}

}  // namespace
}  // namespace hawk::auth
