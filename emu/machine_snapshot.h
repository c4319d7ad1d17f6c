// SPDX-License-Identifier: GPL-2.0-or-later
// Whole-machine snapshots: taken between two slices, written to a file
// (`topolab run --snapshot-at VTIME FILE`) and resumed from it (`topolab
// run ... --resume FILE`), or kept in memory by the debugger.
//
// What one holds: the machine's state (Machine::serialize: the devices,
// every vCPU with its APIC and engine, the timeline, the clocks, the
// statistics, the activity and the measuring window), its RAM, and the
// guest's output so far, so that a resumed run prints and reports exactly
// what the run that was never stopped does.
//
// What it does not hold: the configuration and the files booted. A snapshot
// is resumed by a machine built from the same command line, as QEMU's
// -loadvm is; its fingerprint (machine_fingerprint) names the configuration
// and the memory the machine started with, and a snapshot made by another
// configuration, another build or another format is refused in one line
// that says what differs.
//
// The file and its checks: emu/snapshot_file.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/guest_ram.h"
#include "emu/snapshot_file.h"

namespace topolab {

class Machine;

// The fingerprint of a machine built and not yet run: the build, the
// topology, the CPU and -machine, -m, the command line, the time limit,
// the quantum, the cost model, spin skipping, the clocks, the devices, a
// digest of every vCPU's CPUID and one of the RAM as the machine starts it
// (the image, the initrd and the firmware tables in place).
MachineFingerprint machine_fingerprint(const Machine& machine);

// The first line that differs, as "CPU: the snapshot's qemu64, this
// run's host"; empty when they agree.
std::string fingerprint_difference(const MachineFingerprint& snapshot, const MachineFingerprint& now);

// Takes `machine`'s state (between slices) and its RAM.
MachineSnapshot take_snapshot(Machine& machine, MachineFingerprint fingerprint, std::string output);

// Puts `snapshot` into `machine`, built from the same configuration (its
// fingerprint checked already) and not yet run. Throws InputError with
// one line when the state does not fit this build.
void restore_snapshot(Machine& machine, const MachineSnapshot& snapshot);

}  // namespace topolab
