#include "base/event_kinds.h"

namespace topolab {

std::string_view to_string(IpiMode mode) {
  static constexpr std::string_view kNames[] = {"fixed", "lowest-priority", "smi", "nmi", "init", "startup", "extint"};
  return kNames[static_cast<size_t>(mode)];
}

std::string_view to_string(IpiShorthand shorthand) {
  static constexpr std::string_view kNames[] = {"none", "self", "all", "all-but-self"};
  return kNames[static_cast<size_t>(shorthand)];
}

std::string_view to_string(WakeCause cause) {
  static constexpr std::string_view kNames[] = {"interrupt", "timer", "nmi", "init", "sipi", "mwait-store"};
  return kNames[static_cast<size_t>(cause)];
}

std::string_view to_string(ExitKind kind) {
  static constexpr std::string_view kNames[] = {"cpuid", "hlt", "io", "msr", "apic", "icr", "mwait", "monitor", "pause_loop", "hypercall"};
  return kNames[static_cast<size_t>(kind)];
}

}  // namespace topolab
