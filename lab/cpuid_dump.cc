// SPDX-License-Identifier: GPL-2.0-or-later
#include "lab/cpuid_dump.h"

#include <charconv>

#include <fmt/format.h>

namespace topolab {

CpuidRegs RawCpuLeaves::get(uint32_t leaf, uint32_t subleaf) const {
  auto it = leaves.find({leaf, subleaf});
  return it == leaves.end() ? CpuidRegs{} : it->second;
}

RawCpuid raw_cpuid_of(const CpuidModel& model, std::string source) {
  RawCpuid raw;
  raw.source = std::move(source);
  raw.topology = model.topology();
  raw.cpus.resize(model.topology().cpus());
  for (unsigned cpu = 0; cpu < raw.cpus.size(); ++cpu)
    for (const auto& e : model.enumerate(cpu)) raw.cpus[cpu].leaves[{e.leaf, e.subleaf}] = e.regs;
  return raw;
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Consumes "0x" and exactly `digits` hex digits from the front of `s`.
bool take_hex(std::string_view& s, unsigned digits, uint32_t& value) {
  if (s.size() < 2 + digits || s.substr(0, 2) != "0x") return false;
  auto [end, ec] = std::from_chars(s.data() + 2, s.data() + 2 + digits, value, 16);
  if (ec != std::errc() || end != s.data() + 2 + digits) return false;
  s.remove_prefix(2 + digits);
  return true;
}

bool take(std::string_view& s, std::string_view word) {
  if (!s.starts_with(word)) return false;
  s.remove_prefix(word.size());
  return true;
}

// "0x00000004 0x00: eax=0x1c004121 ebx=0x01c0003f ecx=0x0000003f edx=0x00000000"
bool parse_leaf_line(std::string_view s, uint32_t& leaf, uint32_t& subleaf, CpuidRegs& r) {
  return take_hex(s, 8, leaf) && take(s, " ") && take_hex(s, 2, subleaf) && take(s, ": eax=") &&
         take_hex(s, 8, r.eax) && take(s, " ebx=") && take_hex(s, 8, r.ebx) && take(s, " ecx=") &&
         take_hex(s, 8, r.ecx) && take(s, " edx=") && take_hex(s, 8, r.edx) && s.empty();
}

// "CPU 12:" -> 12; the guest may print other text before it on the line.
// `cpuid -r -1` (one CPU) writes "CPU:", which is the next CPU.
bool parse_cpu_header(std::string_view s, unsigned& cpu, unsigned next) {
  if (s == "CPU:") {
    cpu = next;
    return true;
  }
  size_t at = s.rfind("CPU ");
  if (at == std::string_view::npos || !s.ends_with(":")) return false;
  std::string_view number = s.substr(at + 4, s.size() - at - 5);
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), cpu);
  return ec == std::errc() && end == number.data() + number.size() && !number.empty();
}

}  // namespace

RawCpuid parse_cpuid_raw_dump(std::string_view text, std::string_view name) {
  RawCpuid raw;
  raw.source = std::string(name);
  RawCpuLeaves* current = nullptr;
  unsigned line_number = 0;
  while (!text.empty()) {
    size_t eol = text.find('\n');
    std::string_view line = trim(text.substr(0, eol));
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    ++line_number;
    unsigned cpu = 0;
    if (parse_cpu_header(line, cpu, static_cast<unsigned>(raw.cpus.size()))) {
      // CPUs must come in order: a gap or a repeat means a damaged dump
      // (two CPUs interleaving their output), not a machine.
      if (cpu != raw.cpus.size())
        throw DumpError(fmt::format("{}:{}: CPU {} where CPU {} was expected", name, line_number, cpu, raw.cpus.size()));
      current = &raw.cpus.emplace_back();
      continue;
    }
    if (!line.starts_with("0x")) continue;
    uint32_t leaf = 0, subleaf = 0;
    CpuidRegs regs;
    if (!parse_leaf_line(line, leaf, subleaf, regs))
      throw DumpError(fmt::format("{}:{}: not a `cpuid -r` leaf line: {}", name, line_number, line.substr(0, 80)));
    if (!current) throw DumpError(fmt::format("{}:{}: a leaf line before the first \"CPU N:\" header", name, line_number));
    current->leaves[{leaf, subleaf}] = regs;
  }
  if (raw.cpus.empty()) throw DumpError(fmt::format("{}: no \"CPU N:\" block: not a `cpuid -r` dump", name));
  for (size_t cpu = 0; cpu < raw.cpus.size(); ++cpu)
    if (raw.cpus[cpu].leaves.empty()) throw DumpError(fmt::format("{}: CPU {} has no leaves", name, cpu));
  return raw;
}

}  // namespace topolab
