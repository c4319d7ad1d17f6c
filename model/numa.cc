// SPDX-License-Identifier: GPL-2.0-or-later
#include "model/numa.h"

#include <algorithm>
#include <array>
#include <bit>
#include <map>
#include <set>

#include <fmt/format.h>

#include "base/errors.h"
#include "model/qemu_options.h"

namespace topolab {

uint8_t NumaConfig::distance(unsigned from, unsigned to) const {
  if (has_distance_table()) return distance_.at(from).at(to);
  return from == to ? kNumaDistanceLocal : kNumaDistanceRemote;
}

std::vector<unsigned> srat_node_order(const NumaConfig& numa) {
  std::vector<unsigned> order;
  std::vector<bool> named(numa.node_count(), false);
  const auto appear = [&](unsigned node) {
    if (named[node]) return;
    named[node] = true;
    order.push_back(node);
  };
  for (unsigned cpu = 0; cpu < numa.possible_cpus(); ++cpu) appear(numa.node_of_cpu(cpu));
  for (unsigned n = 0; n < numa.node_count(); ++n)
    if (numa.nodes()[n].memory_bytes) appear(n);
  return order;
}

namespace {

using Property = QemuProperty;

// One option being read: its text for the messages and its properties.
class OptionText {
 public:
  OptionText(std::string_view option, std::string_view text) : spelled_(fmt::format("{} {}", option, text)) {}

  [[noreturn]] void fail(std::string_view message) const {
    throw ConfigError(one_line(fmt::format("{}: {}", spelled_, message)));
  }
  // QEMU's visitor: a number of the field's width.
  uint64_t number(const Property& p, std::string_view type, uint64_t max) const {
    const std::optional<uint64_t> n = parse_qemu_number(p.value);
    if (!n || *n > max) fail(fmt::format("Parameter '{}' expects {}", p.name, type));
    return *n;
  }

 private:
  std::string spelled_;
};

struct Backend {
  uint64_t size = 0;
  unsigned users = 0;  // nodes that name it
};

// -object memory-backend-ram,id=ID,size=SIZE[,...]: the guest sees only the
// size; the rest says how the host backs it.
std::map<std::string, Backend> parse_objects(const std::vector<std::string>& objects) {
  std::map<std::string, Backend> backends;
  for (const std::string& text : objects) {
    const OptionText o("-object", text);
    std::vector<Property> props = parse_qemu_properties(text);
    std::string type, id;
    std::optional<uint64_t> size;
    for (size_t i = 0; i < props.size(); ++i) {
      const Property& p = props[i];
      if (i == 0 && !p.has_value) type = p.name;
      else if (p.name == "qom-type") type = p.value;
      else if (p.name == "id") id = p.value;
      else if (p.name == "size") {
        size = parse_qemu_size(p.value, 0);
        if (!size) o.fail("Parameter 'size' expects a size value");
      } else if (p.name == "policy" || p.name == "host-nodes" || p.name == "prealloc" || p.name == "share" ||
                 p.name == "merge" || p.name == "dump" || p.name == "reserve" || p.name == "prealloc-threads") {
        // How the host backs the memory: the guest sees none of it.
      } else if (!type.empty()) {
        o.fail(fmt::format("Property '{}.{}' not found", type, p.name));
      }
    }
    if (type.empty()) o.fail("Parameter 'qom-type' is missing");
    if (type != "memory-backend-ram" && type != "memory-backend-memfd")
      o.fail(fmt::format("topolab creates memory-backend-ram objects only (for -numa node,memdev=), not {}", type));
    if (id.empty()) o.fail("Parameter 'id' is missing");
    if (!size) o.fail("Parameter 'size' is missing");
    if (backends.contains(id)) o.fail(fmt::format("Duplicate ID '{}' for object", id));
    if (*size == 0) o.fail(fmt::format("property 'size' of {} doesn't take value '0'", type));
    backends[id] = Backend{*size, 0};
  }
  return backends;
}

// What a -numa cpu option matches (each level absent: any).
struct CpuMatch {
  std::optional<uint64_t> socket, die, core, thread;
  bool matches(const CpuCoords& c) const {
    return (!socket || *socket == c.package) && (!die || *die == c.die) && (!core || *core == c.core) &&
           (!thread || *thread == c.thread);
  }
};

// QEMU's props string of a CPU slot (cpu_slot_to_string): die-id only when
// the machine has dies.
std::string slot_text(const Topology& topology, unsigned index) {
  const CpuCoords c = topology.coords_of(index);
  std::string text = fmt::format("socket-id: {}", c.package);
  if (topology.counts().dies > 1) text += fmt::format(", die-id: {}", c.die);
  return text + fmt::format(", core-id: {}, thread-id: {}", c.core, c.thread);
}

// The properties of a -numa hmat-lb/hmat-cache option, read as QEMU's
// options visitor reads a struct: field by field in the schema's order
// (the last of a repeated name wins), unknown names only after that.
class HmatFields {
 public:
  HmatFields(const OptionText& o, const std::vector<Property>& props) : o_(o) {
    for (const Property& p : props) {
      if (!fields_.contains(p.name)) order_.push_back(p.name);
      fields_[p.name] = p;
    }
  }
  std::optional<uint64_t> number(const std::string& name, std::string_view type, uint64_t max, bool mandatory) {
    const Property* p = take(name, mandatory);
    return p ? std::optional(o_.number(*p, type, max)) : std::nullopt;
  }
  std::optional<uint64_t> size(const std::string& name, bool mandatory) {
    const Property* p = take(name, mandatory);
    if (!p) return std::nullopt;
    const std::optional<uint64_t> n = parse_qemu_size(p->value, 0);
    if (!n) o_.fail(fmt::format("Parameter '{}' expects a size value", name));
    return n;
  }
  // A QAPI enum: the index of its spelling in `values`.
  uint8_t choice(const std::string& name, std::initializer_list<std::string_view> values) {
    const Property* p = take(name, true);
    uint8_t i = 0;
    for (std::string_view v : values) {
      if (p->value == v) return i;
      ++i;
    }
    o_.fail(fmt::format("Parameter '{}' does not accept value '{}'", name, p->value));
  }
  // opts_check_struct(): what no field took.
  void check_all_taken() const {
    for (const std::string& name : order_)
      if (!taken_.contains(name)) o_.fail(fmt::format("Invalid parameter '{}'", name));
  }

 private:
  const Property* take(const std::string& name, bool mandatory) {
    auto it = fields_.find(name);
    if (it == fields_.end()) {
      if (mandatory) o_.fail(fmt::format("Parameter '{}' is missing", name));
      return nullptr;
    }
    taken_.insert(name);
    return &it->second;
  }
  const OptionText& o_;
  std::map<std::string, Property> fields_;
  std::vector<std::string> order_;
  std::set<std::string> taken_;
};

constexpr std::string_view kHmatDisabled =
    "ACPI Heterogeneous Memory Attribute Table (HMAT) is disabled, enable it with -machine hmat=on before using any "
    "of hmat specific options";

}  // namespace

// Reads the -numa options in order, then completes them (finish()).
class NumaCompletion {
 public:
  NumaCompletion(const Topology& topology, std::map<std::string, Backend> backends, bool hmat)
      : topology_(topology), backends_(std::move(backends)), node_of_(topology.max_cpus()), hmat_(hmat) {}

  void option(const std::string& text);
  NumaConfig finish(uint64_t ram_bytes, std::string arg);

 private:
  void node(const OptionText& o, const std::vector<Property>& props);
  void dist(const OptionText& o, const std::vector<Property>& props);
  void cpu(const OptionText& o, const std::vector<Property>& props);
  void hmat_lb(const OptionText& o, const std::vector<Property>& props);
  void hmat_cache(const OptionText& o, const std::vector<Property>& props);
  // machine_set_cpu_numa_node(): a CPU keeps its first node.
  void assign(const OptionText& o, unsigned index, unsigned node);
  // The same with HMAT: a node with a CPU is its own initiator. The
  // message if initiator= named another, else nullopt.
  std::optional<std::string> bind_initiator(unsigned node);
  // Latency or bandwidth data of one (hierarchy, data type): QEMU's
  // HMAT_LB_Info.
  struct Locality {
    uint64_t base = 0, range = 0;  // QEMU's base and range_bitmap
    std::vector<HmatLocality::Entry> entries;
  };

  struct Node {
    bool present = false;
    NumaNode node;
    std::vector<uint8_t> distance = std::vector<uint8_t>(kMaxNumaNodes, 0);
    std::optional<unsigned> initiator;  // HMAT: initiator=, or itself once it has a CPU
    bool has_cpu = false;               // HMAT: a CPU is bound to it (so far)
    bool latency_given = false, bandwidth_given = false;  // as a hmat-lb target, non-zero
    std::array<std::optional<HmatCache>, kHmatCacheLevels + 1> cache;  // [level]
  };
  const Topology& topology_;
  std::map<std::string, Backend> backends_;
  std::vector<Node> nodes_ = std::vector<Node>(kMaxNumaNodes);
  std::vector<std::optional<unsigned>> node_of_;
  unsigned count_ = 0, max_id_plus_one_ = 0;
  bool have_distance_ = false, have_memdev_ = false;
  bool hmat_ = false;
  std::array<std::array<Locality, kHmatDataTypes>, kHmatHierarchies> localities_;
};

void NumaCompletion::option(const std::string& text) {
  const OptionText o("-numa", text);
  const std::vector<Property> props = parse_qemu_properties(text);
  std::string type;
  std::vector<Property> rest;
  for (size_t i = 0; i < props.size(); ++i) {
    if (i == 0 && !props[i].has_value) type = props[i].name;
    else if (props[i].name == "type") type = props[i].value;
    else rest.push_back(props[i]);
  }
  if (type.empty()) o.fail("Parameter 'type' is missing");
  if (type == "node") node(o, rest);
  else if (type == "dist") dist(o, rest);
  else if (type == "cpu") cpu(o, rest);
  else if (type == "hmat-lb") hmat_lb(o, rest);
  else if (type == "hmat-cache") hmat_cache(o, rest);
  else o.fail(fmt::format("Parameter 'type' does not accept value '{}'", type));
}

void NumaCompletion::assign(const OptionText& o, unsigned index, unsigned node) {
  if (node_of_[index] && *node_of_[index] != node)
    o.fail(fmt::format("CPU is already assigned to node-id: {}", *node_of_[index]));
  node_of_[index] = node;
  if (std::optional<std::string> why = bind_initiator(node)) o.fail(*why);
}

std::optional<std::string> NumaCompletion::bind_initiator(unsigned node) {
  if (!hmat_) return std::nullopt;
  Node& n = nodes_[node];
  if (n.initiator && *n.initiator != node)
    return fmt::format("The initiator of CPU NUMA node {} should be itself (got {})", node, *n.initiator);
  n.has_cpu = true;
  n.initiator = node;
  return std::nullopt;
}

void NumaCompletion::node(const OptionText& o, const std::vector<Property>& props) {
  std::optional<unsigned> nodeid;
  std::vector<std::pair<uint64_t, uint64_t>> cpu_ranges;
  std::optional<std::string> memdev;
  std::optional<uint64_t> initiator;
  bool mem = false;
  for (const Property& p : props) {
    if (p.name == "nodeid") nodeid = static_cast<unsigned>(o.number(p, "uint16_t", 0xffff));
    else if (p.name == "cpus") {
      // "A" or "A-B"; several sets are several cpus= properties, as QEMU.
      const size_t dash = p.value.find('-');
      const std::optional<uint64_t> lo = parse_qemu_number(p.value.substr(0, dash));
      const std::optional<uint64_t> hi = dash == std::string::npos ? lo : parse_qemu_number(p.value.substr(dash + 1));
      // (QEMU's list visitor names the element 'null'.)
      if (lo && hi && *lo > *hi) o.fail("Parameter 'cpus' expects a uint64 value or range");
      if (!lo || !hi || *lo > 0xffff || *hi > 0xffff) o.fail("Parameter 'null' expects uint16_t");
      cpu_ranges.emplace_back(*lo, *hi);
    } else if (p.name == "memdev") memdev = p.value;
    else if (p.name == "mem") mem = true;
    else if (p.name == "initiator") initiator = o.number(p, "uint16_t", 0xffff);
    else o.fail(fmt::format("Invalid parameter '{}'", p.name));
  }
  const unsigned id = nodeid.value_or(count_);
  if (id >= kMaxNumaNodes) o.fail(fmt::format("Max number of NUMA nodes reached: {}", id));
  if (nodes_[id].present) o.fail(fmt::format("Duplicate NUMA nodeid: {}", id));
  if (initiator) {
    if (!hmat_) o.fail(kHmatDisabled);
    // QEMU reports this one and goes on without the node (error_report, no
    // error set), so a later check refuses the machine for a reason that
    // hides this one; topolab refuses it here.
    if (*initiator >= kMaxNumaNodes)
      o.fail(fmt::format("The initiator id {} expects an integer between 0 and {}", *initiator, kMaxNumaNodes - 1));
    nodes_[id].initiator = static_cast<unsigned>(*initiator);
  }
  for (const auto& [lo, hi] : cpu_ranges)
    for (uint64_t cpu = lo; cpu <= hi; ++cpu) {
      if (cpu >= topology_.max_cpus())
        o.fail(fmt::format("CPU index ({}) should be smaller than maxcpus ({})", cpu, topology_.max_cpus()));
      assign(o, static_cast<unsigned>(cpu), id);
    }
  if (mem && have_memdev_)
    o.fail("numa configuration should use either mem= or memdev=,mixing both is not allowed");
  // QEMU 5.1 and later machine types take memory from backends only.
  if (mem)
    o.fail("Parameter -numa node,mem is not supported by this machine type; Use -numa node,memdev instead");
  Node& n = nodes_[id];
  if (memdev) {
    auto it = backends_.find(*memdev);
    if (it == backends_.end()) o.fail(fmt::format("memdev={} is ambiguous", *memdev));
    ++it->second.users;
    n.node.memory_bytes = it->second.size;
    n.node.memdev = *memdev;
    have_memdev_ = true;
  }
  n.present = true;
  max_id_plus_one_ = std::max(max_id_plus_one_, id + 1);
  ++count_;
}

void NumaCompletion::dist(const OptionText& o, const std::vector<Property>& props) {
  std::optional<uint64_t> src, dst, val;
  for (const Property& p : props) {
    if (p.name == "src") src = o.number(p, "uint16_t", 0xffff);
    else if (p.name == "dst") dst = o.number(p, "uint16_t", 0xffff);
    else if (p.name == "val") val = o.number(p, "uint8_t", 0xff);
    else o.fail(fmt::format("Invalid parameter '{}'", p.name));
  }
  if (!src) o.fail("Parameter 'src' is missing");
  if (!dst) o.fail("Parameter 'dst' is missing");
  if (!val) o.fail("Parameter 'val' is missing");
  if (*src >= kMaxNumaNodes || *dst >= kMaxNumaNodes)
    o.fail(fmt::format("Parameter '{}' expects an integer between 0 and {}", *src >= kMaxNumaNodes ? "src" : "dst",
                       kMaxNumaNodes - 1));
  if (!nodes_[*src].present || !nodes_[*dst].present)
    o.fail("Source/Destination NUMA node is missing. Please use '-numa node' option to declare it first.");
  if (*val < kNumaDistanceLocal)
    o.fail(fmt::format("NUMA distance ({}) is invalid, it shouldn't be less than {}.", *val, kNumaDistanceLocal));
  if (*src == *dst && *val != kNumaDistanceLocal)
    o.fail(fmt::format("Local distance of node {} should be {}.", *src, kNumaDistanceLocal));
  nodes_[*src].distance[*dst] = static_cast<uint8_t>(*val);
  have_distance_ = true;
}

void NumaCompletion::cpu(const OptionText& o, const std::vector<Property>& props) {
  std::optional<uint64_t> node_id;
  CpuMatch match;
  for (const Property& p : props) {
    if (p.name == "node-id") node_id = o.number(p, "int64", INT64_MAX);
    else if (p.name == "socket-id") match.socket = o.number(p, "int64", INT64_MAX);
    else if (p.name == "die-id") match.die = o.number(p, "int64", INT64_MAX);
    else if (p.name == "core-id") match.core = o.number(p, "int64", INT64_MAX);
    else if (p.name == "thread-id") match.thread = o.number(p, "int64", INT64_MAX);
    else if (p.name == "cluster-id") o.fail("cluster-id is not supported");
    else o.fail(fmt::format("Invalid parameter '{}'", p.name));
  }
  if (!node_id) o.fail("Missing mandatory node-id property");
  if (*node_id >= kMaxNumaNodes || !nodes_[*node_id].present)
    o.fail(fmt::format("Invalid node-id={}, NUMA node must be defined with -numa node,nodeid=ID before it's used "
                       "with -numa cpu,node-id=ID",
                       *node_id));
  // x86's CPU slots carry a die-id only when the machine has dies.
  if (match.die && topology_.counts().dies <= 1) o.fail("die-id is not supported");
  bool matched = false;
  for (unsigned i = 0; i < topology_.max_cpus(); ++i) {
    if (!match.matches(topology_.coords_of(i))) continue;
    assign(o, i, static_cast<unsigned>(*node_id));
    matched = true;
  }
  if (!matched) o.fail("no match found");
}

void NumaCompletion::hmat_lb(const OptionText& o, const std::vector<Property>& props) {
  HmatFields f(o, props);
  const unsigned initiator = static_cast<unsigned>(*f.number("initiator", "uint16_t", 0xffff, true));
  const unsigned target = static_cast<unsigned>(*f.number("target", "uint16_t", 0xffff, true));
  const uint8_t hierarchy = f.choice("hierarchy", {"memory", "first-level", "second-level", "third-level"});
  const uint8_t data_type = f.choice("data-type", {"access-latency", "read-latency", "write-latency",
                                                   "access-bandwidth", "read-bandwidth", "write-bandwidth"});
  const std::optional<uint64_t> latency = f.number("latency", "a uint64 value", UINT64_MAX, false);
  const std::optional<uint64_t> bandwidth = f.size("bandwidth", false);
  f.check_all_taken();
  if (!hmat_) o.fail(kHmatDisabled);
  // parse_numa_hmat_lb() compares with ">", so naming the node count
  // itself gets the next message.
  if (initiator > count_) o.fail(fmt::format("Invalid initiator={}, it should be less than {}", initiator, count_));
  if (target > count_) o.fail(fmt::format("Invalid target={}, it should be less than {}", target, count_));
  if (initiator >= kMaxNumaNodes || !nodes_[initiator].has_cpu)
    o.fail(fmt::format("Invalid initiator={}, it isn't an initiator proximity domain", initiator));
  if (target >= kMaxNumaNodes || !nodes_[target].present)
    o.fail(fmt::format("The target={} should point to an existing node", target));
  Locality& l = localities_[hierarchy][data_type];
  const auto duplicate = [&](std::string_view what) {
    for (const HmatLocality::Entry& e : l.entries)
      if (e.initiator == initiator && e.target == target)
        o.fail(fmt::format("Duplicate configuration of the {} for initiator={} and target={}", what, initiator,
                           target));
  };
  uint64_t value = 0;
  // QEMU keeps one base and range per structure; the entries are value /
  // base in 16 bits, and a value that would not fit is refused.
  const auto settle = [&](bool fits, std::string_view kind, std::string_view earlier, uint64_t base, uint64_t range,
                          bool& given) {
    if (!fits)
      o.fail(fmt::format("{} {} between initiator={} and target={} should not differ from previously entered {} on "
                         "more than {}",
                         kind, value, initiator, target, earlier, UINT16_MAX - 1));
    l.base = base;
    l.range = range;
    given = true;
  };
  if (data_type < kHmatFirstBandwidth) {
    if (!latency) o.fail("Missing 'latency' option");
    if (bandwidth) o.fail("Invalid option 'bandwidth' since the data type is latency");
    duplicate("latency");
    value = *latency;
    if (l.base == 0) l.base = UINT64_MAX;
    if (value != 0) {
      // The base is the largest power of ten that divides this latency and
      // every earlier one. QEMU checks the range against the base before
      // this latency lowers it and keeps that quotient as the range, so its
      // check is loose and an entry may be cut to 16 bits; the table is
      // what QEMU's is.
      uint64_t base = 1;
      for (uint64_t rest = value; rest % 10 == 0; rest /= 10) base *= 10;
      const uint64_t largest = std::max(l.range, value / l.base);
      settle(largest < UINT16_MAX, "Latency", "min or max values", std::min(l.base, base), largest,
             nodes_[target].latency_given);
    }
  } else {
    if (!bandwidth) o.fail("Missing 'bandwidth' option");
    if (latency) o.fail("Invalid option 'latency' since the data type is bandwidth");
    value = *bandwidth;
    if (value % (uint64_t{1} << 20) != 0)
      o.fail(fmt::format("Bandwidth {} between initiator={} and target={} should be 1MB aligned", value, initiator,
                         target));
    duplicate("bandwidth");
    if (l.base == 0) l.base = 1;
    if (value != 0) {
      // The base is the lowest bit set in any bandwidth given; all of them
      // must fit 16 bits above it.
      const uint64_t bits = l.range | value;
      const int first = std::countr_zero(bits), last = 64 - std::countl_zero(bits);
      const uint64_t base = uint64_t{1} << first;
      settle(last - first <= 16 && value / base < UINT16_MAX, "Bandwidth", "values", base, bits,
             nodes_[target].bandwidth_given);
    }
  }
  l.entries.push_back({initiator, target, value});
}

void NumaCompletion::hmat_cache(const OptionText& o, const std::vector<Property>& props) {
  HmatFields f(o, props);
  HmatCache c;
  c.node = static_cast<unsigned>(*f.number("node-id", "uint32_t", UINT32_MAX, true));
  c.size = *f.size("size", true);
  c.level = static_cast<unsigned>(*f.number("level", "uint8_t", UINT8_MAX, true));
  c.associativity = f.choice("associativity", {"none", "direct", "complex"});
  c.policy = f.choice("policy", {"none", "write-back", "write-through"});
  c.line = static_cast<uint16_t>(*f.number("line", "uint16_t", UINT16_MAX, true));
  f.check_all_taken();
  if (!hmat_) o.fail(kHmatDisabled);
  if (c.node >= count_) o.fail(fmt::format("Invalid node-id={}, it should be less than {}", c.node, count_));
  Node& n = nodes_[c.node];
  if (!n.latency_given || !n.bandwidth_given)
    o.fail(fmt::format("The latency and bandwidth information of node-id={} should be provided before memory side "
                       "cache attributes",
                       c.node));
  if (c.level < 1 || c.level > kHmatCacheLevels)
    o.fail(fmt::format("Invalid level={}, it should be larger than 0 and less than or equal to {}", c.level,
                       kHmatCacheLevels));
  if (n.cache[c.level])
    o.fail(fmt::format("Duplicate configuration of the side cache for node-id={} and level={}", c.node, c.level));
  if (c.level > 1) {
    const std::optional<HmatCache>& below = n.cache[c.level - 1];
    if (!below) o.fail(fmt::format("Cache level={} shall be defined first", c.level - 1));
    if (c.size <= below->size)
      o.fail(fmt::format("Invalid size={}, the size of level={} should be larger than the size({}) of level={}",
                         c.size, c.level, below->size, c.level - 1));
  }
  if (c.level < kHmatCacheLevels && n.cache[c.level + 1] && c.size >= n.cache[c.level + 1]->size)
    o.fail(fmt::format("Invalid size={}, the size of level={} should be less than the size({}) of level={}", c.size,
                       c.level, n.cache[c.level + 1]->size, c.level + 1));
  n.cache[c.level] = c;
}

NumaConfig NumaCompletion::finish(uint64_t ram_bytes, std::string arg) {
  NumaConfig config;
  config.arg_ = std::move(arg);
  if (count_ == 0) return config;
  // numa_complete_configuration(): no sparse node IDs, the largest missing
  // one first.
  for (unsigned i = max_id_plus_one_; i-- > 0;)
    if (!nodes_[i].present) throw ConfigError(fmt::format("-numa: numa: Node ID missing: {}", i));
  uint64_t total = 0;
  for (unsigned i = 0; i < count_; ++i) total += nodes_[i].node.memory_bytes;
  if (total != ram_bytes)
    throw ConfigError(fmt::format("-numa: total memory for NUMA nodes (0x{:x}) should equal RAM size (0x{:x})", total,
                                  ram_bytes));
  // machine_consume_memdev(), as the backends are mapped in node order.
  for (unsigned i = 0; i < count_; ++i)
    if (const std::string& id = nodes_[i].node.memdev; !id.empty() && backends_.at(id).users > 1)
      throw ConfigError(fmt::format("-numa: memory backend {} can't be used multiple times.", id));
  if (have_distance_) {
    // validate_numa_distance(): every pair needs one direction; once any
    // pair differs, every pair needs both.
    bool asymmetric = false;
    for (unsigned s = 0; s < count_; ++s)
      for (unsigned d = s; d < count_; ++d) {
        const uint8_t there = nodes_[s].distance[d], back = nodes_[d].distance[s];
        if (s != d && there == 0 && back == 0)
          throw ConfigError(fmt::format("-numa: The distance between node {} and {} is missing, at least one "
                                        "distance value between each nodes should be provided.",
                                        s, d));
        if (there != 0 && back != 0 && there != back) asymmetric = true;
      }
    if (asymmetric)
      for (unsigned s = 0; s < count_; ++s)
        for (unsigned d = 0; d < count_; ++d)
          if (s != d && nodes_[s].distance[d] == 0)
            throw ConfigError(
                "-numa: At least one asymmetrical pair of distances is given, please provide distances for both "
                "directions of all node pairs.");
    // complete_init_numa_distance()
    config.distance_.assign(count_, std::vector<uint8_t>(count_, 0));
    for (unsigned s = 0; s < count_; ++s)
      for (unsigned d = 0; d < count_; ++d) {
        uint8_t v = nodes_[s].distance[d];
        if (v == 0) v = s == d ? kNumaDistanceLocal : nodes_[d].distance[s];
        config.distance_[s][d] = v;
      }
  }
  // machine_numa_finish_cpu_init(): with no CPU named anywhere, each goes
  // to its socket's default node; once some are named, the rest go to
  // node 0 with a warning.
  const bool default_mapping = std::none_of(node_of_.begin(), node_of_.end(), [](auto n) { return n.has_value(); });
  std::string unassigned;
  config.node_of_cpu_.resize(node_of_.size());
  for (unsigned i = 0; i < node_of_.size(); ++i) {
    if (!node_of_[i]) {
      node_of_[i] = default_mapping ? topology_.coords_of(i).package % count_ : 0;
      if (!default_mapping)
        unassigned += fmt::format("{}CPU {} [{}]", unassigned.empty() ? "" : ", ", i, slot_text(topology_, i));
    }
    config.node_of_cpu_[i] = *node_of_[i];
    // Bound here with error_fatal: no option to name.
    if (std::optional<std::string> why = bind_initiator(*node_of_[i])) throw ConfigError("-numa: " + *why);
  }
  if (hmat_) {
    // numa_validate_initiator()
    for (unsigned i = 0; i < count_; ++i) {
      const std::optional<unsigned> initiator = nodes_[i].initiator;
      if (!initiator) continue;
      if (!nodes_[*initiator].present)
        throw ConfigError(fmt::format(
            "-numa: NUMA node {} is missing, use '-numa node' option to declare it first", *initiator));
      if (!nodes_[*initiator].has_cpu)
        throw ConfigError(fmt::format("-numa: The initiator of NUMA node {} is invalid", i));
    }
    config.hmat_enabled_ = true;
    for (unsigned i = 0; i < count_; ++i) {
      config.hmat_.initiator.push_back(nodes_[i].initiator);
      for (const std::optional<HmatCache>& c : nodes_[i].cache)
        if (c) config.hmat_.caches.push_back(*c);
    }
    for (unsigned h = 0; h < kHmatHierarchies; ++h)
      for (unsigned t = 0; t < kHmatDataTypes; ++t)
        if (const Locality& l = localities_[h][t]; !l.entries.empty())
          config.hmat_.localities.push_back(
              {static_cast<uint8_t>(h), static_cast<uint8_t>(t), l.base, l.entries});
  }
  if (!unassigned.empty()) {
    config.warnings_.push_back("CPU(s) not present in any NUMA nodes: " + unassigned);
    config.warnings_.push_back(
        "All CPU(s) up to maxcpus should be described in NUMA config, ability to start up with partial NUMA "
        "mappings is obsoleted and will be removed in future");
  }
  for (unsigned i = 0; i < count_; ++i) config.nodes_.push_back(nodes_[i].node);
  for (unsigned cpu = 0; cpu < config.node_of_cpu_.size(); ++cpu)
    config.nodes_[config.node_of_cpu_[cpu]].cpus.push_back(cpu);
  return config;
}

NumaConfig NumaOptions::complete(const Topology& topology, uint64_t ram_bytes) const {
  NumaCompletion completion(topology, parse_objects(objects_), hmat_);
  std::string arg;
  for (const std::string& text : objects_) arg += fmt::format("{}-object {}", arg.empty() ? "" : " ", text);
  for (const std::string& text : numa_) {
    completion.option(text);
    arg += fmt::format("{}-numa {}", arg.empty() ? "" : " ", text);
  }
  return completion.finish(ram_bytes, std::move(arg));
}

}  // namespace topolab
