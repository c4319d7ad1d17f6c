// SPDX-License-Identifier: GPL-2.0-or-later
// The monitor's commands, parsed and dispatched: gdb's `monitor LINE`
// (qRcmd) and a future `--monitor stdio` share this. The machine answers
// through MonitorQueries; this file only parses and formats.
//
// Commands:
//   help
//   info cpus | lapic [N] | ioapic | topology | ipis | time
//   snapshot save NAME | load NAME | list
//   xp /FMT ADDR   guest-physical memory, with QEMU's monitor syntax and
//                  layout (QEMU's hmp `memory_dump`): FMT is [COUNT][FORMAT][SIZE]
//                  in any order after the count, FORMAT one of x d u o c
//                  (default x), SIZE b h w g (default w). QEMU remembers the
//                  last format and size between commands; this parser has
//                  no state and always starts from x and w. `i` (disassemble)
//                  is not supported.
// Unknown commands and bad arguments give one line saying what is wrong.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace topolab::debug {

// What the monitor asks of the machine. Each text query returns the text
// to show (lines ending in '\n'), or one error line.
class MonitorQueries {
 public:
  virtual ~MonitorQueries() = default;
  virtual std::string info_cpus() = 0;
  // nullopt: every vCPU's local APIC.
  virtual std::string info_lapic(std::optional<unsigned> vcpu) = 0;
  virtual std::string info_ioapic() = 0;
  virtual std::string info_topology() = 0;
  virtual std::string info_ipis() = 0;
  virtual std::string info_time() = 0;
  virtual std::string snapshot_save(std::string_view name) = 0;
  virtual std::string snapshot_load(std::string_view name) = 0;
  virtual std::string snapshot_list() = 0;
  // Guest-physical bytes from `address`: how many could be read, from the
  // start (fewer than out.size() where RAM ends).
  virtual size_t read_physical(uint64_t address, std::span<uint8_t> out) = 0;
};

// The output of one command line (empty for an empty line). Never throws.
std::string run_monitor_command(MonitorQueries& machine, std::string_view line);

// The most `xp` prints at once, so that one command cannot ask for
// gigabytes of text (QEMU has no limit; its output goes to a terminal).
inline constexpr uint64_t kMaxDumpBytes = 64 * 1024;

}  // namespace topolab::debug
