// SPDX-License-Identifier: GPL-2.0-or-later
#include "model/cost_model.h"

#include <charconv>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "model/topology.h"  // ConfigError

namespace topolab {

namespace {

constexpr uint64_t kMaxNs = 1'000'000'000;  // one second: anything above is a typo
constexpr uint64_t kMaxCpiMilli = 100'000;  // CPI 100
constexpr uint64_t kMaxFreqMhz = 100'000;
constexpr uint64_t kMaxCycles = 1'000'000'000;
// A CPU retiring more than this many instructions per ns (20 at 2 GHz and
// CPI 0.1) is a typo; it would also make every ns of virtual time cost
// the host a long run.
constexpr uint64_t kMaxInstructionsPerNs = 10;

enum class Unit { Ns, CpiMilli, Mhz, Cycles, Flag };

struct Parameter {
  const char* key;
  Unit unit;
  uint64_t CostModel::*number = nullptr;
  bool CostModel::*flag = nullptr;
};

// The order reports list them in.
const Parameter kParameters[] = {
    {"cpi", Unit::CpiMilli, &CostModel::cpi_milli},
    {"freq_mhz", Unit::Mhz, &CostModel::freq_mhz},
    {"cpuid_exit_ns", Unit::Ns, &CostModel::cpuid_exit_ns},
    {"hlt_exit_ns", Unit::Ns, &CostModel::hlt_exit_ns},
    {"io_exit_ns", Unit::Ns, &CostModel::io_exit_ns},
    {"msr_exit_ns", Unit::Ns, &CostModel::msr_exit_ns},
    {"icr_exit_ns", Unit::Ns, &CostModel::icr_exit_ns},
    {"icr_send_ns", Unit::Ns, &CostModel::icr_send_ns},
    {"mwait_exit_ns", Unit::Ns, &CostModel::mwait_exit_ns},
    {"monitor_exit_ns", Unit::Ns, &CostModel::monitor_exit_ns},
    {"ipi_running_ns", Unit::Ns, &CostModel::ipi_running_ns},
    {"halt_wake_ns", Unit::Ns, &CostModel::halt_wake_ns},
    {"poll_wake_ns", Unit::Ns, &CostModel::poll_wake_ns},
    {"halt_poll_ns", Unit::Ns, &CostModel::halt_poll_ns},
    {"mwait_passthrough", Unit::Flag, nullptr, &CostModel::mwait_passthrough},
    {"mwait_wake_ns", Unit::Ns, &CostModel::mwait_wake_ns},
    {"ipiv", Unit::Flag, nullptr, &CostModel::ipiv},
    {"ple_gap", Unit::Cycles, &CostModel::ple_gap},
    {"ple_window", Unit::Cycles, &CostModel::ple_window},
    {"ple_exit_ns", Unit::Ns, &CostModel::ple_exit_ns},
    {"cr0_write_cycles", Unit::Cycles, &CostModel::cr0_write_cycles},
    {"cr3_write_cycles", Unit::Cycles, &CostModel::cr3_write_cycles},
    {"cr4_write_cycles", Unit::Cycles, &CostModel::cr4_write_cycles},
    {"cr4_global_flush_cycles", Unit::Cycles, &CostModel::cr4_global_flush_cycles},
    {"invlpg_cycles", Unit::Cycles, &CostModel::invlpg_cycles},
    {"invpcid_cycles", Unit::Cycles, &CostModel::invpcid_cycles},
    {"descriptor_load_cycles", Unit::Cycles, &CostModel::descriptor_load_cycles},
    {"cache_flush_cycles", Unit::Cycles, &CostModel::cache_flush_cycles},
    {"dr_write_cycles", Unit::Cycles, &CostModel::dr_write_cycles},
};

std::optional<uint64_t> parse_whole(std::string_view text) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// "1", "1.5", "0.125": thousandths, at most three decimals.
std::optional<uint64_t> parse_milli(std::string_view text) {
  size_t dot = text.find('.');
  std::optional<uint64_t> whole = parse_whole(text.substr(0, dot));
  if (!whole || *whole > kMaxCpiMilli) return std::nullopt;
  uint64_t milli = *whole * 1000;
  if (dot == std::string_view::npos) return milli;
  std::string_view fraction = text.substr(dot + 1);
  if (fraction.empty() || fraction.size() > 3) return std::nullopt;
  std::optional<uint64_t> digits = parse_whole(fraction);
  if (!digits) return std::nullopt;
  for (size_t i = fraction.size(); i < 3; ++i) *digits *= 10;
  return milli + *digits;
}

std::string milli_text(uint64_t milli) {
  if (milli % 1000 == 0) return fmt::format("{}", milli / 1000);
  std::string text = fmt::format("{}.{:03}", milli / 1000, milli % 1000);
  while (text.back() == '0') text.pop_back();
  return text;
}

void set(CostModel& model, const Parameter& p, std::string_view value) {
  auto bad = [&](std::string_view want) {
    return ConfigError(fmt::format("--cost {}={}: {}", p.key, value, want));
  };
  switch (p.unit) {
    case Unit::Ns: {
      std::optional<uint64_t> ns = parse_whole(value);
      if (!ns || *ns > kMaxNs) throw bad(fmt::format("must be a whole number of ns from 0 to {}", kMaxNs));
      model.*p.number = *ns;
      return;
    }
    case Unit::CpiMilli: {
      std::optional<uint64_t> milli = parse_milli(value);
      if (!milli || *milli == 0 || *milli > kMaxCpiMilli)
        throw bad("must be a number above 0 and at most 100, with up to 3 decimals");
      model.*p.number = *milli;
      return;
    }
    case Unit::Mhz: {
      std::optional<uint64_t> mhz = parse_whole(value);
      if (!mhz || *mhz == 0 || *mhz > kMaxFreqMhz)
        throw bad(fmt::format("must be a whole number of MHz from 1 to {}", kMaxFreqMhz));
      model.*p.number = *mhz;
      return;
    }
    case Unit::Cycles: {
      std::optional<uint64_t> cycles = parse_whole(value);
      if (!cycles || *cycles > kMaxCycles)
        throw bad(fmt::format("must be a whole number of cycles from 0 to {}", kMaxCycles));
      model.*p.number = *cycles;
      return;
    }
    case Unit::Flag:
      if (value == "1" || value == "on") model.*p.flag = true;
      else if (value == "0" || value == "off") model.*p.flag = false;
      else throw bad("must be 0, 1, on or off");
      return;
  }
}

}  // namespace

// Every value and its source: docs/cost_model.md (a Skylake-era Xeon at
// 2 GHz under a 2019+ KVM with APICv, no IPI virtualisation).
CostModel CostModel::defaults() {
  return CostModel{.cpi_milli = 1000, .freq_mhz = 2000,
                   .cpuid_exit_ns = 700, .hlt_exit_ns = 800, .io_exit_ns = 2000, .msr_exit_ns = 800,
                   .icr_exit_ns = 1000, .icr_send_ns = 400, .mwait_exit_ns = 700, .monitor_exit_ns = 700,
                   .ipi_running_ns = 1500, .halt_wake_ns = 6000, .poll_wake_ns = 1000, .halt_poll_ns = 200'000,
                   .mwait_passthrough = true, .mwait_wake_ns = 1000, .ipiv = false,
                   .ple_gap = 128, .ple_window = 4096, .ple_exit_ns = 1000,
                   .cr0_write_cycles = 140, .cr3_write_cycles = 120, .cr4_write_cycles = 140,
                   .cr4_global_flush_cycles = 400, .invlpg_cycles = 220, .invpcid_cycles = 350,
                   .descriptor_load_cycles = 125, .cache_flush_cycles = 1600, .dr_write_cycles = 200};
}

CostModel CostModel::parse(std::string_view spec, const CostModel& base) {
  CostModel model = base;
  std::set<std::string_view> seen;
  while (!spec.empty()) {
    size_t comma = spec.find(',');
    std::string_view item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view{} : spec.substr(comma + 1);
    if (item.empty()) continue;
    if (item == "none") {  // the ideal machine: nothing costs time
      // PLE's gap and window are what the CPU detects, not costs: they stay.
      model = CostModel{.cpi_milli = model.cpi_milli, .freq_mhz = model.freq_mhz, .ple_gap = model.ple_gap,
                        .ple_window = model.ple_window};
      continue;
    }
    size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      throw ConfigError(fmt::format("--cost {}: expected key=value or none", item));
    std::string_view key = item.substr(0, eq);
    const Parameter* found = nullptr;
    for (const Parameter& p : kParameters)
      if (key == p.key) found = &p;
    if (!found) {
      std::string keys;
      for (const Parameter& p : kParameters) keys += fmt::format("{}{}", keys.empty() ? "" : ", ", p.key);
      throw ConfigError(fmt::format("--cost {}: unknown parameter (known: {})", key, keys));
    }
    if (!seen.insert(key).second) throw ConfigError(fmt::format("--cost {}: given twice", key));
    set(model, *found, item.substr(eq + 1));
  }
  if (model.freq_mhz > kMaxInstructionsPerNs * model.cpi_milli)  // instructions per ns = freq_mhz / cpi_milli
    throw ConfigError(fmt::format("--cost cpi={},freq_mhz={}: {:.0f} instructions per ns; at most {} make a CPU",
                                  milli_text(model.cpi_milli), model.freq_mhz,
                                  double(model.freq_mhz) / double(model.cpi_milli), kMaxInstructionsPerNs));
  return model;
}

std::vector<std::pair<std::string, std::string>> CostModel::entries() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Parameter& p : kParameters) {
    switch (p.unit) {
      case Unit::CpiMilli: out.emplace_back(p.key, milli_text(this->*p.number)); break;
      case Unit::Flag: out.emplace_back(p.key, fmt::format("{:d}", this->*p.flag)); break;
      default: out.emplace_back(p.key, fmt::format("{}", this->*p.number)); break;
    }
  }
  return out;
}

std::string CostModel::to_string() const {
  std::string text;
  for (const auto& [key, value] : entries()) text += fmt::format("{}{}={}", text.empty() ? "" : ",", key, value);
  return text;
}

uint64_t CostModel::system_cycles(SystemInstruction kind) const {
  switch (kind) {
    case SystemInstruction::Cr0Write: return cr0_write_cycles;
    case SystemInstruction::Cr3Write: return cr3_write_cycles;
    case SystemInstruction::Cr4Write: return cr4_write_cycles;
    case SystemInstruction::Cr4GlobalFlush: return cr4_global_flush_cycles;
    case SystemInstruction::Invlpg: return invlpg_cycles;
    case SystemInstruction::Invpcid: return invpcid_cycles;
    case SystemInstruction::DescriptorLoad: return descriptor_load_cycles;
    case SystemInstruction::CacheFlush: return cache_flush_cycles;
    case SystemInstruction::DrWrite: return dr_write_cycles;
  }
  return 0;
}

uint64_t CostModel::exit_ns(ExitKind kind) const {
  switch (kind) {
    case ExitKind::Cpuid: return cpuid_exit_ns;
    case ExitKind::Hlt: return hlt_exit_ns;
    case ExitKind::Io: return io_exit_ns;
    // A hypercall is an exit KVM handles in the kernel, as an MSR's.
    case ExitKind::Msr: case ExitKind::Apic: case ExitKind::Hypercall: return msr_exit_ns;
    case ExitKind::Icr: return icr_exit_ns;
    case ExitKind::Mwait: return mwait_exit_ns;
    case ExitKind::Monitor: return monitor_exit_ns;
    case ExitKind::PauseLoop: return ple_exit_ns;
  }
  return 0;
}

// ns = instructions x CPI / f: instructions x cpi_milli / freq_mhz exactly.
uint64_t CostModel::ns_for_instructions(uint64_t instructions) const {
  return static_cast<uint64_t>(static_cast<unsigned __int128>(instructions) * cpi_milli / freq_mhz);
}

uint64_t CostModel::instructions_for_cycles(uint64_t cycles) const {
  return static_cast<uint64_t>(static_cast<unsigned __int128>(cycles) * 1000 / cpi_milli);
}

uint64_t CostModel::instructions_for_ns(uint64_t ns) const {
  const unsigned __int128 n = static_cast<unsigned __int128>(ns) * freq_mhz / cpi_milli;
  return n > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(n);
}

}  // namespace topolab
