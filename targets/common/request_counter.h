// RequestCounter: counts served requests from many threads without making
// them share a cache line.
//
// Each thread adds to its own padded slot (picked once per thread), so an
// increment is one uncontended relaxed atomic add: nothing slow on the
// request path. Total() sums the slots; a reader may miss increments that
// race with it, never double-count them. Thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace fairbench::targets {

class RequestCounter {
 public:
  void Increment() { slots_[ThreadSlot()].value.fetch_add(1, std::memory_order_relaxed); }
  uint64_t Total() const;

 private:
  static constexpr size_t kSlots = 64;  // threads beyond 64 share slots (still correct)
  struct alignas(64) Slot {
    std::atomic<uint64_t> value{0};
  };
  static size_t ThreadSlot();

  Slot slots_[kSlots];
};

}  // namespace fairbench::targets
