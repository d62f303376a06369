#include "agent/store/crc32c.h"

#include <string>

#include "gtest/gtest.h"

namespace hawk::store {
namespace {

// Check values from RFC 3720 (iSCSI), appendix B.4, and the common "123456789" check.
TEST(Crc32cTest, KnownVectors) {
  EXPECT_EQ(Crc32c(""), 0u);
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(std::string(32, '\xFF')), 0x62A8AB43u);
  std::string ascending;
  std::string descending;
  for (int i = 0; i < 32; ++i) {
    ascending.push_back(static_cast<char>(i));
    descending.push_back(static_cast<char>(31 - i));
  }
  EXPECT_EQ(Crc32c(ascending), 0x46DD794Eu);
  EXPECT_EQ(Crc32c(descending), 0x113FDB5Cu);
}

// The 8-byte fast path and the byte tail must agree at every split and alignment.
TEST(Crc32cTest, ExtendMatchesOneShotAtEverySplit) {
  std::string data;
  for (int i = 0; i < 300; ++i) data.push_back(static_cast<char>((i * 131 + 7) & 0xFF));
  uint32_t whole = Crc32c(data);
  for (size_t split = 0; split <= data.size(); ++split) {
    absl::string_view view(data);
    EXPECT_EQ(Crc32cExtend(Crc32c(view.substr(0, split)), view.substr(split)), whole) << split;
  }
  // Byte-at-a-time equals the slicing path.
  uint32_t crc = 0;
  for (char c : data) crc = Crc32cExtend(crc, absl::string_view(&c, 1));
  EXPECT_EQ(crc, whole);
}

TEST(Crc32cTest, DetectsSingleBitFlips) {
  std::string data(64, 'x');
  uint32_t good = Crc32c(data);
  for (size_t bit = 0; bit < data.size() * 8; ++bit) {
    std::string flipped = data;
    flipped[bit / 8] = static_cast<char>(flipped[bit / 8] ^ (1 << (bit % 8)));
    EXPECT_NE(Crc32c(flipped), good) << bit;
  }
}

}  // namespace
}  // namespace hawk::store
