// SPDX-License-Identifier: GPL-2.0-or-later
#include "emu/stats.h"

#include <functional>
#include <iterator>
#include <numeric>

namespace topolab {

uint64_t VcpuStats::total_exits() const { return std::accumulate(exits.begin(), exits.end(), uint64_t{0}); }

namespace {

// Each key of either map with op(a's count, b's count), a missing count
// being 0, and no zero results (a map of counts holds none). For a
// difference, b is an earlier snapshot of a, so its keys are a's.
template <typename Key, typename Op>
std::map<Key, uint64_t> combine_map(const std::map<Key, uint64_t>& a, const std::map<Key, uint64_t>& b, Op op) {
  auto count = [](const std::map<Key, uint64_t>& m, const Key& key) {
    auto it = m.find(key);
    return it == m.end() ? uint64_t{0} : it->second;
  };
  std::map<Key, uint64_t> out;
  for (const auto& [key, n] : a)
    if (uint64_t r = op(n, count(b, key))) out[key] = r;
  for (const auto& [key, n] : b)
    if (!a.contains(key))
      if (uint64_t r = op(uint64_t{0}, n)) out[key] = r;
  return out;
}

template <typename T, size_t N, typename Op>
std::array<T, N> combine_array(const std::array<T, N>& a, const std::array<T, N>& b, Op op) {
  std::array<T, N> out{};
  for (size_t i = 0; i < N; ++i) out[i] = op(a[i], b[i]);
  return out;
}

// Every counter of `a` and `b` combined by `op`: a window's difference and
// the machine's total both walk this one list (and scalar_counters()).
template <typename Op>
VcpuStats combine(const VcpuStats& a, const VcpuStats& b, Op op) {
  VcpuStats d;
  for (const ScalarCounter& c : scalar_counters()) d.*c.member = op(a.*c.member, b.*c.member);
  d.ipis_sent = combine_array(a.ipis_sent, b.ipis_sent, op);
  d.ipis_received = combine_array(a.ipis_received, b.ipis_received, op);
  d.ipis_sent_by_shorthand = combine_array(a.ipis_sent_by_shorthand, b.ipis_sent_by_shorthand, op);
  d.sent_by_vector = combine_map(a.sent_by_vector, b.sent_by_vector, op);
  d.received_by_vector = combine_map(a.received_by_vector, b.received_by_vector, op);
  d.interrupts_taken = combine_map(a.interrupts_taken, b.interrupts_taken, op);
  d.exceptions_taken = combine_map(a.exceptions_taken, b.exceptions_taken, op);
  d.wakes = combine_array(a.wakes, b.wakes, op);
  d.mwait_hints = combine_map(a.mwait_hints, b.mwait_hints, op);
  d.hypercalls = combine_map(a.hypercalls, b.hypercalls, op);
  d.kvm_msr_writes = combine_map(a.kvm_msr_writes, b.kvm_msr_writes, op);
  d.exits = combine_array(a.exits, b.exits, op);
  d.system_instructions = combine_array(a.system_instructions, b.system_instructions, op);
  return d;
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
      {"halt_poll_success_ns", &VcpuStats::halt_poll_success_ns},
      {"halt_poll_fail_ns", &VcpuStats::halt_poll_fail_ns},
      {"halt_wait_ns", &VcpuStats::halt_wait_ns},
      {"halt_wakeups", &VcpuStats::halt_wakeups},
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

VcpuStats VcpuStats::minus(const VcpuStats& earlier) const { return combine(*this, earlier, std::minus<uint64_t>()); }

Stats Stats::minus(const Stats& earlier) const {
  Stats d(vcpu_count());
  for (unsigned i = 0; i < vcpu_count(); ++i) d.vcpus_[i] = vcpus_[i].minus(earlier.vcpus_.at(i));
  d.matrix_ = combine_map(matrix_, earlier.matrix_, std::minus<uint64_t>());
  return d;
}

VcpuStats Stats::total() const {
  VcpuStats sum;
  for (const VcpuStats& s : vcpus_) sum = combine(sum, s, std::plus<uint64_t>());
  return sum;
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
