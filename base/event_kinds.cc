// SPDX-License-Identifier: GPL-2.0-or-later
#include "base/event_kinds.h"

#include <iterator>

namespace topolab {

std::string_view to_string(WakeCause cause) {
  static constexpr std::string_view kNames[] = {"interrupt", "timer", "nmi", "init", "sipi", "mwait-store"};
  static_assert(std::size(kNames) == kWakeCauses);
  return kNames[static_cast<size_t>(cause)];
}

std::string_view to_string(ExitKind kind) {
  static constexpr std::string_view kNames[] = {"cpuid", "hlt", "io", "msr", "apic", "icr", "mwait", "monitor", "pause_loop", "hypercall"};
  static_assert(std::size(kNames) == kExitKinds);
  return kNames[static_cast<size_t>(kind)];
}

}  // namespace topolab
