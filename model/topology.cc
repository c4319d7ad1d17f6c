// SPDX-License-Identifier: GPL-2.0-or-later
#include "model/topology.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace topolab {

const char* kind_letter(CoreType type) { return type == CoreType::Core ? "P" : "E"; }

unsigned bit_width_for_count(unsigned n) {
  unsigned width = 0;
  while ((1u << width) < n) ++width;
  return width;
}

namespace {

constexpr std::string_view kSmpKeys[] = {"cpus",      "maxcpus",   "sockets",   "dies",    "clusters",
                                         "modules",   "cores",     "threads",   "p-modules", "p-cores",
                                         "p-threads", "e-modules", "e-cores",   "e-threads"};
// The hybrid spelling: per kind of module, modules per die, cores per module
// and threads per core (docs/topology.md).
struct HybridKeys {
  CoreType type;
  std::string_view modules, cores, threads;
};
constexpr HybridKeys kHybridKeys[] = {{CoreType::Core, "p-modules", "p-cores", "p-threads"},
                                      {CoreType::Atom, "e-modules", "e-cores", "e-threads"}};

std::string known_smp_keys() {
  std::string names;
  for (auto k : kSmpKeys) names += fmt::format("{}{}", names.empty() ? "" : ", ", k);
  return names;
}

const HybridKeys& hybrid_keys(CoreType type) { return type == CoreType::Core ? kHybridKeys[0] : kHybridKeys[1]; }

unsigned parse_count(std::string_view key, std::string_view text) {
  unsigned value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    throw ConfigError(fmt::format("-smp: {} expects a whole number, got '{}'", key, text));
  // QEMU 7.2 rejects an explicit 0 for every parameter (machine-smp.c).
  if (value == 0) throw ConfigError(fmt::format("-smp: {}=0: CPU topology parameters must be greater than zero", key));
  if (value > Topology::kMaxCpus)
    throw ConfigError(fmt::format("-smp: {}={} is more than the {} CPUs topolab supports", key, value, Topology::kMaxCpus));
  return value;
}

std::map<std::string_view, unsigned> split_smp(std::string_view smp) {
  std::map<std::string_view, unsigned> given;
  bool first = true;
  while (true) {
    size_t comma = smp.find(',');
    std::string_view item = smp.substr(0, comma);
    size_t eq = item.find('=');
    std::string_view key = eq == std::string_view::npos ? std::string_view{} : item.substr(0, eq);
    std::string_view value = eq == std::string_view::npos ? item : item.substr(eq + 1);
    if (key.empty()) {
      // Only the first item may be a bare number: the CPU count.
      if (!first || eq != std::string_view::npos)
        throw ConfigError(fmt::format("-smp: '{}' is not of the form key=value", item));
      key = "cpus";
    }
    bool known = false;
    for (auto k : kSmpKeys) known |= (k == key);
    if (!known) throw ConfigError(fmt::format("-smp: unknown parameter '{}' (expected {})", key, known_smp_keys()));
    if (given.count(key)) throw ConfigError(fmt::format("-smp: {} is given twice", key));
    given[key] = parse_count(key, value);
    first = false;
    if (comma == std::string_view::npos) break;
    smp.remove_prefix(comma + 1);
  }
  return given;
}

using SmpItems = std::map<std::string_view, unsigned>;

unsigned given_count(const SmpItems& given, std::string_view key) {
  auto it = given.find(key);
  return it == given.end() ? 0u : it->second;
}

bool is_hybrid_spelling(const SmpItems& given) {
  for (const auto& k : kHybridKeys)
    if (given.count(k.modules) || given.count(k.cores) || given.count(k.threads)) return true;
  return false;
}

// The hybrid spelling names every count (nothing is derived): each kind
// exists when its modules are given; cores and threads default to 1.
Topology parse_hybrid(const SmpItems& given) {
  for (std::string_view uniform : {"modules", "cores", "threads"})
    if (given.count(uniform))
      throw ConfigError(fmt::format("-smp: {}= cannot be combined with the hybrid p-/e- counts (p-cores= and e-cores= "
                                    "give the cores per module)",
                                    uniform));
  std::vector<ModuleKind> kinds;
  for (const auto& k : kHybridKeys) {
    if (!given.count(k.modules)) {
      for (std::string_view inner : {k.cores, k.threads})
        if (given.count(inner)) throw ConfigError(fmt::format("-smp: {} needs {}", inner, k.modules));
      continue;
    }
    kinds.push_back({k.type, given_count(given, k.modules), std::max(1u, given_count(given, k.cores)),
                     std::max(1u, given_count(given, k.threads))});
  }
  unsigned sockets = std::max(1u, given_count(given, "sockets")), dies = std::max(1u, given_count(given, "dies"));
  uint64_t per_die = 0;
  for (const auto& k : kinds) per_die += uint64_t{k.modules} * k.cores * k.threads;
  uint64_t product = uint64_t{sockets} * dies * per_die;
  if (product > Topology::kMaxCpus)
    throw ConfigError(fmt::format("-smp: the hybrid topology has {} CPUs, more than the {} topolab supports", product,
                                  Topology::kMaxCpus));
  unsigned cpus = given_count(given, "cpus"), maxcpus = given_count(given, "maxcpus");
  // As QEMU: a missing maxcpus is the CPU count, a missing CPU count the
  // whole hierarchy.
  maxcpus = maxcpus ? maxcpus : cpus ? cpus : static_cast<unsigned>(product);
  if (maxcpus != product)
    throw ConfigError(fmt::format("-smp: invalid CPU topology: the hybrid hierarchy has {} CPUs but must equal maxcpus ({})",
                                  product, maxcpus));
  if (cpus > maxcpus)
    throw ConfigError(fmt::format("-smp: maxcpus ({}) must be at least the number of CPUs ({})", maxcpus, cpus));
  return Topology::hybrid(sockets, dies, std::move(kinds), cpus);
}

}  // namespace

Topology Topology::parse(std::string_view smp) {
  if (smp.empty()) throw ConfigError("-smp: empty argument");
  auto given = split_smp(smp);
  // QEMU's x86 machines have no cluster level (hw/core/machine-smp.c:
  // clusters_supported is false): clusters=1 is accepted, more is refused.
  if (given_count(given, "clusters") > 1)
    throw ConfigError("-smp: clusters not supported by this machine's CPU topology (x86 names that level modules)");
  if (is_hybrid_spelling(given)) return parse_hybrid(given);
  auto get = [&](std::string_view k) { return given_count(given, k); };
  unsigned cpus = get("cpus"), maxcpus = get("maxcpus");
  unsigned sockets = get("sockets"), dies = get("dies"), modules = get("modules");
  unsigned cores = get("cores"), threads = get("threads");

  // Fill in what is missing exactly as QEMU 7.2's machine_parse_smp_config
  // does for machine types since 6.2, which prefer cores over sockets.
  // Products are 64-bit: each count may be up to 4,096, and four of them
  // overflow 32 bits (and would divide by zero).
  dies = dies ? dies : 1;
  modules = modules ? modules : 1;
  auto quotient = [](uint64_t total, uint64_t divisor) { return static_cast<unsigned>(total / divisor); };
  if (cpus == 0 && maxcpus == 0) {
    sockets = sockets ? sockets : 1;
    cores = cores ? cores : 1;
    threads = threads ? threads : 1;
  } else {
    maxcpus = maxcpus ? maxcpus : cpus;
    if (cores == 0) {
      sockets = sockets ? sockets : 1;
      threads = threads ? threads : 1;
      cores = quotient(maxcpus, uint64_t{sockets} * dies * modules * threads);
    } else if (sockets == 0) {
      threads = threads ? threads : 1;
      sockets = quotient(maxcpus, uint64_t{dies} * modules * cores * threads);
    }
    if (threads == 0) threads = quotient(maxcpus, uint64_t{sockets} * dies * modules * cores);
  }
  uint64_t product = uint64_t{sockets} * dies * modules * cores * threads;
  if (maxcpus == 0 && product > kMaxCpus)
    throw ConfigError(fmt::format(
        "-smp: sockets ({}) * dies ({}) * modules ({}) * cores ({}) * threads ({}) = {} CPUs, more than the {} topolab "
        "supports",
        sockets, dies, modules, cores, threads, product, kMaxCpus));
  maxcpus = maxcpus ? maxcpus : static_cast<unsigned>(product);
  cpus = cpus ? cpus : maxcpus;

  if (product != maxcpus)
    throw ConfigError(fmt::format(
        "-smp: invalid CPU topology: sockets ({}) * dies ({}) * modules ({}) * cores ({}) * threads ({}) = {} "
        "but must equal maxcpus ({})",
        sockets, dies, modules, cores, threads, product, maxcpus));
  if (maxcpus < cpus)
    throw ConfigError(fmt::format("-smp: maxcpus ({}) must be at least the number of CPUs ({})", maxcpus, cpus));
  if (maxcpus > kMaxCpus)
    throw ConfigError(fmt::format("-smp: {} CPUs is more than the {} topolab supports", maxcpus, kMaxCpus));
  return Topology({sockets, dies, modules, cores, threads}, cpus);
}

Topology Topology::from_counts(Counts counts, unsigned cpus) {
  uint64_t product = uint64_t{counts.sockets} * counts.dies * counts.modules * counts.cores * counts.threads;
  if (product == 0) throw ConfigError("topology: every count must be at least 1");
  if (product > kMaxCpus) throw ConfigError(fmt::format("topology: {} CPUs is more than the {} topolab supports", product, kMaxCpus));
  if (cpus > product) throw ConfigError(fmt::format("topology: {} CPUs do not fit in a hierarchy of {}", cpus, product));
  return Topology(counts, cpus ? cpus : static_cast<unsigned>(product));
}

Topology Topology::hybrid(unsigned sockets, unsigned dies, std::vector<ModuleKind> kinds, unsigned cpus) {
  uint64_t per_die = 0;
  for (const auto& k : kinds) {
    if (k.modules == 0 || k.cores == 0 || k.threads == 0) throw ConfigError("topology: every count must be at least 1");
    per_die += uint64_t{k.modules} * k.threads_per_module();
  }
  if (kinds.empty() || sockets == 0 || dies == 0) throw ConfigError("-smp: a hybrid topology needs p-modules or e-modules");
  uint64_t product = uint64_t{sockets} * dies * per_die;
  if (product > kMaxCpus) throw ConfigError(fmt::format("topology: {} CPUs is more than the {} topolab supports", product, kMaxCpus));
  if (cpus > product) throw ConfigError(fmt::format("topology: {} CPUs do not fit in a hierarchy of {}", cpus, product));
  return Topology(sockets, dies, std::move(kinds), true, cpus ? cpus : static_cast<unsigned>(product));
}

Topology::Topology(Counts counts, unsigned cpus)
    : Topology(counts.sockets, counts.dies, {{CoreType::Core, counts.modules, counts.cores, counts.threads}}, false, cpus) {}

Topology::Topology(unsigned sockets, unsigned dies, std::vector<ModuleKind> kinds, bool hybrid, unsigned cpus)
    : kinds_(std::move(kinds)), hybrid_(hybrid), cpus_(cpus) {
  counts_ = {sockets, dies, 0, 1, 1};
  threads_per_die_ = 0;
  for (const auto& k : kinds_) {
    counts_.modules += k.modules;
    counts_.cores = std::max(counts_.cores, k.cores);
    counts_.threads = std::max(counts_.threads, k.threads);
    threads_per_die_ += k.modules * k.threads_per_module();
  }
  max_cpus_ = sockets * dies * threads_per_die_;
  core_offset_ = bit_width_for_count(counts_.threads);
  module_offset_ = core_offset_ + bit_width_for_count(counts_.cores);
  die_offset_ = module_offset_ + bit_width_for_count(counts_.modules);
  package_offset_ = die_offset_ + bit_width_for_count(counts_.dies);
}

const ModuleKind& Topology::kind_of_module(unsigned module) const {
  for (const auto& k : kinds_) {
    if (module < k.modules) return k;
    module -= k.modules;
  }
  throw std::out_of_range(fmt::format("module {} outside 0..{}", module, counts_.modules - 1));
}

const ModuleKind& Topology::kind_of_type(CoreType type) const {
  for (const auto& k : kinds_)
    if (k.type == type) return k;
  throw std::out_of_range(fmt::format("no {}-modules in this topology", kind_letter(type)));
}

bool Topology::has_core_type(CoreType type) const {
  return std::any_of(kinds_.begin(), kinds_.end(), [type](const ModuleKind& k) { return k.type == type; });
}

CpuCoords Topology::coords_of(unsigned index) const {
  if (index >= max_cpus_) throw std::out_of_range(fmt::format("CPU index {} outside 0..{}", index, max_cpus_ - 1));
  // Mixed-radix decomposition over the real counts (QEMU
  // x86_topo_ids_from_idx), kind by kind inside the die: with one kind this
  // is the plain decomposition.
  CpuCoords c;
  unsigned in_die = index % threads_per_die_, die_index = index / threads_per_die_;
  c.die = die_index % counts_.dies;
  c.package = die_index / counts_.dies;
  unsigned first_module = 0;
  for (const auto& k : kinds_) {
    unsigned span = k.modules * k.threads_per_module();
    if (in_die < span) {
      c.module = first_module + in_die / k.threads_per_module();
      c.core = in_die % k.threads_per_module() / k.threads;
      c.thread = in_die % k.threads;
      break;
    }
    in_die -= span;
    first_module += k.modules;
  }
  return c;
}

unsigned Topology::index_of(const CpuCoords& c) const {
  unsigned in_die = 0, first_module = 0;
  for (const auto& k : kinds_) {
    if (c.module < first_module + k.modules) {
      in_die += (c.module - first_module) * k.threads_per_module() + c.core * k.threads + c.thread;
      break;
    }
    in_die += k.modules * k.threads_per_module();
    first_module += k.modules;
  }
  return (c.package * counts_.dies + c.die) * threads_per_die_ + in_die;
}

uint32_t Topology::apic_id_of(const CpuCoords& c) const {
  return (c.package << package_offset_) | (c.die << die_offset_) | (c.module << module_offset_) |
         (c.core << core_offset_) | c.thread;
}

std::optional<CpuCoords> Topology::coords_of_apic_id(uint32_t id) const {
  auto field = [id](unsigned lo, unsigned hi) { return (id >> lo) & ((1u << (hi - lo)) - 1); };
  CpuCoords c;
  c.thread = field(0, core_offset_);
  c.core = field(core_offset_, module_offset_);
  c.module = field(module_offset_, die_offset_);
  c.die = field(die_offset_, package_offset_);
  c.package = package_offset_ >= 32 ? 0 : id >> package_offset_;
  if (c.module >= counts_.modules || c.die >= counts_.dies || c.package >= counts_.sockets) return std::nullopt;
  // Each kind of module has its own counts: the smaller kind leaves gaps.
  const ModuleKind& kind = kind_of_module(c.module);
  if (c.thread >= kind.threads || c.core >= kind.cores) return std::nullopt;
  return c;
}

std::optional<unsigned> Topology::index_of_apic_id(uint32_t id) const {
  auto c = coords_of_apic_id(id);
  if (!c) return std::nullopt;
  unsigned index = index_of(*c);
  if (index >= cpus_) return std::nullopt;
  return index;
}

std::string Topology::describe() const {
  auto plural = [](unsigned n, const char* what) { return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s"); };
  std::vector<std::string> parts{counts_.sockets == 1 ? "1 socket" : plural(counts_.sockets, "socket")};
  if (counts_.dies > 1) parts.push_back(plural(counts_.dies, "die"));
  if (hybrid_) {
    // "1 socket x [8 P-modules x 1 core x 2 threads + 2 E-modules x 4 cores x 1 thread]"
    std::vector<std::string> kinds;
    for (const auto& k : kinds_)
      kinds.push_back(fmt::format("{} {}-module{} x {} x {}", k.modules, kind_letter(k.type), k.modules == 1 ? "" : "s",
                                  plural(k.cores, "core"), plural(k.threads, "thread")));
    parts.push_back(fmt::format("[{}]", fmt::join(kinds, " + ")));
  } else {
    if (counts_.modules > 1) parts.push_back(plural(counts_.modules, "module"));
    parts.push_back(plural(counts_.cores, "core"));
    parts.push_back(plural(counts_.threads, "thread"));
  }
  std::string text = fmt::format("{}", fmt::join(parts, " x "));
  if (cpus_ != max_cpus_) text += fmt::format(" ({} of {} CPUs present)", cpus_, max_cpus_);
  return text;
}

std::string Topology::to_smp_arg() const {
  std::string arg = fmt::format("{},sockets={},dies={}", cpus_, counts_.sockets, counts_.dies);
  if (hybrid_) {
    for (const auto& k : kinds_) {
      const HybridKeys& keys = hybrid_keys(k.type);
      arg += fmt::format(",{}={},{}={},{}={}", keys.modules, k.modules, keys.cores, k.cores, keys.threads, k.threads);
    }
  } else {
    if (counts_.modules > 1) arg += fmt::format(",modules={}", counts_.modules);
    arg += fmt::format(",cores={},threads={}", counts_.cores, counts_.threads);
  }
  if (cpus_ != max_cpus_) arg += fmt::format(",maxcpus={}", max_cpus_);
  return arg;
}

}  // namespace topolab
