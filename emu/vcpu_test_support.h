// SPDX-License-Identifier: GPL-2.0-or-later
// What the vCPU tests share: the fake host that answers from tables and
// logs every call with the instruction count the vCPU reports during it,
// the constants of the tiny guests' memory map, and the fixtures that boot
// them. Every workaround in the vcpu_*.cc files that rests on a fact from
// UNICORN_NOTES.md is proven by a test beside the file it is in.
#pragma once

#include "emu/unicorn_vcpu.h"

#include <gtest/gtest.h>

#include <gtest/gtest.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <set>
#include <tuple>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace topolab::vcpu_test {

constexpr uint64_t kRamBytes = 1 << 20;

constexpr uint32_t kEntry = 0x1000;  // 32-bit snippets start here
constexpr uint32_t kMultibootMagic = 0x2BAD'B002;

constexpr uint32_t kMultibootInfo = 0x9500;

constexpr uint64_t kBudget = 1'000'000;  // more than any snippet needs

// Long mode, as guest images enter it: identity page tables, a GDT with a
// 64-bit code segment, and a 32-bit stub that switches. The 64-bit code at
// kLongModeEntry is a HLT, so the test's own snippet starts at kSnippet64.
constexpr uint64_t kLongModeEntry = 0x2000;

constexpr uint64_t kSnippet64 = 0x2001;

constexpr uint64_t kGdt = 0x3000;

constexpr uint64_t kGdtr = 0x3020;

constexpr uint64_t kPml4 = 0x10000, kPdpt = 0x11000, kPd = 0x12000, kPt = 0x13000;

constexpr uint64_t kNotPresent = 0x80000;    // in RAM, but not in the page tables
constexpr uint64_t kUnmapped = 0x1000'0000;  // beyond the 1 MiB of RAM

constexpr uint64_t kGdt32 = 0x3100;

constexpr uint64_t kGdtr32 = 0x3120;

constexpr uint64_t kIdtr = 0x3128;

constexpr uint64_t kIdt = 0x4000;

constexpr uint8_t kInterruptGate = 0xE;

constexpr uint64_t kApicBase = 0xFEE0'0000;  // where the tests map a device page

constexpr uint32_t kMsrApicBase = 0x1B;

using Bytes = std::vector<uint8_t>;

struct PortAccess {
  uint16_t port;
  unsigned size;
  uint32_t value;
  uint64_t instructions;  // Vcpu::instructions() during the call
  bool operator==(const PortAccess&) const = default;
};

struct CpuidQuery {
  uint32_t leaf, subleaf;
  uint64_t instructions;
  bool operator==(const CpuidQuery&) const = default;
};

// Answers from tables and logs every call with the instruction count the
// vCPU reports during it.
class FakeHost final : public VcpuHost {
 public:
  CpuidRegs cpuid(uint32_t leaf, uint32_t subleaf) override {
    cpuid_queries.push_back({leaf, subleaf, now()});
    return cpuid_answer;
  }
  uint32_t port_in(uint16_t port, unsigned size) override {
    const uint32_t value = in_values[port];
    port_reads.push_back({port, size, value, now()});
    return value;
  }
  void port_out(uint16_t port, unsigned size, uint32_t value) override {
    port_writes.push_back({port, size, value, now()});
    if (on_port_out) on_port_out();
  }
  std::optional<uint64_t> read_msr(uint32_t msr) override {
    msr_reads.push_back(msr);
    if (on_read_msr) on_read_msr();
    const auto it = msrs.find(msr);
    return it == msrs.end() ? std::nullopt : std::optional(it->second);
  }
  bool write_msr(uint32_t msr, uint64_t value) override {
    msr_writes.emplace_back(msr, value);
    msr_write_instructions.push_back(now());
    if (on_write_msr) on_write_msr();
    const auto it = msrs.find(msr);
    if (it == msrs.end()) return false;
    it->second = value;
    return true;
  }
  std::optional<uint64_t> read_pmc(uint32_t ecx) override {
    const auto it = pmcs.find(ecx);
    return it == pmcs.end() ? std::nullopt : std::optional(it->second);
  }
  void open_bus_access(uint64_t physical, unsigned size, bool write) override {
    open_bus.emplace_back(physical, size, write);
  }
  uint64_t read_tsc() override {
    const uint64_t value = tsc_values.at(0);
    tsc_values.pop_front();
    return value;
  }

  std::optional<int64_t> hypercall(const KvmHypercall& call) override {
    hypercalls.push_back(call);
    return hypercall_answer;
  }
  uint64_t read_cr8() override { return cr8; }
  CpuidRegs describe_cpuid(uint32_t leaf, uint32_t) override {
    const auto it = described.find(leaf);
    return it == described.end() ? CpuidRegs{} : it->second;
  }
  std::map<uint32_t, CpuidRegs> described;  // what describe_cpuid answers (zeros: unknown)
  void write_cr8(uint64_t value) override { cr8_writes.push_back({value, now()}); cr8 = value; }
  void system_instruction(SystemInstruction kind) override { system_instructions.push_back({kind, now()}); }
  std::vector<std::pair<SystemInstruction, uint64_t>> system_instructions;  // kind, instructions() then

  uint64_t now() const { return cpu ? cpu->instructions() : 0; }

  // Each debug stop: why, the count and the linear RIP then.
  struct DebugStopSeen {
    DebugStop stop;
    uint64_t instructions;
    uint64_t linear_rip;
  };
  void debug_stop(const DebugStop& stop) override {
    debug_stops.push_back({stop, now(), cpu ? cpu->linear_rip() : 0});
    if (on_debug_stop) on_debug_stop(stop);
  }
  std::vector<DebugStopSeen> debug_stops;
  std::function<void(const DebugStop&)> on_debug_stop;

  UnicornVcpu* cpu = nullptr;
  std::optional<int64_t> hypercall_answer;  // nullopt: no KVM-like host
  std::vector<KvmHypercall> hypercalls;
  uint64_t cr8 = 0;
  std::vector<std::pair<uint64_t, uint64_t>> cr8_writes;  // value, instructions() during the call
  CpuidRegs cpuid_answer;
  std::map<uint16_t, uint32_t> in_values;
  std::map<uint32_t, uint64_t> msrs;
  std::map<uint32_t, uint64_t> pmcs;  // RDPMC's counters by ECX
  std::deque<uint64_t> tsc_values;
  std::function<void()> on_port_out;
  std::function<void()> on_read_msr;
  std::function<void()> on_write_msr;

  std::vector<CpuidQuery> cpuid_queries;
  std::vector<PortAccess> port_reads, port_writes;
  std::vector<uint32_t> msr_reads;
  std::vector<std::pair<uint32_t, uint64_t>> msr_writes;
  std::vector<uint64_t> msr_write_instructions;  // instructions() during each write
  std::vector<std::tuple<uint64_t, unsigned, bool>> open_bus;
  std::set<uint32_t> unannounced_msrs;
  bool msr_announced(uint32_t msr) override { return !unannounced_msrs.contains(msr); }
};

// A FILE* that collects what is written to it.
class MemoryStream {
 public:
  MemoryStream() : file_(open_memstream(&buffer_, &size_)) {}
  ~MemoryStream() {
    std::fclose(file_);
    std::free(buffer_);
  }
  std::FILE* file() const { return file_; }
  std::string text() {
    std::fflush(file_);
    return {buffer_, size_};
  }

 private:
  char* buffer_ = nullptr;
  size_t size_ = 0;
  std::FILE* file_;
};

class VcpuTest : public ::testing::Test {
 protected:
  VcpuTest() = default;
  // RAM in regions of its own (kRamBytes from 0 by default).
  explicit VcpuTest(std::vector<RamRegion> regions) : ram(std::move(regions)) {}
  void SetUp() override { host.cpu = &cpu; }

  void load(uint64_t address, const Bytes& code) {
    std::copy(code.begin(), code.end(), ram.bytes(address, code.size()).begin());
  }

  // A 32-bit snippet at kEntry, entered as a Multiboot loader would.
  void boot32(const Bytes& code) {
    load(kEntry, code);
    cpu.enter_multiboot(kEntry, kMultibootMagic, kMultibootInfo);
  }

  // Runs the 32-bit stub into long mode; the 64-bit snippet comes next.
  void boot64(const Bytes& code) {
    write_long_mode_tables();
    boot32({
        0x0f, 0x01, 0x15, 0x20, 0x30, 0x00, 0x00,  // 1000: lgdt [0x3020]
        0x0f, 0x20, 0xe0,                          // 1007: mov eax, cr4
        0x83, 0xc8, 0x20,                          // 100a: or eax, 0x20 (PAE)
        0x0f, 0x22, 0xe0,                          // 100d: mov cr4, eax
        0xb8, 0x00, 0x00, 0x01, 0x00,              // 1010: mov eax, 0x10000 (PML4)
        0x0f, 0x22, 0xd8,                          // 1015: mov cr3, eax
        0xb9, 0x80, 0x00, 0x00, 0xc0,              // 1018: mov ecx, 0xc0000080 (EFER)
        0x0f, 0x32,                                // 101d: rdmsr
        0x0d, 0x00, 0x01, 0x00, 0x00,              // 101f: or eax, 0x100 (LME)
        0x0f, 0x30,                                // 1024: wrmsr
        0x0f, 0x20, 0xc0,                          // 1026: mov eax, cr0
        0x0d, 0x00, 0x00, 0x00, 0x80,              // 1029: or eax, 0x80000000 (PG)
        0x0f, 0x22, 0xc0,                          // 102e: mov cr0, eax
        // Compatibility mode now (CR0.PG set, CS still 32-bit), in a block
        // of its own: this is no REX prefix, and the jump is no #UD.
        0x48,                                      // 1031: dec eax
        0xea, 0x00, 0x20, 0x00, 0x00, 0x08, 0x00,  // 1032: jmp 0x08:0x2000
    });
    load(kLongModeEntry, {0xf4});  // 2000: hlt
    load(kSnippet64, code);
    const VcpuExit exit = cpu.run(kBudget);
    ASSERT_EQ(exit.reason, VcpuExit::Reason::Halt) << exit.detail;
    ASSERT_EQ(exit.rip, kSnippet64);
  }

  // Identity-maps the first GiB (SDM Vol. 3A 4.5): 4 KiB pages for the
  // first 2 MiB, except page 0 (a null guard, as many guests leave it) and
  // kNotPresent, and 2 MiB pages above.
  void write_long_mode_tables() {
    ram.write<uint64_t>(kGdt + 0x08, 0x00AF'9A00'0000'FFFF);  // 64-bit code, L = 1
    ram.write<uint64_t>(kGdt + 0x10, 0x00CF'9200'0000'FFFF);  // flat data
    ram.write<uint16_t>(kGdtr, 3 * 8 - 1);
    ram.write<uint32_t>(kGdtr + 2, kGdt);
    ram.write<uint64_t>(kPml4, kPdpt | 0x3);  // present, writable
    ram.write<uint64_t>(kPdpt, kPd | 0x3);
    ram.write<uint64_t>(kPd, kPt | 0x3);
    for (uint64_t i = 1; i < 512; ++i) ram.write<uint64_t>(kPd + 8 * i, (i << 21) | 0x83);  // + 2 MiB page
    for (uint64_t i = 1; i < 512; ++i)
      if (i << 12 != kNotPresent) ram.write<uint64_t>(kPt + 8 * i, (i << 12) | 0x3);
    if (adjust_tables) adjust_tables();
  }
  std::function<void()> adjust_tables;  // a test's own entries, over the identity map

  // A GDT for 32-bit snippets that reload segments (IRETD reloads CS):
  // flat 32-bit code at 0x08 and data at 0x10, as Multiboot selectors.
  void write_gdt32() {
    ram.write<uint64_t>(kGdt32 + 0x08, 0x00CF'9A00'0000'FFFF);
    ram.write<uint64_t>(kGdt32 + 0x10, 0x00CF'9200'0000'FFFF);
    ram.write<uint16_t>(kGdtr32, 3 * 8 - 1);
    ram.write<uint32_t>(kGdtr32 + 2, kGdt32);
  }
  // The pseudo-descriptor LIDT reads at kIdtr; the 8-byte base suits both
  // 32-bit and 64-bit code.
  void write_idtr(uint16_t limit) {
    ram.write<uint16_t>(kIdtr, limit);
    ram.write<uint64_t>(kIdtr + 2, kIdt);
  }
  // SDM Vol. 3A figure 6-2 and 6-8: present, DPL 0.
  void set_gate32(uint8_t vector, uint32_t handler, uint8_t type = kInterruptGate, uint16_t selector = 0x08) {
    ram.write<uint64_t>(kIdt + 8 * vector, (handler & 0xFFFF) | uint64_t{selector} << 16 | uint64_t{0x80u | type} << 40 |
                                               uint64_t{handler >> 16} << 48);
  }
  void set_gate64(uint8_t vector, uint64_t handler, uint8_t type = kInterruptGate, unsigned ist = 0, unsigned dpl = 0) {
    ram.write<uint64_t>(kIdt + 16 * vector, (handler & 0xFFFF) | uint64_t{0x08} << 16 | uint64_t{ist} << 32 |
                                                uint64_t{0x80u | dpl << 5 | type} << 40 |
                                                ((handler >> 16) & 0xFFFF) << 48);
    ram.write<uint64_t>(kIdt + 16 * vector + 8, handler >> 32);
  }
  uint32_t stack32(uint64_t offset) const { return ram.read<uint32_t>(cpu.state().rsp + offset); }
  uint64_t stack64(uint64_t offset) const { return ram.read<uint64_t>(cpu.state().rsp + offset); }

  VcpuExit run_expecting(VcpuExit::Reason reason, uint64_t budget = kBudget) {
    const VcpuExit exit = cpu.run(budget);
    EXPECT_EQ(exit.reason, reason) << to_string(exit.reason) << ": " << exit.detail;
    return exit;
  }

  GuestRam ram{kRamBytes};
  FakeHost host;
  UnicornVcpu cpu{0, ram, host};
};

}  // namespace topolab::vcpu_test
