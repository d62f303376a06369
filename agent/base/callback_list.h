#pragma once

// CallbackList and Subscription: a registration returns a handle whose destruction removes the
// callback (Envoy's CallbackHandle: "Destruction of the handle removes the callback"), so that
// teardown does not depend on the order in which a publisher and its subscribers are destroyed.
//
// A publisher holds a CallbackList<Args...> and returns Add()'s Subscription from its
// registration method; the subscriber keeps that handle as a member. Either side may go first:
// a Subscription whose list is gone removes nothing, and a list never calls a callback whose
// Subscription is gone.
//
// During Notify() a callback may:
//   - remove itself or any other callback: one removed before its turn does not run;
//   - add callbacks: they run from the next Notify() on;
//   - call Notify() again (nested): the outer one then goes on where it was;
//   - destroy the list: the Notify() in progress calls no one else.
// A callback is never destroyed while it runs: removal during a Notify() only marks it, and the
// outermost Notify() drops what was marked when it ends.
//
// Threading: one thread (the loop's).

#include <algorithm>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <utility>
#include <vector>

namespace hawk::base {

namespace callback_list_internal {
// What a Subscription sees of its list, whatever the list's arguments.
class Registry {
 public:
  virtual ~Registry() = default;
  virtual void Remove(uint64_t id) = 0;
};
}  // namespace callback_list_internal

// Move-only. Destroying it (or Reset()) removes the callback; a default-constructed or
// moved-from Subscription holds nothing.
class [[nodiscard]] Subscription {
 public:
  Subscription() = default;
  Subscription(Subscription&& other) noexcept
      : list_(std::move(other.list_)), id_(std::exchange(other.id_, 0)) {}
  Subscription& operator=(Subscription&& other) noexcept {
    if (this != &other) {
      Reset();
      list_ = std::move(other.list_);
      id_ = std::exchange(other.id_, 0);
    }
    return *this;
  }
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;
  ~Subscription() { Reset(); }

  // Removes the callback now. Idempotent; a no-op once the list is gone.
  void Reset() {
    if (std::shared_ptr<callback_list_internal::Registry> list = list_.lock()) list->Remove(id_);
    list_.reset();
    id_ = 0;
  }
  // The callback is registered: neither removed nor outlived by its list.
  bool active() const { return !list_.expired(); }

 private:
  template <typename... Args>
  friend class CallbackList;
  Subscription(std::weak_ptr<callback_list_internal::Registry> list, uint64_t id)
      : list_(std::move(list)), id_(id) {}

  std::weak_ptr<callback_list_internal::Registry> list_;
  uint64_t id_ = 0;
};

template <typename... Args>
class CallbackList {
 public:
  using Callback = std::function<void(Args...)>;

  CallbackList() = default;
  CallbackList(const CallbackList&) = delete;
  CallbackList& operator=(const CallbackList&) = delete;
  // A Notify() in progress (a callback destroyed the list) stops calling; subscriptions expire.
  ~CallbackList() { core_->dead = true; }

  Subscription Add(Callback callback) {
    uint64_t id = core_->next_id++;
    core_->entries.push_back(std::make_unique<Entry>(Entry{id, std::move(callback), false}));
    return Subscription(core_, id);
  }

  // Calls every callback registered when it starts, in the order they were added.
  void Notify(Args... args) {
    std::shared_ptr<Core> core = core_;  // outlives the list, should a callback destroy it
    size_t count = core->entries.size();
    ++core->depth;
    for (size_t i = 0; i < count && !core->dead; ++i) {
      Entry& entry = *core->entries[i];
      if (!entry.removed) entry.callback(args...);
    }
    if (--core->depth == 0) core->DropRemoved();
  }

  size_t size() const {
    return static_cast<size_t>(std::count_if(core_->entries.begin(), core_->entries.end(),
                                             [](const auto& e) { return !e->removed; }));
  }
  bool empty() const { return size() == 0; }

 private:
  struct Entry {
    uint64_t id;
    Callback callback;
    bool removed;
  };
  struct Core final : callback_list_internal::Registry {
    void Remove(uint64_t id) override {
      auto it =
          std::find_if(entries.begin(), entries.end(), [id](const auto& e) { return e->id == id; });
      if (it == entries.end()) return;
      if (depth > 0) {
        (*it)->removed = true;  // it may be running: dropped when the outermost Notify() ends
        return;
      }
      // Destroyed after the erase: a callback's captures may remove others from this list.
      std::unique_ptr<Entry> gone = std::move(*it);
      entries.erase(it);
    }
    void DropRemoved() {
      std::vector<std::unique_ptr<Entry>> gone;
      auto kept = std::stable_partition(entries.begin(), entries.end(),
                                        [](const auto& e) { return !e->removed; });
      std::move(kept, entries.end(), std::back_inserter(gone));
      entries.erase(kept, entries.end());
    }

    // unique_ptr: an Add() during Notify() may grow the vector, never move a running callback.
    std::vector<std::unique_ptr<Entry>> entries;  // in the order added; ids ascending
    uint64_t next_id = 1;
    int depth = 0;      // Notify() calls in progress
    bool dead = false;  // the CallbackList is gone
  };

  std::shared_ptr<Core> core_ = std::make_shared<Core>();
};

}  // namespace hawk::base
