// SPDX-License-Identifier: GPL-2.0-or-later
// The monitor's queries (debug/monitor.h) answered from a machine, through
// the same views the reports use: the APIC's own description (--info-lapic),
// Linux 6.x's decoding of the CPUID leaves (lab/consumer_views.h, as
// `topolab check` shows it), the run's statistics. Called on the machine's
// thread, with the machine standing still.
#pragma once

#include "debug/monitor.h"
#include "emu/machine.h"
#include "emu/machine_debug.h"

namespace topolab::cli {

class MachineMonitor final : public debug::MonitorQueries {
 public:
  MachineMonitor(Machine& machine, SnapshotShelf& snapshots) : machine_(machine), snapshots_(snapshots) {}

  std::string info_cpus() override;
  std::string info_lapic(std::optional<unsigned> vcpu) override;
  std::string info_ioapic() override;
  std::string info_topology() override;
  std::string info_ipis() override;
  std::string info_time() override;
  std::string snapshot_save(std::string_view name) override;
  std::string snapshot_load(std::string_view name) override;
  std::string snapshot_list() override;
  size_t read_physical(uint64_t address, std::span<uint8_t> out) override;

 private:
  Machine& machine_;
  SnapshotShelf& snapshots_;
};

}  // namespace topolab::cli
