// SPDX-License-Identifier: GPL-2.0-or-later
// RawCpuid: the CPUID leaves of every CPU of a machine as plain data, from
// topolab's own CpuidModel or from a dump another VMM produced (Debian
// `cpuid -r`, or what testcases/smp_cpuid_dump.c prints under QEMU: the same
// format). The consumer decoders (consumer_views.h) and the lint
// (topology_lint.h) read only this, so they judge any VMM's leaves alike.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/errors.h"
#include "model/cpuid.h"
#include "model/topology.h"

namespace topolab {

// A dump that cannot be read: the message names the file and the line.
class DumpError : public InputError {
 public:
  using InputError::InputError;
};

// One CPU's leaves, keyed by (leaf, subleaf). A leaf that is not in the
// dump reads as zeros: consumers check the maximum leaf before they read.
struct RawCpuLeaves {
  std::map<std::pair<uint32_t, uint32_t>, CpuidRegs> leaves;

  CpuidRegs get(uint32_t leaf, uint32_t subleaf = 0) const;
  uint32_t max_basic_leaf() const { return get(0).eax; }
  uint32_t max_extended_leaf() const { return get(0x80000000).eax; }
};

struct RawCpuid {
  std::vector<RawCpuLeaves> cpus;  // in dump order: CPU 0 first
  std::string source;              // "-smp 4 -cpu EPYC", or the file name
  // The machine behind the leaves when topolab built them: the topology the
  // user asked for and the APIC IDs the MADT lists. A foreign dump has none.
  std::optional<Topology> topology;
};

// Every vCPU's leaves as `cpuid -r` would list them.
RawCpuid raw_cpuid_of(const CpuidModel& model, std::string source);

// Parses `cpuid -r` text: "CPU N:" headers (N counting up from 0), then lines
// "   0x00000004 0x00: eax=0x... ebx=0x... ecx=0x... edx=0x...". Other lines
// (the guest's PASS/SUMMARY lines, blank lines) are skipped; a line that
// starts like a leaf line but does not parse is an error. Throws DumpError.
RawCpuid parse_cpuid_raw_dump(std::string_view text, std::string_view name);

}  // namespace topolab
