// TsanHandOff: tells ThreadSanitizer about an order it cannot see.
//
// gRPC's core (Debian's build is not instrumented) runs a reactor's
// reactions on its own threads and orders them itself: a read's OnReadDone
// happens after the StartRead that asked for it, OnDone after every other
// reaction. TSan sees none of that and would report the reactor's own
// fields, touched by one reaction after another on different threads, as
// races. Release() before handing the object to gRPC and Acquire() at the
// start of the reaction state that order to TSan, per chain (one address
// per chain, so that two chains gRPC does run concurrently stay checked).
// Compiled away outside TSan builds.
#pragma once

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

namespace fairbench {

inline void TsanRelease([[maybe_unused]] const void* chain) {
#if defined(__SANITIZE_THREAD__)
  __tsan_release(const_cast<void*>(chain));
#endif
}

inline void TsanAcquire([[maybe_unused]] const void* chain) {
#if defined(__SANITIZE_THREAD__)
  __tsan_acquire(const_cast<void*>(chain));
#endif
}

}  // namespace fairbench
