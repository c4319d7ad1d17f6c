#include "emu/stats.h"

#include <numeric>

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

uint64_t VcpuStats::total_sent() const { return std::accumulate(ipis_sent.begin(), ipis_sent.end(), uint64_t{0}); }

uint64_t VcpuStats::total_received() const {
  return std::accumulate(ipis_received.begin(), ipis_received.end(), uint64_t{0});
}

namespace {
bool has_vector(IpiMode mode) { return mode == IpiMode::Fixed || mode == IpiMode::LowestPriority; }
}  // namespace

void Stats::record_send(unsigned source, IpiMode mode, IpiShorthand shorthand, uint8_t vector) {
  VcpuStats& s = vcpu(source);
  ++s.ipis_sent[static_cast<size_t>(mode)];
  ++s.ipis_sent_by_shorthand[static_cast<size_t>(shorthand)];
  if (has_vector(mode)) ++s.sent_by_vector[vector];
}

void Stats::record_ipi(unsigned source, unsigned target, IpiMode mode, uint8_t vector, bool target_halted) {
  VcpuStats& t = vcpu(target);
  ++t.ipis_received[static_cast<size_t>(mode)];
  if (has_vector(mode)) ++t.received_by_vector[vector];
  ++(target_halted ? t.received_while_halted : t.received_while_running);
  ++matrix_[{source, target}];
}

}  // namespace topolab
