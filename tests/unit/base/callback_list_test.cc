#include "agent/base/callback_list.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace hawk::base {
namespace {

TEST(CallbackListTest, NotifiesEveryCallbackInTheOrderAdded) {
  CallbackList<int, const std::string&> list;
  std::vector<std::string> calls;
  Subscription a =
      list.Add([&](int n, const std::string& s) { calls.push_back("a" + std::to_string(n) + s); });
  Subscription b =
      list.Add([&](int n, const std::string& s) { calls.push_back("b" + std::to_string(n) + s); });
  list.Notify(1, "x");
  EXPECT_EQ(calls, (std::vector<std::string>{"a1x", "b1x"}));
  EXPECT_EQ(list.size(), 2u);
}

TEST(CallbackListTest, DestroyingTheSubscriptionRemovesTheCallback) {
  CallbackList<> list;
  int a = 0, b = 0;
  Subscription keep = list.Add([&] { ++a; });
  {
    Subscription gone = list.Add([&] { ++b; });
    list.Notify();
  }
  list.Notify();
  EXPECT_EQ(a, 2);
  EXPECT_EQ(b, 1);
  EXPECT_EQ(list.size(), 1u);
  keep.Reset();
  keep.Reset();  // idempotent
  EXPECT_FALSE(keep.active());
  EXPECT_TRUE(list.empty());
}

TEST(CallbackListTest, ASubscriptionMayOutliveItsList) {
  Subscription subscription;
  {
    CallbackList<> list;
    subscription = list.Add([] {});
    EXPECT_TRUE(subscription.active());
  }
  EXPECT_FALSE(subscription.active());
  subscription.Reset();  // nothing to remove, nothing touched
}

TEST(CallbackListTest, MovingASubscriptionMovesTheRegistration) {
  CallbackList<> list;
  int calls = 0;
  Subscription first = list.Add([&] { ++calls; });
  Subscription second = std::move(first);
  EXPECT_FALSE(first.active());  // NOLINT(bugprone-use-after-move): moved-from holds nothing
  first.Reset();                 // … and removing through it removes nothing
  list.Notify();
  EXPECT_EQ(calls, 1);
  // Assigning over a live subscription removes the callback it held.
  int other = 0;
  Subscription third = list.Add([&] { ++other; });
  second = std::move(third);
  list.Notify();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(other, 1);
  EXPECT_EQ(list.size(), 1u);
}

TEST(CallbackListTest, ACallbackMayRemoveItselfWhileItRuns) {
  CallbackList<> list;
  int calls = 0;
  std::string captured = "kept alive while it runs";
  Subscription self;
  self = list.Add([&, captured] {
    self.Reset();
    ++calls;
    EXPECT_EQ(captured, "kept alive while it runs");  // the callback was not destroyed yet
  });
  list.Notify();
  list.Notify();
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(list.empty());
}

TEST(CallbackListTest, ACallbackRemovedBeforeItsTurnDoesNotRun) {
  CallbackList<> list;
  std::vector<std::string> calls;
  Subscription later;
  Subscription first = list.Add([&] {
    calls.push_back("first");
    later.Reset();
  });
  later = list.Add([&] { calls.push_back("later"); });
  list.Notify();
  EXPECT_EQ(calls, (std::vector<std::string>{"first"}));
  EXPECT_EQ(list.size(), 1u);
}

TEST(CallbackListTest, CallbacksAddedDuringANotifyRunFromTheNextOne) {
  CallbackList<> list;
  std::vector<Subscription> added;
  int late = 0;
  Subscription adder = list.Add([&] { added.push_back(list.Add([&] { ++late; })); });
  list.Notify();
  EXPECT_EQ(late, 0);
  list.Notify();  // one late callback from the first Notify runs; the second adds another
  EXPECT_EQ(late, 1);
  EXPECT_EQ(list.size(), 3u);
}

TEST(CallbackListTest, NestedNotifyRunsEveryoneAndRemovalWaitsForTheOutermost) {
  CallbackList<int> list;
  std::vector<std::string> calls;
  Subscription b;
  Subscription a = list.Add([&](int depth) {
    calls.push_back("a" + std::to_string(depth));
    if (depth == 0) {
      list.Notify(1);
      b.Reset();  // removed between the nested Notify and b's turn in the outer one
    }
  });
  b = list.Add([&](int depth) { calls.push_back("b" + std::to_string(depth)); });
  list.Notify(0);
  EXPECT_EQ(calls, (std::vector<std::string>{"a0", "a1", "b1"}));
  EXPECT_EQ(list.size(), 1u);
}

TEST(CallbackListTest, ACallbackMayDestroyTheList) {
  auto list = std::make_unique<CallbackList<>>();
  int after = 0;
  Subscription destroyer = list->Add([&] { list.reset(); });
  Subscription next = list->Add([&] { ++after; });
  list->Notify();
  EXPECT_EQ(list, nullptr);
  EXPECT_EQ(after, 0);
  EXPECT_FALSE(next.active());
  // Both subscriptions are destroyed after their list: nothing to remove.
}

// A subscriber holding its handle as a member: whichever of publisher and subscriber goes first,
// nothing dangles (the reason the registrations return handles).
struct Publisher {
  CallbackList<int> changed;
};
struct Subscriber {
  explicit Subscriber(Publisher* publisher)
      : subscription(publisher->changed.Add([this](int n) { total += n; })) {}
  int total = 0;
  Subscription subscription;
};

TEST(CallbackListTest, TeardownDoesNotDependOnDestructionOrder) {
  {
    auto publisher = std::make_unique<Publisher>();
    auto subscriber = std::make_unique<Subscriber>(publisher.get());
    publisher->changed.Notify(2);
    EXPECT_EQ(subscriber->total, 2);
    subscriber.reset();
    publisher->changed.Notify(3);  // would call into the freed subscriber without the handle
    EXPECT_TRUE(publisher->changed.empty());
  }
  {
    auto publisher = std::make_unique<Publisher>();
    auto subscriber = std::make_unique<Subscriber>(publisher.get());
    publisher.reset();
    subscriber.reset();  // its handle outlived the list: removes nothing
  }
}

}  // namespace
}  // namespace hawk::base
