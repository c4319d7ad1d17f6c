// SPDX-License-Identifier: GPL-2.0-or-later
// What each vCPU did over virtual time, as spans (running, spinning,
// halted, in MWAIT, waiting for SIPI), for the per-vCPU timeline of the run
// page (report/html_report). Pure data, recorded by the machine, kept apart
// from Stats so a measuring window and the JSON report are unchanged by it.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "base/state_sized.h"

namespace topolab {

enum class VcpuActivity : uint8_t { Running, Spinning, Halted, Mwait, WaitForSipi };
std::string_view to_string(VcpuActivity activity);

struct ActivitySpan {
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
  VcpuActivity activity = VcpuActivity::Running;
  bool operator==(const ActivitySpan&) const = default;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(begin_ns, end_ns, activity);
  }
};

class ActivityLog {
 public:
  // A page cannot draw more than a few thousand spans a row usefully; past
  // this a vCPU's later spans merge into its last one (its activity becomes
  // the most recent), so memory stays bounded on any run.
  static constexpr size_t kMaxSpansPerVcpu = 4096;

  explicit ActivityLog(unsigned vcpus) : spans_(vcpus) {}

  // Books [begin_ns, end_ns) of `cpu` as `activity`. Empty spans are
  // dropped; a span that continues the last one with the same activity
  // extends it. Spans of one vCPU come in time order (a begin before the
  // last end is clamped to it).
  void record(unsigned cpu, uint64_t begin_ns, uint64_t end_ns, VcpuActivity activity);

  unsigned vcpus() const { return static_cast<unsigned>(spans_.size()); }
  const std::vector<ActivitySpan>& spans(unsigned cpu) const { return spans_[cpu]; }
  // The end of the latest span of any vCPU.
  uint64_t end_ns() const;
  template <class Archive>
  void serialize(Archive& ar) {
    serialize_sized(ar, spans_, "activity log");
  }

 private:
  std::vector<std::vector<ActivitySpan>> spans_;
};

}  // namespace topolab
