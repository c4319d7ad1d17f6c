// SPDX-License-Identifier: GPL-2.0-or-later
#include "base/memory_map.h"

#include <stdexcept>

#include <fmt/format.h>

namespace topolab::memory_map {

namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

uint64_t gib_round_up(uint64_t bytes) { return (bytes + kGiB - 1) / kGiB * kGiB; }

}  // namespace

RamSplit pc_ram_split(uint64_t ram_bytes) {
  // pc_init1 with max-ram-below-4g at its default and gigabyte_align set:
  // a machine that must split at all splits at 3 GiB.
  const uint64_t low_limit = ram_bytes >= kMaxRamBelow4g ? kGigabyteAlignedRamBelow4g : kMaxRamBelow4g;
  if (ram_bytes >= low_limit) return {low_limit, ram_bytes - low_limit};
  return {ram_bytes, 0};
}

std::vector<RamRegion> pc_ram_regions(uint64_t ram_bytes) {
  const RamSplit split = pc_ram_split(ram_bytes);
  std::vector<RamRegion> regions{{0, split.below_4g}};
  if (split.above_4g) regions.push_back({k4GiB, split.above_4g});
  return regions;
}

uint64_t pc_max_used_address(uint64_t ram_bytes) {
  // pc_pci_hole64_start: the end of RAM above 4 GiB (above_4g_mem_start,
  // 4 GiB, when there is none), rounded up to a GiB.
  return gib_round_up(k4GiB + pc_ram_split(ram_bytes).above_4g) + kPciHole64Bytes - 1;
}

std::string ram_size_problem(uint64_t ram_mib, unsigned phys_bits) {
  if (ram_mib > kMaxRamMib)
    return fmt::format("-m {}M: topolab's engine addresses {} bits of guest-physical memory, so RAM ends by 1 TiB: "
                       "at most {} MiB with the 1 GiB gap below 4 GiB",
                       ram_mib, kEnginePhysBits, kMaxRamMib);
  const uint64_t ram_bytes = ram_mib << 20;
  const uint64_t limit = phys_bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << phys_bits) - 1;
  const std::vector<RamRegion> regions = pc_ram_regions(ram_bytes);
  const uint64_t used = phys_bits > 32 ? pc_max_used_address(ram_bytes) : regions.back().end() - 1;
  if (used > limit)
    return fmt::format("-m {}M: address space limit {:#x} < {:#x} phys-bits too low ({}): RAM ends at {:#x}{}; "
                       "raise -cpu ...,phys-bits= or lower -m",
                       ram_mib, limit, used, phys_bits, regions.back().end(),
                       phys_bits > 32 ? " and QEMU's 2 GiB 64-bit PCI window follows it" : "");
  return "";
}

std::vector<E820Region> e820_regions(std::span<const RamRegion> ram) {
  if (ram.empty() || ram.front().base != 0 || ram.front().end() <= kFirstMiB)
    throw std::invalid_argument("the e820 map needs RAM from 0 past the first MiB");
  std::vector<E820Region> out{{0, kEbdaBase, kE820Ram},
                              {kEbdaBase, kEbdaSize, kE820Reserved},
                              {kBiosAreaBase, kBiosAreaSize, kE820Reserved},
                              {kFirstMiB, ram.front().end() - kFirstMiB, kE820Ram}};
  for (const RamRegion& r : ram.subspan(1)) out.push_back({r.base, r.size, kE820Ram});
  return out;
}

}  // namespace topolab::memory_map
