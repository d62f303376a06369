#include "agent/cli/framer.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hawk::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::SizeIs;

std::string ReadFixture(const std::string& relative) {
  std::ifstream in(std::string(HAWK_FIXTURES_DIR) + "/" + relative, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> Texts(const std::vector<FramedReply>& replies) {
  std::vector<std::string> out;
  for (const FramedReply& r : replies) out.push_back(r.text);
  return out;
}

// Feeds `stream` in chunks of `chunk` bytes (0 = all at once).
std::vector<std::string> FrameAll(PromptFramer& framer, const std::string& stream,
                                  size_t chunk = 0) {
  std::vector<FramedReply> replies;
  if (chunk == 0) chunk = stream.size() + 1;
  for (size_t i = 0; i < stream.size(); i += chunk) {
    absl::Status status = framer.Feed(absl::string_view(stream).substr(i, chunk), &replies);
    EXPECT_TRUE(status.ok()) << status;
  }
  return Texts(replies);
}

TEST(MatchPromptTest, RecognisesEveryPromptShape) {
  EXPECT_EQ(MatchPrompt("master> "), 8u);
  EXPECT_EQ(MatchPrompt("master[ReloadFailed]> "), 22u);
  EXPECT_EQ(MatchPrompt("master(xe)> rest"), 12u);
  EXPECT_EQ(MatchPrompt("master[ReloadFailed](d)> "), 25u);
  EXPECT_EQ(MatchPrompt("mast"), absl::string_view::npos);
  EXPECT_EQ(MatchPrompt("master[Rel"), absl::string_view::npos);
  EXPECT_EQ(MatchPrompt("master>"), absl::string_view::npos);
  EXPECT_EQ(MatchPrompt("masters> "), 0u);
  EXPECT_EQ(MatchPrompt("master[a b]> "), 0u);
  EXPECT_EQ(MatchPrompt("Name: HAProxy"), 0u);
  EXPECT_EQ(MatchPrompt(""), absl::string_view::npos);
}

// The bytes HAProxy sent in prompt mode, recorded: `prompt`, `@1 get weight …`, `show version`,
// then an unknown command (2.6) or an empty line (3.x).
TEST(PromptFramerTest, RecordedPromptSessions) {
  for (const char* version : {"haproxy-2.6", "haproxy-3.0", "haproxy-3.4"}) {
    SCOPED_TRACE(version);
    std::string stream = ReadFixture(std::string(version) + "/prompt_mode_session.txt");
    ASSERT_FALSE(stream.empty());
    for (size_t chunk : {size_t{0}, size_t{1}, size_t{7}}) {
      PromptFramer framer;
      for (int i = 0; i < 4; ++i) framer.Expect(0);
      std::vector<std::string> texts = FrameAll(framer, stream, chunk);
      ASSERT_THAT(texts, SizeIs(4));
      EXPECT_EQ(texts[0], "");  // the answer to `prompt` is a bare prompt
      EXPECT_EQ(texts[1], "20 (initial 50)\n\n");
      EXPECT_THAT(texts[2], ::testing::StartsWith(std::string(version).substr(8)));
      EXPECT_EQ(framer.expected(), 0u);
    }
  }
}

TEST(PromptFramerTest, ReloadFailedPromptFramesLikeTheNormalOne) {
  for (const char* version : {"haproxy-2.6", "haproxy-3.0", "haproxy-3.4"}) {
    SCOPED_TRACE(version);
    std::string stream = ReadFixture(std::string(version) + "/prompt_after_failed_reload.txt");
    const std::string prompt = "master[ReloadFailed]> ";
    size_t prompts = 0;
    for (size_t at = stream.find(prompt); at != std::string::npos;
         at = stream.find(prompt, at + 1)) {
      ++prompts;
    }
    ASSERT_GE(prompts, 2u);
    PromptFramer framer;
    for (size_t i = 0; i < prompts; ++i) framer.Expect(0);
    std::vector<std::string> texts = FrameAll(framer, stream, 3);
    ASSERT_THAT(texts, SizeIs(prompts));
    EXPECT_EQ(texts[0], "");
    EXPECT_THAT(texts[1], ::testing::EndsWith("\n\n"));
    EXPECT_EQ(framer.expected(), 0u);
  }
}

// Every recorded reply, wrapped the way the master sends it in prompt mode, comes back intact.
TEST(PromptFramerTest, EveryRecordedReplyRoundTrips) {
  int checked = 0;
  for (const char* version : {"haproxy-2.6", "haproxy-3.0", "haproxy-3.4"}) {
    std::string dir = std::string(HAWK_FIXTURES_DIR) + "/" + version;
    ASSERT_TRUE(std::filesystem::exists(dir)) << dir;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      std::string name = entry.path().filename().string();
      if (name.rfind("prompt_", 0) == 0 || name == "VERSION") continue;
      SCOPED_TRACE(std::string(version) + "/" + name);
      std::string reply = ReadFixture(std::string(version) + "/" + name);
      // The master CLI in prompt mode: a prompt after `prompt`, then reply + prompt.
      std::string stream = "master> " + reply + "master> ";
      if (!reply.empty() && reply.back() != '\n') stream = "master> " + reply + "\nmaster> ";
      PromptFramer framer;
      framer.Expect(0);
      framer.Expect(0);
      std::vector<std::string> texts = FrameAll(framer, stream, 5);
      ASSERT_THAT(texts, SizeIs(2));
      EXPECT_EQ(texts[1], stream.substr(8, stream.size() - 16));
      ++checked;
    }
  }
  EXPECT_GT(checked, 60);
}

TEST(PromptFramerTest, PipelinedRepliesInOneRead) {
  PromptFramer framer;
  for (int i = 0; i < 3; ++i) framer.Expect(0);
  std::vector<std::string> texts =
      FrameAll(framer, "\nmaster> 20 (initial 50)\n\nmaster> No such server.\n\nmaster> ");
  EXPECT_THAT(texts, ElementsAre("\n", "20 (initial 50)\n\n", "No such server.\n\n"));
}

// 2.6 prints some messages without their LF: no blank line follows, the prompt still does.
TEST(PromptFramerTest, MessageWithoutBlankLine) {
  PromptFramer framer;
  framer.Expect(0);
  framer.Expect(0);
  std::vector<std::string> texts =
      FrameAll(framer, "Trailing garbage in weight string\nmaster> 1 (initial 1)\n\nmaster> ");
  EXPECT_THAT(texts, ElementsAre("Trailing garbage in weight string\n", "1 (initial 1)\n\n"));
}

// Recorded on 2.6: `add map @1 /x <<`, one payload line, the empty terminator.
TEST(PromptFramerTest, PayloadPromptsAreStripped) {
  PromptFramer framer;
  framer.Expect(1);
  std::vector<std::string> texts =
      FrameAll(framer, "+ + Unknown map identifier. Please use #<id> or <file>.\n\nmaster> ", 2);
  EXPECT_THAT(texts, ElementsAre("Unknown map identifier. Please use #<id> or <file>.\n\n"));
}

TEST(PromptFramerTest, MasterErrorFollowedByPromptOn3x) {
  PromptFramer framer;
  framer.Expect(0);
  std::vector<std::string> texts =
      FrameAll(framer, "Can't find the target PID matching the prefix '@!999999'\nmaster> ");
  EXPECT_THAT(texts, ElementsAre("Can't find the target PID matching the prefix '@!999999'\n"));
}

// 2.6 closes the connection after a master error: EOF ends the reply.
TEST(PromptFramerTest, EofEndsTheReplyInProgress) {
  PromptFramer framer;
  framer.Expect(0);
  framer.Expect(0);
  std::vector<FramedReply> replies;
  ASSERT_TRUE(framer.Feed("Can't find the target PID matching the prefix '@!9'\n", &replies).ok());
  EXPECT_TRUE(replies.empty());
  absl::optional<FramedReply> last = framer.FinishAtEof();
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->text, "Can't find the target PID matching the prefix '@!9'\n");
  EXPECT_EQ(framer.expected(), 1u);  // the second command never got a reply
}

TEST(PromptFramerTest, PromptTextInsideALineIsData) {
  PromptFramer framer;
  framer.Expect(0);
  std::vector<std::string> texts = FrameAll(framer, "0x55 key master> value\n\nmaster> ", 1);
  EXPECT_THAT(texts, ElementsAre("0x55 key master> value\n\n"));
}

// Found by tests/fuzz/framer_fuzz: a data line starting like a decorated prompt (`master[`)
// made the framer wait for the rest of that "prompt" past the end of the line, so it missed the
// real prompt on the next line when both arrived in one read, and found it when they came apart.
TEST(PromptFramerTest, UnfinishedDecorationAtALineEndIsData) {
  EXPECT_EQ(MatchPrompt("master[\nmaster> "), 0u);
  EXPECT_EQ(MatchPrompt("master(x\n"), 0u);
  for (size_t chunk : {size_t{0}, size_t{1}, size_t{5}}) {
    PromptFramer framer;
    framer.Expect(0);
    std::vector<std::string> texts = FrameAll(framer, "master[\nmaster(d\nmaster> ", chunk);
    EXPECT_THAT(texts, ElementsAre("master[\nmaster(d\n")) << "chunk " << chunk;
  }
}

TEST(PromptFramerTest, BytesNobodyAskedForAreAnError) {
  PromptFramer framer;
  std::vector<FramedReply> replies;
  EXPECT_FALSE(framer.Feed("surprise", &replies).ok());

  PromptFramer second;
  second.Expect(0);
  EXPECT_FALSE(second.Feed("\nmaster> extra", &replies).ok());
}

TEST(PromptFramerTest, OversizedReplyIsAnError) {
  PromptFramer framer(/*max_reply_bytes=*/64);
  framer.Expect(0);
  std::vector<FramedReply> replies;
  absl::Status status = framer.Feed(std::string(100, 'x') + "\n", &replies);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
}

TEST(PromptFramerTest, LargeReplyFedInSmallPiecesStaysLinear) {
  std::string body;
  for (int i = 0; i < 20000; ++i) body += "0x55d0c0de key" + std::to_string(i) + " value\n";
  body += "\n";
  PromptFramer framer;
  framer.Expect(0);
  std::vector<std::string> texts = FrameAll(framer, body + "master> ", 1000);
  ASSERT_THAT(texts, SizeIs(1));
  EXPECT_EQ(texts[0], body);
}

}  // namespace
}  // namespace hawk::cli
