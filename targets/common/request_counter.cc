#include "targets/common/request_counter.h"

namespace fairbench::targets {

size_t RequestCounter::ThreadSlot() {
  static std::atomic<size_t> next{0};
  thread_local const size_t slot = next.fetch_add(1, std::memory_order_relaxed) % kSlots;
  return slot;
}

uint64_t RequestCounter::Total() const {
  uint64_t sum = 0;
  for (const Slot& s : slots_) sum += s.value.load(std::memory_order_relaxed);
  return sum;
}

}  // namespace fairbench::targets
