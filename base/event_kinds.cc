// SPDX-License-Identifier: GPL-2.0-or-later
#include "base/event_kinds.h"

#include <iterator>

namespace topolab {

std::string_view to_string(WakeCause cause) {
  static constexpr std::string_view kNames[] = {"interrupt", "timer", "nmi", "init", "sipi", "mwait-store", "pv-kick"};
  static_assert(std::size(kNames) == kWakeCauses);
  return kNames[static_cast<size_t>(cause)];
}

std::string_view to_string(ExitKind kind) {
  static constexpr std::string_view kNames[] = {"cpuid", "hlt", "io", "msr", "apic", "icr", "mwait", "monitor", "pause_loop", "hypercall"};
  static_assert(std::size(kNames) == kExitKinds);
  return kNames[static_cast<size_t>(kind)];
}

std::string_view to_string(SystemInstruction kind) {
  static constexpr std::string_view kNames[] = {"cr0_write", "cr3_write",       "cr4_write",   "cr4_global_flush", "invlpg",
                                                "invpcid",   "descriptor_load", "cache_flush", "dr_write"};
  static_assert(std::size(kNames) == kSystemInstructions);
  return kNames[static_cast<size_t>(kind)];
}

}  // namespace topolab
