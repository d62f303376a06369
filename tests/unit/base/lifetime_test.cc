#include "agent/base/lifetime.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace hawk::base {
namespace {

// An owner as hawk's classes hold one: the Lifetime last, callbacks guarded by it.
struct Owner {
  std::vector<std::string> seen;
  Lifetime lifetime;
};

TEST(LifetimeTest, AGuardCallsThroughWhileTheOwnerLives) {
  Owner owner;
  std::function<void(std::string)> callback =
      owner.lifetime.Guard([&owner](std::string text) { owner.seen.push_back(std::move(text)); });
  callback("one");
  callback("two");
  EXPECT_EQ(owner.seen, (std::vector<std::string>{"one", "two"}));
}

TEST(LifetimeTest, AGuardDoesNothingOnceTheOwnerIsGone) {
  int calls = 0;
  std::function<void()> callback;
  {
    auto owner = std::make_unique<Owner>();
    callback = owner->lifetime.Guard([&calls, raw = owner.get()] {
      raw->seen.push_back("touched");  // would be a use after free once the owner is gone
      ++calls;
    });
    callback();
  }
  callback();
  callback();
  EXPECT_EQ(calls, 1);
}

TEST(LifetimeTest, TokensExpireWithTheLifetime) {
  AliveToken token;
  EXPECT_FALSE(token.alive());  // default: never alive
  {
    Lifetime lifetime;
    token = lifetime.token();
    AliveToken copy = token;
    EXPECT_TRUE(token.alive());
    EXPECT_TRUE(copy.alive());
  }
  EXPECT_FALSE(token.alive());
}

TEST(LifetimeTest, AGuardForwardsArgumentsAndKeepsMutableState) {
  Lifetime lifetime;
  std::vector<int> got;
  auto moved_in = std::make_unique<int>(7);
  // Move-only arguments pass through; a mutable callback keeps its own state between calls.
  auto guarded = lifetime.Guard(
      [&got, n = 0](std::unique_ptr<int> value) mutable { got.push_back(*value + n++); });
  guarded(std::move(moved_in));
  guarded(std::make_unique<int>(10));
  EXPECT_EQ(got, (std::vector<int>{7, 11}));
}

TEST(LifetimeTest, TheOwnerMayDestroyItselfFromAGuardedCallback) {
  auto owner = std::make_unique<Owner>();
  AliveToken token = owner->lifetime.token();
  std::function<void()> callback = owner->lifetime.Guard([&owner] { owner.reset(); });
  callback();
  EXPECT_FALSE(token.alive());
  callback();  // nothing left to touch: a no-op
  EXPECT_EQ(owner, nullptr);
}

}  // namespace
}  // namespace hawk::base
