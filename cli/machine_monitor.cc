// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/machine_monitor.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include <fmt/format.h>

#include "lab/consumer_views.h"
#include "lab/cpuid_dump.h"
#include "report/numa_report.h"
#include "report/cpu_list.h"

namespace topolab::cli {

namespace {

uint64_t sum(const auto& counters) { return std::accumulate(counters.begin(), counters.end(), uint64_t{0}); }

}  // namespace

// QEMU's `info cpus` lines ("* CPU #0: thread_id=..."), the current CPU
// marked; topolab's thread id is the gdb thread's, and the state follows.
std::string MachineMonitor::info_cpus() {
  std::string out;
  for (unsigned i = 0; i < machine_.vcpu_count(); ++i)
    out += fmt::format("{} CPU #{}: thread_id={} ({})\n", i == 0 ? '*' : ' ', i, i + 1, machine_.cpu(i).describe_state());
  return out;
}

std::string MachineMonitor::info_lapic(std::optional<unsigned> vcpu) {
  if (vcpu && *vcpu >= machine_.vcpu_count())
    return fmt::format("info lapic: no CPU {} (the machine has {})\n", *vcpu, machine_.vcpu_count());
  std::string out;
  for (unsigned i = 0; i < machine_.vcpu_count(); ++i) {
    if (vcpu && *vcpu != i) continue;
    const MachineCpu& cpu = machine_.cpu(i);
    out += fmt::format("cpu {}: {}", i, cpu.apic().describe(cpu.now()));
  }
  return out;
}

// QEMU's `info ioapic` (hw/intc/ioapic_common.c) lays each redirection entry
// out the same way: pin, raw entry, destination, vector, polarity, trigger,
// mask, delivery and destination mode.
std::string MachineMonitor::info_ioapic() {
  static constexpr const char* kDelivery[] = {"fixed", "lowest", "SMI", "...", "NMI", "INIT", "...", "extINT"};
  const IoApic& ioapic = machine_.board().ioapic();
  std::string out = fmt::format("ioapic0: ver=0x20 id=0x{:02x}\n", ioapic.id());
  for (unsigned pin = 0; pin < ioapic::kPins; ++pin) {
    const uint64_t entry = ioapic.redirection(pin);
    const bool logical = entry & (1u << 11);
    out += fmt::format("  pin {:<2} 0x{:016x} dest={:x} vec={:<3} {} {:<5} {:<6} {:<6} {}\n", pin, entry,
                       (entry >> 56) & (logical ? 0xff : 0xf), entry & 0xff,
                       entry & (1u << 13) ? "active-lo" : "active-hi", entry & (1u << 15) ? "level" : "edge",
                       entry & (1u << 16) ? "masked" : "", kDelivery[(entry >> 8) & 7], logical ? "logical" : "physical");
  }
  return out;
}

std::string MachineMonitor::info_topology() {
  const Topology& topology = machine_.topology();
  const ConsumerView linux = decode_as(Consumer::Linux6, raw_cpuid_of(machine_.cpuid(), "topolab"));
  std::string out = fmt::format("{} ({} vCPUs); caches shared as Linux 6.x reads CPUID\n", topology.describe(),
                                machine_.vcpu_count());
  out += "CPU  APIC ID  package die module core thread  shares\n";
  for (unsigned i = 0; i < machine_.vcpu_count(); ++i) {
    const CpuCoords c = topology.coords_of(i);
    std::string shares;
    for (const CacheView& cache : linux.caches) {
      for (const std::vector<unsigned>& group : cache.groups)
        if (std::find(group.begin(), group.end(), i) != group.end())
          shares += fmt::format("{}{} {}", shares.empty() ? "" : ", ", cache.name(), format_cpu_list(group));
    }
    out += fmt::format("{:<4} {:<8} {:<7} {:<3} {:<6} {:<4} {:<6}  {}\n", i, fmt::format("{:#x}", topology.apic_id(i)),
                       c.package, c.die, c.module, c.core, c.thread, shares.empty() ? "-" : shares);
  }
  return out + format_numa_table(machine_.config().numa, topology);
}

std::string MachineMonitor::info_ipis() {
  const Stats& stats = machine_.stats();
  std::string out = "CPU  IPIs sent  received  received halted  HLT exits\n";
  for (unsigned i = 0; i < machine_.vcpu_count(); ++i) {
    const VcpuStats& s = stats.vcpu(i);
    out += fmt::format("{:<4} {:<10} {:<9} {:<16} {}\n", i, sum(s.ipis_sent), sum(s.ipis_received),
                       s.received_while_halted, s.hlt_entries);
  }
  return out;
}

std::string MachineMonitor::info_time() {
  std::string out = "CPU  virtual ns     state             next event\n";
  for (unsigned i = 0; i < machine_.vcpu_count(); ++i) {
    const MachineCpu& cpu = machine_.cpu(i);
    const std::optional<uint64_t> timer = cpu.apic().next_timer_event();
    out += fmt::format("{:<4} {:<13} {:<17} {}\n", i, cpu.now(), cpu.describe_state(),
                       timer ? fmt::format("APIC timer at {} ns", *timer) : "none");
  }
  return out;
}

// Snapshots are the debugger's: named points of history (emu/machine_debug.h).
std::string MachineMonitor::snapshot_save(std::string_view name) { return snapshots_.save_snapshot(name); }
std::string MachineMonitor::snapshot_load(std::string_view name) { return snapshots_.load_snapshot(name); }
std::string MachineMonitor::snapshot_list() { return snapshots_.list_snapshots(); }

size_t MachineMonitor::read_physical(uint64_t address, std::span<uint8_t> out) {
  // Up to the end of the RAM region `address` is in: the bytes after it are
  // not RAM (a gap, or above the top).
  const GuestRam& ram = machine_.ram();
  size_t n = 0;
  while (n < out.size() && ram.is_ram(address + n, 1)) ++n;
  if (n) std::memcpy(out.data(), ram.bytes(address, n).data(), n);
  return n;
}

}  // namespace topolab::cli
