// JobStream: one agent's stream of snapshots for one job, checked against
// the protocol's invariants before anything is counted.
//
//  - Snapshots must arrive with sequence numbers 1, 2, 3 …. A number below
//    the next expected one is a duplicate (a resend): it is dropped and
//    counted, never added twice. A number above it means snapshots went
//    missing: the gap is recorded and the snapshot accepted.
//  - JobDone's totals must equal the sum of the accepted snapshots; when
//    they do not (a gap, a lost message), the job is marked inconsistent.
//
// Not thread-safe: owned by the agent's session, which handles one message
// at a time.
#pragma once

#include <cstdint>
#include <string>

#include "common/metrics.h"

namespace fairbench::controller {

class JobStream {
 public:
  enum class Verdict { kAccept, kDuplicate };

  // Checks `sequence` and, when accepted, adds `counters` to the running sum.
  Verdict OnSnapshot(uint64_t sequence, const Counters& counters);
  // True when JobDone agrees with what was accepted.
  bool Consistent(uint64_t last_sequence, const Counters& totals) const;

  uint64_t accepted() const { return accepted_; }
  uint64_t duplicates() const { return duplicates_; }
  uint64_t missing() const { return missing_; }
  const Counters& sum() const { return sum_; }

 private:
  uint64_t next_ = 1;
  uint64_t accepted_ = 0;
  uint64_t duplicates_ = 0;
  uint64_t missing_ = 0;
  Counters sum_;
};

}  // namespace fairbench::controller
