// SPDX-License-Identifier: GPL-2.0-or-later
#include "emu/activity_log.h"

#include <algorithm>
#include <iterator>

namespace topolab {

std::string_view to_string(VcpuActivity activity) {
  static constexpr std::string_view kNames[] = {"running", "spinning", "halted", "mwait", "wait-for-sipi"};
  static_assert(std::size(kNames) == static_cast<size_t>(VcpuActivity::WaitForSipi) + 1);
  return kNames[static_cast<size_t>(activity)];
}

void ActivityLog::record(unsigned cpu, uint64_t begin_ns, uint64_t end_ns, VcpuActivity activity) {
  std::vector<ActivitySpan>& spans = spans_[cpu];
  if (!spans.empty()) begin_ns = std::max(begin_ns, spans.back().end_ns);
  if (end_ns <= begin_ns) return;
  if (!spans.empty()) {
    ActivitySpan& last = spans.back();
    const bool continues = last.end_ns == begin_ns && last.activity == activity;
    if (continues || spans.size() == kMaxSpansPerVcpu) {
      last.end_ns = end_ns;
      last.activity = activity;
      return;
    }
  }
  spans.push_back({begin_ns, end_ns, activity});
}

uint64_t ActivityLog::end_ns() const {
  uint64_t end = 0;
  for (const auto& spans : spans_)
    if (!spans.empty()) end = std::max(end, spans.back().end_ns);
  return end;
}

}  // namespace topolab
