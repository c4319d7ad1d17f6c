// SPDX-License-Identifier: GPL-2.0-or-later
#include "model/cost_rules.h"

#include <algorithm>

namespace topolab {

uint64_t ipi_send_ns(const CostModel& cost, uint64_t written_ns) {
  return written_ns + (cost.ipiv ? 0 : cost.icr_send_ns);
}

uint64_t ipi_arrival_at_running_ns(const CostModel& cost, uint64_t sent_ns, bool self) {
  return sent_ns + (self ? 0 : cost.ipi_running_ns);
}

uint64_t ipi_wake_event_ns(const CostModel& cost, uint64_t sent_ns, bool target_in_mwait, bool self) {
  return sent_ns + (target_in_mwait && !self ? cost.ipi_running_ns : 0);
}

Resumption resume_from_halt(const CostModel& cost, const HaltedVcpu& halted, uint64_t event_ns) {
  const uint64_t event = std::max(event_ns, halted.halted_since_ns);
  const uint64_t waited = event - halted.halted_since_ns;
  Resumption r{.resume_ns = event, .poll = HaltPoll::None, .poll_busy_ns = std::nullopt};
  if (waited == 0) return r;
  if (halted.in_mwait) {
    if (cost.mwait_passthrough) r.resume_ns = event + cost.mwait_wake_ns;
    return r;
  }
  const uint64_t poll_ns = halted.host_polls ? cost.halt_poll_ns : 0;
  if (waited <= poll_ns) {
    r.poll = HaltPoll::Hit;
    r.resume_ns = event + cost.poll_wake_ns;
    r.poll_busy_ns = r.resume_ns - halted.halted_since_ns;
    return r;
  }
  if (poll_ns) r.poll = HaltPoll::Miss;
  r.resume_ns = event + cost.halt_wake_ns;
  return r;
}

std::optional<ExitKind> apic_write_exit(const CostModel& cost, ApicWriteKind kind) {
  switch (kind) {
    case ApicWriteKind::Virtualized: return std::nullopt;
    case ApicWriteKind::Icr: return cost.ipiv ? std::nullopt : std::optional(ExitKind::Icr);
    case ApicWriteKind::Trapped: return ExitKind::Apic;
  }
  return ExitKind::Apic;
}

}  // namespace topolab
