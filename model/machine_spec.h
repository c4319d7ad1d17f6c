// SPDX-License-Identifier: GPL-2.0-or-later
// A machine as QEMU's command line names it (-smp, -cpu, -machine), as the
// user typed it, and the one place those strings become the model's types.
// Every command that builds a machine or a topology (run, cpuid, cpuid
// --diff, check, the demo, the QEMU front, the experiments) goes through
// parse_machine_spec(), so an option one of them takes cannot be silently
// dropped by another. -m is here because NUMA nodes must add up to it.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/cpu_model.h"
#include "model/cpuid.h"
#include "model/numa.h"
#include "model/topology.h"

namespace topolab {

// QEMU's default -m.
inline constexpr uint64_t kDefaultRamMib = 128;

struct MachineSpec {
  // QEMU's defaults; the rest are added as given.
  MachineSpec(std::string smp_arg = "1", std::string cpu_arg = "qemu64", std::string machine_arg = {})
      : smp(std::move(smp_arg)), cpu(std::move(cpu_arg)), machine(std::move(machine_arg)) {}

  std::string smp;
  std::string cpu;
  std::string machine;  // -machine; empty: QEMU's default (only smp-cache changes CPUID)
  std::string memory;   // -m; empty: QEMU's 128 MiB
  std::vector<std::string> numa;     // each -numa, in order
  std::vector<std::string> objects;  // each -object (the memory backends -numa names)

  bool operator==(const MachineSpec&) const = default;
  // "-smp 16,cores=8 -cpu EPYC", with " -machine ...", " -m ...",
  // " -object ..." and " -numa ..." when given: what reports and diffs call
  // the machine.
  std::string label() const;
};

// What a MachineSpec describes, in the model's types.
struct ParsedMachine {
  Topology topology;
  CpuConfig cpu;
  MachineOptions machine_options;
  uint64_t ram_mib = kDefaultRamMib;
  NumaConfig numa;

  CpuidModel cpuid_model() const { return CpuidModel(topology, cpu, machine_options); }
};

// Parses -smp, then -cpu, then -machine, then -m, then the -object and
// -numa options against the topology and the RAM size. Throws ConfigError
// (the model's parsers' one-line messages).
ParsedMachine parse_machine_spec(const MachineSpec& spec);

// A machine written as one string of QEMU options, as `cpuid --diff` takes
// each side: "-smp 16,cores=8 -cpu EPYC -machine smp-cache.0.cache=l3,...",
// with -m, and -object and -numa as often as needed.
// Each option is spelled with one dash or two, its value the next word or
// after "=". Throws ConfigError naming `option` and `text` for anything else.
MachineSpec parse_machine_words(std::string_view text, std::string_view option);

}  // namespace topolab
