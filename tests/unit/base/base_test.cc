#include <string>
#include <vector>

#include "agent/base/address.h"
#include "agent/base/json_writer.h"
#include "gtest/gtest.h"

namespace hawk::base {
namespace {

TEST(AddressTest, ParsesEveryForm) {
  EXPECT_EQ(ParseAddress("/run/h.sock", "--x")->path, "/run/h.sock");
  EXPECT_EQ(ParseAddress("unix:/run/h.sock", "--x")->path, "/run/h.sock");
  absl::StatusOr<Address> tcp = ParseAddress("tcp:127.0.0.1:9000", "--x");
  ASSERT_TRUE(tcp.ok());
  EXPECT_EQ(tcp->kind, Address::Kind::kTcp);
  EXPECT_EQ(tcp->host, "127.0.0.1");
  EXPECT_EQ(tcp->port, 9000);
  EXPECT_EQ(tcp->ToString(), "tcp:127.0.0.1:9000");
  absl::StatusOr<Address> v6 = ParseAddress("tcp:[::1]:81", "--x");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->ToString(), "tcp:[::1]:81");
}

TEST(AddressTest, ErrorsNameTheFlagAndTheReason) {
  for (const char* bad : {"tcp:127.0.0.1", "tcp:127.0.0.1:0", "tcp:127.0.0.1:70000",
                          "tcp:localhost:80", "tcp:[::1:80", "unix:", ""}) {
    absl::StatusOr<Address> a = ParseAddress(bad, "--listen");
    ASSERT_FALSE(a.ok()) << bad;
    EXPECT_NE(a.status().message().find("--listen"), absl::string_view::npos) << bad;
  }
  EXPECT_FALSE(ParseAddress("/" + std::string(200, 'a'), "--listen").ok());
}

TEST(AddressTest, TellsLoopbackAddressesFromTheRest) {
  for (const char* local : {"unix:/run/h.sock", "tcp:127.0.0.1:80", "tcp:127.8.9.1:80",
                            "tcp:[::1]:80", "tcp:[::ffff:127.0.0.1]:80"}) {
    EXPECT_TRUE(IsLoopback(*ParseAddress(local, "--x"))) << local;
  }
  for (const char* remote : {"tcp:0.0.0.0:80", "tcp:10.0.0.1:80", "tcp:128.0.0.1:80", "tcp:[::]:80",
                             "tcp:[fe80::1]:80", "tcp:[::ffff:10.0.0.1]:80"}) {
    EXPECT_FALSE(IsLoopback(*ParseAddress(remote, "--x"))) << remote;
  }
}

TEST(JsonWriterTest, WritesNestedValuesWithCommas) {
  JsonWriter w;
  w.BeginObject();
  w.Key("a").Int(-1);
  w.Key("b").BeginArray().Uint(2).Bool(true).Null().String("x").EndArray();
  w.Key("c").BeginObject().EndObject();
  w.Key("d").Double(0.5);
  w.EndObject();
  EXPECT_EQ(w.str(), R"({"a":-1,"b":[2,true,null,"x"],"c":{},"d":0.5})");
}

TEST(JsonWriterTest, EscapesAndRepairsStrings) {
  std::string out;
  AppendJsonString(&out, std::string("q\"b\\n\n\t\x01\x7f", 9));
  // DEL (0x7F) needs no escape in JSON (RFC 8259 escapes only '"', '\\' and U+0000..U+001F):
  // written as itself it costs one byte, as in the request, not six.
  EXPECT_EQ(out, "\"q\\\"b\\\\n\\n\\t\\u0001\x7f\"");
  out.clear();
  AppendJsonStringForDisplay(&out, std::string("a\x7f\x01", 3));  // for people: DEL shows
  EXPECT_EQ(out, R"("a\u007f\u0001")");
  out.clear();
  AppendJsonString(&out, "caf\xC3\xA9 \xFF\xC3");  // é, then invalid bytes
  EXPECT_EQ(out, "\"caf\xC3\xA9 \xEF\xBF\xBD\xEF\xBF\xBD\"");
}

// JsonStringSize is what AppendJsonString appends, for every byte value and invalid UTF-8.
TEST(JsonWriterTest, JsonStringSizeIsTheWrittenSize) {
  std::vector<std::string> values = {"",
                                     "plain",
                                     "caf\xC3\xA9",
                                     "\xFF\xC3",
                                     "\xF0\x9F\x98\x80",
                                     "\xED\xA0\x80",
                                     std::string(1000, '\x7f')};
  std::string every;
  for (int c = 0; c < 256; ++c) every.push_back(static_cast<char>(c));
  values.push_back(every);
  for (int c = 0; c < 256; ++c) values.push_back(std::string(3, static_cast<char>(c)));
  for (const std::string& value : values) {
    std::string out;
    AppendJsonString(&out, value);
    EXPECT_EQ(JsonStringSize(value), out.size()) << out;
  }
}

}  // namespace
}  // namespace hawk::base
