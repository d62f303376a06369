#include "agent/uv/signal.h"

#include "agent/uv/handle.h"

namespace hawk::uv {

Signal::Signal(uv_loop_t* loop) : handle_(new uv_signal_t) {
  uv_signal_init(loop, handle_);
  handle_->data = this;
}

Signal::~Signal() { CloseAndFree(handle_); }

void Signal::Start(int signum, std::function<void(int)> callback) {
  callback_ = std::move(callback);
  uv_signal_start(handle_, &Signal::OnSignal, signum);
}

void Signal::Stop() {
  uv_signal_stop(handle_);
  callback_ = nullptr;
}

void Signal::OnSignal(uv_signal_t* handle, int signum) {
  auto* self = static_cast<Signal*>(handle->data);
  if (self == nullptr || !self->callback_) return;
  std::function<void(int)> callback = self->callback_;
  callback(signum);
}

}  // namespace hawk::uv
