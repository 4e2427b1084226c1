// Allocator settings for the controller's processes.
//
// Every agent snapshot brings a latency histogram (23,552 counters, 184 KiB)
// that is decoded, merged and freed. glibc serves blocks that large with
// mmap and returns them at free, or trims them off the top of its heap, so
// each snapshot paid for fresh zeroed pages: about a third of the
// controller's CPU per snapshot went to page faults and zeroing. Keeping
// such blocks in the heap lets their memory be reused. Call once, early in
// main, before any thread starts.
#pragma once

namespace fairbench {

void KeepLargeBlocksInTheHeap();

}  // namespace fairbench
