// SPDX-License-Identifier: GPL-2.0-or-later
#include "report/run_report.h"

#include "report/cpuid_report.h"
#include "devices/kvm_hypercall.h"
#include "base/text_buffer.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace topolab {

namespace {

constexpr unsigned kTableRows = 64;
constexpr size_t kTopRoutes = 8;

uint64_t wakes(const VcpuStats& s) {
  uint64_t n = 0;
  for (uint64_t w : s.wakes) n += w;
  return n;
}

uint64_t hlt_exits(const VcpuStats& s) { return s.exits[static_cast<size_t>(ExitKind::Hlt)]; }

// The scalar counters from `first` to `last` (scalar_counters() order).
void put_counters(nlohmann::ordered_json& v, const VcpuStats& s, std::string_view first, std::string_view last) {
  bool in_range = false;
  for (const ScalarCounter& c : scalar_counters()) {
    in_range = in_range || c.name == first;
    if (in_range) v[std::string(c.name)] = s.*c.member;
    if (c.name == last) return;
  }
}

uint64_t sum_of(const std::map<uint64_t, uint64_t>& counts) {
  uint64_t n = 0;
  for (const auto& [key, count] : counts) n += count;
  return n;
}

// The counters KVM keeps per vCPU under its own names (its debugfs files,
// /sys/kernel/debug/kvm/*), so that a report can be held against a host's.
nlohmann::ordered_json kvm_stats_json(const VcpuStats& s) {
  nlohmann::ordered_json k;
  k["exits"] = s.total_exits();
  k["halt_exits"] = hlt_exits(s);
  k["halt_attempted_poll"] = s.halt_poll_hits + s.halt_poll_misses;
  k["halt_successful_poll"] = s.halt_poll_hits;
  k["halt_poll_invalid"] = 0;  // a poll ended by a wakeup that does not wake: none here
  k["halt_wakeup"] = s.halt_wakeups;
  k["halt_poll_success_ns"] = s.halt_poll_success_ns;
  k["halt_poll_fail_ns"] = s.halt_poll_fail_ns;
  k["halt_wait_ns"] = s.halt_wait_ns;
  k["hypercalls"] = sum_of(s.hypercalls);
  return k;
}

nlohmann::ordered_json vcpu_json(const VcpuStats& s) {
  using nlohmann::ordered_json;
  ordered_json v;
  put_counters(v, s, "instructions", "halted_ns");
  ordered_json sent, received, shorthands, wake, exits, system;
  for (size_t m = 0; m < kApicDeliveryModes; ++m) {
    const auto mode = static_cast<ApicDeliveryMode>(m);
    if (mode == ApicDeliveryMode::Reserved) continue;  // never sent: the run stops there
    sent[std::string(to_string(mode))] = s.ipis_sent[m];
    received[std::string(to_string(mode))] = s.ipis_received[m];
  }
  for (size_t h = 0; h < kApicShorthands; ++h)
    shorthands[std::string(to_string(static_cast<ApicShorthand>(h)))] = s.ipis_sent_by_shorthand[h];
  for (size_t w = 0; w < kWakeCauses; ++w) wake[std::string(to_string(static_cast<WakeCause>(w)))] = s.wakes[w];
  for (size_t k = 0; k < kExitKinds; ++k) exits[std::string(to_string(static_cast<ExitKind>(k)))] = s.exits[k];
  for (size_t k = 0; k < kSystemInstructions; ++k)
    system[std::string(to_string(static_cast<SystemInstruction>(k)))] = s.system_instructions[k];
  v["ipis_sent"] = sent;
  v["ipis_sent_by_shorthand"] = shorthands;
  v["ipis_received"] = received;
  ordered_json sv = ordered_json::object(), rv = ordered_json::object(), taken = ordered_json::object(),
               faults = ordered_json::object(), hints = ordered_json::object();
  for (auto [vec, n] : s.sent_by_vector) sv[fmt::format("{:#04x}", vec)] = n;
  for (auto [vec, n] : s.received_by_vector) rv[fmt::format("{:#04x}", vec)] = n;
  for (auto [vec, n] : s.interrupts_taken) taken[fmt::format("{:#04x}", vec)] = n;
  for (auto [vec, n] : s.exceptions_taken) faults[fmt::format("{:#04x}", vec)] = n;
  for (auto [hint, n] : s.mwait_hints) hints[fmt::format("{:#04x}", hint)] = n;
  v["sent_by_vector"] = sv;
  v["received_by_vector"] = rv;
  v["interrupts_taken"] = taken;
  v["exceptions_taken"] = faults;
  put_counters(v, s, "received_while_halted", "ipis_to_nobody");
  v["wakes"] = wake;
  put_counters(v, s, "pauses", "skipped_ns");
  v["mwait_hints"] = hints;
  put_counters(v, s, "open_bus_reads", "open_bus_writes");
  v["exits"] = exits;
  put_counters(v, s, "exit_ns", "host_mwait_ns");
  v["system_instructions"] = system;
  ordered_json calls = ordered_json::object();
  for (auto [nr, n] : s.hypercalls) calls[kvm_hypercall_name(nr)] = n;
  v["hypercalls"] = calls;
  ordered_json kvm_msrs = ordered_json::object();
  for (auto [msr, n] : s.kvm_msr_writes) kvm_msrs[fmt::format("{:#x}", msr)] = n;
  v["kvm_msr_writes"] = kvm_msrs;
  v["kvm"] = kvm_stats_json(s);
  v["host_busy_ns"] = s.host_busy_ns();
  return v;
}

}  // namespace

double host_cpu_percent(const Stats& stats, uint64_t elapsed_ns) {
  if (elapsed_ns == 0) return 0;
  return 100.0 * static_cast<double>(stats.total().host_busy_ns()) / static_cast<double>(elapsed_ns);
}

std::string format_run_table(const RunReportInput& in) {
  const Stats& stats = in.stats;
  fmt::memory_buffer out;
  appendf(out, "{:>5} {:>7} {:>14} {:>8} {:>12} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9} {:>6}\n", "vcpu", "apic",
          "instructions", "hlt", "halted us", "ipi sent", "ipi recv", "to idle", "wakes", "init/sipi", "mwait", "pause",
          "exits", "%cpu");
  const uint64_t elapsed = in.result.virtual_ns;
  std::vector<unsigned> never_ran;
  unsigned rows = 0;
  for (unsigned i = 0; i < stats.vcpu_count(); ++i) {
    const VcpuStats& s = stats.vcpu(i);
    // vCPUs the guest never started get one line together below.
    if (s.instructions == 0 && s.total_received() == 0) {
      never_ran.push_back(i);
      continue;
    }
    if (++rows > kTableRows) continue;
    uint64_t init_sipi = s.ipis_received[static_cast<size_t>(ApicDeliveryMode::Init)] +
                         s.ipis_received[static_cast<size_t>(ApicDeliveryMode::StartUp)];
    appendf(out, "{:>5} {:>#7x} {:>14} {:>8} {:>12.1f} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9} {:>6.1f}\n", i,
            in.config.topology.apic_id(i), s.instructions, s.hlt_entries, s.halted_ns / 1e3, s.total_sent(),
            s.total_received(), s.received_while_halted, wakes(s), init_sipi, s.mwait_entries, s.pauses,
            s.total_exits(), elapsed ? 100.0 * s.host_busy_ns() / elapsed : 0.0);
  }
  if (rows > kTableRows) appendf(out, "  ... {} more vCPUs (see --report json)\n", rows - kTableRows);
  if (!never_ran.empty())
    appendf(out, "  vCPU{} {} never ran (the guest sent no INIT/SIPI)\n", never_ran.size() == 1 ? "" : "s",
            format_cpu_list(never_ran));
  const VcpuStats total = stats.total();
  appendf(out, "{:>5} {:>7} {:>14} {:>8} {:>12.1f} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9} {:>6.1f}\n", "all", "",
          total.instructions, total.hlt_entries, total.halted_ns / 1e3, total.total_sent(), total.total_received(),
          total.received_while_halted, wakes(total), "", total.mwait_entries, total.pauses, total.total_exits(),
          host_cpu_percent(stats, elapsed));

  std::vector<std::pair<std::pair<unsigned, unsigned>, uint64_t>> routes(stats.ipi_matrix().begin(),
                                                                          stats.ipi_matrix().end());
  std::stable_sort(routes.begin(), routes.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (!routes.empty()) {
    appendf(out, "busiest IPI routes:");
    for (size_t r = 0; r < routes.size() && r < kTopRoutes; ++r)
      appendf(out, " {}->{} x{}", routes[r].first.first, routes[r].first.second, routes[r].second);
    appendf(out, "\n");
  }
  if (total.ple_exits)
    appendf(out, "spin skipping: {} pause-loop exits, {:.1f} us of spinning skipped, not run (docs/spin_skipping.md)\n",
            total.ple_exits, total.skipped_ns / 1e3);
  if (in.window) {
    const MeasureWindow& w = *in.window;
    const uint64_t ns = w.end_ns - w.begin_ns;
    const VcpuStats t = w.stats.total();
    appendf(out, "measuring window: {:.3f} ms of virtual time{}; host CPU {:.1f}%; HLT exits {}", ns / 1e6,
            w.ended_by_guest ? "" : " (not ended by the guest: to the end of the run)", host_cpu_percent(w.stats, ns),
            hlt_exits(t));
    for (auto [vector, n] : t.received_by_vector) appendf(out, "; vector {:#04x} x{}", vector, n);
    appendf(out, "\n");
  }
  appendf(out, "cost model: {}\n", in.config.cost.to_string());
  return fmt::to_string(out);
}

std::string format_run_json(const RunReportInput& in) {
  using nlohmann::ordered_json;
  const Stats& stats = in.stats;
  ordered_json j;
  j["schema"] = kRunReportSchema;
  j["config"] = {{"image", std::filesystem::path(in.config.image).filename().string()},
                 {"smp", in.config.topology.to_smp_arg()},
                 {"cpu", in.config.cpu.arg},
                 {"memory_mib", in.config.ram_mib},
                 {"append", in.config.append},
                 {"quantum", in.config.quantum},
                 {"time_limit_s", in.config.time_limit_seconds},
                 {"spin_skip", in.config.spin_skip}};
  j["outcome"] = to_string(in.result.outcome);
  if (in.result.guest_value) j["guest_exit_value"] = *in.result.guest_value;
  if (!in.result.diagnosis.empty()) j["diagnosis"] = in.result.diagnosis;
  j["instructions"] = in.result.instructions;
  j["virtual_ns"] = in.result.virtual_ns;
  ordered_json cost = ordered_json::object();
  for (const auto& [key, value] : in.config.cost.entries()) cost[key] = value;
  j["cost"] = cost;  // as --cost reads it
  j["host_cpu_percent"] = host_cpu_percent(stats, in.result.virtual_ns);
  auto vcpu_list = [&](const Stats& from) {
    ordered_json vcpus = ordered_json::array();
    for (unsigned i = 0; i < from.vcpu_count(); ++i) {
      ordered_json v;
      v["index"] = i;
      v["apic_id"] = in.config.topology.apic_id(i);
      v.update(vcpu_json(from.vcpu(i)));
      vcpus.push_back(v);
    }
    return vcpus;
  };
  auto matrix_of = [](const Stats& from) {
    ordered_json matrix = ordered_json::array();
    for (const auto& [route, count] : from.ipi_matrix()) matrix.push_back({route.first, route.second, count});
    return matrix;  // [source, destination, count], sorted
  };
  j["vcpus"] = vcpu_list(stats);
  j["ipi_matrix"] = matrix_of(stats);
  if (in.window) {
    const MeasureWindow& w = *in.window;
    ordered_json window;
    window["begin_ns"] = w.begin_ns;
    window["end_ns"] = w.end_ns;
    window["ended_by_guest"] = w.ended_by_guest;
    window["host_cpu_percent"] = host_cpu_percent(w.stats, w.end_ns - w.begin_ns);
    window["vcpus"] = vcpu_list(w.stats);
    window["ipi_matrix"] = matrix_of(w.stats);
    j["window"] = window;
  } else {
    j["window"] = nullptr;
  }
  return j.dump(2) + "\n";
}

}  // namespace topolab
