// Vcpu on Unicorn 2.0.1: one behaviour per test, each a tiny guest program
// with its instructions in comments (addresses on the left), in the style
// of Unicorn's tests/unit/test_x86.c. Every workaround in vcpu.cc that
// rests on a fact from UNICORN_NOTES.md is proven here.
#include "emu/unicorn_vcpu.h"

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

namespace topolab {
namespace {

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
constexpr uint8_t kTrapGate = 0xF;
constexpr uint64_t kIf = 0x200;
constexpr uint64_t kApicBase = 0xFEE0'0000;

constexpr uint32_t kMsrApicBase = 0x1B;
constexpr uint32_t kMsrTscAux = 0xC000'0103;

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

  uint64_t now() const { return cpu ? cpu->instructions() : 0; }

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

// The counting loop several tests run: 4 + 99 * 3 + 1 = 302 instructions.
const Bytes kLoop = {
    0xb9, 0x64, 0x00, 0x00, 0x00,  // 1000: mov ecx, 100
    0x01, 0xc8,                    // 1005: add eax, ecx
    0x49,                          // 1007: dec ecx
    0x75, 0xfb,                    // 1008: jnz 0x1005
    0xf4,                          // 100a: hlt
};
constexpr uint64_t kLoopInstructions = 302;
constexpr uint64_t kLoopBody = 0x1005;

// --- the engine's own CPU model ------------------------------------------

// RDPKRU after enabling CR4.PKE, with Unicorn's model chosen per vCPU: the
// engine gates PKU on its internal features whatever CPUID answers, and
// those features survive the context copy enter_multiboot makes.
VcpuExit run_rdpkru(EngineCpu engine_cpu) {
  GuestRam ram(kRamBytes);
  FakeHost host;
  UnicornVcpu cpu(0, ram, host, engine_cpu);
  host.cpu = &cpu;
  const Bytes code = {
      0x0f, 0x20, 0xe0,              // 1000: mov eax, cr4
      0x0d, 0x00, 0x00, 0x40, 0x00,  // 1003: or eax, 0x400000 (PKE)
      0x0f, 0x22, 0xe0,              // 1008: mov cr4, eax
      0x31, 0xc9,                    // 100b: xor ecx, ecx
      0x0f, 0x01, 0xee,              // 100d: rdpkru
      0xf4,                          // 1010: hlt
  };
  std::copy(code.begin(), code.end(), ram.bytes(kEntry, code.size()).begin());
  cpu.enter_multiboot(kEntry, kMultibootMagic, kMultibootInfo);
  return cpu.run(kBudget);
}

TEST(VcpuEngineCpu, Qemu64EngineHasNoPku) {
  // The #UD has no IDT to go to (the Multiboot state has none): a triple fault.
  const VcpuExit exit = run_rdpkru(EngineCpu::Qemu64);
  EXPECT_EQ(exit.reason, VcpuExit::Reason::TripleFault) << exit.detail;
  EXPECT_NE(exit.detail.find("while delivering #UD (the first raised by an invalid opcode"), std::string::npos) << exit.detail;
}

TEST(VcpuEngineCpu, SkylakeServerEngineRunsPku) {
  const VcpuExit exit = run_rdpkru(EngineCpu::SkylakeServer);
  EXPECT_EQ(exit.reason, VcpuExit::Reason::Halt) << exit.detail;
}

// --- entry state ----------------------------------------------------------

TEST_F(VcpuTest, MultibootEntryRunsThirtyTwoBitCode) {
  boot32({
      0x89, 0xc1,                    // 1000: mov ecx, eax
      0x89, 0xda,                    // 1002: mov edx, ebx
      0xb8, 0x05, 0x00, 0x00, 0x00,  // 1004: mov eax, 5
      0x48,                          // 1009: dec eax (a REX prefix in 64-bit mode)
      0x48,                          // 100a: dec eax
      0xf4,                          // 100b: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  const VcpuState s = cpu.state();
  EXPECT_EQ(s.rax, 3u);
  EXPECT_EQ(s.rcx, kMultibootMagic);
  EXPECT_EQ(s.rdx, kMultibootInfo);
  EXPECT_EQ(cpu.instructions(), 6u);
}

TEST_F(VcpuTest, MultibootEntryStateIsFlatProtectedModeWithoutPaging) {
  boot32({0xf4});  // 1000: hlt
  const VcpuState s = cpu.state();
  EXPECT_EQ(s.cs, 0x08);
  EXPECT_EQ(s.ds, 0x10);
  EXPECT_EQ(s.es, 0x10);
  EXPECT_EQ(s.ss, 0x10);
  EXPECT_EQ(s.cr0 & 0x8000'0001, 0x1u) << "PE set, PG clear";
  EXPECT_EQ(s.cr4, 0u);
  EXPECT_EQ(s.efer, 0u);
  EXPECT_EQ(s.rflags & 0x200, 0u) << "IF clear";
  EXPECT_EQ(s.rip, kEntry);
}

// --- exits ----------------------------------------------------------------

TEST_F(VcpuTest, HltIsHaltWithRipAfterIt) {
  boot32({
      0x90,  // 1000: nop
      0xf4,  // 1001: hlt
      0x90,  // 1002: nop
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(exit.rip, 0x1002u);
  EXPECT_EQ(cpu.instructions(), 2u);
}

TEST_F(VcpuTest, RunAfterHaltResumesAfterTheHlt) {
  boot32({
      0xf4,  // 1000: hlt
      0x43,  // 1001: inc ebx
      0xf4,  // 1002: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  const VcpuExit exit = run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(exit.rip, 0x1003u);
  EXPECT_EQ(cpu.state().rbx, kMultibootInfo + 1);
}

// With no IDT (the Multiboot state), every exception ends in a triple fault
// (SDM 6.15: the #GP of the missing gate, then #DF, then shutdown), and the
// one line names the chain and what raised the first.
TEST_F(VcpuTest, Ud2WithNoIdtIsATripleFaultNamingTheUd) {
  boot32({
      0x90,        // 1000: nop
      0x0f, 0x0b,  // 1001: ud2
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::TripleFault);
  EXPECT_EQ(exit.rip, 0x1001u);
  EXPECT_NE(exit.detail.find("triple fault: "), std::string::npos) << exit.detail;
  EXPECT_NE(exit.detail.find("while delivering #DF"), std::string::npos) << exit.detail;
  EXPECT_NE(exit.detail.find("an invalid opcode (ud2) at 0x1001: ud2"), std::string::npos) << exit.detail;
  EXPECT_EQ(cpu.instructions(), 1u);
}

TEST_F(VcpuTest, Int3IsExceptionThreeWithRipAfterIt) {
  boot32({
      0x90,  // 1000: nop
      0xcc,  // 1001: int3
      0xf4,  // 1002: hlt
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::TripleFault);
  EXPECT_NE(exit.detail.find("0x1001: int3"), std::string::npos) << exit.detail;
  EXPECT_EQ(cpu.instructions(), 2u) << "INT3 is a trap: it retired";
}

TEST_F(VcpuTest, IntNIsExceptionWithItsVector) {
  boot32({
      0xcd, 0x40,  // 1000: int 0x40
      0xf4,        // 1002: hlt
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::TripleFault);
  EXPECT_NE(exit.detail.find("0x1000: int 0x40"), std::string::npos) << exit.detail;
}

TEST_F(VcpuTest, DivideByZeroIsExceptionZeroAtTheFaultingInstruction) {
  boot32({
      0x31, 0xc9,  // 1000: xor ecx, ecx
      0xf7, 0xf1,  // 1002: div ecx
      0xf4,        // 1004: hlt
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::TripleFault);
  EXPECT_EQ(exit.rip, 0x1002u);
  EXPECT_NE(exit.detail.find("0x1002: div ecx"), std::string::npos) << exit.detail;
  EXPECT_EQ(cpu.instructions(), 1u);
  EXPECT_EQ(cpu.state().rip, 0x1002u) << "a fault leaves RIP at the instruction";
}

TEST_F(VcpuTest, PageFaultReportsCr2) {
  boot64({
      0x48, 0x8b, 0x04, 0x25, 0x00, 0x00, 0x08, 0x00,  // 2001: mov rax, [0x80000] (not present)
      0xf4,                                            // 2009: hlt
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::TripleFault);
  EXPECT_EQ(exit.rip, kSnippet64);
  EXPECT_NE(exit.detail.find("#PF(0x0, cr2=0x80000)"), std::string::npos) << exit.detail;
  EXPECT_EQ(cpu.state().rip, kSnippet64) << "Unicorn 2.1.3 stops at the exact faulting instruction";
}

// A physical address with no RAM and no device is open bus: loads read all
// ones, stores are dropped, both are counted, and the run goes on.
TEST_F(VcpuTest, OpenBusReadsAllOnesAndDropsStores) {
  boot32({
      0xa1, 0x00, 0x00, 0x00, 0x10,  // 1000: mov eax, [0x10000000]
      0xa3, 0x04, 0x00, 0x00, 0x10,  // 1005: mov [0x10000004], eax
      0xf4,                          // 100a: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rax, 0xFFFF'FFFFu);
  EXPECT_EQ(host.open_bus, (std::vector<std::tuple<uint64_t, unsigned, bool>>{{kUnmapped, 4, false},
                                                                            {kUnmapped + 4, 4, true}}));
  EXPECT_EQ(cpu.instructions(), 3u);
}

TEST_F(VcpuTest, FetchFromOpenBusIsUnsupportedAtTheTarget) {
  boot32({
      0xb8, 0x00, 0x00, 0x00, 0x10,  // 1000: mov eax, 0x10000000
      0xff, 0xe0,                    // 1005: jmp eax
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::Unsupported);
  EXPECT_EQ(exit.rip, kUnmapped);
  EXPECT_NE(exit.detail.find("from physical 0x10000000, where there is no RAM"), std::string::npos) << exit.detail;
  EXPECT_EQ(cpu.instructions(), 2u);
}

// --- CPUID and port I/O ---------------------------------------------------

TEST_F(VcpuTest, CpuidIsAnsweredByTheHostNotByUnicorn) {
  host.cpuid_answer = {0x11, 0x22, 0x33, 0x44};  // no leaf of Unicorn's own model looks like this
  boot32({
      0xb8, 0x04, 0x00, 0x00, 0x00,  // 1000: mov eax, 4
      0xb9, 0x02, 0x00, 0x00, 0x00,  // 1005: mov ecx, 2
      0x0f, 0xa2,                    // 100a: cpuid
      0xf4,                          // 100c: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(host.cpuid_queries, (std::vector<CpuidQuery>{{4, 2, 2}}));
  const VcpuState s = cpu.state();
  EXPECT_EQ(s.rax, 0x11u);
  EXPECT_EQ(s.rbx, 0x22u);
  EXPECT_EQ(s.rcx, 0x33u);
  EXPECT_EQ(s.rdx, 0x44u);
}

TEST_F(VcpuTest, CpuidClearsTheUpperHalvesIn64BitMode) {
  host.cpuid_answer = {0x11, 0x22, 0x33, 0x44};
  boot64({
      0x48, 0xb8, 0x04, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff,  // 2001: mov rax, 0xffffffff00000004
      0x48, 0xb9, 0x02, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff,  // 200b: mov rcx, 0xffffffff00000002
      0x48, 0xc7, 0xc3, 0xff, 0xff, 0xff, 0xff,                    // 2015: mov rbx, -1
      0x48, 0xc7, 0xc2, 0xff, 0xff, 0xff, 0xff,                    // 201c: mov rdx, -1
      0x0f, 0xa2,                                                  // 2023: cpuid
      0xf4,                                                        // 2025: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  ASSERT_EQ(host.cpuid_queries.size(), 1u);
  EXPECT_EQ(host.cpuid_queries[0].leaf, 4u);
  EXPECT_EQ(host.cpuid_queries[0].subleaf, 2u);
  const VcpuState s = cpu.state();
  EXPECT_EQ(s.rax, 0x11u);
  EXPECT_EQ(s.rbx, 0x22u);
  EXPECT_EQ(s.rcx, 0x33u);
  EXPECT_EQ(s.rdx, 0x44u);
}

TEST_F(VcpuTest, OutReachesTheHostWithPortSizeAndValue) {
  boot32({
      0x66, 0xba, 0xf8, 0x03,        // 1000: mov dx, 0x3f8
      0xb0, 0x41,                    // 1004: mov al, 0x41
      0xee,                          // 1006: out dx, al
      0x66, 0xb8, 0x34, 0x12,        // 1007: mov ax, 0x1234
      0x66, 0xe7, 0x80,              // 100b: out 0x80, ax
      0xb8, 0xef, 0xbe, 0xad, 0xde,  // 100e: mov eax, 0xdeadbeef
      0xef,                          // 1013: out dx, eax
      0xf4,                          // 1014: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(host.port_writes, (std::vector<PortAccess>{
                                  {0x3f8, 1, 0x41, 2},
                                  {0x80, 2, 0x1234, 4},
                                  {0x3f8, 4, 0xdeadbeef, 6},
                              }));
}

TEST_F(VcpuTest, InReadsWhatTheHostReturns) {
  host.in_values = {{0x3fd, 0x6160'5f60}, {0x71, 0x1234'5678}};
  boot32({
      0x66, 0xba, 0xfd, 0x03,  // 1000: mov dx, 0x3fd
      0xec,                    // 1004: in al, dx
      0x89, 0xc3,              // 1005: mov ebx, eax
      0x66, 0xe5, 0x71,        // 1007: in ax, 0x71
      0x89, 0xc1,              // 100a: mov ecx, eax
      0xed,                    // 100c: in eax, dx
      0xf4,                    // 100d: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  const VcpuState s = cpu.state();
  EXPECT_EQ(s.rbx & 0xff, 0x60u);
  EXPECT_EQ(s.rcx & 0xffff, 0x5678u);
  EXPECT_EQ(s.rax, 0x6160'5f60u);
  EXPECT_EQ(host.port_reads.size(), 3u);
  EXPECT_EQ(host.port_reads[1], (PortAccess{0x71, 2, 0x1234'5678, 3}));
}

// --- RDMSR, WRMSR, RDTSC: trapped at their sites and emulated -------------

TEST_F(VcpuTest, RdmsrIsAnsweredByTheHost) {
  host.msrs = {{kMsrApicBase, 0x1234'5678'FEE0'0900}};
  boot32({
      0xb9, 0x1b, 0x00, 0x00, 0x00,  // 1000: mov ecx, 0x1b
      0x0f, 0x32,                    // 1005: rdmsr
      0xf4,                          // 1007: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(host.msr_reads, (std::vector<uint32_t>{kMsrApicBase}));
  EXPECT_EQ(cpu.state().rax, 0xFEE0'0900u);
  EXPECT_EQ(cpu.state().rdx, 0x1234'5678u);
  EXPECT_EQ(cpu.instructions(), 3u);
}

// If Unicorn ran the RDMSR itself it would have put 0 in EDX:EAX (the notes).
TEST_F(VcpuTest, TrapStopsBeforeTheInstructionRuns) {
  host.msrs = {{kMsrApicBase, 0}};
  VcpuState during{};
  uint64_t instructions_during = 0;
  host.on_read_msr = [&] {
    during = cpu.state();
    instructions_during = cpu.instructions();
  };
  boot32({
      0xb8, 0xaa, 0xaa, 0x00, 0x00,  // 1000: mov eax, 0xaaaa
      0xba, 0xbb, 0xbb, 0x00, 0x00,  // 1005: mov edx, 0xbbbb
      0xb9, 0x1b, 0x00, 0x00, 0x00,  // 100a: mov ecx, 0x1b
      0x0f, 0x32,                    // 100f: rdmsr
      0xf4,                          // 1011: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(during.rip, 0x100fu);
  EXPECT_EQ(during.rax, 0xaaaau);
  EXPECT_EQ(during.rdx, 0xbbbbu);
  EXPECT_EQ(instructions_during, 3u);
}

TEST_F(VcpuTest, RdmsrClearsTheUpperHalvesIn64BitMode) {
  host.msrs = {{kMsrApicBase, 0x1234'5678'FEE0'0900}};
  boot64({
      0x48, 0xc7, 0xc0, 0xff, 0xff, 0xff, 0xff,  // 2001: mov rax, -1
      0x48, 0xc7, 0xc2, 0xff, 0xff, 0xff, 0xff,  // 2008: mov rdx, -1
      0xb9, 0x1b, 0x00, 0x00, 0x00,              // 200f: mov ecx, 0x1b
      0x0f, 0x32,                                // 2014: rdmsr
      0xf4,                                      // 2016: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rax, 0xFEE0'0900u);
  EXPECT_EQ(cpu.state().rdx, 0x1234'5678u);
}

// --- VMCALL / VMMCALL and MOV CR8: answered by the host -------------------

TEST_F(VcpuTest, VmcallIsAHypercallOfAKvmLikeHost) {
  host.hypercall_answer = 7;
  boot64({
      0x48, 0xc7, 0xc0, 0x0a, 0x00, 0x00, 0x00,  // 2001: mov rax, 10 (KVM_HC_SEND_IPI)
      0x48, 0xc7, 0xc3, 0x05, 0x00, 0x00, 0x00,  // 2008: mov rbx, 5
      0x48, 0xc7, 0xc6, 0x40, 0x40, 0x00, 0x00,  // 200f: mov rsi, 0x4040
      0x0f, 0x01, 0xc1,                          // 2016: vmcall
      0x0f, 0x01, 0xd9,                          // 2019: vmmcall
      0xf4,                                      // 201c: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  ASSERT_EQ(host.hypercalls.size(), 2u);
  EXPECT_EQ(host.hypercalls[0].nr, KVM_HC_SEND_IPI);
  EXPECT_EQ(host.hypercalls[0].a0, 5u);
  EXPECT_EQ(host.hypercalls[0].a3, 0x4040u);
  EXPECT_TRUE(host.hypercalls[0].long_mode);
  EXPECT_EQ(host.hypercalls[0].cpl, 0u);
  EXPECT_EQ(host.hypercalls[1].nr, 7u);  // the first one's result
  EXPECT_EQ(cpu.state().rax, 7u);
}

TEST_F(VcpuTest, VmcallWithoutAHypervisorIsInvalidOpcode) {
  boot64({
      0x0f, 0x01, 0xc1,  // 2001: vmcall
      0xf4,              // 2004: hlt
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::TripleFault);  // no IDT for the #UD
  EXPECT_NE(exit.detail.find("#UD"), std::string::npos) << exit.detail;
  EXPECT_EQ(host.hypercalls.size(), 1u);
}

// The engine has no APIC: CR8 is the host's (its APIC's TPR[7:4]).
TEST_F(VcpuTest, MovCr8ReachesTheHost) {
  host.cr8 = 0;
  boot64({
      0x48, 0xc7, 0xc1, 0x09, 0x00, 0x00, 0x00,  // 2001: mov rcx, 9
      0x44, 0x0f, 0x22, 0xc1,                    // 2008: mov cr8, rcx
      0x44, 0x0f, 0x20, 0xc2,                    // 200c: mov rdx, cr8
      0x49, 0xc7, 0xc1, 0x00, 0x00, 0x00, 0x00,  // 2010: mov r9, 0
      0x45, 0x0f, 0x22, 0xc1,                    // 2017: mov cr8, r9
      0x45, 0x0f, 0x20, 0xc2,                    // 201b: mov r10, cr8
      0xf4,                                      // 201f: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  ASSERT_EQ(host.cr8_writes.size(), 2u);
  EXPECT_EQ(host.cr8_writes[0].first, 9u);
  EXPECT_EQ(host.cr8_writes[1].first, 0u);
  // Exact instruction counts during the calls: three instructions apart.
  EXPECT_EQ(host.cr8_writes[1].second - host.cr8_writes[0].second, 3u);
  EXPECT_EQ(cpu.state().rdx, 9u);
  EXPECT_EQ(cpu.state().r10, 0u);
  EXPECT_EQ(host.cr8, 0u);
}

TEST_F(VcpuTest, MovToCr8WithReservedBitsIsGeneralProtection) {
  boot64({
      0x48, 0xc7, 0xc0, 0x10, 0x00, 0x00, 0x00,  // 2001: mov rax, 0x10
      0x44, 0x0f, 0x22, 0xc0,                    // 2008: mov cr8, rax
      0xf4,                                      // 200c: hlt
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::TripleFault);
  EXPECT_NE(exit.detail.find("bits 63:4 are reserved"), std::string::npos) << exit.detail;
  EXPECT_TRUE(host.cr8_writes.empty());
}

// SDM Vol. 3A 2.5: a CR4 bit CPUID does not allow is #GP(0), which the
// engine itself does not check.
TEST_F(VcpuTest, MovToCr4OfABitCpuidDoesNotAllowIsGeneralProtection) {
  host.described[1] = {.eax = 0, .ebx = 0, .ecx = 0, .edx = 1u << 6};  // PAE, no XSAVE
  boot32({
      0x0f, 0x20, 0xe0,                    // 1000: mov eax, cr4
      0x83, 0xc8, 0x20,                    // 1003: or eax, 0x20 (PAE: allowed)
      0x0f, 0x22, 0xe0,                    // 1006: mov cr4, eax
      0x0d, 0x00, 0x00, 0x04, 0x00,        // 1009: or eax, 0x40000 (OSXSAVE)
      0x0f, 0x22, 0xe0,                    // 100e: mov cr4, eax
      0xf4,                                // 1011: hlt
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::TripleFault);  // no IDT for the #GP
  EXPECT_EQ(exit.rip, 0x100eu);
  EXPECT_NE(exit.detail.find("mov cr4 of 0x40020"), std::string::npos) << exit.detail;
  EXPECT_EQ(cpu.state().cr4 & 0x40020, 0x20u);
}

// QEMU's TCG raises #UD at RDPMC; here the host's counter answers it, and a
// counter the host lacks is #GP(0) at the instruction.
TEST_F(VcpuTest, RdpmcIsAnsweredByTheHost) {
  host.pmcs = {{2, 0x12'3456'789a}};
  boot32({
      0xb9, 0x02, 0x00, 0x00, 0x00,  // 1000: mov ecx, 2
      0x0f, 0x33,                    // 1005: rdpmc
      0xf4,                          // 1007: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rax, 0x3456'789au);
  EXPECT_EQ(cpu.state().rdx, 0x12u);
  EXPECT_EQ(cpu.instructions(), 3u);
}

TEST_F(VcpuTest, RdpmcOfAMissingCounterIsGeneralProtectionAtTheInstruction) {
  boot32({
      0xb9, 0x07, 0x00, 0x00, 0x00,  // 1000: mov ecx, 7
      0x0f, 0x33,                    // 1005: rdpmc
      0xf4,                          // 1007: hlt
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::TripleFault);
  EXPECT_EQ(exit.rip, 0x1005u);
  EXPECT_NE(exit.detail.find("rdpmc of counter 0x7"), std::string::npos) << exit.detail;
}

TEST_F(VcpuTest, RdmsrOfAnUnknownMsrIsGeneralProtectionAtTheInstruction) {
  boot32({
      0xb9, 0x1b, 0x00, 0x00, 0x00,  // 1000: mov ecx, 0x1b
      0x0f, 0x32,                    // 1005: rdmsr
      0xf4,                          // 1007: hlt
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::TripleFault);
  EXPECT_EQ(exit.rip, 0x1005u);
  EXPECT_NE(exit.detail.find("rdmsr of unknown MSR 0x1b at 0x1005"), std::string::npos) << exit.detail;
  EXPECT_EQ(cpu.instructions(), 1u);
  EXPECT_EQ(cpu.state().rip, 0x1005u);
}

TEST_F(VcpuTest, WrmsrReachesTheHostWithEdxEax) {
  host.msrs = {{kMsrApicBase, 0}};
  boot32({
      0xb9, 0x1b, 0x00, 0x00, 0x00,  // 1000: mov ecx, 0x1b
      0xb8, 0x00, 0x09, 0xe0, 0xfe,  // 1005: mov eax, 0xfee00900
      0xba, 0x01, 0x00, 0x00, 0x00,  // 100a: mov edx, 1
      0x0f, 0x30,                    // 100f: wrmsr
      0xf4,                          // 1011: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(host.msrs[kMsrApicBase], 0x1'FEE0'0900u);
  EXPECT_EQ(cpu.instructions(), 5u);
}

// RDMSR and WRMSR are answered inside the engine (its patch 0003): a loop
// of 100 of each runs in one entry into the engine, and the host sees the
// instruction count of each access.
TEST_F(VcpuTest, MsrAccessesAreAnsweredWithoutLeavingTheEngine) {
  host.msrs = {{kMsrApicBase, 0}};
  boot32({
      0xb9, 0x1b, 0x00, 0x00, 0x00,  // 1000: mov ecx, 0x1b
      0xbe, 0x64, 0x00, 0x00, 0x00,  // 1005: mov esi, 100
      0x0f, 0x32,                    // 100a: rdmsr
      0x40,                          // 100c: inc eax
      0x0f, 0x30,                    // 100d: wrmsr
      0x4e,                          // 100f: dec esi
      0x75, 0xf8,                    // 1010: jnz 0x100a
      0xf4,                          // 1012: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(host.msrs[kMsrApicBase], 100u);
  EXPECT_EQ(host.msr_reads.size(), 100u);
  ASSERT_EQ(host.msr_write_instructions.size(), 100u);
  EXPECT_EQ(host.msr_write_instructions.front(), 2u + 2u);
  EXPECT_EQ(host.msr_write_instructions.back(), 2u + 99u * 5u + 2u);
  EXPECT_EQ(cpu.instructions(), 2u + 100u * 5u + 1u);
  EXPECT_EQ(cpu.engine_entries(), 1u);
}

// A write the host side must finish (EFER, CPU state the engine keeps)
// still stops in front of the WRMSR, and costs one more entry.
TEST_F(VcpuTest, CpuStateWrmsrIsMadeBetweenEngineRuns) {
  boot32({
      0xb9, 0x81, 0x00, 0x00, 0xc0,  // 1000: mov ecx, 0xc0000081 (STAR)
      0xb8, 0x00, 0x00, 0x00, 0x00,  // 1005: mov eax, 0
      0xba, 0x08, 0x00, 0x10, 0x00,  // 100a: mov edx, 0x00100008
      0x0f, 0x30,                    // 100f: wrmsr
      0x0f, 0x32,                    // 1011: rdmsr
      0xf4,                          // 1013: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rdx, 0x0010'0008u);
  EXPECT_EQ(cpu.instructions(), 6u);
  EXPECT_EQ(cpu.engine_entries(), 2u);
  EXPECT_TRUE(host.msr_writes.empty());
}

TEST_F(VcpuTest, WrmsrOfAnUnknownMsrIsGeneralProtectionAtTheInstruction) {
  boot32({
      0xb9, 0x1b, 0x00, 0x00, 0x00,  // 1000: mov ecx, 0x1b
      0xb8, 0x00, 0x09, 0xe0, 0xfe,  // 1005: mov eax, 0xfee00900
      0xba, 0x01, 0x00, 0x00, 0x00,  // 100a: mov edx, 1
      0x0f, 0x30,                    // 100f: wrmsr
      0xf4,                          // 1011: hlt
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::TripleFault);
  EXPECT_EQ(exit.rip, 0x100fu);
  EXPECT_NE(exit.detail.find("wrmsr of unknown MSR 0x1b (value 0x1fee00900) at 0x100f"), std::string::npos) << exit.detail;
  EXPECT_EQ(cpu.instructions(), 3u);
}

// Unicorn's own RDTSC returns the host TSC, which differs on every run.
TEST_F(VcpuTest, RdtscReturnsTheHostsVirtualTime) {
  host.tsc_values = {0x5'0000'0001, 0x5'0000'0002};
  boot32({
      0x0f, 0x31,  // 1000: rdtsc
      0x89, 0xc3,  // 1002: mov ebx, eax
      0x89, 0xd6,  // 1004: mov esi, edx
      0x0f, 0x31,  // 1006: rdtsc
      0xf4,        // 1008: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  const VcpuState s = cpu.state();
  EXPECT_EQ(s.rbx, 1u);
  EXPECT_EQ(s.rsi, 5u);
  EXPECT_EQ(s.rax, 2u);
  EXPECT_EQ(s.rdx, 5u);
  EXPECT_EQ(cpu.instructions(), 5u);
}

TEST_F(VcpuTest, RdtscpReturnsTheHostsTimeAndTscAux) {
  host.tsc_values = {0x7'0000'0003};
  host.msrs = {{kMsrTscAux, 2}};
  boot32({
      0x0f, 0x01, 0xf9,  // 1000: rdtscp
      0xf4,              // 1003: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  const VcpuState s = cpu.state();
  EXPECT_EQ(s.rax, 3u);
  EXPECT_EQ(s.rdx, 7u);
  EXPECT_EQ(s.rcx, 2u);
}

TEST_F(VcpuTest, RdtscpWithoutTscAuxIsInvalidOpcode) {
  boot32({
      0x0f, 0x01, 0xf9,  // 1000: rdtscp
      0xf4,              // 1003: hlt
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::TripleFault);
  EXPECT_EQ(exit.rip, kEntry);
  EXPECT_NE(exit.detail.find("rdtscp, but the host has no IA32_TSC_AUX at 0x1000"), std::string::npos) << exit.detail;
  EXPECT_EQ(cpu.instructions(), 0u);
}

TEST_F(VcpuTest, TrapSitesSurviveFlushTranslations) {
  host.msrs = {{0, 0}};
  boot32({
      0x0f, 0x32,  // 1000: rdmsr
      0xf4,        // 1002: hlt
      0xeb, 0xfb,  // 1003: jmp 0x1000
  });
  run_expecting(VcpuExit::Reason::Halt);
  cpu.flush_translations();
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(host.msr_reads.size(), 2u);
  EXPECT_EQ(cpu.instructions(), 5u);
}

// The trap hook stays on the address; what is there now decides.
TEST_F(VcpuTest, TrapHookIgnoresAnInstructionTheGuestRewrote) {
  host.msrs = {{kMsrApicBase, 0}};
  load(0x1020, {
                   0x0f, 0x32,  // 1020: rdmsr
                   0xc3,        // 1022: ret
               });
  boot32({
      0xbc, 0x00, 0x80, 0x00, 0x00,                          // 1000: mov esp, 0x8000
      0xb9, 0x1b, 0x00, 0x00, 0x00,                          // 1005: mov ecx, 0x1b
      0xe8, 0x11, 0x00, 0x00, 0x00,                          // 100a: call 0x1020
      0x66, 0xc7, 0x05, 0x20, 0x10, 0x00, 0x00, 0x90, 0x90,  // 100f: mov word [0x1020], 0x9090 (nop; nop)
      0xe8, 0x03, 0x00, 0x00, 0x00,                          // 1018: call 0x1020
      0xf4,                                                  // 101d: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(host.msr_reads.size(), 1u);
}

// --- counting -------------------------------------------------------------

TEST_F(VcpuTest, QuantumEndsExactlyAtABlockBoundary) {
  boot32(kLoop);
  // Blocks of 4, 3, 3 instructions fit in 10; the next 3 would not.
  const VcpuExit exit = run_expecting(VcpuExit::Reason::QuantumEnd, 10);
  EXPECT_EQ(exit.rip, kLoopBody);
  EXPECT_EQ(cpu.instructions(), 10u);
  run_expecting(VcpuExit::Reason::QuantumEnd, 5);
  EXPECT_EQ(cpu.instructions(), 13u);
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.instructions(), kLoopInstructions);
}

TEST_F(VcpuTest, FirstBlockOfARunAlwaysRuns) {
  boot32(kLoop);
  run_expecting(VcpuExit::Reason::QuantumEnd, 1);
  EXPECT_EQ(cpu.instructions(), 4u);
  run_expecting(VcpuExit::Reason::QuantumEnd, 0);
  EXPECT_EQ(cpu.instructions(), 7u);
}

TEST_F(VcpuTest, CountsAreIdenticalAcrossTwoRuns) {
  const auto exits_of_one_run = [] {
    GuestRam ram(kRamBytes);
    FakeHost host;
    UnicornVcpu cpu(0, ram, host);
    std::copy(kLoop.begin(), kLoop.end(), ram.bytes(kEntry, kLoop.size()).begin());
    cpu.enter_multiboot(kEntry, kMultibootMagic, kMultibootInfo);
    std::vector<std::pair<uint64_t, uint64_t>> exits;  // (instructions, rip)
    for (VcpuExit exit; exit.reason != VcpuExit::Reason::Halt;) {
      exit = cpu.run(7);
      exits.emplace_back(cpu.instructions(), exit.rip);
    }
    return exits;
  };
  const auto first = exits_of_one_run();
  // 4 + 3 in the first quantum, then two loop blocks per quantum; the last
  // quantum also holds the HLT block: 1 + 49 quanta.
  EXPECT_EQ(first.size(), 50u);
  EXPECT_EQ(first.back().first, kLoopInstructions);
  EXPECT_EQ(first, exits_of_one_run());
}

// --- the engine's budget (emu/unicorn/0001-instruction-budget.patch) -----

// A loop with a REP string instruction, I/O and a branch either way:
// 3 + 20 * 14 + 10 * 2 (the odd turns' INCs) + 1 = 304 instructions.
const Bytes kBudgetWorkout = {
    0xbc, 0x00, 0x80, 0x00, 0x00,  // 1000: mov esp, 0x8000
    0xb9, 0x14, 0x00, 0x00, 0x00,  // 1005: mov ecx, 20
    0xbb, 0x00, 0x50, 0x00, 0x00,  // 100a: mov ebx, 0x5000
    0x51,                          // 100f: push ecx
    0xbe, 0x00, 0x60, 0x00, 0x00,  // 1010: mov esi, 0x6000
    0x89, 0xdf,                    // 1015: mov edi, ebx
    0xb9, 0x07, 0x00, 0x00, 0x00,  // 1017: mov ecx, 7
    0xf3, 0xa4,                    // 101c: rep movsb
    0x59,                          // 101e: pop ecx
    0x89, 0xc8,                    // 101f: mov eax, ecx
    0xe6, 0x80,                    // 1021: out 0x80, al
    0xe4, 0x61,                    // 1023: in al, 0x61
    0x01, 0xc3,                    // 1025: add ebx, eax
    0xf6, 0xc1, 0x01,              // 1027: test cl, 1
    0x74, 0x02,                    // 102a: jz 0x102e
    0x43,                          // 102c: inc ebx
    0x43,                          // 102d: inc ebx
    0x49,                          // 102e: dec ecx
    0x75, 0xde,                    // 102f: jnz 0x100f
    0xf4,                          // 1031: hlt
};
constexpr uint64_t kBudgetWorkoutInstructions = 304;

struct BudgetedRun {
  uint64_t instructions = 0;
  VcpuState state{};
  std::vector<PortAccess> writes, reads;
  std::vector<uint8_t> copied;  // what the REP MOVSBs wrote
  size_t runs = 0;
};

// `code` from kEntry to its HLT in runs of `budget` instructions each.
BudgetedRun run_in_budgets(const Bytes& code, uint64_t budget) {
  GuestRam ram(kRamBytes);
  FakeHost host;
  UnicornVcpu cpu(0, ram, host);
  for (size_t i = 0; i < 16; ++i) ram.bytes(0x6000 + i, 1)[0] = static_cast<uint8_t>(0xA0 + i);
  std::copy(code.begin(), code.end(), ram.bytes(kEntry, code.size()).begin());
  cpu.enter_multiboot(kEntry, kMultibootMagic, kMultibootInfo);
  BudgetedRun r;
  host.cpu = &cpu;
  // Bounded: a budget that made no progress would loop here.
  for (VcpuExit exit; exit.reason != VcpuExit::Reason::Halt && r.runs < 10'000; ++r.runs) {
    exit = cpu.run(budget);
    EXPECT_TRUE(exit.reason == VcpuExit::Reason::QuantumEnd || exit.reason == VcpuExit::Reason::Halt)
        << to_string(exit.reason);
  }
  r.instructions = cpu.instructions();
  r.state = cpu.state();
  r.writes = host.port_writes;
  r.reads = host.port_reads;
  const std::span<uint8_t> copied = ram.bytes(0x5000, 0x200);
  r.copied.assign(copied.begin(), copied.end());
  return r;
}

void expect_same_run(const BudgetedRun& a, const BudgetedRun& b, uint64_t budget) {
  EXPECT_EQ(a.instructions, b.instructions) << "budget " << budget;
  EXPECT_EQ(a.writes, b.writes) << "budget " << budget;
  EXPECT_EQ(a.reads, b.reads) << "budget " << budget;
  EXPECT_EQ(a.copied, b.copied) << "budget " << budget;
  const auto regs = [](const VcpuState& s) {
    return std::array<uint64_t, 11>{s.rax, s.rbx, s.rcx, s.rdx, s.rsi, s.rdi, s.rbp, s.rsp, s.rip, s.rflags, s.cr0};
  };
  EXPECT_EQ(regs(a.state), regs(b.state)) << "budget " << budget;
}

// Exactness: whatever the budget, the retired count, the final state, the
// bytes copied and the instruction count the host sees at every IN and OUT
// equal those of one run with a budget that never ends it.
TEST_F(VcpuTest, BudgetedRunsRetireWhatOneRunDoes) {
  const BudgetedRun reference = run_in_budgets(kBudgetWorkout, kBudget);
  ASSERT_EQ(reference.runs, 1u);
  EXPECT_EQ(reference.instructions, kBudgetWorkoutInstructions);
  ASSERT_EQ(reference.writes.size(), 20u);
  // The first OUT is the 3 + 7th instruction: push .. mov eax come first.
  EXPECT_EQ(reference.writes.front().instructions, 3u + 7u);
  for (uint64_t budget : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 23, 31, 64, 100, 303})
    expect_same_run(run_in_budgets(kBudgetWorkout, budget), reference, budget);
}

// A REP string instruction is one instruction however many turns it runs,
// and a run may end between its turns: at every budget the total is the
// same, and so are the bytes it copied.
TEST_F(VcpuTest, RepStringCountsOnceAcrossBudgets) {
  const Bytes code = {
      0xbe, 0x00, 0x60, 0x00, 0x00,  // 1000: mov esi, 0x6000
      0xbf, 0x00, 0x50, 0x00, 0x00,  // 1005: mov edi, 0x5000
      0xb9, 0x0c, 0x00, 0x00, 0x00,  // 100a: mov ecx, 12
      0xf3, 0xa4,                    // 100f: rep movsb
      0xf4,                          // 1011: hlt
  };
  const BudgetedRun reference = run_in_budgets(code, kBudget);
  EXPECT_EQ(reference.instructions, 5u);
  EXPECT_EQ(reference.state.rcx, 0u);
  for (uint64_t budget = 0; budget <= 6; ++budget) expect_same_run(run_in_budgets(code, budget), reference, budget);
}

// The first block of a run runs even when it overruns the budget; what it
// overran is still owed, so its REP's next turn does not start: the run
// stops at the REP, which is not retired yet.
TEST_F(VcpuTest, AnOverrunBlockEndingInARepStopsAtTheRep) {
  boot32({
      0xbe, 0x00, 0x60, 0x00, 0x00,  // 1000: mov esi, 0x6000
      0xbf, 0x00, 0x50, 0x00, 0x00,  // 1005: mov edi, 0x5000
      0xb9, 0x05, 0x00, 0x00, 0x00,  // 100a: mov ecx, 5
      0xf3, 0xa4,                    // 100f: rep movsb
      0xf4,                          // 1011: hlt
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::QuantumEnd, 1);
  EXPECT_EQ(exit.rip, 0x100fu);
  EXPECT_EQ(cpu.instructions(), 3u);
  EXPECT_EQ(cpu.state().rcx, 4u);  // one turn ran
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.instructions(), 5u);
}

// A store into the block that is running: the engine abandons the block at
// the store and runs it again from there (docs/unicorn.md), and that count
// is the same at every budget.
TEST_F(VcpuTest, SelfModifyingStoreCountsTheSameAtEveryBudget) {
  const Bytes code = {
      0xb9, 0x0a, 0x00, 0x00, 0x00,              // 1000: mov ecx, 10
      0xc6, 0x05, 0x0c, 0x10, 0x00, 0x00, 0x49,  // 1005: mov byte [0x100c], 0x49 (dec ecx, as it is)
      0x49,                                      // 100c: dec ecx
      0x75, 0xf6,                                // 100d: jnz 0x1005
      0xf4,                                      // 100f: hlt
  };
  const BudgetedRun reference = run_in_budgets(code, kBudget);
  EXPECT_EQ(reference.state.rcx, 0u);
  for (uint64_t budget : {1, 2, 3, 4, 5, 7, 11}) expect_same_run(run_in_budgets(code, budget), reference, budget);
}

// Stores to a page that holds no translated code take the engine's fast
// path (emu/unicorn/0002-store-fast-path.patch), even on an executable
// page; once code is translated there, a store into it is caught again.
// Paging off: every page is executable.
TEST_F(VcpuTest, StoresToAPageThatGetsCodeAreCaughtAgain) {
  boot32({
      0xc7, 0x05, 0x00, 0x60, 0x00, 0x00, 0xb8, 0x01, 0x00, 0x00,  // 1000: mov dword [0x6000], ... (mov eax, 1
      0xc7, 0x05, 0x04, 0x60, 0x00, 0x00, 0x00, 0xc3, 0x00, 0x00,  // 100a: mov dword [0x6004], ...  ret)
      0xbc, 0x00, 0x80, 0x00, 0x00,                                // 1014: mov esp, 0x8000
      0xbb, 0x00, 0x60, 0x00, 0x00,                                // 1019: mov ebx, 0x6000
      0xff, 0xd3,                                                  // 101e: call ebx
      0x89, 0xc6,                                                  // 1020: mov esi, eax
      0xc6, 0x05, 0x01, 0x60, 0x00, 0x00, 0x02,                    // 1022: mov byte [0x6001], 2 (mov eax, 2)
      0xff, 0xd3,                                                  // 1029: call ebx
      0xf4,                                                        // 102b: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rsi, 1u);
  EXPECT_EQ(cpu.state().rax, 2u) << "the store into translated code was missed";
}

// The same through an alias: virtual 0x7000 maps physical 0x6000 too. The
// stores through 0x7000 took the fast path while the page held no code;
// translating 0x6000 must put that entry back on the slow path as well
// (tlb_protect_code in the patch), or the rewrite through the alias is
// missed and the stale `mov eax, 1` runs again.
TEST_F(VcpuTest, StoresThroughAnAliasOfACodePageAreCaught) {
  adjust_tables = [this] { ram.write<uint64_t>(kPt + 8 * 7, 0x6000 | 0x3); };
  boot64({
      0xc7, 0x04, 0x25, 0x00, 0x70, 0x00, 0x00, 0xb8, 0x01, 0x00, 0x00,  // 2001: mov dword [0x7000], ... (mov eax, 1
      0xc7, 0x04, 0x25, 0x04, 0x70, 0x00, 0x00, 0x00, 0xc3, 0x00, 0x00,  // 200c: mov dword [0x7004], ...  ret)
      0xbc, 0x00, 0x80, 0x00, 0x00,                                      // 2017: mov esp, 0x8000
      0xbb, 0x00, 0x60, 0x00, 0x00,                                      // 201c: mov ebx, 0x6000
      0xff, 0xd3,                                                        // 2021: call rbx
      0x89, 0xc6,                                                        // 2023: mov esi, eax
      0xc6, 0x04, 0x25, 0x01, 0x70, 0x00, 0x00, 0x02,                    // 2025: mov byte [0x7001], 2 (mov eax, 2)
      0xff, 0xd3,                                                        // 202d: call rbx
      0xf4,                                                              // 202f: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rsi, 1u);
  EXPECT_EQ(cpu.state().rax, 2u) << "the store through the alias was missed";
}

// `jmp .` is proved idle, not run: the run stops in front of its second
// turn with a pause-loop exit marked idle_loop, whatever the budget left.
TEST_F(VcpuTest, JumpToItselfStopsAsAnIdleLoop) {
  boot32({
      0x90,        // 1000: nop
      0xeb, 0xfe,  // 1001: jmp 0x1001
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::PauseLoop);
  EXPECT_TRUE(exit.idle_loop);
  EXPECT_EQ(exit.rip, 0x1001u);
  EXPECT_EQ(cpu.instructions(), 2u);  // the NOP and one turn
  // The next run turns once more (a run always retires something) and stops.
  EXPECT_TRUE(run_expecting(VcpuExit::Reason::PauseLoop).idle_loop);
  EXPECT_EQ(cpu.instructions(), 3u);
}

TEST_F(VcpuTest, InstructionsAreExactInsideMidBlockCallbacks) {
  boot32({
      0x90,        // 1000: nop
      0x90,        // 1001: nop
      0x90,        // 1002: nop
      0xe6, 0x80,  // 1003: out 0x80, al
      0x90,        // 1005: nop
      0xe4, 0x61,  // 1006: in al, 0x61
      0x0f, 0xa2,  // 1008: cpuid
      0xf4,        // 100a: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  ASSERT_EQ(host.port_writes.size(), 1u);
  EXPECT_EQ(host.port_writes[0].instructions, 3u);
  ASSERT_EQ(host.port_reads.size(), 1u);
  EXPECT_EQ(host.port_reads[0].instructions, 5u);
  ASSERT_EQ(host.cpuid_queries.size(), 1u);
  EXPECT_EQ(host.cpuid_queries[0].instructions, 6u);
  EXPECT_EQ(cpu.instructions(), 8u);
}

TEST_F(VcpuTest, RepStringInstructionCountsOnce) {
  boot32({
      0xbf, 0x00, 0x40, 0x00, 0x00,  // 1000: mov edi, 0x4000
      0xb9, 0x05, 0x00, 0x00, 0x00,  // 1005: mov ecx, 5
      0xb0, 0xab,                    // 100a: mov al, 0xab
      0xf3, 0xaa,                    // 100c: rep stosb
      0xf4,                          // 100e: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.instructions(), 5u);
  EXPECT_EQ(ram.read<uint32_t>(0x4000), 0xabab'ababu);
  EXPECT_EQ(ram.read<uint8_t>(0x4004), 0xab);
}

TEST_F(VcpuTest, RepOutsCallsTheHostOncePerIterationAsOneInstruction) {
  ram.write<uint32_t>(0x4000, 0x0033'2211);
  boot32({
      0xbe, 0x00, 0x40, 0x00, 0x00,  // 1000: mov esi, 0x4000
      0xb9, 0x03, 0x00, 0x00, 0x00,  // 1005: mov ecx, 3
      0x66, 0xba, 0x80, 0x00,        // 100a: mov dx, 0x80
      0xf3, 0x6e,                    // 100e: rep outsb
      0xf4,                          // 1010: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(host.port_writes, (std::vector<PortAccess>{
                                  {0x80, 1, 0x11, 3},
                                  {0x80, 1, 0x22, 3},
                                  {0x80, 1, 0x33, 3},
                              }));
  EXPECT_EQ(cpu.instructions(), 5u);
}

// --- request_stop and the stop trap ---------------------------------------

// Unicorn replays the rest of a block when uc_emu_stop is called from an
// OUT hook (the notes' "stop trap"); request_stop must not.
TEST_F(VcpuTest, RequestStopFromPortOutStopsAtTheNextBlockWithoutReplay) {
  host.on_port_out = [&] { cpu.request_stop(); };
  boot32({
      0x43,        // 1000: inc ebx
      0xe6, 0x80,  // 1001: out 0x80, al
      0x43,        // 1003: inc ebx
      0xeb, 0x00,  // 1004: jmp 0x1006
      0x43,        // 1006: inc ebx
      0xf4,        // 1007: hlt
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::StopRequested);
  EXPECT_EQ(exit.rip, 0x1006u);
  EXPECT_EQ(cpu.state().rbx, kMultibootInfo + 2);
  EXPECT_EQ(cpu.instructions(), 4u);
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rbx, kMultibootInfo + 3);
  EXPECT_EQ(host.port_writes.size(), 1u);
  EXPECT_EQ(cpu.instructions(), 6u);
}

TEST_F(VcpuTest, RequestStopInsideARepStopsBetweenIterations) {
  ram.write<uint32_t>(0x4000, 0x0033'2211);
  host.on_port_out = [&] {
    if (host.port_writes.size() == 2) cpu.request_stop();
  };
  boot32({
      0xbe, 0x00, 0x40, 0x00, 0x00,  // 1000: mov esi, 0x4000
      0xb9, 0x03, 0x00, 0x00, 0x00,  // 1005: mov ecx, 3
      0x66, 0xba, 0x80, 0x00,        // 100a: mov dx, 0x80
      0xf3, 0x6e,                    // 100e: rep outsb
      0xf4,                          // 1010: hlt
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::StopRequested);
  EXPECT_EQ(exit.rip, 0x100eu);
  EXPECT_EQ(cpu.instructions(), 3u);
  EXPECT_EQ(cpu.state().rcx, 1u);
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(host.port_writes.size(), 3u);
  EXPECT_EQ(cpu.instructions(), 5u);
}

TEST_F(VcpuTest, RequestStopFromAnEmulatedInstructionStopsRightAfterIt) {
  host.msrs = {{kMsrApicBase, 7}};
  host.on_read_msr = [&] { cpu.request_stop(); };
  boot32({
      0xb9, 0x1b, 0x00, 0x00, 0x00,  // 1000: mov ecx, 0x1b
      0x0f, 0x32,                    // 1005: rdmsr
      0xf4,                          // 1007: hlt
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::StopRequested);
  EXPECT_EQ(exit.rip, 0x1007u);
  EXPECT_EQ(cpu.instructions(), 2u);
  EXPECT_EQ(cpu.state().rax, 7u);
}

TEST_F(VcpuTest, RequestStopFromAWrmsrStopsRightAfterIt) {
  host.msrs = {{kMsrApicBase, 0}};
  host.on_write_msr = [&] { cpu.request_stop(); };
  boot32({
      0xb9, 0x1b, 0x00, 0x00, 0x00,  // 1000: mov ecx, 0x1b
      0x0f, 0x30,                    // 1005: wrmsr
      0x40,                          // 1007: inc eax
      0xf4,                          // 1008: hlt
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::StopRequested);
  EXPECT_EQ(exit.rip, 0x1007u);
  EXPECT_EQ(cpu.instructions(), 2u);
  EXPECT_EQ(host.msr_write_instructions, std::vector<uint64_t>{1});
}

TEST_F(VcpuTest, HostExceptionLeavesRun) {
  host.on_port_out = [] { throw std::runtime_error("device on fire"); };
  boot32({
      0xe6, 0x80,  // 1000: out 0x80, al
      0xf4,        // 1002: hlt
  });
  EXPECT_THROW(
      {
        try {
          cpu.run(kBudget);
        } catch (const std::runtime_error& e) {
          EXPECT_STREQ(e.what(), "device on fire");
          throw;
        }
      },
      std::runtime_error);
}

// --- long mode ------------------------------------------------------------

// The EFER accesses of the stub stay inside the vCPU: the host sees no MSR.
TEST_F(VcpuTest, GuestSwitchesItselfIntoLongMode) {
  boot64({
      0x48, 0xb8, 0xf0, 0xde, 0xbc, 0x9a, 0x78, 0x56, 0x34, 0x12,  // 2001: mov rax, 0x123456789abcdef0
      0x48, 0xff, 0xc8,                                            // 200b: dec rax
      0xf4,                                                        // 200e: hlt
  });
  const VcpuState entered = cpu.state();
  EXPECT_EQ(entered.efer & 0x500, 0x500u) << "EFER.LME and EFER.LMA";
  EXPECT_EQ(entered.cr0 & 0x8000'0001, 0x8000'0001u) << "CR0.PG and CR0.PE";
  EXPECT_EQ(entered.cs, 0x08);
  EXPECT_TRUE(host.msr_reads.empty());
  EXPECT_TRUE(host.msr_writes.empty());
  EXPECT_EQ(cpu.instructions(), 16u);
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rax, 0x1234'5678'9abc'def0u - 1);
  EXPECT_EQ(cpu.instructions(), 19u);
}

// --- trace and flush ------------------------------------------------------

TEST_F(VcpuTest, TraceDisassemblesInThirtyTwoBitMode) {
  MemoryStream trace;
  cpu.set_trace(trace.file());
  boot32({
      0xb8, 0x05, 0x00, 0x00, 0x00,  // 1000: mov eax, 5
      0x48,                          // 1005: dec eax
      0xf4,                          // 1006: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(trace.text(),
            "cpu0 0000000000001000: b8 05 00 00 00  mov eax, 5\n"
            "cpu0 0000000000001005: 48  dec eax\n"
            "cpu0 0000000000001006: f4  hlt\n");
}

TEST_F(VcpuTest, TraceDisassemblesInSixtyFourBitMode) {
  boot64({
      0x48, 0xff, 0xc8,  // 2001: dec rax
      0xf4,              // 2004: hlt
  });
  MemoryStream trace;
  cpu.set_trace(trace.file());
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(trace.text(),
            "cpu0 0000000000002001: 48 ff c8  dec rax\n"
            "cpu0 0000000000002004: f4  hlt\n");
}

// The block with the RDMSR is new, so the block hook stops the run to hook
// the RDMSR and lets Unicorn translate the block again.
TEST_F(VcpuTest, TracePrintsATrappedInstructionOnce) {
  host.msrs = {{0, 0}};
  MemoryStream trace;
  cpu.set_trace(trace.file());
  boot32({
      0x31, 0xc9,  // 1000: xor ecx, ecx
      0xeb, 0x00,  // 1002: jmp 0x1004
      0x0f, 0x32,  // 1004: rdmsr
      0xf4,        // 1006: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(trace.text(),
            "cpu0 0000000000001000: 31 c9  xor ecx, ecx\n"
            "cpu0 0000000000001002: eb 00  jmp 0x1004\n"
            "cpu0 0000000000001004: 0f 32  rdmsr\n"
            "cpu0 0000000000001006: f4  hlt\n");
  EXPECT_EQ(cpu.instructions(), 4u);
}

TEST_F(VcpuTest, TraceKeepsQuantumEndsExact) {
  MemoryStream trace;
  cpu.set_trace(trace.file());
  boot32(kLoop);
  while (cpu.run(7).reason == VcpuExit::Reason::QuantumEnd) {
  }
  const std::string text = trace.text();
  EXPECT_EQ(static_cast<uint64_t>(std::count(text.begin(), text.end(), '\n')), kLoopInstructions);
  EXPECT_EQ(cpu.instructions(), kLoopInstructions);
}

TEST_F(VcpuTest, TraceOffPrintsNothing) {
  MemoryStream trace;
  cpu.set_trace(trace.file());
  cpu.set_trace(nullptr);
  boot32({0xf4});  // 1000: hlt
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(trace.text(), "");
}

// Unicorn does not see host writes to code it has translated (the notes).
TEST_F(VcpuTest, FlushTranslationsPicksUpCodeTheHostRewrote) {
  boot32({
      0xb8, 0x01, 0x00, 0x00, 0x00,  // 1000: mov eax, 1
      0xf4,                          // 1005: hlt
      0xeb, 0xf8,                    // 1006: jmp 0x1000
  });
  run_expecting(VcpuExit::Reason::Halt);
  ram.write<uint32_t>(0x1001, 2);  // 1000: mov eax, 2
  cpu.flush_translations();
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rax, 2u);
}

// Unicorn finds the code to drop through the guest page tables, and finds
// nothing on a page the guest has unmapped for the moment.
TEST_F(VcpuTest, FlushTranslationsReachesCodeOnAPageTheGuestUnmapped) {
  load(0x5000, {
                   0xb8, 0x01, 0x00, 0x00, 0x00,  // 5000: mov eax, 1
                   0xc3,                          // 5005: ret
               });
  boot64({
      0xbc, 0x00, 0x80, 0x00, 0x00,                                      // 2001: mov esp, 0x8000
      0xbb, 0x00, 0x50, 0x00, 0x00,                                      // 2006: mov ebx, 0x5000
      0xff, 0xd3,                                                        // 200b: call rbx
      0x48, 0xc7, 0x04, 0x25, 0x28, 0x30, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,  // 200d: mov qword [0x13028], 0 (unmap 0x5000)
      0x0f, 0x01, 0x3c, 0x25, 0x00, 0x50, 0x00, 0x00,                    // 2019: invlpg [0x5000]
      0xf4,                                                              // 2021: hlt
      0x48, 0xc7, 0x04, 0x25, 0x28, 0x30, 0x01, 0x00, 0x03, 0x50, 0x00, 0x00,  // 2022: mov qword [0x13028], 0x5003 (map it)
      0x0f, 0x01, 0x3c, 0x25, 0x00, 0x50, 0x00, 0x00,                    // 202e: invlpg [0x5000]
      0xff, 0xd3,                                                        // 2036: call rbx
      0xf4,                                                              // 2038: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  ASSERT_EQ(cpu.state().rax, 1u);
  ram.write<uint32_t>(0x5001, 2);  // 5000: mov eax, 2
  cpu.flush_translations();
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rax, 2u);
  EXPECT_EQ(cpu.state().cr0 & 0x8000'0000, 0x8000'0000u) << "paging is back on";
}

// --- interrupt and exception injection ------------------------------------

// The start of every 32-bit injection snippet: its own GDT (IRETD reloads
// CS), the IDT at kIdt, a stack below 0x8000.
const Bytes kProtectedModeSetup = {
    0x0f, 0x01, 0x15, 0x20, 0x31, 0x00, 0x00,  // 1000: lgdt [0x3120]
    0x0f, 0x01, 0x1d, 0x28, 0x31, 0x00, 0x00,  // 1007: lidt [0x3128]
    0xbc, 0x00, 0x80, 0x00, 0x00,              // 100e: mov esp, 0x8000
};
const Bytes kHandlerIncEcx32 = {
    0x41,  // inc ecx
    0xcf,  // iretd
};

Bytes operator+(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

class InjectionTest : public VcpuTest {
 protected:
  // Vector 0x20 goes to `inc ecx; iretd`; `code` runs after kProtectedModeSetup.
  void boot_with_handler_for_0x20(const Bytes& code) {
    write_gdt32();
    write_idtr(0x7FF);
    set_gate32(0x20, 0x1100);
    load(0x1100, kHandlerIncEcx32);
    boot32(kProtectedModeSetup + code);
  }

  // kProtectedModeSetup, then `sti; hlt; inc ebx; hlt`, run to the first HLT.
  void halt_in_protected_mode_with_interrupts_on() {
    write_gdt32();
    write_idtr(0x7FF);
    boot32(kProtectedModeSetup + Bytes{
                                     0xfb,  // 1013: sti
                                     0xf4,  // 1014: hlt
                                     0x43,  // 1015: inc ebx
                                     0xf4,  // 1016: hlt
                                 });
    const VcpuExit exit = run_expecting(VcpuExit::Reason::Halt);
    ASSERT_EQ(exit.rip, 0x1015u);
    ASSERT_EQ(cpu.instructions(), 5u);
  }
};

// Also: an interrupt delivered while halted resumes execution at the
// handler, and IRETD returns to the instruction after the HLT.
TEST_F(InjectionTest, ProtectedModeInterruptGateClearsIfAndIretdReturnsAfterHlt) {
  set_gate32(0x20, 0x1100);
  load(0x1100, kHandlerIncEcx32);
  halt_in_protected_mode_with_interrupts_on();
  ASSERT_TRUE(cpu.interrupt_window_open());
  const uint64_t rflags = cpu.state().rflags;

  const Injection injection = cpu.inject_interrupt(0x20);
  ASSERT_TRUE(injection) << injection.detail;
  VcpuState s = cpu.state();
  EXPECT_EQ(s.rip, 0x1100u);
  EXPECT_EQ(s.rflags & kIf, 0u) << "interrupt gate clears IF";
  EXPECT_EQ(s.rsp, 0x8000u - 12);
  EXPECT_EQ(stack32(0), 0x1015u) << "EIP";
  EXPECT_EQ(stack32(4), 0x08u) << "CS";
  EXPECT_EQ(stack32(8), rflags) << "EFLAGS";
  EXPECT_EQ(cpu.instructions(), 5u) << "a delivery is not an instruction";
  EXPECT_FALSE(cpu.interrupt_window_open());

  const VcpuExit exit = run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(exit.rip, 0x1017u);
  s = cpu.state();
  EXPECT_EQ(s.rcx, 1u);
  EXPECT_EQ(s.rbx, kMultibootInfo + 1);
  EXPECT_EQ(s.rsp, 0x8000u);
  EXPECT_EQ(s.rflags, rflags) << "IRETD restores IF";
  EXPECT_EQ(s.cs, 0x08);
  EXPECT_EQ(cpu.instructions(), 9u);
}

TEST_F(InjectionTest, NmiBlocksFurtherNmisUntilTheHandlersIret) {
  set_gate32(2, 0x1100);
  load(0x1100, kHandlerIncEcx32);  // inc ecx; iretd
  halt_in_protected_mode_with_interrupts_on();
  EXPECT_FALSE(cpu.nmi_blocked());
  const Injection injection = cpu.inject_nmi();
  ASSERT_TRUE(injection) << injection.detail;
  EXPECT_TRUE(cpu.nmi_blocked()) << "SDM 6.7.1: blocked from delivery to the next IRET";
  run_expecting(VcpuExit::Reason::Halt);  // the handler's IRETD returns to the HLT after it
  EXPECT_EQ(cpu.state().rcx, 1u);
  EXPECT_FALSE(cpu.nmi_blocked()) << "the IRETD unblocked NMIs";
}

TEST_F(VcpuTest, StopWhenInterruptibleStopsOnceStiTakesEffect) {
  boot32({
      0xfa,  // 1000: cli
      0x90,  // 1001: nop
      0xfb,  // 1002: sti (its block ends here)
      0x90,  // 1003: nop (in the STI shadow: a block of its own)
      0x90,  // 1004: nop  <- the first point an interrupt can be taken
      0xf4,  // 1005: hlt
  });
  cpu.stop_when_interruptible(true);
  VcpuExit exit = cpu.run(kBudget);
  EXPECT_EQ(exit.reason, VcpuExit::Reason::QuantumEnd) << exit.detail;
  EXPECT_EQ(exit.rip, 0x1004u);
  EXPECT_EQ(cpu.instructions(), 4u);
  EXPECT_TRUE(cpu.interrupt_window_open());
  cpu.stop_when_interruptible(false);
  exit = cpu.run(kBudget);
  EXPECT_EQ(exit.reason, VcpuExit::Reason::Halt);
}

TEST_F(InjectionTest, ProtectedModeTrapGateKeepsIf) {
  set_gate32(0x21, 0x1100, kTrapGate);
  load(0x1100, kHandlerIncEcx32);
  halt_in_protected_mode_with_interrupts_on();
  ASSERT_TRUE(cpu.inject_interrupt(0x21));
  EXPECT_NE(cpu.state().rflags & kIf, 0u);
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rcx, 1u);
  EXPECT_EQ(cpu.state().rbx, kMultibootInfo + 1);
}

// #GP pushes its error code below EIP; the handler pops it before IRETD.
// Injected on top of a pending interrupt frame: the #GP handler runs first,
// returns into the interrupt handler, which returns to the guest.
TEST_F(InjectionTest, NestedInjectionWithAnErrorCode) {
  set_gate32(0x21, 0x1100, kTrapGate);
  load(0x1100, kHandlerIncEcx32);
  set_gate32(13, 0x1120);
  load(0x1120, {
                   0x5a,  // 1120: pop edx
                   0xcf,  // 1121: iretd
               });
  halt_in_protected_mode_with_interrupts_on();
  ASSERT_TRUE(cpu.inject_interrupt(0x21));
  const Injection gp = cpu.inject_exception(13, 0x18);
  ASSERT_TRUE(gp) << gp.detail;
  EXPECT_EQ(cpu.state().rsp, 0x8000u - 12 - 16);
  EXPECT_EQ(stack32(0), 0x18u) << "error code";
  EXPECT_EQ(stack32(4), 0x1100u) << "returns into the first handler";
  run_expecting(VcpuExit::Reason::Halt);
  const VcpuState s = cpu.state();
  EXPECT_EQ(s.rdx, 0x18u);
  EXPECT_EQ(s.rcx, 1u);
  EXPECT_EQ(s.rbx, kMultibootInfo + 1);
  EXPECT_EQ(s.rsp, 0x8000u);
  EXPECT_EQ(cpu.instructions(), 5u + 2 + 2 + 2);
}

TEST_F(InjectionTest, UdPushesNoErrorCode) {
  set_gate32(6, 0x1100);
  load(0x1100, kHandlerIncEcx32);
  halt_in_protected_mode_with_interrupts_on();
  ASSERT_TRUE(cpu.inject_exception(6, std::nullopt));
  EXPECT_EQ(cpu.state().rsp, 0x8000u - 12);
  EXPECT_EQ(stack32(0), 0x1015u);
}

TEST_F(InjectionTest, NoUsableHandlerLeavesTheVcpuUnchanged) {
  set_gate32(0x22, 0x1100);
  ram.write<uint64_t>(kIdt + 8 * 0x22, ram.read<uint64_t>(kIdt + 8 * 0x22) & ~(uint64_t{1} << 47));  // P = 0
  set_gate32(0x23, 0x1100, 0x6);  // 16-bit interrupt gate
  set_gate32(0x24, 0x1100, 0x5);  // task gate
  set_gate32(0x25, 0x1100, kInterruptGate, 0x10);  // a data segment
  halt_in_protected_mode_with_interrupts_on();
  const VcpuState before = cpu.state();
  const auto failure = [&](Injection injection) {
    EXPECT_FALSE(injection);
    return injection.detail;
  };
  // SDM 6.12, 6.13: a not-present gate is #NP(vector*8+2+EXT), a gate to a
  // data segment #GP(selector+EXT); with no handlers for those, #DF, then a
  // triple fault. 16-bit and task gates are not modelled.
  const std::string np = failure(cpu.inject_interrupt(0x22));
  EXPECT_NE(np.find("while delivering #NP(0x113) while delivering INTR 0x22"), std::string::npos) << np;
  const std::string gate16 = failure(cpu.inject_interrupt(0x23));
  EXPECT_NE(gate16.find("16-bit"), std::string::npos) << gate16;
  const std::string task = failure(cpu.inject_interrupt(0x24));
  EXPECT_NE(task.find("task gate"), std::string::npos) << task;
  const std::string data = failure(cpu.inject_interrupt(0x25));
  EXPECT_NE(data.find("#GP(0x11) while delivering INTR 0x25"), std::string::npos) << data;
  const VcpuState after = cpu.state();
  EXPECT_EQ(after.rip, before.rip);
  EXPECT_EQ(after.rsp, before.rsp);
  EXPECT_EQ(after.rflags, before.rflags);
}

TEST_F(VcpuTest, GateBeyondTheIdtLimitIsNoUsableHandler) {
  write_gdt32();
  write_idtr(8 * 2 - 1);  // vectors 0 and 1
  boot32(kProtectedModeSetup + Bytes{0xf4});  // 1013: hlt
  run_expecting(VcpuExit::Reason::Halt);
  const Injection nmi = cpu.inject_interrupt(2);
  EXPECT_FALSE(nmi);
  EXPECT_NE(nmi.detail.find("#GP(0x13) while delivering INTR 0x2"), std::string::npos) << nmi.detail;
  EXPECT_EQ(cpu.state().rip, 0x1014u);
}

// --- the STI / MOV SS shadow ---------------------------------------------

// Unicorn ends a block right after STI: a budget that ends at the STI stops
// in front of the HLT, and the window stays closed for the HLT. The machine
// runs once more; the HLT executes; the interrupt then wakes it.
TEST_F(InjectionTest, StiShadowDefersTheInterruptPastTheHlt) {
  write_gdt32();
  write_idtr(0x7FF);
  set_gate32(0x20, 0x1100);
  load(0x1100, kHandlerIncEcx32);
  boot32(kProtectedModeSetup + Bytes{
                                   0xfb,  // 1013: sti
                                   0xf4,  // 1014: hlt
                                   0x43,  // 1015: inc ebx
                                   0xf4,  // 1016: hlt
                               });
  const VcpuExit after_sti = run_expecting(VcpuExit::Reason::QuantumEnd, 4);
  EXPECT_EQ(after_sti.rip, 0x1014u);
  EXPECT_EQ(cpu.instructions(), 4u);
  EXPECT_NE(cpu.state().rflags & kIf, 0u);
  EXPECT_FALSE(cpu.interrupt_window_open()) << "the HLT is in the STI shadow";

  const VcpuExit halted = run_expecting(VcpuExit::Reason::Halt, 1);
  EXPECT_EQ(halted.rip, 0x1015u);
  EXPECT_TRUE(cpu.interrupt_window_open());
  ASSERT_TRUE(cpu.inject_interrupt(0x20));
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rcx, 1u);
  EXPECT_EQ(cpu.state().rbx, kMultibootInfo + 1);
}

TEST_F(VcpuTest, MovSsEndsItsBlockAndShadowsTheNextInstruction) {
  write_gdt32();
  boot32({
      0x0f, 0x01, 0x15, 0x20, 0x31, 0x00, 0x00,  // 1000: lgdt [0x3120]
      0xfb,                                      // 1007: sti
      0x66, 0xb8, 0x10, 0x00,                    // 1008: mov ax, 0x10
      0x8e, 0xd0,                                // 100c: mov ss, ax
      0x90,                                      // 100e: nop
      0xf4,                                      // 100f: hlt
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::QuantumEnd, 4);
  EXPECT_EQ(exit.rip, 0x100eu);
  EXPECT_FALSE(cpu.interrupt_window_open());
  // Unicorn translates the shadowed instruction as a block of its own, so
  // the window opens exactly one instruction later.
  EXPECT_EQ(run_expecting(VcpuExit::Reason::QuantumEnd, 1).rip, 0x100fu);
  EXPECT_EQ(cpu.instructions(), 5u);
  EXPECT_TRUE(cpu.interrupt_window_open());
}

TEST_F(VcpuTest, WindowIsClosedWithIfClear) {
  boot32({0xf4});  // 1000: hlt
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_FALSE(cpu.interrupt_window_open());
}

// --- long mode ------------------------------------------------------------

class LongModeInjectionTest : public VcpuTest {
 protected:
  void halt_in_long_mode_with_interrupts_on() {
    write_idtr(0xFFF);
    load(0x2100, {
                     0x48, 0xff, 0xc1,  // 2100: inc rcx
                     0x48, 0xcf,        // 2103: iretq
                 });
    load(0x2120, {
                     0x5a,        // 2120: pop rdx
                     0x48, 0xcf,  // 2121: iretq
                 });
    boot64({
        0x0f, 0x01, 0x1c, 0x25, 0x28, 0x31, 0x00, 0x00,  // 2001: lidt [0x3128]
        0x48, 0xc7, 0xc4, 0x08, 0x80, 0x00, 0x00,        // 2009: mov rsp, 0x8008 (not 16-byte aligned)
        0xfb,                                            // 2010: sti
        0xf4,                                            // 2011: hlt
        0x48, 0xff, 0xc3,                                // 2012: inc rbx
        0xf4,                                            // 2015: hlt
    });
    const VcpuExit exit = run_expecting(VcpuExit::Reason::Halt);
    ASSERT_EQ(exit.rip, 0x2012u);
    start_ = cpu.instructions();
    rcx_ = cpu.state().rcx;
  }
  uint64_t start_ = 0;
  uint64_t rcx_ = 0;
};

TEST_F(LongModeInjectionTest, InterruptGateAlignsTheStackPushesSsRspAndIretqReturns) {
  set_gate64(0x20, 0x2100);
  halt_in_long_mode_with_interrupts_on();
  const uint64_t rflags = cpu.state().rflags;
  ASSERT_TRUE(cpu.interrupt_window_open());
  const Injection injection = cpu.inject_interrupt(0x20);
  ASSERT_TRUE(injection) << injection.detail;
  VcpuState s = cpu.state();
  EXPECT_EQ(s.rip, 0x2100u);
  EXPECT_EQ(s.rflags & kIf, 0u);
  EXPECT_EQ(s.rsp, 0x8000u - 40) << "aligned down to 16, then five quadwords";
  EXPECT_EQ(stack64(0), 0x2012u) << "RIP";
  EXPECT_EQ(stack64(8), 0x08u) << "CS";
  EXPECT_EQ(stack64(16), rflags) << "RFLAGS";
  EXPECT_EQ(stack64(24), 0x8008u) << "RSP";
  EXPECT_EQ(stack64(32), 0x10u) << "SS";
  EXPECT_EQ(cpu.instructions(), start_);

  run_expecting(VcpuExit::Reason::Halt);
  s = cpu.state();
  EXPECT_EQ(s.rcx, rcx_ + 1);
  EXPECT_EQ(s.rbx, kMultibootInfo + 1);
  EXPECT_EQ(s.rsp, 0x8008u);
  EXPECT_NE(s.rflags & kIf, 0u) << "IRETQ restores IF";
  EXPECT_EQ(cpu.instructions(), start_ + 2 + 2);
}

TEST_F(LongModeInjectionTest, TrapGateKeepsIfAndGpPushesItsErrorCode) {
  set_gate64(0x21, 0x2100, kTrapGate);
  set_gate64(13, 0x2120);
  halt_in_long_mode_with_interrupts_on();
  ASSERT_TRUE(cpu.inject_interrupt(0x21));
  EXPECT_NE(cpu.state().rflags & kIf, 0u);
  ASSERT_TRUE(cpu.inject_exception(13, 0));
  EXPECT_EQ(stack64(0), 0u) << "error code";
  EXPECT_EQ(stack64(8), 0x2100u);
  run_expecting(VcpuExit::Reason::Halt);
  const VcpuState s = cpu.state();
  EXPECT_EQ(s.rdx, 0u);
  EXPECT_EQ(s.rcx, rcx_ + 1);
  EXPECT_EQ(s.rbx, kMultibootInfo + 1);
  EXPECT_EQ(s.rsp, 0x8008u);
}

TEST_F(LongModeInjectionTest, IstTakesTheStackFromTheTss) {
  // TR.base is what LTR loaded; a TSS descriptor at GDT 0x18 (SDM Vol. 3A 7.2.3).
  halt_in_long_mode_with_interrupts_on();
  set_gate64(0x20, 0x2100, kInterruptGate, 1);
  // No TSS was loaded (TR limit 0): IST1 is outside it, #TS(TR + EXT)
  // (SDM 6.14.5); the ring changes through a real TSS are in the
  // higher_half testcase and event_delivery_test.
  const Injection injection = cpu.inject_interrupt(0x20);
  EXPECT_FALSE(injection);
  EXPECT_NE(injection.detail.find("#TS(0x1) while delivering INTR 0x20"), std::string::npos) << injection.detail;
  return;
  EXPECT_EQ(cpu.state().rsp, 0x7000u - 40);
  EXPECT_EQ(stack64(24), 0x8008u) << "the interrupted RSP";
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rsp, 0x8008u);
}

TEST_F(LongModeInjectionTest, NotPresentGateNamesVectorGateAndMode) {
  halt_in_long_mode_with_interrupts_on();
  const Injection injection = cpu.inject_exception(13, 0);
  EXPECT_FALSE(injection);
  EXPECT_NE(injection.detail.find("while delivering #DF(0x0) while delivering #GP(0x0)"), std::string::npos) << injection.detail;
}

// --- real mode, INIT and SIPI ---------------------------------------------

TEST_F(VcpuTest, InitStateWaitsForSipiAndRefusesToRun) {
  boot32({0xf4});  // 1000: hlt
  cpu.reset_for_init();
  EXPECT_TRUE(cpu.waiting_for_sipi());
  const VcpuState s = cpu.state();
  EXPECT_EQ(s.cs, 0xF000);
  EXPECT_EQ(s.rip, 0xFFF0u);
  EXPECT_EQ(s.cr0, 0x6000'0010u);
  EXPECT_EQ(s.efer, 0u);
  EXPECT_EQ(s.rflags, 2u);
  EXPECT_EQ(s.ds, 0);
  EXPECT_EQ(s.ss, 0);
  EXPECT_THROW(cpu.run(kBudget), std::logic_error);
  EXPECT_FALSE(cpu.interrupt_window_open());
}

// A UC_MODE_64 engine keeps the hidden flags of protected mode when CR0 is
// written; a real-mode IRET would then be a protected-mode one and #GP.
TEST_F(VcpuTest, InitStateRunsRealModeIret) {
  load(0x8000, {
                   0xbc, 0x00, 0x70,  // 8000: mov sp, 0x7000
                   0x9c,              // 8003: pushf
                   0x0e,              // 8004: push cs
                   0x68, 0x0a, 0x00,  // 8005: push 0xa
                   0xcf,              // 8008: iret
                   0x90,              // 8009: nop
                   0xf4,              // 800a: hlt
               });
  boot32({0xf4});  // 1000: hlt (the vCPU was in protected mode before INIT)
  run_expecting(VcpuExit::Reason::Halt);
  cpu.reset_for_init();
  cpu.start_at_sipi(0x08);
  EXPECT_EQ(run_expecting(VcpuExit::Reason::Halt).rip, 0xbu);
  EXPECT_EQ(cpu.instructions(), 1u + 6);
}

// RDMSR at CS.base 0x8000: the code hook reports RIP as the linear address.
TEST_F(VcpuTest, TrapSiteInRealModeResumesAtTheRightOffset) {
  host.msrs = {{kMsrApicBase, 0xFEE0'0900}};
  load(0x8000, {
                   0x66, 0xb9, 0x1b, 0x00, 0x00, 0x00,  // 8000: mov ecx, 0x1b
                   0x0f, 0x32,                          // 8006: rdmsr
                   0x43,                                // 8008: inc bx
                   0xf4,                                // 8009: hlt
               });
  cpu.reset_for_init();
  cpu.start_at_sipi(0x08);
  EXPECT_EQ(run_expecting(VcpuExit::Reason::Halt).rip, 0xau);
  EXPECT_EQ(cpu.state().rax, 0xFEE0'0900u);
  EXPECT_EQ(cpu.state().rbx, 1u);
  EXPECT_EQ(cpu.instructions(), 4u);
}

TEST_F(VcpuTest, SipiWithoutInitIsRefused) { EXPECT_THROW(cpu.start_at_sipi(8), std::logic_error); }

// Hooks and the trace see linear addresses (CS.base + IP) in real mode, while
// RIP and the exit are offsets in CS.
TEST_F(VcpuTest, StartAtSipiRunsRealModeCodeAtVectorTimes4K) {
  load(0x8000, {
                   0x8c, 0xc8,  // 8000: mov ax, cs
                   0x89, 0xc3,  // 8002: mov bx, ax
                   0xe6, 0x80,  // 8004: out 0x80, al
                   0xf4,        // 8006: hlt
               });
  MemoryStream trace;
  cpu.set_trace(trace.file());
  cpu.reset_for_init();
  cpu.start_at_sipi(0x08);
  EXPECT_FALSE(cpu.waiting_for_sipi());
  VcpuState s = cpu.state();
  EXPECT_EQ(s.cs, 0x0800);
  EXPECT_EQ(s.rip, 0u);
  const VcpuExit exit = run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(exit.rip, 7u);
  EXPECT_EQ(cpu.state().rbx, 0x0800u);
  EXPECT_EQ(host.port_writes, (std::vector<PortAccess>{{0x80, 1, 0x00, 2}}));
  EXPECT_EQ(cpu.instructions(), 4u);
  EXPECT_EQ(trace.text(),
            "cpu0 0000000000008000: 8c c8  mov ax, cs\n"
            "cpu0 0000000000008002: 89 c3  mov bx, ax\n"
            "cpu0 0000000000008004: e6 80  out 0x80, al\n"
            "cpu0 0000000000008006: f4  hlt\n");
}

// The boot CPU wrote the trampoline after this engine had run code there.
TEST_F(VcpuTest, StartAtSipiDropsStaleTranslations) {
  load(0x8000, {
                   0xb3, 0x01,  // 8000: mov bl, 1
                   0xf4,        // 8002: hlt
               });
  cpu.reset_for_init();
  cpu.start_at_sipi(0x08);
  run_expecting(VcpuExit::Reason::Halt);
  ram.write<uint8_t>(0x8001, 2);  // 8000: mov bl, 2
  cpu.reset_for_init();
  cpu.start_at_sipi(0x08);
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rbx, 2u);
}

TEST_F(VcpuTest, RealModeInterruptGoesThroughTheIvtAndIretReturns) {
  ram.write<uint16_t>(0x20 * 4, 0x0100);      // IVT[0x20]: IP
  ram.write<uint16_t>(0x20 * 4 + 2, 0x0900);  //            CS (handler at 0x9100)
  load(0x9100, {
                   0x41,  // 9100: inc cx
                   0xcf,  // 9101: iret
               });
  load(0x8000, {
                   0xbc, 0x00, 0x70,  // 8000: mov sp, 0x7000
                   0xfb,              // 8003: sti
                   0xf4,              // 8004: hlt
                   0x43,              // 8005: inc bx
                   0xf4,              // 8006: hlt
               });
  cpu.reset_for_init();
  cpu.start_at_sipi(0x08);
  EXPECT_EQ(run_expecting(VcpuExit::Reason::Halt).rip, 5u);
  ASSERT_TRUE(cpu.interrupt_window_open());
  const uint64_t flags = cpu.state().rflags;
  const Injection injection = cpu.inject_interrupt(0x20);
  ASSERT_TRUE(injection) << injection.detail;
  VcpuState s = cpu.state();
  EXPECT_EQ(s.cs, 0x0900);
  EXPECT_EQ(s.rip, 0x100u);
  EXPECT_EQ(s.rflags & kIf, 0u);
  EXPECT_EQ(s.rsp, 0x7000u - 6);
  EXPECT_EQ(ram.read<uint16_t>(0x6FFA), 0x0005) << "IP";
  EXPECT_EQ(ram.read<uint16_t>(0x6FFC), 0x0800) << "CS";
  EXPECT_EQ(ram.read<uint16_t>(0x6FFE), flags) << "FLAGS";
  EXPECT_EQ(run_expecting(VcpuExit::Reason::Halt).rip, 7u);
  s = cpu.state();
  EXPECT_EQ(s.cs, 0x0800);
  EXPECT_EQ(s.rcx, 1u);
  EXPECT_EQ(s.rbx, 1u);
  EXPECT_EQ(s.rsp, 0x7000u);
  EXPECT_EQ(s.rflags, flags);
  EXPECT_EQ(cpu.instructions(), 3u + 2 + 2);
}

TEST_F(VcpuTest, RealModeIvtEntryBeyondTheLimitIsNoUsableHandler) {
  load(0x8000, {0xf4});  // 8000: hlt
  cpu.reset_for_init();
  cpu.start_at_sipi(0x08);
  run_expecting(VcpuExit::Reason::Halt);
  const Injection injection = cpu.inject_exception(13, 0);  // IVT limit 0xFFFF covers all 256; #GP is fine
  EXPECT_TRUE(injection) << injection.detail;
}

// An AP trampoline as a guest writes it: real mode at 0x8000 (SIPI vector
// 8), LGDT, EFER.LME by RDMSR/WRMSR (trapped at a site with CS.base 0x8000),
// CR0.PE, a far jump to 32-bit code, PAE, CR3, CR0.PG, a far jump to 64-bit
// code, a marker. 10 + 12 + 2 = 24 instructions.
class TrampolineTest : public VcpuTest {
 protected:
  void SetUp() override {
    VcpuTest::SetUp();
    write_long_mode_tables();
    ram.write<uint64_t>(0x8108, 0x00CF'9A00'0000'FFFF);  // 0x08: 32-bit code
    ram.write<uint64_t>(0x8110, 0x00CF'9200'0000'FFFF);  // 0x10: data
    ram.write<uint64_t>(0x8118, 0x00AF'9A00'0000'FFFF);  // 0x18: 64-bit code
    ram.write<uint16_t>(0x8120, 4 * 8 - 1);
    ram.write<uint32_t>(0x8122, 0x8100);
    load(0x8000, {
                     0xfa,                                      // 8000: cli
                     0x0f, 0x01, 0x16, 0x20, 0x81,              // 8001: lgdt [0x8120]
                     0x66, 0xb9, 0x80, 0x00, 0x00, 0xc0,        // 8006: mov ecx, 0xc0000080 (EFER)
                     0x0f, 0x32,                                // 800c: rdmsr
                     0x66, 0x0d, 0x00, 0x01, 0x00, 0x00,        // 800e: or eax, 0x100 (LME)
                     0x0f, 0x30,                                // 8014: wrmsr
                     0x0f, 0x20, 0xc0,                          // 8016: mov eax, cr0
                     0x66, 0x83, 0xc8, 0x01,                    // 8019: or eax, 1 (PE)
                     0x0f, 0x22, 0xc0,                          // 801d: mov cr0, eax
                     0x66, 0xea, 0x28, 0x80, 0x00, 0x00, 0x08, 0x00,  // 8020: jmp 0x08:0x8028
                     // 32-bit
                     0xb8, 0x10, 0x00, 0x00, 0x00,              // 8028: mov eax, 0x10
                     0x8e, 0xd8,                                // 802d: mov ds, eax
                     0x8e, 0xd0,                                // 802f: mov ss, eax
                     0x0f, 0x20, 0xe0,                          // 8031: mov eax, cr4
                     0x83, 0xc8, 0x20,                          // 8034: or eax, 0x20 (PAE)
                     0x0f, 0x22, 0xe0,                          // 8037: mov cr4, eax
                     0xb8, 0x00, 0x00, 0x01, 0x00,              // 803a: mov eax, 0x10000
                     0x0f, 0x22, 0xd8,                          // 803f: mov cr3, eax
                     0x0f, 0x20, 0xc0,                          // 8042: mov eax, cr0
                     0x0d, 0x00, 0x00, 0x00, 0x80,              // 8045: or eax, 0x80000000 (PG)
                     0x0f, 0x22, 0xc0,                          // 804a: mov cr0, eax
                     0xea, 0x54, 0x80, 0x00, 0x00, 0x18, 0x00,  // 804d: jmp 0x18:0x8054
                     // 64-bit
                     0xc7, 0x04, 0x25, 0x00, 0x90, 0x00, 0x00, 0xef, 0xbe, 0xad, 0xde,  // 8054: mov dword [0x9000], 0xdeadbeef
                     0xf4,                                      // 805f: hlt
                 });
    cpu.reset_for_init();
    cpu.start_at_sipi(0x08);
  }
  static constexpr uint64_t kInstructions = 24;
};

TEST_F(TrampolineTest, RunsFromRealModeIntoLongMode) {
  const VcpuExit exit = run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(exit.rip, 0x8060u);
  EXPECT_EQ(ram.read<uint32_t>(0x9000), 0xdeadbeefu);
  EXPECT_EQ(cpu.instructions(), kInstructions);
  const VcpuState s = cpu.state();
  EXPECT_EQ(s.cs, 0x18);
  EXPECT_EQ(s.efer & 0x500, 0x500u);
  EXPECT_TRUE(host.msr_reads.empty()) << "EFER stays inside the vCPU";
}

// Quanta of 1 stop before every block, including the far jump right after
// CR0.PE is set, where CS still holds its real-mode base.
TEST_F(TrampolineTest, QuantaOfOneStopExactlyEverywhere) {
  std::vector<uint64_t> counts;
  for (VcpuExit exit; exit.reason != VcpuExit::Reason::Halt;) {
    exit = cpu.run(1);
    ASSERT_TRUE(exit.reason == VcpuExit::Reason::QuantumEnd || exit.reason == VcpuExit::Reason::Halt)
        << to_string(exit.reason) << ": " << exit.detail;
    counts.push_back(cpu.instructions());
  }
  EXPECT_EQ(ram.read<uint32_t>(0x9000), 0xdeadbeefu);
  EXPECT_EQ(cpu.instructions(), kInstructions);
  EXPECT_GT(counts.size(), 5u);
}

TEST_F(TrampolineTest, TraceDisassemblesSixteenThirtyTwoAndSixtyFourBitCode) {
  MemoryStream trace;
  cpu.set_trace(trace.file());
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(trace.text(),
            "cpu0 0000000000008000: fa  cli\n"
            "cpu0 0000000000008001: 0f 01 16 20 81  lgdt [0x8120]\n"
            "cpu0 0000000000008006: 66 b9 80 00 00 c0  mov ecx, 0xc0000080\n"
            "cpu0 000000000000800c: 0f 32  rdmsr\n"
            "cpu0 000000000000800e: 66 0d 00 01 00 00  or eax, 0x100\n"
            "cpu0 0000000000008014: 0f 30  wrmsr\n"
            "cpu0 0000000000008016: 0f 20 c0  mov eax, cr0\n"
            "cpu0 0000000000008019: 66 83 c8 01  or eax, 1\n"
            "cpu0 000000000000801d: 0f 22 c0  mov cr0, eax\n"
            "cpu0 0000000000008020: 66 ea 28 80 00 00 08 00  ljmp 8:0x8028\n"
            "cpu0 0000000000008028: b8 10 00 00 00  mov eax, 0x10\n"
            "cpu0 000000000000802d: 8e d8  mov ds, eax\n"
            "cpu0 000000000000802f: 8e d0  mov ss, eax\n"
            "cpu0 0000000000008031: 0f 20 e0  mov eax, cr4\n"
            "cpu0 0000000000008034: 83 c8 20  or eax, 0x20\n"
            "cpu0 0000000000008037: 0f 22 e0  mov cr4, eax\n"
            "cpu0 000000000000803a: b8 00 00 01 00  mov eax, 0x10000\n"
            "cpu0 000000000000803f: 0f 22 d8  mov cr3, eax\n"
            "cpu0 0000000000008042: 0f 20 c0  mov eax, cr0\n"
            "cpu0 0000000000008045: 0d 00 00 00 80  or eax, 0x80000000\n"
            "cpu0 000000000000804a: 0f 22 c0  mov cr0, eax\n"
            "cpu0 000000000000804d: ea 54 80 00 00 18 00  ljmp 0x18:0x8054\n"
            "cpu0 0000000000008054: c7 04 25 00 90 00 00 ef be ad de  mov dword ptr [0x9000], 0xdeadbeef\n"
            "cpu0 000000000000805f: f4  hlt\n");
}

// --- MMIO -----------------------------------------------------------------

class FakeMmio final : public MmioHandler {
 public:
  struct Access {
    uint64_t offset;
    unsigned size;
    uint64_t value;
    bool operator==(const Access&) const = default;
  };
  uint64_t read(uint64_t offset, unsigned size) override {
    reads.push_back({offset, size, value});
    return value;
  }
  void write(uint64_t offset, unsigned size, uint64_t v) override {
    writes.push_back({offset, size, v});
    if (on_write) on_write();
  }
  uint64_t value = 0;
  std::vector<Access> reads, writes;
  std::function<void()> on_write;
};

TEST_F(VcpuTest, MmioAccessesOfOneTwoAndFourBytesReachTheHandler) {
  FakeMmio apic;
  apic.value = 0x1234'5678;
  cpu.map_mmio(kApicBase, 4096, apic);
  boot32({
      0xa1, 0x20, 0x00, 0xe0, 0xfe,                    // 1000: mov eax, [0xfee00020]
      0x89, 0x1d, 0x00, 0x03, 0xe0, 0xfe,              // 1005: mov [0xfee00300], ebx
      0x66, 0x8b, 0x0d, 0x30, 0x00, 0xe0, 0xfe,        // 100b: mov cx, [0xfee00030]
      0xc6, 0x05, 0x80, 0x00, 0xe0, 0xfe, 0x05,        // 1012: mov byte [0xfee00080], 5
      0xf4,                                            // 1019: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(apic.reads, (std::vector<FakeMmio::Access>{{0x20, 4, 0x1234'5678}, {0x30, 2, 0x1234'5678}}));
  EXPECT_EQ(apic.writes, (std::vector<FakeMmio::Access>{{0x300, 4, kMultibootInfo}, {0x80, 1, 5}}));
  EXPECT_EQ(cpu.state().rax, 0x1234'5678u);
  EXPECT_EQ(cpu.state().rcx & 0xFFFF, 0x5678u);
}

// An ICR write requests a stop. The stop is taken at the next block, so
// the write and the instructions after it in its block run exactly once.
TEST_F(VcpuTest, RequestStopFromAnMmioWriteDoesNotReplayTheWrite) {
  FakeMmio apic;
  apic.on_write = [&] { cpu.request_stop(); };
  cpu.map_mmio(kApicBase, 4096, apic);
  boot32({
      0x43,                                // 1000: inc ebx
      0x89, 0x1d, 0x00, 0x03, 0xe0, 0xfe,  // 1001: mov [0xfee00300], ebx
      0x43,                                // 1007: inc ebx
      0x41,                                // 1008: inc ecx
      0xeb, 0x00,                          // 1009: jmp 0x100b
      0x43,                                // 100b: inc ebx
      0xf4,                                // 100c: hlt
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::StopRequested);
  EXPECT_EQ(exit.rip, 0x100bu);
  EXPECT_EQ(apic.writes, (std::vector<FakeMmio::Access>{{0x300, 4, kMultibootInfo + 1}}));
  EXPECT_EQ(cpu.state().rbx, kMultibootInfo + 2);
  EXPECT_EQ(cpu.state().rcx, 1u);
  EXPECT_EQ(cpu.instructions(), 5u);
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(apic.writes.size(), 1u);
  EXPECT_EQ(cpu.state().rbx, kMultibootInfo + 3);
  EXPECT_EQ(cpu.instructions(), 7u);
}

TEST_F(VcpuTest, MmioWindowRelocates) {
  FakeMmio apic;
  apic.value = 7;
  cpu.map_mmio(kApicBase, 4096, apic);
  cpu.unmap_mmio(kApicBase, 4096);
  cpu.map_mmio(0xFED0'0000, 4096, apic);
  boot32({
      0xa1, 0x20, 0x00, 0xd0, 0xfe,  // 1000: mov eax, [0xfed00020]
      0xf4,                          // 1005: hlt
      0xa1, 0x20, 0x00, 0xe0, 0xfe,  // 1006: mov eax, [0xfee00020]
      0xf4,                          // 100b: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(apic.reads, (std::vector<FakeMmio::Access>{{0x20, 4, 7}}));
  run_expecting(VcpuExit::Reason::Halt);  // the old page is open bus now
  EXPECT_EQ(host.open_bus.size(), 1u);
}

TEST_F(VcpuTest, MmioWindowMustBeWholePagesOutsideRam) {
  FakeMmio apic;
  EXPECT_THROW(cpu.map_mmio(kApicBase + 1, 4096, apic), std::invalid_argument);
  EXPECT_THROW(cpu.map_mmio(0x1000, 4096, apic), std::invalid_argument);
  EXPECT_THROW(cpu.unmap_mmio(kApicBase, 4096), std::invalid_argument);
  cpu.map_mmio(kApicBase, 4096, apic);
  EXPECT_THROW(cpu.map_mmio(kApicBase, 4096, apic), std::invalid_argument);
}

// --- MONITOR, MWAIT and PAUSE ---------------------------------------------

TEST_F(VcpuTest, MonitorStopsAtTheInstructionWithItsOperands) {
  boot32({
      0xb8, 0x40, 0x50, 0x00, 0x00,  // 1000: mov eax, 0x5040
      0x31, 0xc9,                    // 1005: xor ecx, ecx
      0xba, 0x07, 0x00, 0x00, 0x00,  // 1007: mov edx, 7
      0x0f, 0x01, 0xc8,              // 100c: monitor
      0xf4,                          // 100f: hlt
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::Monitor);
  EXPECT_EQ(exit.rip, 0x100cu);
  EXPECT_EQ(exit.address, 0x5040u) << "DS:EAX with the flat Multiboot DS";
  EXPECT_EQ(exit.operands.ecx, 0u);
  EXPECT_EQ(exit.operands.edx, 7u);
  EXPECT_EQ(cpu.instructions(), 3u) << "MONITOR is not retired until the machine emulated it";
  cpu.retire_emulated_instruction();
  EXPECT_EQ(cpu.instructions(), 4u);
  const VcpuExit halted = run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(halted.rip, 0x1010u);
  EXPECT_EQ(cpu.instructions(), 5u);
}

TEST_F(VcpuTest, MwaitStopsWithItsHintAndExtensions) {
  boot64({
      0xb8, 0xf0, 0x00, 0x00, 0x00,  // mov eax, 0xf0
      0xb9, 0x01, 0x00, 0x00, 0x00,  // mov ecx, 1
      0x0f, 0x01, 0xc9,              // mwait
      0xf4,                          // hlt
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::Mwait);
  EXPECT_EQ(exit.rip, kSnippet64 + 10);
  EXPECT_EQ(exit.operands.eax, 0xf0u);
  EXPECT_EQ(exit.operands.ecx, 1u);
  cpu.retire_emulated_instruction();
  EXPECT_EQ(run_expecting(VcpuExit::Reason::Halt).rip, kSnippet64 + 14);
}

TEST_F(VcpuTest, MonitorIn64BitCodeTakesAllOfRax) {
  boot64({
      0x48, 0xb8, 0x00, 0x10, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,  // mov rax, 0x100001000
      0x0f, 0x01, 0xc8,                                            // monitor
  });
  EXPECT_EQ(run_expecting(VcpuExit::Reason::TripleFault).detail.find("#PF(0x0, cr2=0x100001000)") != std::string::npos,
            true) << "beyond the identity map of the first GiB: MONITOR's #PF";
}

TEST_F(VcpuTest, PrefixedMonitorStaysInvalidOpcode) {
  boot32({
      0x2e, 0x0f, 0x01, 0xc8,  // 1000: cs monitor
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::TripleFault);
  EXPECT_NE(exit.detail.find("a prefixed MONITOR/MWAIT"), std::string::npos) << exit.detail;
}

// `sti; mwait`: MWAIT sits in the STI shadow, so no interrupt may come in
// between (the guest would sleep with its wakeup already taken).
TEST_F(InjectionTest, StiShadowCoversAnMwaitUntilItIsRetired) {
  boot_with_handler_for_0x20(Bytes{
                                   0xfb,              // 1013: sti
                                   0x0f, 0x01, 0xc9,  // 1014: mwait
                                   0xf4,              // 1017: hlt
                               });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::Mwait);
  EXPECT_EQ(exit.rip, 0x1014u);
  EXPECT_FALSE(cpu.interrupt_window_open()) << "MWAIT is in the STI shadow";
  cpu.retire_emulated_instruction();
  EXPECT_TRUE(cpu.interrupt_window_open());
  ASSERT_TRUE(cpu.inject_interrupt(0x20));
  const VcpuExit halted = run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(halted.rip, 0x1018u) << "IRET returns past the MWAIT";
}

TEST_F(VcpuTest, PausesAreCounted) {
  boot32({
      0xb9, 0x0a, 0x00, 0x00, 0x00,  // 1000: mov ecx, 10
      0xf3, 0x90,                    // 1005: pause
      0x49,                          // 1007: dec ecx
      0x75, 0xfb,                    // 1008: jnz 0x1005
      0xf4,                          // 100a: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.pauses(), 10u);
  EXPECT_EQ(cpu.instructions(), 1u + 10 * 3 + 1);
}

// Pause-loop exiting (emu/pause_loop.h): a gap of 8 and a window of 64
// instructions, small enough for short snippets.
constexpr PauseLoopExiting kTestPle{.gap_instructions = 8, .window_instructions = 64};

TEST_F(VcpuTest, PauseLoopAtAFixedPointExitsAtThePause) {
  ram.write<uint32_t>(0x5000, 1);  // the lock, held
  boot32({
      0xf3, 0x90,                          // 1000: pause
      0x83, 0x3d, 0x00, 0x50, 0x00, 0x00, 0x00,  // 1002: cmp dword [0x5000], 0
      0x75, 0xf5,                          // 1009: jne 0x1000
      0xf4,                                // 100b: hlt
  });
  cpu.set_pause_loop_exiting(kTestPle);
  const VcpuExit exit = run_expecting(VcpuExit::Reason::PauseLoop);
  EXPECT_EQ(exit.rip, 0x1000u) << "at the PAUSE, not yet retired";
  EXPECT_FALSE(exit.loop_reads_time);
  // The window (64) plus one more iteration to prove the fixed point.
  EXPECT_GE(cpu.instructions(), 64u);
  EXPECT_LE(cpu.instructions(), 64u + 2 * 3);
  EXPECT_EQ(cpu.instructions(), 3 * cpu.pauses()) << "the PAUSE it stopped at is not counted yet";
  // Released: it leaves the loop, and PLE off runs it to the end as before.
  ram.write<uint32_t>(0x5000, 0);
  run_expecting(VcpuExit::Reason::Halt);
}

TEST_F(VcpuTest, PauseLoopWithoutPleRunsEveryInstruction) {
  ram.write<uint32_t>(0x5000, 1);
  boot32({
      0xf3, 0x90,                                // 1000: pause
      0x83, 0x3d, 0x00, 0x50, 0x00, 0x00, 0x00,  // 1002: cmp dword [0x5000], 0
      0x75, 0xf5,                                // 1009: jne 0x1000
      0xf4,                                      // 100b: hlt
  });
  const VcpuExit exit = cpu.run(3000);
  EXPECT_EQ(exit.reason, VcpuExit::Reason::QuantumEnd);
  EXPECT_EQ(cpu.instructions(), 3000u);
}

// Counting up to a bound is not a CountedLoop (vcpu_blocks.h) either: every
// iteration runs.
TEST_F(VcpuTest, CountedPauseLoopIsNoFixedPoint) {
  boot32({
      0x31, 0xf6,                          // 1000: xor esi, esi
      0xf3, 0x90,                          // 1002: pause
      0x46,                                // 1004: inc esi
      0x81, 0xfe, 0x00, 0x01, 0x00, 0x00,  // 1005: cmp esi, 256
      0x75, 0xf5,                          // 100b: jne 0x1002
      0xf4,                                // 100d: hlt
  });
  cpu.set_pause_loop_exiting(kTestPle);
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.pauses(), 256u) << "ESI changes every iteration: every one runs";
  EXPECT_EQ(cpu.instructions(), 1u + 4 * 256 + 1);
}

TEST_F(VcpuTest, PauseLoopThatStoresIsNoSpin) {
  ram.write<uint32_t>(0x5000, 1);
  boot32({
      0xf3, 0x90,                                            // 1000: pause
      0xc7, 0x05, 0x00, 0x51, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00,  // 1002: mov dword [0x5100], 7
      0x83, 0x3d, 0x00, 0x50, 0x00, 0x00, 0x00,              // 100c: cmp dword [0x5000], 0
      0x75, 0xeb,                                            // 1013: jne 0x1000
      0xf4,                                                  // 1015: hlt
  });
  cpu.set_pause_loop_exiting(kTestPle);
  const VcpuExit exit = cpu.run(3000);
  EXPECT_EQ(exit.reason, VcpuExit::Reason::QuantumEnd) << "a store in the loop: no pause-loop exit";
}

TEST_F(VcpuTest, PauseLoopOnTheTscExitsAndSaysItReadsTime) {
  boot32({
      0xbb, 0xff, 0xff, 0xff, 0x7f,  // 1000: mov ebx, 0x7fffffff (a far deadline)
      0xf3, 0x90,                    // 1005: pause
      0x0f, 0x31,                    // 1007: rdtsc
      0x39, 0xd8,                    // 1009: cmp eax, ebx
      0x72, 0xf8,                    // 100b: jb 0x1005
      0xf4,                          // 100d: hlt
  });
  for (uint64_t t = 0; t < 1000; ++t) host.tsc_values.push_back(t * 100);  // climbing
  cpu.set_pause_loop_exiting(kTestPle);
  const VcpuExit exit = run_expecting(VcpuExit::Reason::PauseLoop);
  EXPECT_EQ(exit.rip, 0x1005u);
  EXPECT_TRUE(exit.loop_reads_time) << "EAX and EDX differ, by the TSC alone";
}

TEST_F(VcpuTest, PauseLoopOnTheTscWithACounterIsNoFixedPoint) {
  boot32({
      0xbb, 0xff, 0xff, 0xff, 0x7f,  // 1000: mov ebx, 0x7fffffff
      0xf3, 0x90,                    // 1005: pause
      0x46,                          // 1007: inc esi (a counter beside the TSC)
      0x0f, 0x31,                    // 1008: rdtsc
      0x39, 0xd8,                    // 100a: cmp eax, ebx
      0x72, 0xf7,                    // 100c: jb 0x1005
      0xf4,                          // 100e: hlt
  });
  for (uint64_t t = 0; t < 1000; ++t) host.tsc_values.push_back(t * 100);
  cpu.set_pause_loop_exiting(kTestPle);
  const VcpuExit exit = cpu.run(2000);
  EXPECT_EQ(exit.reason, VcpuExit::Reason::QuantumEnd);
}

// Counted loops (vcpu_blocks.h CountedLoop) run their turns by arithmetic:
// the counts, the registers and the stops are those of every turn run.
TEST_F(VcpuTest, CountedLoopRunsAllItsTurnsExactly) {
  boot32({
      0xb9, 0x40, 0x42, 0x0f, 0x00,  // 1000: mov ecx, 1000000
      0x49,                          // 1005: dec ecx
      0x75, 0xfd,                    // 1006: jnz 0x1005
      0xf4,                          // 1008: hlt
  });
  run_expecting(VcpuExit::Reason::Halt, 10'000'000);
  EXPECT_EQ(cpu.instructions(), 1u + 2 * 1'000'000 + 1);
  EXPECT_EQ(cpu.state().rcx, 0u);
}

// The same loop under the trace, which runs every turn, is the reference.
struct CountedLoopRun {
  uint64_t instructions, rcx, rip, pauses;
  bool operator==(const CountedLoopRun&) const = default;
};

CountedLoopRun run_counted_loop(bool traced, uint64_t budget) {
  GuestRam ram{kRamBytes};
  FakeHost host;
  UnicornVcpu cpu{0, ram, host};
  host.cpu = &cpu;
  const Bytes code = {
      0xb9, 0x40, 0x42, 0x0f, 0x00,  // 1000: mov ecx, 1000000
      0xf3, 0x90,                    // 1005: pause
      0x83, 0xe9, 0x01,              // 1007: sub ecx, 1
      0x73, 0xf9,                    // 100a: jae 0x1005 (ecx + 1 turns)
      0xf4,                          // 100c: hlt
  };
  std::copy(code.begin(), code.end(), ram.bytes(kEntry, code.size()).begin());
  cpu.enter_multiboot(kEntry, kMultibootMagic, kMultibootInfo);
  MemoryStream trace;
  if (traced) cpu.set_trace(trace.file());
  EXPECT_EQ(cpu.run(budget).reason, VcpuExit::Reason::QuantumEnd);
  const VcpuState s = cpu.state();
  return {cpu.instructions(), s.rcx, s.rip, cpu.pauses()};
}

TEST(VcpuCountedLoop, StopsWhereTheBudgetEndsAsEveryTurnWould) {
  for (uint64_t budget : {1u, 2u, 5u, 1000u, 1001u, 1002u, 30'000u}) {
    const CountedLoopRun skipped = run_counted_loop(false, budget), every = run_counted_loop(true, budget);
    EXPECT_EQ(skipped, every) << "budget " << budget << ": " << skipped.instructions << " vs " << every.instructions;
  }
}

TEST_F(VcpuTest, CountedLoopWithSubAndJaeRunsCounterPlusOneTurns) {
  boot32({
      0xb9, 0x40, 0x42, 0x0f, 0x00,  // 1000: mov ecx, 1000000
      0xf3, 0x90,                    // 1005: pause
      0x83, 0xe9, 0x01,              // 1007: sub ecx, 1
      0x73, 0xf9,                    // 100a: jae 0x1005
      0xf4,                          // 100c: hlt
  });
  run_expecting(VcpuExit::Reason::Halt, 10'000'000);
  EXPECT_EQ(cpu.instructions(), 1u + 3 * 1'000'001 + 1);
  EXPECT_EQ(cpu.state().rcx & 0xFFFF'FFFF, 0xFFFF'FFFFu) << "the last SUB borrowed";
  EXPECT_EQ(cpu.pauses(), 1'000'001u);
}

TEST_F(VcpuTest, MonitorInALoopStopsEveryTime) {
  boot32({
      0xbb, 0x03, 0x00, 0x00, 0x00,  // 1000: mov ebx, 3
      0xb8, 0x40, 0x50, 0x00, 0x00,  // 1005: mov eax, 0x5040
      0x0f, 0x01, 0xc8,              // 100a: monitor
      0x4b,                          // 100d: dec ebx
      0x75, 0xf5,                    // 100e: jnz 0x1005
      0xf4,                          // 1010: hlt
  });
  for (int i = 0; i < 3; ++i) {
    const VcpuExit exit = run_expecting(VcpuExit::Reason::Monitor);
    EXPECT_EQ(exit.rip, 0x100au);
    cpu.retire_emulated_instruction();
  }
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.instructions(), 1u + 3 * 4 + 1);
}

TEST_F(VcpuTest, MonitorAsTheFirstInstructionOfARunStops) {
  boot32({
      0xb8, 0x40, 0x50, 0x00, 0x00,  // 1000: mov eax, 0x5040
      0xeb, 0x00,                    // 1005: jmp 0x1007 (ends the block)
      0x0f, 0x01, 0xc8,              // 1007: monitor
      0xf4,                          // 100a: hlt
  });
  const VcpuExit quantum = run_expecting(VcpuExit::Reason::QuantumEnd, 2);
  EXPECT_EQ(quantum.rip, 0x1007u);
  const VcpuExit exit = run_expecting(VcpuExit::Reason::Monitor);
  EXPECT_EQ(exit.rip, 0x1007u);
  cpu.retire_emulated_instruction();
  run_expecting(VcpuExit::Reason::Halt);
}

// An AP after INIT and SIPI vector 8: real mode at 0x8000, where `code` is.
struct ApAtSipi {
  explicit ApAtSipi(const Bytes& code, EngineCpu engine_cpu = EngineCpu::Qemu64) : cpu(1, ram, host, engine_cpu) {
    host.cpu = &cpu;
    std::copy(code.begin(), code.end(), ram.bytes(0x8000, code.size()).begin());
    cpu.reset_for_init();
    cpu.start_at_sipi(0x08);
  }
  GuestRam ram{kRamBytes};
  FakeHost host;
  UnicornVcpu cpu;
};

// INIT brings real mode from a context saved elsewhere; the engine must keep
// its own CPU model (Unicorn runs MONITOR and MWAIT itself, as a NOP and a
// HLT, on a model whose internal features have MONITOR).
TEST(VcpuEngineCpu, MonitorStopsAfterInitAndSipiOnEveryEngineCpu) {
  for (EngineCpu engine_cpu : {EngineCpu::Qemu64, EngineCpu::SkylakeServer, EngineCpu::Epyc}) {
    ApAtSipi ap({
                    0xb8, 0x40, 0x00,  // 8000: mov ax, 0x40
                    0x0f, 0x01, 0xc8,  // 8003: monitor
                    0xf4,              // 8006: hlt
                },
                engine_cpu);
    const VcpuExit exit = ap.cpu.run(kBudget);
    EXPECT_EQ(exit.reason, VcpuExit::Reason::Monitor) << static_cast<int>(engine_cpu) << ": " << exit.detail;
    EXPECT_EQ(exit.address, 0x40u) << "DS:AX, DS = 0 after INIT";
  }
}

TEST_F(VcpuTest, MonitorAfterAHaltStops) {
  boot32({
      0xf4,                          // 1000: hlt
      0xb8, 0x40, 0x50, 0x00, 0x00,  // 1001: mov eax, 0x5040
      0x0f, 0x01, 0xc8,              // 1006: monitor
      0xf4,                          // 1009: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(run_expecting(VcpuExit::Reason::Monitor).rip, 0x1006u);
}

TEST_F(VcpuTest, MonitorStopsWhileTheInterruptWindowIsWatched) {
  boot64({
      0xb8, 0x00, 0x50, 0x00, 0x00,  // mov eax, 0x5000 (mapped: page 0 is not)
      0x89, 0xd1,                    // mov ecx, edx
      0x0f, 0x01, 0xc8,              // monitor
      0xf4,                          // hlt
  });
  cpu.stop_when_interruptible(true);
  EXPECT_EQ(run_expecting(VcpuExit::Reason::Monitor).rip, kSnippet64 + 7);
}

TEST(VcpuEngineCpu, MonitorAfterAHaltOnAnApStops) {
  ApAtSipi ap({
      0xf4,              // 8000: hlt
      0xb8, 0x40, 0x00,  // 8001: mov ax, 0x40
      0x0f, 0x01, 0xc8,  // 8004: monitor
      0xf4,              // 8007: hlt
  });
  EXPECT_EQ(ap.cpu.run(kBudget).reason, VcpuExit::Reason::Halt);
  const VcpuExit exit = ap.cpu.run(kBudget);
  EXPECT_EQ(exit.reason, VcpuExit::Reason::Monitor) << exit.detail;
  EXPECT_EQ(exit.rip, 4u);
}

TEST_F(InjectionTest, MonitorAfterAnInterruptHandlerReturnedStops) {
  boot_with_handler_for_0x20(Bytes{
                                   0xfb,                          // 1013: sti
                                   0xf4,                          // 1014: hlt
                                   0xfa,                          // 1015: cli
                                   0xb8, 0x40, 0x50, 0x00, 0x00,  // 1016: mov eax, 0x5040
                                   0x0f, 0x01, 0xc8,              // 101b: monitor
                                   0xf4,                          // 101e: hlt
                               });
  run_expecting(VcpuExit::Reason::Halt);
  ASSERT_TRUE(cpu.inject_interrupt(0x20));
  const VcpuExit exit = run_expecting(VcpuExit::Reason::Monitor);
  EXPECT_EQ(exit.rip, 0x101bu);
}


// --- Unicorn 2.1.3: real paging, exact faults, delivery through the IDT ---

// 4-level paging maps a higher-half address onto other physical memory
// (2.0.1 could only run virtual = physical); blocks there are decoded and
// counted through the page walker.
TEST_F(VcpuTest, FourLevelPagingRunsCodeAtAHigherHalfAddress) {
  constexpr uint64_t kPdpt2 = 0x14000, kPd2 = 0x15000, kPhysical = 0x40000;
  adjust_tables = [this] {
    ram.write<uint64_t>(kPml4 + 8 * 511, kPdpt2 | 0x3);
    ram.write<uint64_t>(kPdpt2 + 8 * 510, kPd2 | 0x3);
    ram.write<uint64_t>(kPd2, kPt | 0x3);  // 0xffffffff80000000: kPt's 4 KiB pages, page 0x40 at 0x40000
  };
  load(kPhysical, {
                      0x48, 0xc7, 0xc0, 0x34, 0x12, 0x00, 0x00,  // mov rax, 0x1234
                      0xf4,                                      // hlt
                  });
  boot64({
      0x48, 0xb8, 0x00, 0x00, 0x04, 0x80, 0xff, 0xff, 0xff, 0xff,  // mov rax, 0xffffffff80040000
      0xff, 0xe0,                                                  // jmp rax
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(exit.rip, 0xFFFF'FFFF'8004'0008u);
  EXPECT_EQ(cpu.state().rax, 0x1234u);
}

// 32-bit paging with PSE (CR4.PSE, 4 MiB pages): a load at 0x80001000 goes
// through PDE 512 to physical 0x1000 (the code itself).
TEST_F(VcpuTest, ThirtyTwoBitPagingWithFourMegabytePagesTranslates) {
  constexpr uint64_t kPageDirectory = 0x5000;
  ram.write<uint32_t>(kPageDirectory + 4 * 0, 0x0000'0083);    // 0..4 MiB: present, writable, 4 MiB
  ram.write<uint32_t>(kPageDirectory + 4 * 512, 0x0000'0083);  // 2 GiB..+4 MiB -> 0
  boot32({
      0xb8, 0x00, 0x50, 0x00, 0x00,  // 1000: mov eax, 0x5000
      0x0f, 0x22, 0xd8,              // 1005: mov cr3, eax
      0x0f, 0x20, 0xe0,              // 1008: mov eax, cr4
      0x83, 0xc8, 0x10,              // 100b: or eax, 0x10 (PSE)
      0x0f, 0x22, 0xe0,              // 100e: mov cr4, eax
      0x0f, 0x20, 0xc0,              // 1011: mov eax, cr0
      0x0d, 0x00, 0x00, 0x00, 0x80,  // 1014: or eax, 0x80000000 (PG)
      0x0f, 0x22, 0xc0,              // 1019: mov cr0, eax
      0xa1, 0x00, 0x10, 0x00, 0x80,  // 101c: mov eax, [0x80001000]
      0xf4,                          // 1021: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rax, 0x0050'00b8u) << "the first bytes at physical 0x1000";
  EXPECT_EQ(ram.read<uint32_t>(kPageDirectory + 4 * 512) & 0x20, 0x20u) << "the engine set A";
}

// Issue 14, F5 for the MSRs the engine keeps: one CPUID does not announce
// (IA32_PAT without CPUID.01H:EDX[16]) is #GP(0) like any unknown MSR.
TEST_F(VcpuTest, CpuStateMsrTheCpuidDoesNotAnnounceIsGeneralProtection) {
  host.unannounced_msrs = {0x277};
  boot32({
      0xb9, 0x77, 0x02, 0x00, 0x00,  // 1000: mov ecx, 0x277 (IA32_PAT)
      0x0f, 0x32,                    // 1005: rdmsr
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::TripleFault);
  EXPECT_NE(exit.detail.find("rdmsr of unknown MSR 0x277"), std::string::npos) << exit.detail;
}

// Issue 14, F3: Unicorn's code hook passes the size 0xF1F1F1F1 ("unknown")
// for an instruction whose translation raised an exception (here ud2); the
// trace decodes the length itself instead of reading 4 GiB of RAM (which
// threw, and ended the run as an internal error).
TEST_F(VcpuTest, TraceOfAnInstructionOfUnknownSizeDecodesItsLength) {
  MemoryStream trace;
  boot32({
      0x90,        // 1000: nop
      0x0f, 0x0b,  // 1001: ud2
  });
  cpu.set_trace(trace.file());
  const VcpuExit exit = run_expecting(VcpuExit::Reason::TripleFault);
  EXPECT_NE(trace.text().find("0000000000001001: 0f 0b  ud2"), std::string::npos) << trace.text();
  EXPECT_NE(exit.detail.find("ud2"), std::string::npos) << exit.detail;
}

// The #PF error code is the SDM's, computed by the walker, and the handler
// gets CR2 and RIP exact: a write to a not-present page is 0x2; a read
// through an entry with a reserved bit set is P|RSVD = 0x9 (QEMU 7.2 says
// 0x8: docs/deviations.md).
TEST_F(LongModeInjectionTest, PageFaultHandlerGetsTheSdmErrorCodeAndCr2) {
  write_idtr(0xFFF);
  set_gate64(14, 0x2100);
  load(0x2100, {
                   0x5b,                    // 2100: pop rbx (the error code)
                   0x0f, 0x20, 0xd1,        // 2101: mov rcx, cr2
                   0x48, 0x8b, 0x14, 0x24,  // 2104: mov rdx, [rsp] (the saved RIP)
                   0xf4,                    // 2108: hlt
               });
  boot64({
      0x0f, 0x01, 0x1c, 0x25, 0x28, 0x31, 0x00, 0x00,  // 2001: lidt [0x3128]
      0x48, 0xc7, 0xc4, 0x00, 0x80, 0x00, 0x00,        // 2009: mov rsp, 0x8000
      0xc6, 0x04, 0x25, 0x10, 0x00, 0x08, 0x00, 0x01,  // 2010: mov byte [0x80010], 1 (not present)
  });
  run_expecting(VcpuExit::Reason::Halt);
  VcpuState s = cpu.state();
  EXPECT_EQ(s.rbx, 0x2u) << "W/R = 1, P = 0";
  EXPECT_EQ(s.rcx, kNotPresent + 0x10);
  EXPECT_EQ(s.rdx, 0x2010u) << "the faulting instruction";

}

TEST_F(LongModeInjectionTest, ReservedBitPageFaultCarriesPresentAsTheSdmSays) {
  write_idtr(0xFFF);
  set_gate64(14, 0x2100);
  load(0x2100, {
                   0x5b,              // 2100: pop rbx (the error code)
                   0x0f, 0x20, 0xd1,  // 2101: mov rcx, cr2
                   0xf4,              // 2104: hlt
               });
  // Present, but bit 51 is reserved: MAXPHYADDR is 36 when the host reports
  // no CPUID leaf 0x80000008 (the fake host reports none).
  ram.write<uint64_t>(kPt + 8 * (kNotPresent >> 12), kNotPresent | (uint64_t{1} << 51) | 0x3);
  boot64({
      0x0f, 0x01, 0x1c, 0x25, 0x28, 0x31, 0x00, 0x00,  // 2001: lidt [0x3128]
      0x48, 0xc7, 0xc4, 0x00, 0x80, 0x00, 0x00,        // 2009: mov rsp, 0x8000
      0x48, 0x8b, 0x04, 0x25, 0x20, 0x00, 0x08, 0x00,  // 2010: mov rax, [0x80020]
  });
  run_expecting(VcpuExit::Reason::Halt);
  const VcpuState s = cpu.state();
  EXPECT_EQ(s.rbx, 0x9u) << "P | RSVD (QEMU 7.2 reports 0x8)";
  EXPECT_EQ(s.rcx, kNotPresent + 0x20);
}

// Ring 3 -> 0 -> 3 -> 0: IRETQ to ring 3 (the engine's own), INT 0x80
// through a DPL-3 gate onto RSP0 from the TSS, IRETQ back, and INT 0x81
// through a gate with IST1.
TEST_F(LongModeInjectionTest, RingThreeInterruptsSwitchToRsp0AndIstAndIretqReturns) {
  constexpr uint64_t kGdt2 = 0x3200, kGdtr2 = 0x3280, kTss = 0x6000, kRsp0 = 0x9000, kIst1 = 0xA000;
  adjust_tables = [this] {
    for (uint64_t table : {kPml4, kPdpt, kPd}) ram.write<uint64_t>(table, ram.read<uint64_t>(table) | 0x4);  // U/S
    for (uint64_t page : {0x2000u, 0x7000u}) ram.write<uint64_t>(kPt + 8 * (page >> 12), page | 0x7);  // user
  };
  ram.write<uint64_t>(kGdt2 + 0x08, 0x00AF'9A00'0000'FFFF);  // 64-bit code, DPL 0
  ram.write<uint64_t>(kGdt2 + 0x10, 0x00CF'9200'0000'FFFF);  // data, DPL 0
  ram.write<uint64_t>(kGdt2 + 0x18, 0x00CF'F200'0000'FFFF);  // data, DPL 3
  ram.write<uint64_t>(kGdt2 + 0x20, 0x00AF'FA00'0000'FFFF);  // 64-bit code, DPL 3
  ram.write<uint64_t>(kGdt2 + 0x28, 0x0000'8900'0000'0067 | (kTss << 16));  // 64-bit TSS, available
  ram.write<uint64_t>(kGdt2 + 0x30, 0);
  ram.write<uint16_t>(kGdtr2, 7 * 8 - 1);
  ram.write<uint32_t>(kGdtr2 + 2, kGdt2);
  ram.write<uint64_t>(kTss + 0x04, kRsp0);  // RSP0
  ram.write<uint64_t>(kTss + 0x24, kIst1);  // IST1
  write_idtr(0xFFF);
  set_gate64(0x80, 0x2100, kInterruptGate, 0, 3);
  set_gate64(0x81, 0x2120, kInterruptGate, 1, 3);
  load(0x2100, {
                   0x48, 0x8b, 0x5c, 0x24, 0x08,  // 2100: mov rbx, [rsp+8] (saved CS)
                   0x48, 0x89, 0xe2,              // 2105: mov rdx, rsp
                   0xf4,                          // 2108: hlt
                   0x48, 0xcf,                    // 2109: iretq
               });
  load(0x2120, {
                   0x48, 0x89, 0xe2,  // 2120: mov rdx, rsp
                   0xf4,              // 2123: hlt
               });
  load(0x2200, {
                   0xcd, 0x80,  // 2200: int 0x80 (ring 3)
                   0xcd, 0x81,  // 2202: int 0x81
               });
  boot64({
      0x0f, 0x01, 0x14, 0x25, 0x80, 0x32, 0x00, 0x00,  // 2001: lgdt [0x3280]
      0x66, 0xb8, 0x28, 0x00,                          // 2009: mov ax, 0x28
      0x0f, 0x00, 0xd8,                                // 200d: ltr ax
      0x0f, 0x01, 0x1c, 0x25, 0x28, 0x31, 0x00, 0x00,  // 2010: lidt [0x3128]
      0x48, 0xc7, 0xc4, 0x00, 0x88, 0x00, 0x00,        // 2018: mov rsp, 0x8800 (ring 0's own stack)
      0x6a, 0x1b,                                      // 201f: push 0x1b (SS, RPL 3)
      0x68, 0x00, 0x80, 0x00, 0x00,                    // 2021: push 0x8000 (RSP)
      0x6a, 0x02,                                      // 2026: push 2 (RFLAGS)
      0x6a, 0x23,                                      // 2028: push 0x23 (CS, RPL 3)
      0x68, 0x00, 0x22, 0x00, 0x00,                    // 202a: push 0x2200 (RIP)
      0x48, 0xcf,                                      // 202f: iretq
  });
  run_expecting(VcpuExit::Reason::Halt);
  VcpuState s = cpu.state();
  EXPECT_EQ(s.cs, 0x08) << "the handler runs in ring 0";
  EXPECT_EQ(s.rbx, 0x23u) << "the saved CS is ring 3's";
  EXPECT_EQ(s.rdx, kRsp0 - 40) << "on RSP0 from the TSS: SS, RSP, RFLAGS, CS, RIP";
  EXPECT_EQ(ram.read<uint64_t>(kRsp0 - 8), 0x1bu) << "SS";
  EXPECT_EQ(ram.read<uint64_t>(kRsp0 - 16), 0x8000u) << "RSP";
  EXPECT_EQ(ram.read<uint64_t>(kRsp0 - 40), 0x2202u) << "RIP after INT";

  run_expecting(VcpuExit::Reason::Halt);  // IRETQ to ring 3, then INT 0x81
  s = cpu.state();
  EXPECT_EQ(s.cs, 0x08);
  EXPECT_EQ(s.rdx, kIst1 - 40) << "on IST1";
  EXPECT_EQ(ram.read<uint64_t>(kIst1 - 32), 0x23u) << "CS: it came from ring 3 again";
  EXPECT_EQ(ram.read<uint64_t>(kIst1 - 40), 0x2204u);
}

// Two contributory faults give #DF (SDM table 6-5), delivered to its gate
// with error code 0.
TEST_F(LongModeInjectionTest, GeneralProtectionWithANotPresentGateIsADoubleFault) {
  write_idtr(0xFFF);
  set_gate64(8, 0x2100);  // #DF; #GP (13) has no gate
  load(0x2100, {
                   0x5b,  // 2100: pop rbx (the error code)
                   0xf4,  // 2101: hlt
               });
  boot64({
      0x0f, 0x01, 0x1c, 0x25, 0x28, 0x31, 0x00, 0x00,  // 2001: lidt [0x3128]
      0x48, 0xc7, 0xc4, 0x00, 0x80, 0x00, 0x00,        // 2009: mov rsp, 0x8000
      0x48, 0xc7, 0xc3, 0xff, 0xff, 0x00, 0x00,        // 2010: mov rbx, 0xffff
      0xb9, 0xff, 0xff, 0xff, 0x4b,                    // 2017: mov ecx, 0x4bffffff
      0x0f, 0x32,                                      // 201c: rdmsr (unknown: #GP(0))
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rbx, 0u) << "#DF pushes 0";
  EXPECT_EQ(cpu.state().rip, 0x2102u);
}

// The probe that finds the engine's error code and exception in flight.
TEST(VcpuEngineState, ProbeFindsTheErrorCodeAndTheExceptionInFlight) {
  const auto offsets = vcpu_probe_offsets_for_tests();
  ASSERT_TRUE(offsets.has_value()) << "the uc_context layout of this Unicorn build is not the one 2.1.3 has";
  EXPECT_EQ(offsets->second - offsets->first, 112u);
}

}  // namespace
}  // namespace topolab
