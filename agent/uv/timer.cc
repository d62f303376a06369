#include "agent/uv/timer.h"

#include <algorithm>
#include <utility>

#include "agent/uv/handle.h"

namespace hawk::uv {
namespace {

uint64_t CeilMs(absl::Duration d) {
  if (d <= absl::ZeroDuration()) return 0;
  return static_cast<uint64_t>(absl::ToInt64Milliseconds(absl::Ceil(d, absl::Milliseconds(1))));
}

}  // namespace

Timer::Timer(uv_loop_t* loop) : handle_(new uv_timer_t) {
  uv_timer_init(loop, handle_);
  handle_->data = this;
}

Timer::~Timer() { CloseAndFree(handle_); }

void Timer::Arm(uint64_t timeout_ms, uint64_t repeat_ms, std::function<void()> callback) {
  callback_ = std::move(callback);
  uv_timer_start(handle_, &Timer::OnTimer, timeout_ms, repeat_ms);
}

void Timer::Start(absl::Duration timeout, std::function<void()> callback) {
  Arm(CeilMs(timeout), 0, std::move(callback));
}

void Timer::StartRepeating(absl::Duration first, absl::Duration every,
                           std::function<void()> callback) {
  Arm(CeilMs(first), std::max<uint64_t>(CeilMs(every), 1), std::move(callback));
}

void Timer::Stop() {
  uv_timer_stop(handle_);
  callback_ = nullptr;
}

bool Timer::active() const {
  return uv_is_active(reinterpret_cast<const uv_handle_t*>(handle_)) != 0;
}

void Timer::OnTimer(uv_timer_t* handle) {
  auto* self = static_cast<Timer*>(handle->data);
  if (self == nullptr || !self->callback_) return;
  // A one-shot callback may re-arm the timer or destroy its owner: run a copy.
  std::function<void()> callback = self->callback_;
  callback();
}

}  // namespace hawk::uv
