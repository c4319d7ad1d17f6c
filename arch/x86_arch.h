// SPDX-License-Identifier: GPL-2.0-or-later
// The x86 architectural vocabulary the pure CPU rules share: exception
// vectors, a fault as the CPU raises it, and guest memory as the CPU itself
// reaches it on the guest's behalf (through the guest's paging). No engine
// here: the page walker, the event-delivery rules and the vCPU all speak it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace topolab::x86 {

// Exception and interrupt vectors (SDM Vol. 3A 6.3.1, table 6-1).
enum Vector : uint8_t {
  kDivideError = 0,          // #DE
  kDebug = 1,                // #DB
  kNmi = 2,
  kBreakpoint = 3,           // #BP
  kOverflow = 4,             // #OF
  kBoundRange = 5,           // #BR
  kInvalidOpcode = 6,        // #UD
  kDeviceNotAvailable = 7,   // #NM
  kDoubleFault = 8,          // #DF
  kInvalidTss = 10,          // #TS
  kSegmentNotPresent = 11,   // #NP
  kStackFault = 12,          // #SS
  kGeneralProtection = 13,   // #GP
  kPageFault = 14,           // #PF
  kFpuError = 16,            // #MF
  kAlignmentCheck = 17,      // #AC
  kMachineCheck = 18,        // #MC
  kSimdError = 19,           // #XM
  kVirtualization = 20,      // #VE
  kControlProtection = 21,   // #CP
};

// --- Control registers and IA32_EFER (SDM Vol. 3A 2.5, 2.2.1) ---
constexpr uint64_t kCr0Pe = uint64_t{1} << 0;       // CR0.PE: protected mode
constexpr uint64_t kCr0Wp = uint64_t{1} << 16;      // CR0.WP: write protect (supervisor writes honour R/W)
constexpr uint64_t kCr0Pg = uint64_t{1} << 31;      // CR0.PG: paging
constexpr uint64_t kCr4Pse = uint64_t{1} << 4;      // CR4.PSE: 4-MByte pages in 32-bit paging
constexpr uint64_t kCr4Pae = uint64_t{1} << 5;      // CR4.PAE: 64-bit paging-structure entries
constexpr uint64_t kCr4Pge = uint64_t{1} << 7;      // CR4.PGE: global pages
constexpr uint64_t kCr4Pce = uint64_t{1} << 8;      // CR4.PCE: RDPMC allowed at any privilege level
constexpr uint64_t kCr4La57 = uint64_t{1} << 12;    // CR4.LA57: 5-level paging
constexpr uint64_t kCr4Pcide = uint64_t{1} << 17;  // CR4.PCIDE: process-context identifiers
constexpr uint64_t kCr4Smep = uint64_t{1} << 20;    // CR4.SMEP: supervisor-mode execution prevention
constexpr uint64_t kCr4Smap = uint64_t{1} << 21;    // CR4.SMAP: supervisor-mode access prevention
constexpr uint64_t kCr4Pke = uint64_t{1} << 22;     // CR4.PKE: protection keys for user-mode pages

// The CR4 bits a MOV to CR4 may set on a CPU with these CPUID feature words
// (SDM Vol. 3A 2.5 and 2.6.2.1: setting any other raises #GP(0)). PKS (24)
// needs CPUID.07H:ECX[31], CET (23) ECX[7].
constexpr uint64_t cr4_settable_bits(uint32_t leaf1_ecx, uint32_t leaf1_edx, uint32_t leaf7_ebx, uint32_t leaf7_ecx) {
  auto bit = [](uint32_t word, unsigned b) { return (word >> b) & 1; };
  uint64_t ok = (uint64_t{1} << 2) | (uint64_t{1} << 3) | (uint64_t{1} << 8);  // TSD, DE, PCE
  auto allow = [&](bool has, unsigned cr4_bit) {
    if (has) ok |= uint64_t{1} << cr4_bit;
  };
  allow(bit(leaf1_edx, 1), 0);    // VME
  allow(bit(leaf1_edx, 1), 1);    // PVI
  allow(bit(leaf1_edx, 3), 4);    // PSE
  allow(bit(leaf1_edx, 6), 5);    // PAE
  allow(bit(leaf1_edx, 7), 6);    // MCE
  allow(bit(leaf1_edx, 13), 7);   // PGE
  allow(bit(leaf1_edx, 24), 9);   // OSFXSR
  allow(bit(leaf1_edx, 25), 10);  // OSXMMEXCPT
  allow(bit(leaf7_ecx, 2), 11);   // UMIP
  allow(bit(leaf7_ecx, 16), 12);  // LA57
  allow(bit(leaf1_ecx, 5), 13);   // VMXE
  allow(bit(leaf1_ecx, 6), 14);   // SMXE
  allow(bit(leaf7_ebx, 0), 16);   // FSGSBASE
  allow(bit(leaf1_ecx, 17), 17);  // PCIDE
  allow(bit(leaf1_ecx, 26), 18);  // OSXSAVE
  allow(bit(leaf7_ebx, 7), 20);   // SMEP
  allow(bit(leaf7_ebx, 20), 21);  // SMAP
  allow(bit(leaf7_ecx, 3), 22);   // PKE
  allow(bit(leaf7_ecx, 7), 23);   // CET
  allow(bit(leaf7_ecx, 31), 24);  // PKS
  return ok;
}
constexpr uint64_t kEferSce = uint64_t{1} << 0;     // IA32_EFER.SCE: SYSCALL enable
constexpr uint64_t kEferLme = uint64_t{1} << 8;     // IA32_EFER.LME: long mode enable
constexpr uint64_t kEferLma = uint64_t{1} << 10;    // IA32_EFER.LMA: long mode active
constexpr uint64_t kEferNxe = uint64_t{1} << 11;    // IA32_EFER.NXE: execute-disable (XD) bit enable

constexpr uint64_t kEferSvme = uint64_t{1} << 12;    // EFER.SVME: secure virtual machine enable (AMD)
constexpr uint64_t kEferLmsle = uint64_t{1} << 13;   // EFER.LMSLE: long mode segment limit enable (old AMD)
constexpr uint64_t kEferFfxsr = uint64_t{1} << 14;   // EFER.FFXSR: fast FXSAVE/FXRSTOR (AMD)
constexpr uint64_t kEferTce = uint64_t{1} << 15;     // EFER.TCE: translation cache extension (AMD)

// --- MSR numbers: SDM Vol. 4 table 2-2 ("IA-32 Architectural MSRs"), AMD
// APM Vol. 2 appendix A for the AMD ones. The local APIC's (IA32_APIC_BASE,
// IA32_TSC_DEADLINE, x2APIC) are in devices/local_apic.h. docs/msrs.md says
// which exist when and how each behaves. ---
// Kept by the machine (model/msr_file.h):
constexpr uint32_t kMsrTsc = 0x10;
constexpr uint32_t kMsrTscAdjust = 0x3B;
constexpr uint32_t kMsrSpecCtrl = 0x48;
constexpr uint32_t kMsrPredCmd = 0x49;
constexpr uint32_t kMsrBiosSignId = 0x8B;             // IA32_BIOS_SIGN_ID: the microcode revision in [63:32]
constexpr uint32_t kMsrPmc0 = 0xC1;                   // IA32_PMCi = 0xC1 + i
constexpr uint32_t kMsrMtrrCap = 0xFE;
constexpr uint32_t kMsrArchCapabilities = 0x10A;
constexpr uint32_t kMsrMcgCap = 0x179;
constexpr uint32_t kMsrMcgStatus = 0x17A;
constexpr uint32_t kMsrMcgCtl = 0x17B;
constexpr uint32_t kMsrPerfEvtSel0 = 0x186;           // IA32_PERFEVTSELi = 0x186 + i
constexpr uint32_t kMsrMiscEnable = 0x1A0;
constexpr uint32_t kMsrDebugCtl = 0x1D9;
constexpr uint32_t kMsrMtrrPhysBase0 = 0x200;         // PHYSBASEn = 0x200 + 2n, PHYSMASKn = 0x201 + 2n
constexpr uint32_t kMsrMtrrFix64k00000 = 0x250;
constexpr uint32_t kMsrMtrrFix16k80000 = 0x258;
constexpr uint32_t kMsrMtrrFix16kA0000 = 0x259;
constexpr uint32_t kMsrMtrrFix4kC0000 = 0x268;        // 0x268..0x26F: C0000 .. F8000
constexpr uint32_t kMsrMtrrDefType = 0x2FF;
constexpr uint32_t kMsrFixedCtr0 = 0x309;             // IA32_FIXED_CTRi = 0x309 + i
constexpr uint32_t kMsrPerfCapabilities = 0x345;
constexpr uint32_t kMsrFixedCtrCtrl = 0x38D;
constexpr uint32_t kMsrPerfGlobalStatus = 0x38E;
constexpr uint32_t kMsrPerfGlobalCtrl = 0x38F;
constexpr uint32_t kMsrPerfGlobalOvfCtrl = 0x390;
constexpr uint32_t kMsrMc0Ctl = 0x400;                // MCi_CTL/STATUS/ADDR/MISC = 0x400 + 4i + 0/1/2/3
constexpr uint32_t kMsrTscAux = 0xC000'0103;
constexpr uint32_t kMsrK7PerfCtl0 = 0xC001'0000;      // AMD PERF_CTL0..3 (K7 legacy)
constexpr uint32_t kMsrK7PerfCtr0 = 0xC001'0004;      // AMD PERF_CTR0..3 (K7 legacy)
constexpr uint32_t kMsrAmdSyscfg = 0xC001'0010;       // AMD SYSCFG
constexpr uint32_t kMsrAmdNbCfg = 0xC001'001F;        // AMD NB_CFG
constexpr uint32_t kMsrAmdIntPendingMsg = 0xC001'0055; // AMD K8 interrupt pending message (C1E)
constexpr uint32_t kMsrVmHsavePa = 0xC001'0117;       // AMD VM_HSAVE_PA (SVM)
constexpr uint32_t kMsrF15hPerfCtl0 = 0xC001'0200;    // AMD core PERF_CTLn = +2n, PERF_CTRn = +2n + 1
// IA32_MISC_ENABLE bits (SDM Vol. 4 table 2-2).
constexpr uint64_t kMiscEnableFastStrings = uint64_t{1} << 0;
constexpr uint64_t kMiscEnableTcc = uint64_t{1} << 3;             // automatic thermal control circuit
constexpr uint64_t kMiscEnablePerfMon = uint64_t{1} << 7;         // performance monitoring available (RO)
constexpr uint64_t kMiscEnableBtsUnavailable = uint64_t{1} << 11;  // RO
constexpr uint64_t kMiscEnablePebsUnavailable = uint64_t{1} << 12; // RO
constexpr uint64_t kMiscEnableEist = uint64_t{1} << 16;           // Enhanced Intel SpeedStep
constexpr uint64_t kMiscEnableMonitor = uint64_t{1} << 18;        // MONITOR/MWAIT enabled
constexpr uint64_t kMiscEnableLimitCpuid = uint64_t{1} << 22;     // limit CPUID maxval to 2
constexpr uint64_t kMiscEnableXtprDisable = uint64_t{1} << 23;
constexpr uint64_t kMiscEnableXdDisable = uint64_t{1} << 34;

// Kept in the engine (the vCPU hands them to Unicorn):
constexpr uint32_t kMsrSysenterCs = 0x174;
constexpr uint32_t kMsrSysenterEsp = 0x175;
constexpr uint32_t kMsrSysenterEip = 0x176;
constexpr uint32_t kMsrPat = 0x277;
constexpr uint32_t kMsrEfer = 0xC000'0080;
constexpr uint32_t kMsrStar = 0xC000'0081;
constexpr uint32_t kMsrLstar = 0xC000'0082;
constexpr uint32_t kMsrCstar = 0xC000'0083;
constexpr uint32_t kMsrFmask = 0xC000'0084;
constexpr uint32_t kMsrFsBase = 0xC000'0100;
constexpr uint32_t kMsrGsBase = 0xC000'0101;
constexpr uint32_t kMsrKernelGsBase = 0xC000'0102;

// --- EFLAGS bits (SDM Vol. 1 3.4.3, figure 3-8) ---
constexpr uint64_t kFlagCf = 1u << 0;
constexpr uint64_t kFlagReserved1 = 1u << 1;  // always 1
constexpr uint64_t kFlagPf = 1u << 2;
constexpr uint64_t kFlagAf = 1u << 4;
constexpr uint64_t kFlagZf = 1u << 6;
constexpr uint64_t kFlagSf = 1u << 7;
constexpr uint64_t kFlagTf = 1u << 8;
constexpr uint64_t kFlagIf = 1u << 9;
constexpr uint64_t kFlagDf = 1u << 10;
constexpr uint64_t kFlagOf = 1u << 11;
constexpr uint64_t kFlagIopl = 3u << 12;
constexpr uint64_t kFlagNt = 1u << 14;
constexpr uint64_t kFlagRf = 1u << 16;
constexpr uint64_t kFlagVm = 1u << 17;
constexpr uint64_t kFlagAc = 1u << 18;  // also the SMAP override (SDM Vol. 3A 4.6.1)
constexpr uint64_t kFlagId = 1u << 21;

// --- Paging-structure entry bits, common to every paging mode where they
// exist (SDM Vol. 3A 4.3 tables 4-4..4-6, 4.4.2 tables 4-8..4-11, 4.5.4
// tables 4-15..4-20) ---
constexpr uint64_t kPteP = uint64_t{1} << 0;        // present
constexpr uint64_t kPteRw = uint64_t{1} << 1;       // read/write: 0 = writes may not be allowed
constexpr uint64_t kPteUs = uint64_t{1} << 2;       // user/supervisor: 0 = user-mode accesses not allowed
constexpr uint64_t kPteA = uint64_t{1} << 5;        // accessed
constexpr uint64_t kPteD = uint64_t{1} << 6;        // dirty (entries that map a page)
constexpr uint64_t kPtePs = uint64_t{1} << 7;       // page size: the entry maps a large page
constexpr uint64_t kPteXd = uint64_t{1} << 63;      // execute-disable (PAE and 4/5-level, with EFER.NXE)
constexpr unsigned kPtePkShift = 59;                // bits 62:59: protection key (4/5-level leaf entries)

// --- #PF error code (SDM Vol. 3A 4.7, figure 4-12) ---
constexpr uint32_t kPfErrorP = 1u << 0;             // 0: not-present page; 1: protection violation (or RSVD)
constexpr uint32_t kPfErrorWr = 1u << 1;            // the access was a write
constexpr uint32_t kPfErrorUs = 1u << 2;            // the access was a user-mode access
constexpr uint32_t kPfErrorRsvd = 1u << 3;          // a reserved bit was set in a paging-structure entry
constexpr uint32_t kPfErrorId = 1u << 4;            // instruction fetch (with SMEP, or PAE paging and NXE)
constexpr uint32_t kPfErrorPk = 1u << 5;            // protection-key violation

// An exception as the CPU raises it: the vector, the error code it pushes
// (none for the vectors that push none), and for #PF the linear address
// that goes to CR2.
struct Fault {
  uint8_t vector = 0;
  std::optional<uint32_t> error_code;
  uint64_t cr2 = 0;  // #PF only
  friend bool operator==(const Fault&, const Fault&) = default;
};

// Who makes an access, for the page walker's permission checks (SDM Vol. 3A
// 4.6): `cpl` is the current privilege level; an implicit supervisor access
// (GDT/LDT/IDT/TSS reads, and the stack frame of an event delivered to a
// ring-0 handler) is a supervisor access whatever the CPL.
struct Accessor {
  unsigned cpl = 0;
  bool implicit_supervisor = false;
  bool stack = false;  // an SS-relative access: non-canonical gives #SS(0), not #GP(0)
};

// Guest linear memory as the CPU sees it under its current paging mode. A
// failed access returns the fault the CPU would raise (#PF with its error
// code and CR2, or #GP(0)/#SS(0) for a non-canonical address) and writes
// nothing; a successful walk sets accessed and dirty bits as hardware does.
class LinearMemory {
 public:
  virtual ~LinearMemory() = default;
  virtual std::optional<Fault> read(uint64_t linear, void* out, size_t len, Accessor who) = 0;
  virtual std::optional<Fault> write(uint64_t linear, const void* in, size_t len, Accessor who) = 0;
};

}  // namespace topolab::x86
