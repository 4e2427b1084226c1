#include "controller/hub/job_stream.h"

namespace fairbench::controller {

JobStream::Verdict JobStream::OnSnapshot(uint64_t sequence, const Counters& counters) {
  if (sequence < next_) {
    ++duplicates_;
    return Verdict::kDuplicate;
  }
  missing_ += sequence - next_;
  next_ = sequence + 1;
  ++accepted_;
  sum_.Add(counters);
  return Verdict::kAccept;
}

bool JobStream::Consistent(uint64_t last_sequence, const Counters& totals) const {
  return missing_ == 0 && last_sequence + 1 == next_ && totals == sum_;
}

}  // namespace fairbench::controller
