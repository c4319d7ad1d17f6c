// SPDX-License-Identifier: GPL-2.0-or-later
// The caches and the scheduler's LLC as each consumer decodes them; the
// topology half is consumer_views.cc.
#include <algorithm>

#include <fmt/format.h>

#include "lab/consumer_views.h"

namespace topolab {

namespace {

constexpr unsigned kMaxCacheSubleaves = 16;

struct CacheLeaf {
  unsigned index = 0;  // subleaf
  unsigned level = 0;
  char kind = 'u';
  unsigned sharing = 1;  // 1 + EAX[25:14]
};

// Leaf 4 or 0x8000001D of one CPU, until the type-0 subleaf.
std::vector<CacheLeaf> read_cache_leaf(const RawCpuLeaves& l, uint32_t leaf) {
  std::vector<CacheLeaf> out;
  for (unsigned sub = 0; sub < kMaxCacheSubleaves; ++sub) {
    uint32_t eax = l.get(leaf, sub).eax;
    unsigned type = eax & 0x1f;
    if (type == 0) break;
    out.push_back({sub, (eax >> 5) & 7, type == 1 ? 'd' : type == 2 ? 'i' : 'u', ((eax >> 14) & 0xfff) + 1});
  }
  return out;
}

// One cache, from each CPU's key for it: CPUs with equal keys share it.
CacheView cache_from_keys(const CacheLeaf& c, const std::vector<uint64_t>& keys) {
  return {c.level, c.kind, c.sharing, group_by_key(keys)};
}

// Linux: Intel's leaf 4 with cpuid4_cache_lookup and the shift rule of
// __cache_cpumap_setup() (apicid >> get_count_order(sharing)); AMD with
// TOPOEXT 0x8000001D with __cache_amd_cpumap_setup()'s range rule
// (apicid - apicid % sharing); on AMD the L3 (index 3) takes the LLC mask.
void linux_caches(const RawCpuid& raw, ConsumerView& v, bool amd, bool topoext) {
  const uint32_t leaf = amd ? 0x8000001D : 0x4;
  auto list = read_cache_leaf(raw.cpus[0], leaf);
  for (const CacheLeaf& c : list) {
    if (amd && c.index == 3) {
      v.caches.push_back({c.level, c.kind, c.sharing, v.llc});
      continue;
    }
    std::vector<uint64_t> keys;
    for (unsigned cpu = 0; cpu < raw.cpus.size(); ++cpu) {
      auto own = read_cache_leaf(raw.cpus[cpu], leaf);
      unsigned n = c.index < own.size() ? own[c.index].sharing : 1;
      uint64_t apic = v.apic_ids[cpu];
      keys.push_back(amd && topoext ? apic / n : apic >> bit_width_for_count(n));
    }
    v.caches.push_back(cache_from_keys(c, keys));
  }
}

// amd_cpuid4() without TOPOEXT: L1 and L2 private, the L3 the LLC mask.
void linux_amd_legacy_caches(const RawCpuid& raw, ConsumerView& v) {
  const RawCpuLeaves& l = raw.cpus[0];
  if (l.max_extended_leaf() < 0x80000006) return;
  std::vector<uint64_t> own(raw.cpus.size());
  for (unsigned cpu = 0; cpu < own.size(); ++cpu) own[cpu] = cpu;
  if (l.get(0x80000005).ecx >> 24) v.caches.push_back({1, 'd', 1, group_by_key(own)});
  if (l.get(0x80000005).edx >> 24) v.caches.push_back({1, 'i', 1, group_by_key(own)});
  if (l.get(0x80000006).ecx >> 16) v.caches.push_back({2, 'u', 1, group_by_key(own)});
  if (l.get(0x80000006).edx) v.caches.push_back({3, 'u', 0, v.llc});
}

// The LLC of Linux's scheduler (cpu_llc_id, cpus_share_cache()):
// - Intel: the L3 of leaf 4 if there is one, else the L2;
// - AMD (cacheinfo_amd_init_llc_id()): no L3 in 0x80000006 leaves the
//   package/die; before family 0x17 the node; Zen 1 (family 0x17, model
//   <= 0x1F) the core complex, APIC ID >> 3; later the L3 of 0x8000001D.
void linux_llc(const RawCpuid& raw, ConsumerView& v, const CpuIdentity& id) {
  v.has_llc = true;
  auto by_shift_of = [&](unsigned level, uint32_t leaf) -> bool {
    std::vector<uint64_t> keys;
    for (unsigned cpu = 0; cpu < raw.cpus.size(); ++cpu) {
      const CacheLeaf* found = nullptr;
      auto own = read_cache_leaf(raw.cpus[cpu], leaf);
      for (const auto& c : own)
        if (c.level == level && c.kind != 'i') found = &c;
      if (!found) return false;
      keys.push_back(uint64_t{v.apic_ids[cpu]} >> bit_width_for_count(found->sharing));
    }
    v.llc = group_by_key(keys);
    return true;
  };
  const RawCpuLeaves& l = raw.cpus[0];
  if (id.amd) {
    bool l3 = id.max_extended >= 0x80000006 && l.get(0x80000006).edx != 0;
    if (l3 && id.family == 0x17 && id.model <= 0x1f) {
      std::vector<uint64_t> keys;
      for (uint32_t apic : v.apic_ids) keys.push_back(apic >> 3);
      v.llc = group_by_key(keys);
      v.llc_rule = "the core complex (APIC ID >> 3): Zen 1";
      return;
    }
    if (l3 && id.family > 0x17 && id.topoext && by_shift_of(3, 0x8000001D)) {
      v.llc_rule = "the L3 of leaf 0x8000001D";
      return;
    }
    v.llc = v.groups(Level::Die);
    v.llc_rule = !l3 ? "the die: no L3 in 0x80000006" : "the node (die): AMD before family 0x17";
    return;
  }
  if (id.max_basic >= 4 && by_shift_of(3, 4)) v.llc_rule = "the L3 of leaf 4";
  else if (id.max_basic >= 4 && by_shift_of(2, 4)) v.llc_rule = "the L2 of leaf 4 (no L3 reported)";
  else v.llc = v.groups(Level::Die), v.llc_rule = "the die: no LLC reported";
}

// hwloc: the cache ID is the APIC ID masked to the sharing count rounded
// up to a power of two on Intel, divided by it on AMD (with the L3 count
// rounded up on family >= 0x17); caches are grouped within a package.
uint64_t hwloc_cache_id(const CpuIdentity& id, const CacheLeaf& c, uint32_t apic) {
  if (!id.amd) return apic & ~((1ull << bit_width_for_count(c.sharing)) - 1);
  unsigned n = c.sharing;
  if (id.family >= 0x17 && c.level == 3 && (n & (n - 1))) n = 1u << (1 + __builtin_ctz(n) + 1);
  return apic / n;
}

std::vector<CacheLeaf> hwloc_amd_legacy_caches(const RawCpuLeaves& l) {
  std::vector<CacheLeaf> out;
  if (l.max_extended_leaf() < 0x80000006) return out;
  unsigned nproc = (l.get(1).ebx >> 16) & 0xff;
  unsigned legacy = (l.get(1).edx & (1u << 28)) && nproc > 1 ? 1u << bit_width_for_count(nproc) : 1;
  if (l.get(0x80000005).ecx >> 24) out.push_back({0, 1, 'd', 1});
  if (l.get(0x80000005).edx >> 24) out.push_back({1, 1, 'i', 1});
  if (l.get(0x80000006).ecx & 0xf000) out.push_back({2, 2, 'u', 1});
  if (l.get(0x80000006).edx & 0xf000) out.push_back({3, 3, 'u', legacy});
  return out;
}

void hwloc_caches(const RawCpuid& raw, ConsumerView& v, const CpuIdentity& id0) {
  auto list_of = [&](const RawCpuLeaves& l) {
    CpuIdentity id = identify(l);
    if (id.amd && id.topoext) return read_cache_leaf(l, 0x8000001D);
    if (id.amd) return hwloc_amd_legacy_caches(l);
    return id.max_basic >= 4 ? read_cache_leaf(l, 4) : std::vector<CacheLeaf>{};
  };
  auto list = list_of(raw.cpus[0]);
  for (size_t i = 0; i < list.size(); ++i) {
    std::vector<uint64_t> keys;
    for (unsigned cpu = 0; cpu < raw.cpus.size(); ++cpu) {
      auto own = list_of(raw.cpus[cpu]);
      const CacheLeaf& c = i < own.size() ? own[i] : list[i];
      // (package, cache ID): summarize() looks for sharers in the package.
      keys.push_back(v.keys[0][cpu] << 32 ^ hwloc_cache_id(id0, c, v.apic_ids[cpu]));
    }
    v.caches.push_back(cache_from_keys(list[i], keys));
  }
}

}  // namespace

void decode_caches(const RawCpuid& raw, ConsumerView& v) {
  if (v.consumer == Consumer::Edk2) return;  // MpInitLib places CPUs; it reads no caches
  v.reads_caches = true;
  CpuIdentity id = identify(raw.cpus[0]);
  if (v.consumer == Consumer::Hwloc) {
    hwloc_caches(raw, v, id);
    return;
  }
  linux_llc(raw, v, id);
  if (id.amd && !id.topoext) linux_amd_legacy_caches(raw, v);
  else if (id.amd ? id.max_extended >= 0x8000001D : id.max_basic >= 4) linux_caches(raw, v, id.amd, id.topoext);
}

}  // namespace topolab
