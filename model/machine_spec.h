// SPDX-License-Identifier: GPL-2.0-or-later
// A machine as QEMU's command line names it (-smp, -cpu, -machine), as the
// user typed it, and the one place those strings become the model's types.
// Every command that builds a machine or a topology (run, cpuid, cpuid
// --diff, check, the demo, the QEMU front, the experiments) goes through
// parse_machine_spec(), so an option one of them takes cannot be silently
// dropped by another. -numa is not here: topolab builds no SRAT yet, and
// the QEMU front refuses it by name.
#pragma once

#include <string>
#include <string_view>

#include "model/cpu_model.h"
#include "model/cpuid.h"
#include "model/topology.h"

namespace topolab {

struct MachineSpec {
  std::string smp = "1";  // QEMU's defaults
  std::string cpu = "qemu64";
  std::string machine;  // -machine; empty: QEMU's default (only smp-cache changes CPUID)

  bool operator==(const MachineSpec&) const = default;
  // "-smp 16,cores=8 -cpu EPYC", with " -machine ..." when one was given:
  // what reports and diffs call the machine.
  std::string label() const;
};

// What a MachineSpec describes, in the model's types.
struct ParsedMachine {
  Topology topology;
  CpuConfig cpu;
  MachineOptions machine_options;

  CpuidModel cpuid_model() const { return CpuidModel(topology, cpu, machine_options); }
};

// Parses -smp, then -cpu, then -machine. Throws ConfigError (the model's
// parsers' one-line messages).
ParsedMachine parse_machine_spec(const MachineSpec& spec);

// A machine written as one string of QEMU options, as `cpuid --diff` takes
// each side: "-smp 16,cores=8 -cpu EPYC -machine smp-cache.0.cache=l3,...".
// Each option is spelled with one dash or two, its value the next word or
// after "=". Throws ConfigError naming `option` and `text` for anything else.
MachineSpec parse_machine_words(std::string_view text, std::string_view option);

}  // namespace topolab
