#pragma once

// Rules for every libuv handle wrapper in hawk (after Node's handle_wrap.h):
//  1. The libuv handle is heap-allocated and owned by exactly one C++ object; `data` points back
//     to that object, or is null once the object is gone.
//  2. Destroying the C++ object, or calling Close(), clears user callbacks and starts uv_close().
//     The handle memory is freed only in libuv's close callback (FreeOnClose), never before.
//  3. A C++ object may be destroyed at any time except from inside one of its own callbacks.
//     Code that wants to drop an object from its callback calls Close(on_closed) and destroys
//     it in on_closed, which runs from the loop, not from the object's callback stack.
//  4. Trampolines invoke the user callback last and never touch `this` afterwards.
//  5. Callbacks that arrive with UV_ECANCELED touch nothing but their own request.

#include <uv.h>

namespace hawk::uv {

template <typename H>
void FreeOnClose(uv_handle_t* handle) {
  delete reinterpret_cast<H*>(handle);
}

// Starts closing `handle` (if not already) and frees it once libuv is done with it.
template <typename H>
void CloseAndFree(H* handle) {
  if (handle == nullptr) return;
  auto* raw = reinterpret_cast<uv_handle_t*>(handle);
  raw->data = nullptr;
  if (!uv_is_closing(raw)) uv_close(raw, &FreeOnClose<H>);
}

}  // namespace hawk::uv
