#include "common/allocator.h"

#include <malloc.h>

namespace fairbench {

void KeepLargeBlocksInTheHeap() {
  // Blocks up to 4 MiB come from the heap (a histogram is 184 KiB), and the
  // heap keeps up to 64 MiB of free memory at its top instead of giving it
  // back after every snapshot.
  mallopt(M_MMAP_THRESHOLD, 4 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
}

}  // namespace fairbench
