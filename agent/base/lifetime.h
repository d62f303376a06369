#pragma once

// Lifetime: hawk's one way to say "this callback may outlive its owner" (STYLE.md, "Lifetimes,
// subscriptions, invariants"): a weak alive-token, a std::weak_ptr to a tag the owner holds.
//
// An owner that hands a callback to something that may outlive it (a batch in the MasterClient's
// queue, a record waiting in the Journal, a Reconciler waiter, work on the threadpool) holds a
// Lifetime as its last member, so that it is destroyed first and every token expires before any
// other member goes, and wraps such callbacks in Guard(): the wrapped callable does nothing once
// the owner is gone. Code that cannot take a callable (a C callback, a check after running
// user callbacks that may destroy the owner) keeps a token() and asks alive().
//
// Callbacks handed to objects the owner itself owns (its own timers, handles it closes in its
// destructor, a child process it holds) need no guard: they are dropped with the owner.
//
// Threading: created, checked and destroyed on the loop thread. A token may travel through
// another thread (a threadpool request carries one) as long as only the loop thread asks it.

#include <memory>
#include <type_traits>
#include <utility>

namespace hawk::base {

// Whether a Lifetime still exists. Copyable; a default-constructed token is never alive.
class AliveToken {
 public:
  AliveToken() = default;
  bool alive() const { return !tag_.expired(); }

 private:
  friend class Lifetime;
  explicit AliveToken(std::weak_ptr<const void> tag) : tag_(std::move(tag)) {}
  std::weak_ptr<const void> tag_;
};

class Lifetime {
 public:
  Lifetime() = default;
  // Destroying the Lifetime (with its owner) expires every token and disarms every guard.
  ~Lifetime() = default;
  // Neither copied nor moved: tokens name this owner, not a value.
  Lifetime(const Lifetime&) = delete;
  Lifetime& operator=(const Lifetime&) = delete;

  AliveToken token() const { return AliveToken(tag_); }

  // A callable taking the same arguments as `callback` that calls it while this Lifetime exists
  // and does nothing afterwards. `callback` must return void (a guarded call has no result to
  // give once the owner is gone).
  template <typename F>
  auto Guard(F callback) const {
    return [token = token(), callback = std::move(callback)](auto&&... args) mutable {
      static_assert(std::is_void_v<decltype(callback(std::forward<decltype(args)>(args)...))>,
                    "Lifetime::Guard: the callback must return void");
      if (!token.alive()) return;
      callback(std::forward<decltype(args)>(args)...);
    };
  }

 private:
  struct Tag {};
  std::shared_ptr<const Tag> tag_ = std::make_shared<const Tag>();
};

}  // namespace hawk::base
