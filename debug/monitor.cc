// SPDX-License-Identifier: GPL-2.0-or-later
#include "debug/monitor.h"

#include <array>
#include <charconv>
#include <vector>

#include <fmt/format.h>

#include "base/bytes.h"
#include "base/errors.h"
#include "base/text_buffer.h"

namespace topolab::debug {
namespace {

constexpr std::string_view kHelp =
    "help                         this list\n"
    "info cpus                    every vCPU: state, time, where it is\n"
    "info lapic [N]               the local APIC of vCPU N (all without N)\n"
    "info ioapic                  the I/O APIC's redirection table\n"
    "info topology                sockets, dies, cores, threads and APIC IDs\n"
    "info ipis                    the IPIs sent so far, source by destination\n"
    "info time                    every vCPU's virtual time\n"
    "snapshot save NAME           save the whole machine as NAME\n"
    "snapshot load NAME           go back to the snapshot NAME\n"
    "snapshot list                the snapshots saved\n"
    "xp /FMT ADDR                 guest-physical memory as QEMU's monitor prints it:\n"
    "                             FMT = [COUNT][x|d|u|o|c][b|h|w|g], e.g. xp /4xg 0x1000\n";

std::vector<std::string_view> split_words(std::string_view line) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\n' || line[i] == '\r')) ++i;
    const size_t start = i;
    while (i < line.size() && !(line[i] == ' ' || line[i] == '\t' || line[i] == '\n' || line[i] == '\r')) ++i;
    if (i > start) words.push_back(line.substr(start, i - start));
  }
  return words;
}

std::string error_line(std::string_view message) { return fmt::format("{}\n", one_line(message)); }

// A number as QEMU's monitor reads one (strtoull with base 0): 0x... hex,
// 0... octal, otherwise decimal.
std::optional<uint64_t> parse_number(std::string_view text) {
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text.remove_prefix(2);
  } else if (text.size() > 1 && text[0] == '0') {
    base = 8;
    text.remove_prefix(1);
  }
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

struct DumpFormat {
  uint64_t count = 1;
  char format = 'x';
  unsigned size = 4;
};

// QEMU's "/fmt" argument: an optional count, then format and size letters
// in any order ('L' is QEMU's other spelling of 'g').
std::optional<DumpFormat> parse_dump_format(std::string_view text, std::string& error) {
  DumpFormat f;
  size_t i = 1;  // past the '/'
  if (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    f.count = 0;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
      if (f.count > kMaxDumpBytes) continue;  // already too many: keep the value past the limit
      f.count = f.count * 10 + static_cast<uint64_t>(text[i] - '0');
    }
  }
  for (; i < text.size(); ++i) {
    switch (text[i]) {
      case 'x': case 'd': case 'u': case 'o': case 'c': f.format = text[i]; break;
      case 'b': f.size = 1; break;
      case 'h': f.size = 2; break;
      case 'w': f.size = 4; break;
      case 'g': case 'L': f.size = 8; break;
      default:
        error = fmt::format("invalid char in format: '{}'", one_line(text.substr(i, 1)));
        return std::nullopt;
    }
  }
  return f;
}

// One value in the dump, as QEMU's memory_dump prints it: width from the
// unit's size (hex digits, octal digits, or decimal digits rounded up).
void append_value(fmt::memory_buffer& out, char format, unsigned size, uint64_t v) {
  const unsigned bits = size * 8;
  switch (format) {
    case 'o': appendf(out, " {:#{}o}", v, (bits + 2) / 3); break;
    case 'u': appendf(out, " {:{}}", v, (bits * 10 + 32) / 33); break;
    // QEMU prints the (zero-extended) unit with PRId64: only an 8-byte unit
    // can come out negative.
    case 'd': appendf(out, " {:{}}", static_cast<int64_t>(v), (bits * 10 + 32) / 33); break;
    case 'c': {
      const auto c = static_cast<uint8_t>(v);
      if (c == '\'') out.append(std::string_view(" '\\''"));
      else if (c == '\\') out.append(std::string_view(" '\\\\'"));
      else if (c == '\n') out.append(std::string_view(" '\\n'"));
      else if (c == '\r') out.append(std::string_view(" '\\r'"));
      else if (c >= 32 && c <= 126) appendf(out, " '{}'", static_cast<char>(c));
      else appendf(out, " '\\x{:02x}'", c);
      break;
    }
    default: appendf(out, " 0x{:0{}x}", v, bits / 4); break;
  }
}

// QEMU's memory_dump for physical addresses: 8 bytes a line for byte
// units, 16 otherwise, each line "%016x:" then the units; `c` prints every
// byte of the units asked for; a line that cannot be read ends the dump
// with "Cannot access memory". QEMU's 'd' prints the unit zero-extended
// (it loads the unit unsigned into a 64-bit value), and so does this.
std::string dump_physical(MonitorQueries& machine, const DumpFormat& f, uint64_t address) {
  const uint64_t total = f.count * f.size;
  if (total > kMaxDumpBytes) return error_line(fmt::format("xp: at most {} bytes at once", kMaxDumpBytes));
  const unsigned line_size = f.size == 1 ? 8 : 16;
  const unsigned unit = f.format == 'c' ? 1 : f.size;
  fmt::memory_buffer out;
  uint64_t left = total;
  while (left > 0) {
    appendf(out, "{:016x}:", address);
    const auto length = static_cast<unsigned>(std::min<uint64_t>(left, line_size));
    std::array<uint8_t, 16> buf{};
    if (machine.read_physical(address, std::span(buf.data(), length)) < length) {
      out.append(std::string_view(" Cannot access memory\n"));
      break;
    }
    for (unsigned i = 0; i + unit <= length; i += unit) {
      uint64_t v = 0;
      for (unsigned b = 0; b < unit; ++b) v |= uint64_t{buf[i + b]} << (8 * b);
      append_value(out, f.format, unit, v);
    }
    out.push_back('\n');
    address += length;
    left -= length;
  }
  return fmt::to_string(out);
}

std::string run_xp(MonitorQueries& machine, const std::vector<std::string_view>& words) {
  DumpFormat f;
  size_t next = 1;
  if (words.size() > next && words[next].starts_with('/')) {
    std::string error;
    const auto parsed = parse_dump_format(words[next], error);
    if (!parsed) return error_line(error);
    f = *parsed;
    ++next;
  }
  if (words.size() != next + 1) return error_line("usage: xp /FMT ADDR (e.g. xp /8xb 0x1000)");
  const auto address = parse_number(words[next]);
  if (!address) return error_line(fmt::format("xp: not an address: {}", words[next]));
  return dump_physical(machine, f, *address);
}

std::string run_info(MonitorQueries& machine, const std::vector<std::string_view>& words) {
  if (words.size() < 2) return error_line("usage: info cpus|lapic [N]|ioapic|topology|ipis|time");
  const std::string_view what = words[1];
  if (what == "lapic" && words.size() <= 3) {
    if (words.size() == 2) return machine.info_lapic(std::nullopt);
    const auto vcpu = parse_number(words[2]);
    if (!vcpu || *vcpu > 0xffffffffu) return error_line(fmt::format("info lapic: not a vCPU number: {}", words[2]));
    return machine.info_lapic(static_cast<unsigned>(*vcpu));
  }
  if (words.size() != 2) return error_line(fmt::format("info {}: takes no argument", what));
  if (what == "cpus") return machine.info_cpus();
  if (what == "ioapic") return machine.info_ioapic();
  if (what == "topology") return machine.info_topology();
  if (what == "ipis") return machine.info_ipis();
  if (what == "time") return machine.info_time();
  return error_line(fmt::format("info: unknown item '{}' (cpus, lapic, ioapic, topology, ipis, time)", what));
}

std::string run_snapshot(MonitorQueries& machine, const std::vector<std::string_view>& words) {
  if (words.size() == 2 && words[1] == "list") return machine.snapshot_list();
  if (words.size() == 3 && words[1] == "save") return machine.snapshot_save(words[2]);
  if (words.size() == 3 && words[1] == "load") return machine.snapshot_load(words[2]);
  return error_line("usage: snapshot save NAME | snapshot load NAME | snapshot list");
}

}  // namespace

std::string run_monitor_command(MonitorQueries& machine, std::string_view line) {
  auto words = split_words(line);
  if (words.empty()) return {};
  // QEMU also takes the format glued to the command: `xp/4xg 0x1000`.
  if (words[0].starts_with("xp/")) {
    words.insert(words.begin() + 1, words[0].substr(2));
    words[0] = words[0].substr(0, 2);
  }
  const std::string_view command = words[0];
  if (command == "help" && words.size() == 1) return std::string(kHelp);
  if (command == "info") return run_info(machine, words);
  if (command == "snapshot") return run_snapshot(machine, words);
  if (command == "xp") return run_xp(machine, words);
  return error_line(fmt::format("unknown command: '{}' (try 'help')", command));
}

}  // namespace topolab::debug
