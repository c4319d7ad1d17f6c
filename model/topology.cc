#include "model/topology.h"

#include <charconv>
#include <map>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace topolab {

unsigned bit_width_for_count(unsigned n) {
  unsigned width = 0;
  while ((1u << width) < n) ++width;
  return width;
}

namespace {

constexpr std::string_view kSmpKeys[] = {"cpus", "maxcpus", "sockets", "dies", "modules", "cores", "threads"};

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
    if (key == "clusters")
      throw ConfigError("-smp: clusters are not an x86 topology level; use modules");
    bool known = false;
    for (auto k : kSmpKeys) known |= (k == key);
    if (!known)
      throw ConfigError(fmt::format("-smp: unknown parameter '{}' (expected cpus, maxcpus, sockets, dies, modules, cores, threads)", key));
    if (given.count(key)) throw ConfigError(fmt::format("-smp: {} is given twice", key));
    given[key] = parse_count(key, value);
    first = false;
    if (comma == std::string_view::npos) break;
    smp.remove_prefix(comma + 1);
  }
  return given;
}

}  // namespace

Topology Topology::parse(std::string_view smp) {
  if (smp.empty()) throw ConfigError("-smp: empty argument");
  auto given = split_smp(smp);
  auto get = [&](std::string_view k) { auto it = given.find(k); return it == given.end() ? 0u : it->second; };
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

Topology::Topology(Counts counts, unsigned cpus) : counts_(counts), cpus_(cpus) {
  max_cpus_ = counts.sockets * counts.dies * counts.modules * counts.cores * counts.threads;
  core_offset_ = bit_width_for_count(counts.threads);
  module_offset_ = core_offset_ + bit_width_for_count(counts.cores);
  die_offset_ = module_offset_ + bit_width_for_count(counts.modules);
  package_offset_ = die_offset_ + bit_width_for_count(counts.dies);
}

CpuCoords Topology::coords_of(unsigned index) const {
  if (index >= max_cpus_) throw std::out_of_range(fmt::format("CPU index {} outside 0..{}", index, max_cpus_ - 1));
  // Mixed-radix decomposition over the real counts (QEMU x86_topo_ids_from_idx).
  CpuCoords c;
  c.thread = index % counts_.threads;
  index /= counts_.threads;
  c.core = index % counts_.cores;
  index /= counts_.cores;
  c.module = index % counts_.modules;
  index /= counts_.modules;
  c.die = index % counts_.dies;
  c.package = index / counts_.dies;
  return c;
}

unsigned Topology::index_of(const CpuCoords& c) const {
  return (((c.package * counts_.dies + c.die) * counts_.modules + c.module) * counts_.cores + c.core) * counts_.threads +
         c.thread;
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
  if (c.thread >= counts_.threads || c.core >= counts_.cores || c.module >= counts_.modules || c.die >= counts_.dies ||
      c.package >= counts_.sockets)
    return std::nullopt;
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
  if (counts_.modules > 1) parts.push_back(plural(counts_.modules, "module"));
  parts.push_back(plural(counts_.cores, "core"));
  parts.push_back(plural(counts_.threads, "thread"));
  std::string text = fmt::format("{}", fmt::join(parts, " x "));
  if (cpus_ != max_cpus_) text += fmt::format(" ({} of {} CPUs present)", cpus_, max_cpus_);
  return text;
}

std::string Topology::to_smp_arg() const {
  std::string arg = fmt::format("{},sockets={},dies={}", cpus_, counts_.sockets, counts_.dies);
  if (counts_.modules > 1) arg += fmt::format(",modules={}", counts_.modules);
  arg += fmt::format(",cores={},threads={}", counts_.cores, counts_.threads);
  if (cpus_ != max_cpus_) arg += fmt::format(",maxcpus={}", max_cpus_);
  return arg;
}

}  // namespace topolab
