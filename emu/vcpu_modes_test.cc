// SPDX-License-Identifier: GPL-2.0-or-later
// Modes and state (emu/vcpu_modes.cc): the Multiboot state, long mode,
// INIT and SIPI, real mode, paging, the engine's CPU models and its state
// probe (emu/vcpu_contexts.cc).
// One behaviour per test, each a tiny guest program with its instructions
// in comments (addresses on the left), in the style of Unicorn's
// tests/unit/test_x86.c; the fixtures are in emu/vcpu_test_support.h.
#include "emu/vcpu_test_support.h"

namespace topolab {
namespace {

using namespace vcpu_test;

// --- the engine's own CPU model ------------------------------------------

// RDPKRU after enabling CR4.PKE, with Unicorn's model chosen per vCPU: the
// engine gates PKU on its internal features whatever CPUID answers, and
// those features survive the context copy enter_multiboot makes.
VcpuExit run_rdpkru(EngineCpuModel engine_cpu) {
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
  const VcpuExit exit = run_rdpkru(EngineCpuModel::Qemu64);
  EXPECT_EQ(exit.reason, VcpuExit::Reason::TripleFault) << exit.detail;
  EXPECT_NE(exit.detail.find("while delivering #UD (the first raised by an invalid opcode"), std::string::npos) << exit.detail;
}

TEST(VcpuEngineCpu, SkylakeServerEngineRunsPku) {
  const VcpuExit exit = run_rdpkru(EngineCpuModel::SkylakeServer);
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

// An AP after INIT and SIPI vector 8: real mode at 0x8000, where `code` is.
struct ApAtSipi {
  explicit ApAtSipi(const Bytes& code, EngineCpuModel engine_cpu = EngineCpuModel::Qemu64)
      : cpu(1, ram, host, engine_cpu) {
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
  for (EngineCpuModel engine_cpu : {EngineCpuModel::Qemu64, EngineCpuModel::SkylakeServer, EngineCpuModel::Epyc}) {
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

// The probe that finds the engine's error code and exception in flight.
TEST(VcpuEngineState, ProbeFindsTheErrorCodeAndTheExceptionInFlight) {
  const auto offsets = vcpu_probe_offsets_for_tests();
  ASSERT_TRUE(offsets.has_value()) << "the uc_context layout of this Unicorn build is not the one 2.1.3 has";
  EXPECT_EQ(offsets->second - offsets->first, 112u);
}

}  // namespace
}  // namespace topolab
