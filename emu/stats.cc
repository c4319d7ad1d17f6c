#include "emu/stats.h"

#include <iterator>
#include <numeric>

namespace topolab {

uint64_t VcpuStats::total_exits() const { return std::accumulate(exits.begin(), exits.end(), uint64_t{0}); }

namespace {

template <typename Key>
std::map<Key, uint64_t> minus_map(const std::map<Key, uint64_t>& now, const std::map<Key, uint64_t>& before) {
  std::map<Key, uint64_t> out;
  for (const auto& [key, n] : now) {
    auto it = before.find(key);
    uint64_t d = n - (it == before.end() ? 0 : it->second);
    if (d) out[key] = d;
  }
  return out;
}

template <typename T, size_t N>
std::array<T, N> minus_array(const std::array<T, N>& now, const std::array<T, N>& before) {
  std::array<T, N> out{};
  for (size_t i = 0; i < N; ++i) out[i] = now[i] - before[i];
  return out;
}

}  // namespace

std::span<const ScalarCounter> scalar_counters() {
  static constexpr ScalarCounter kCounters[] = {
      {"instructions", &VcpuStats::instructions},
      {"hlt_entries", &VcpuStats::hlt_entries},
      {"halted_ns", &VcpuStats::halted_ns},
      {"received_while_halted", &VcpuStats::received_while_halted},
      {"received_while_running", &VcpuStats::received_while_running},
      {"ipis_to_nobody", &VcpuStats::ipis_to_nobody},
      {"pauses", &VcpuStats::pauses},
      {"monitor_arms", &VcpuStats::monitor_arms},
      {"mwait_entries", &VcpuStats::mwait_entries},
      {"ple_exits", &VcpuStats::ple_exits},
      {"skipped_ns", &VcpuStats::skipped_ns},
      {"open_bus_reads", &VcpuStats::open_bus_reads},
      {"open_bus_writes", &VcpuStats::open_bus_writes},
      {"exit_ns", &VcpuStats::exit_ns},
      {"run_ns", &VcpuStats::run_ns},
      {"halt_poll_hits", &VcpuStats::halt_poll_hits},
      {"halt_poll_misses", &VcpuStats::halt_poll_misses},
      {"host_poll_ns", &VcpuStats::host_poll_ns},
      {"host_mwait_ns", &VcpuStats::host_mwait_ns},
  };
  return kCounters;
}

std::string_view to_string(ApicDeliveryMode mode) {
  static constexpr std::string_view kNames[] = {"fixed", "lowest-priority", "smi",     "reserved",
                                                "nmi",   "init",            "startup", "extint"};
  static_assert(std::size(kNames) == kApicDeliveryModes);
  return kNames[static_cast<size_t>(mode)];
}

std::string_view to_string(ApicShorthand shorthand) {
  static constexpr std::string_view kNames[] = {"none", "self", "all", "all-but-self"};
  static_assert(std::size(kNames) == kApicShorthands);
  return kNames[static_cast<size_t>(shorthand)];
}

VcpuStats VcpuStats::minus(const VcpuStats& e) const {
  VcpuStats d;
  for (const ScalarCounter& c : scalar_counters()) d.*c.member = this->*c.member - e.*c.member;
  d.ipis_sent = minus_array(ipis_sent, e.ipis_sent);
  d.ipis_received = minus_array(ipis_received, e.ipis_received);
  d.ipis_sent_by_shorthand = minus_array(ipis_sent_by_shorthand, e.ipis_sent_by_shorthand);
  d.sent_by_vector = minus_map(sent_by_vector, e.sent_by_vector);
  d.received_by_vector = minus_map(received_by_vector, e.received_by_vector);
  d.interrupts_taken = minus_map(interrupts_taken, e.interrupts_taken);
  d.exceptions_taken = minus_map(exceptions_taken, e.exceptions_taken);
  d.wakes = minus_array(wakes, e.wakes);
  d.mwait_hints = minus_map(mwait_hints, e.mwait_hints);
  d.exits = minus_array(exits, e.exits);
  return d;
}

Stats Stats::minus(const Stats& earlier) const {
  Stats d(vcpu_count());
  for (unsigned i = 0; i < vcpu_count(); ++i) d.vcpus_[i] = vcpus_[i].minus(earlier.vcpus_.at(i));
  d.matrix_ = minus_map(matrix_, earlier.matrix_);
  return d;
}

uint64_t VcpuStats::total_sent() const { return std::accumulate(ipis_sent.begin(), ipis_sent.end(), uint64_t{0}); }

uint64_t VcpuStats::total_received() const {
  return std::accumulate(ipis_received.begin(), ipis_received.end(), uint64_t{0});
}

namespace {
bool has_vector(ApicDeliveryMode mode) {
  return mode == ApicDeliveryMode::Fixed || mode == ApicDeliveryMode::LowestPriority;
}
}  // namespace

void Stats::record_send(unsigned source, ApicDeliveryMode mode, ApicShorthand shorthand, uint8_t vector) {
  VcpuStats& s = vcpu(source);
  ++s.ipis_sent[static_cast<size_t>(mode)];
  ++s.ipis_sent_by_shorthand[static_cast<size_t>(shorthand)];
  if (has_vector(mode)) ++s.sent_by_vector[vector];
}

void Stats::record_ipi(unsigned source, unsigned target, ApicDeliveryMode mode, uint8_t vector, bool target_halted) {
  VcpuStats& t = vcpu(target);
  ++t.ipis_received[static_cast<size_t>(mode)];
  if (has_vector(mode)) ++t.received_by_vector[vector];
  ++(target_halted ? t.received_while_halted : t.received_while_running);
  ++matrix_[{source, target}];
}

}  // namespace topolab
