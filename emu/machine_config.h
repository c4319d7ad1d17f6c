// SPDX-License-Identifier: GPL-2.0-or-later
// What a machine is, parsed once from the command line (or built by an
// experiment), apart from the machine itself: the command line, the
// experiments and the reports read it without emu/machine.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/platform_devices.h"
#include "model/cost_model.h"
#include "model/cpu_model.h"
#include "model/machine_spec.h"
#include "model/numa.h"
#include "model/topology.h"

namespace topolab {

// The topology and the CPU model as the model layer's types, the guest's
// files, and the run's limits.
struct MachineConfig {
  Topology topology = Topology::parse("1");  // QEMU's defaults
  CpuConfig cpu = parse_cpu("qemu64");
  MachineOptions machine_options;  // -machine: smp-cache scopes
  uint64_t ram_mib = kDefaultRamMib;
  // -numa: the nodes the SRAT and SLIT describe (none: no SRAT).
  NumaConfig numa;
  std::string image;
  // The name the guest sees as the first word of its command line; empty:
  // the image's file name, as QEMU passes it.
  std::string image_name;
  std::string append;
  std::vector<std::string> initrd;  // "PATH[ ARGS]" each, as QEMU's -initrd
  // The run ends, as an error, once every running vCPU's virtual time
  // reaches this.
  static constexpr double kMaxTimeLimitSeconds = 1e6;
  // `topolab run`'s default (--time-limit), chosen from what images need
  // (docs/reliability.md, "The default time limit"): the testcases end within
  // 0.05 s of virtual time, a Linux boot to /init and power-off within 5 s
  // (more with a benchmark), and kvm-unit-tests wait on timers for seconds
  // (the QEMU front and the experiments give 60 s too). A stuck guest is
  // diagnosed at once whatever the limit (emu/loop_watch.h), so the limit
  // only bounds a guest that stays busy for ever.
  static constexpr double kDefaultTimeLimitSeconds = 60.0;
  double time_limit_seconds = kDefaultTimeLimitSeconds;
  uint64_t quantum = 100'000;  // instructions per scheduling slice
  CostModel cost = CostModel::defaults();
  // Spin skipping (emu/pause_loop.h): a vCPU spinning at a fixed point is
  // moved to the next time anything it can observe could change, without
  // running its loop. Off: every instruction runs (and no pause-loop exits).
  bool spin_skip = true;
  // Clocks the guest reads never go back between vCPUs (emu/guest_clock.h).
  // nullopt: synced for a Linux kernel (a bzImage or a PVH vmlinux), whose
  // TSC sync check needs it, and
  // per-vCPU for a Multiboot image, as the testcases' results were made.
  std::optional<bool> synced_clocks;
  // The optional platform devices (base/platform_devices.h): isa-debug-exit
  // at 0xf4 is always there for `topolab run` (under the QEMU command line
  // only with -device isa-debug-exit, as QEMU), and so is the 8254 PIT
  // (-machine pit=off removes it); pc-testdev and pci-testdev (at 00:02.0)
  // only when asked for.
  PlatformDevices devices{PlatformDevice::IsaDebugExit, PlatformDevice::Pit};
  // The 8259s, the PIT, the BSP's LINT0 and the real-mode IVT as SeaBIOS
  // leaves them (firmware/legacy_bios.h): the QEMU front turns it on, as
  // QEMU always runs a BIOS. Off for `topolab run` and the experiments,
  // whose guests set up what they use (and whose results were made so).
  bool legacy_bios = false;
};

}  // namespace topolab
