// SPDX-License-Identifier: GPL-2.0-or-later
// run() and its exits: HLT, exceptions the engine raises, and the
// instructions the vCPU answers or emulates (CPUID, IN/OUT, MSRs, CR8,
// RDPMC, RDTSC(P), VMCALL, MONITOR/MWAIT), as emu/vcpu_run.cc does them.
// One behaviour per test, each a tiny guest program with its instructions
// in comments (addresses on the left), in the style of Unicorn's
// tests/unit/test_x86.c; the fixtures are in emu/vcpu_test_support.h.
#include "emu/vcpu_test_support.h"

namespace topolab {
namespace {

using namespace vcpu_test;

constexpr uint32_t kMsrTscAux = 0xC000'0103;

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

// Unicorn patch 0009: a read of CR8 runs in the engine and gives what the
// host last set (the machine's APIC TPR[7:4]), with no call to the host.
TEST_F(VcpuTest, MovFromCr8ReadsTheTprTheHostSet) {
  host.cr8 = 0;  // what a call to the host would answer: never asked
  boot64({
      0x44, 0x0f, 0x20, 0xc2,  // 2001: mov rdx, cr8
      0xf4,                    // 2005: hlt
  });
  cpu.set_cr8(5);
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rdx, 5u);
  EXPECT_TRUE(host.cr8_writes.empty());
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

// Each serializing system instruction reaches the host once, before it
// runs, with the instruction count exact (the clock charges its cycles);
// reads of control registers and ordinary instructions do not.
TEST_F(VcpuTest, SerializingSystemInstructionsReachTheHostOnce) {
  boot32({
      0x0f, 0x20, 0xc0,                          // 1000: mov eax, cr0
      0x0f, 0x22, 0xc0,                          // 1003: mov cr0, eax
      0x0f, 0x06,                                // 1006: clts
      0x0f, 0x20, 0xd8,                          // 1008: mov eax, cr3
      0x0f, 0x22, 0xd8,                          // 100b: mov cr3, eax
      0x0f, 0x20, 0xe0,                          // 100e: mov eax, cr4
      0x0f, 0x22, 0xe0,                          // 1011: mov cr4, eax
      0x0f, 0x01, 0x3d, 0x00, 0x50, 0x00, 0x00,  // 1014: invlpg [0x5000]
      0x0f, 0x01, 0x15, 0x00, 0x50, 0x00, 0x00,  // 101b: lgdt [0x5000]
      0x0f, 0x09,                                // 1022: wbinvd
      0x31, 0xc0,                                // 1024: xor eax, eax
      0x0f, 0x23, 0xf8,                          // 1026: mov dr7, eax
      0x0f, 0x20, 0xc0,                          // 1029: mov eax, cr0
      0x0f, 0x20, 0xe0,                          // 102c: mov eax, cr4
      0x35, 0x80, 0x00, 0x00, 0x00,              // 102f: xor eax, 0x80 (PGE)
      0x0f, 0x22, 0xe0,                          // 1034: mov cr4, eax
      0xf4,                                      // 1037: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  using enum SystemInstruction;
  const std::vector<std::pair<SystemInstruction, uint64_t>> want = {
      {Cr0Write, 1}, {Cr0Write, 2}, {Cr3Write, 4}, {Cr4Write, 6}, {Invlpg, 7},
      {DescriptorLoad, 8}, {CacheFlush, 9}, {DrWrite, 11}, {Cr4GlobalFlush, 15}};
  EXPECT_EQ(host.system_instructions, want);
}

// A loop through one: every turn is charged, whatever the budget cuts.
TEST_F(VcpuTest, ASerializingInstructionInALoopIsChargedEveryTurn) {
  boot32({
      0xb9, 0x05, 0x00, 0x00, 0x00,  // 1000: mov ecx, 5
      0x0f, 0x20, 0xc0,              // 1005: mov eax, cr0
      0x0f, 0x22, 0xc0,              // 1008: mov cr0, eax
      0x49,                          // 100b: dec ecx
      0x75, 0xf7,                    // 100c: jnz 1005
      0xf4,                          // 100e: hlt
  });
  for (int i = 0; i < 40 && cpu.run(3).reason != VcpuExit::Reason::Halt; ++i) {
  }
  ASSERT_EQ(host.system_instructions.size(), 5u);
  for (size_t turn = 0; turn < 5; ++turn)
    EXPECT_EQ(host.system_instructions[turn].second, 2 + 4 * turn) << "turn " << turn;
}

// Unicorn patch 0008: an IRET of an EFLAGS image with RF set leaves RF set
// for the next instruction, and a PUSHF there stores the image with RF (and
// VM) clear (SDM Vol. 2B PUSHF).
TEST_F(VcpuTest, PushfAfterAnIretWithRfStoresRfClear) {
  // In real mode after INIT-SIPI (kvm-unit-tests' realmode does this).
  load(0x8000, {
                   0xbc, 0x00, 0x70,                    // 8000: mov sp, 0x7000
                   0x66, 0x9c,                          // 8003: pushfd
                   0x66, 0x58,                          // 8005: pop eax
                   0x66, 0x0d, 0x00, 0x00, 0x01, 0x00,  // 8007: or eax, 0x10000 (RF)
                   0x66, 0x50,                          // 800d: push eax
                   0x66, 0x0e,                          // 800f: push cs (a dword)
                   0x66, 0x68, 0x1a, 0x00, 0x00, 0x00,  // 8011: push dword 0x1a
                   0x66, 0xcf,                          // 8017: iretd
                   0xf4,                                // 8019: hlt (not reached)
                   0x66, 0x9c,                          // 801a: pushfd
                   0x66, 0x5b,                          // 801c: pop ebx
                   0xf4,                                // 801e: hlt
               });
  boot32({0xf4});  // 1000: hlt
  run_expecting(VcpuExit::Reason::Halt);
  cpu.reset_for_init();
  cpu.start_at_sipi(0x08);
  EXPECT_EQ(run_expecting(VcpuExit::Reason::Halt).rip, 0x1fu);
  EXPECT_EQ(cpu.state().rbx & 0x30000, 0u) << std::hex << cpu.state().rbx;
  EXPECT_EQ(cpu.state().rbx & 0x2, 0x2u) << "the image is EFLAGS'";
}

// Unicorn patch 0012: SMSW to a 32-bit register outside 64-bit mode stores
// CR0[31:0], as processors and QEMU 7.2 do (kvm-unit-tests' realmode checks
// it with CR0.CD set); to a 16-bit register, the low 16 bits only.
TEST_F(VcpuTest, SmswToA32BitRegisterStoresAllOfCr0) {
  boot32({
      0x0f, 0x20, 0xc0,                    // 1000: mov eax, cr0
      0x89, 0xc3,                          // 1003: mov ebx, eax
      0x81, 0xcb, 0x00, 0x00, 0x00, 0x40,  // 1005: or ebx, 0x40000000 (CD)
      0x0f, 0x22, 0xc3,                    // 100b: mov cr0, ebx
      0xb8, 0x78, 0x56, 0x34, 0x12,        // 100e: mov eax, 0x12345678
      0x0f, 0x01, 0xe0,                    // 1013: smsw eax
      0xb9, 0x78, 0x56, 0x34, 0x12,        // 1016: mov ecx, 0x12345678
      0x66, 0x0f, 0x01, 0xe1,              // 101b: smsw cx
      0xf4,                                // 101f: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  const uint64_t cr0 = cpu.state().rbx;
  EXPECT_NE(cr0 & 0x40000000u, 0u);
  EXPECT_EQ(cpu.state().rax, cr0);
  EXPECT_EQ(cpu.state().rcx, 0x12340000u | (cr0 & 0xffff));
}

// Unicorn patch 0011: MOVAPS (and MOVAPD, MOVDQA, the non-temporal stores)
// of a memory operand off a 16-byte boundary is #GP(0) (SDM Vol. 2B); with
// no IDT, a triple fault at the instruction.
TEST_F(VcpuTest, MisalignedMovapsIsGeneralProtection) {
  boot64({
      0x0f, 0x20, 0xe0,                                // 2001: mov rax, cr4
      0x48, 0x0d, 0x00, 0x02, 0x00, 0x00,              // 2004: or rax, 0x200 (OSFXSR)
      0x0f, 0x22, 0xe0,                                // 200a: mov cr4, rax
      0x0f, 0x28, 0x04, 0x25, 0x08, 0x50, 0x00, 0x00,  // 200d: movaps xmm0, [0x5008]
      0xf4,                                            // 2015: hlt
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::TripleFault);
  EXPECT_EQ(exit.rip, 0x200du);
  EXPECT_NE(exit.detail.find("#GP"), std::string::npos) << exit.detail;
}

// Unicorn patch 0015: in 64-bit mode a null SS loads at CPL 0 only with
// RPL 0 (SDM Vol. 2B MOV); RPL 3 is #GP(0) (with no IDT, a triple fault).
TEST_F(VcpuTest, MovOfANullSsWithRplOtherThanCplIsGeneralProtection) {
  boot64({
      0x31, 0xc0,        // 2001: xor eax, eax
      0x8e, 0xd0,        // 2003: mov ss, ax (null, RPL 0: loads)
      0xb8, 0x03, 0x00, 0x00, 0x00,  // 2005: mov eax, 3
      0x8e, 0xd0,        // 200a: mov ss, ax (null, RPL 3)
      0xf4,              // 200c: hlt
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::TripleFault);
  EXPECT_EQ(exit.rip, 0x200au);
  EXPECT_NE(exit.detail.find("#GP(0x0)"), std::string::npos) << exit.detail;
}

// Unicorn patch 0016: a near JMP, CALL or RET to a non-canonical target is
// #GP(0) at the branch, before it pushes or pops (SDM Vol. 2A), not a
// fault at the target's fetch. With no IDT, a triple fault at the branch.
TEST_F(VcpuTest, ANonCanonicalNearBranchTargetIsGeneralProtectionAtTheBranch) {
  const std::vector<std::pair<std::vector<uint8_t>, uint64_t>> cases = {
      {{0xff, 0xe0}, 0},        // jmp rax
      {{0xff, 0xd0}, 0},        // call rax: nothing pushed
      {{0x50, 0xc3}, 1},        // push rax; ret: the RET faults with RSP unmoved
  };
  for (const auto& [branch, pre] : cases) {
    std::vector<uint8_t> code = {
        0x48, 0xb8, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa,  // 2001: mov rax, 0xaaaaaaaaaaaaaaaa
        0x48, 0xc7, 0xc4, 0x00, 0x80, 0x00, 0x00,                    // 200b: mov rsp, 0x8000
    };
    code.insert(code.end(), branch.begin(), branch.end());           // 2012: the branch (after any push)
    code.push_back(0xf4);
    boot64(code);
    const VcpuExit exit = run_expecting(VcpuExit::Reason::TripleFault);
    EXPECT_EQ(exit.rip, 0x2012u + pre) << "at the branch";
    EXPECT_NE(exit.detail.find("#GP(0x0)"), std::string::npos) << exit.detail;
    EXPECT_EQ(cpu.state().rsp, 0x8000u - 8 * pre) << "nothing pushed or popped";
  }
}

// ICEBP behind prefixes, which the engine raises #UD for, is the #DB trap a
// bare one is (SDM Vol. 2A INT1); with no IDT, a #DB that cannot be delivered.
TEST_F(VcpuTest, APrefixedIcebpIsADebugTrapNotInvalidOpcode) {
  boot64({0x2e, 0x2e, 0xf1, 0xf4});  // 2001: cs cs int1; 2004: hlt
  const VcpuExit exit = run_expecting(VcpuExit::Reason::TripleFault);
  EXPECT_NE(exit.detail.find("delivering INT1"), std::string::npos) << exit.detail;
  EXPECT_EQ(exit.detail.find("#UD"), std::string::npos) << exit.detail;
}

// DR7.GD (SDM Vol. 3B 18.2.4): with it set, a MOV to or from any debug
// register is a fault-like #DB before it runs (with no IDT, a triple fault
// at the MOV); without it they run.
TEST_F(VcpuTest, GeneralDetectMakesMovsToAndFromDebugRegistersFault) {
  const std::vector<std::vector<uint8_t>> moves = {
      {0x0f, 0x21, 0xc3},  // mov rbx, dr0
      {0x0f, 0x23, 0xf1},  // mov dr6, rcx
  };
  for (const std::vector<uint8_t>& move : moves) {
    std::vector<uint8_t> code = {
        0x48, 0xc7, 0xc0, 0x00, 0x20, 0x00, 0x00,  // 2001: mov rax, 0x2000 (GD)
        0x0f, 0x23, 0xf8,                          // 2008: mov dr7, rax
    };
    code.insert(code.end(), move.begin(), move.end());  // 200b
    code.push_back(0xf4);
    boot64(code);
    host.system_instructions.clear();
    const VcpuExit exit = run_expecting(VcpuExit::Reason::TripleFault);
    EXPECT_EQ(exit.rip, 0x200bu);
    EXPECT_NE(exit.detail.find("#DB"), std::string::npos) << exit.detail;
    EXPECT_NE(exit.detail.find("DR7.GD"), std::string::npos) << exit.detail;
    // The MOV to DR7 is charged, and so is a faulting MOV to DR6 (reached,
    // docs/cost_model.md); a MOV from a debug register is no serializing one.
    EXPECT_EQ(host.system_instructions.size(), move[1] == 0x23 ? 2u : 1u);
  }
}

TEST_F(VcpuTest, WithoutGeneralDetectDebugRegisterMovesRun) {
  boot64({
      0x48, 0xc7, 0xc0, 0x00, 0x04, 0x00, 0x00,  // 2001: mov rax, 0x400 (DR7's reset value)
      0x0f, 0x23, 0xf8,                          // 2008: mov dr7, rax
      0x0f, 0x21, 0xfb,                          // 200b: mov rbx, dr7
      0xf4,                                      // 200e: hlt
  });
  EXPECT_EQ(run_expecting(VcpuExit::Reason::Halt).rip, 0x200fu);
  EXPECT_EQ(cpu.state().rbx, 0x400u);
}

TEST_F(VcpuTest, AlignedMovapsAndMisalignedMovupsRun) {
  load(0x5010, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
  boot64({
      0x0f, 0x20, 0xe0,                                // 2001: mov rax, cr4
      0x48, 0x0d, 0x00, 0x02, 0x00, 0x00,              // 2004: or rax, 0x200 (OSFXSR)
      0x0f, 0x22, 0xe0,                                // 200a: mov cr4, rax
      0x0f, 0x28, 0x04, 0x25, 0x10, 0x50, 0x00, 0x00,  // 200d: movaps xmm0, [0x5010]
      0x0f, 0x10, 0x0c, 0x25, 0x08, 0x50, 0x00, 0x00,  // 2015: movups xmm1, [0x5008]
      0x0f, 0x29, 0x04, 0x25, 0x40, 0x50, 0x00, 0x00,  // 201d: movaps [0x5040], xmm0
      0xf4,                                            // 2025: hlt
  });
  EXPECT_EQ(run_expecting(VcpuExit::Reason::Halt).rip, 0x2026u);
  EXPECT_EQ(ram.read<uint64_t>(0x5040), 0x0807060504030201u);
  EXPECT_EQ(ram.read<uint64_t>(0x5048), 0x100f0e0d0c0b0a09u);
}

// LGDT [0x5000] in 64-bit mode with limit 0xff and base 0xTT00000000003000.
std::vector<uint8_t> lgdt_of_base_with_top_byte(uint8_t top_byte) {
  return {
      0x66, 0xc7, 0x04, 0x25, 0x00, 0x50, 0x00, 0x00, 0xff, 0x00,      // 2001: mov word [0x5000], 0xff
      0x48, 0xb8, 0x00, 0x30, 0x00, 0x00, 0x00, 0x00, 0x00, top_byte,  // 200b: mov rax, 0xTT00000000003000
      0x48, 0x89, 0x04, 0x25, 0x02, 0x50, 0x00, 0x00,                  // 2015: mov [0x5002], rax
      0x0f, 0x01, 0x14, 0x25, 0x00, 0x50, 0x00, 0x00,                  // 201d: lgdt [0x5000]
      0xf4,                                                            // 2025: hlt
  };
}

// Unicorn patch 0006: in 64-bit mode LGDT of a non-canonical base is #GP(0)
// at the instruction (with no IDT, a triple fault); a canonical one loads.
TEST_F(VcpuTest, LgdtOfANonCanonicalBaseIsGeneralProtection) {
  boot64(lgdt_of_base_with_top_byte(0xff));  // bits 63:48 are not bit 47's
  const VcpuExit exit = run_expecting(VcpuExit::Reason::TripleFault);
  EXPECT_EQ(exit.rip, 0x201du);
  EXPECT_NE(exit.detail.find("#GP"), std::string::npos) << exit.detail;
}

TEST_F(VcpuTest, LgdtOfACanonicalBaseLoads) {
  boot64(lgdt_of_base_with_top_byte(0x00));
  run_expecting(VcpuExit::Reason::Halt);
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

// --- request_stop and the stop trap ---------------------------------------

// Unicorn replays the rest of a block when uc_emu_stop is called from an
// OUT hook (the notes' "stop trap"); request_stop must not. Since Unicorn
// patch 0013 an OUT ends its block, so the stop comes right after it, as a
// KVM exit would (kvm-unit-tests' s3: nothing runs after the OUT that sleeps).
TEST_F(VcpuTest, RequestStopFromPortOutStopsRightAfterIt) {
  host.on_port_out = [&] { cpu.request_stop(); };
  boot32({
      0x43,              // 1000: inc ebx
      0xe6, 0x80,        // 1001: out 0x80, al
      0x43,              // 1003: inc ebx
      0x66, 0xba, 0x80, 0x00,  // 1004: mov dx, 0x80
      0xee,              // 1008: out dx, al
      0x43,              // 1009: inc ebx
      0xf4,              // 100a: hlt
  });
  VcpuExit exit = run_expecting(VcpuExit::Reason::StopRequested);
  EXPECT_EQ(exit.rip, 0x1003u);
  EXPECT_EQ(cpu.state().rbx, kMultibootInfo + 1);
  EXPECT_EQ(cpu.instructions(), 2u);
  exit = run_expecting(VcpuExit::Reason::StopRequested);
  EXPECT_EQ(exit.rip, 0x1009u) << "OUT DX too";
  EXPECT_EQ(cpu.state().rbx, kMultibootInfo + 2);
  EXPECT_EQ(cpu.instructions(), 5u);
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rbx, kMultibootInfo + 3);
  EXPECT_EQ(host.port_writes.size(), 2u);
  EXPECT_EQ(cpu.instructions(), 7u);
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

}  // namespace
}  // namespace topolab
