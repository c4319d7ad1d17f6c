// One vCPU on one Unicorn 2.0.1 engine. Every workaround here rests on a
// behaviour recorded in ../shared/UNICORN_NOTES.md ("the notes") and is
// proven by a test in vcpu_test.cc.
//
// Addresses
//   Hooks get linear addresses (CS.base + RIP; proven in real mode by
//   StartAtSipiRunsRealModeCodeAtVectorTimes4K), while RIP and uc_emu_start's `begin`
//   are offsets in CS (a UC_MODE_64 engine writes `begin` to RIP as is).
//   Decoded blocks, trap sites and the trace use linear addresses; RIP is
//   converted with code_base() at every stop.
//
// How run() works
// - uc_emu_start gets an `until` address no guest can execute and never a
//   `count` (it runs ~7x slower and flushes all code when it changes). So
//   Unicorn returns OK only when we stopped it, or at HLT.
// - A UC_HOOK_BLOCK callback counts instructions: each new translated block
//   is decoded once with Capstone and cached by start address. The hook
//   stops the run, exactly, before a block that would overrun the budget.
// - IN/OUT and CPUID reach VcpuHost from Unicorn's instruction hooks.
//   RDMSR, WRMSR, RDTSC and RDTSCP, which Unicorn cannot hook (and would
//   run wrongly), get a one-instruction UC_HOOK_CODE that stops the run in
//   front of them; run() then emulates them on the host side and resumes.
//
// Counting
//   instructions() = instructions retired before the one executing now.
//   `retired` holds the count up to the start of the current block and
//   `pending` the current block's size in instructions; the next block hook
//   adds it. An exit in the middle of a block adds only the instructions
//   before RIP, found in the block's decoded offsets.
//
// MONITOR/MWAIT
//   Unicorn raises #UD for both (the notes), so run() returns Reason::Monitor
//   or Reason::Mwait at the instruction with its operands; the machine
//   emulates it and retire_emulated_instruction() steps over it. An MWAIT
//   that is the first instruction after STI keeps the STI shadow until then,
//   so `sti; mwait` cannot take an interrupt before MWAIT has begun.
// PAUSE
//   Each PAUSE site gets a one-instruction code hook that counts it and lets
//   it run (as IRET sites are watched): spin loops pay for the count, the
//   block hook's fast path does not (counting there cost 20% with 16 vCPUs).
//
// Not supported
// - CS.base is not exposed by Unicorn; code_base() derives it from the
//   architectural state (see there). It is exact in real mode, in long mode
//   and for a CS whose GDT/LDT entry is unchanged since it was loaded, and
//   right after CR0.PE is set (CS still holds its real-mode descriptor).
// - A maskable interrupt's shadow after STI / MOV SS / POP SS is tracked at
//   block granularity: Unicorn ends a block right after each of them.
// - Interrupt delivery: see Vcpu::inject_interrupt in vcpu.h. NMI blocking
//   until IRET is the machine's business (the vCPU does not see IRETs).
// - A read or write of unmapped memory is reported at the start of its block
//   (Unicorn 2.0.1 does not restore RIP for it; see exit_for_unmapped).
// - Guest code rewritten in place into a block with the same start and size
//   keeps the old decoded instruction count until flush_translations().
// - A store into the block that is running: Unicorn abandons the block at
//   the store and runs it again from there, so the instructions of the block
//   from the store on are counted twice (and traced twice).
#include "emu/vcpu.h"

#include <capstone/capstone.h>
#include <fmt/format.h>
#include <unicorn/unicorn.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <limits>
#include <span>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

namespace topolab {
namespace {

// uc_emu_start's `until`: non-canonical in long mode and above 4 GiB in
// every other mode, so no guest instruction is ever there.
constexpr uint64_t kNeverExecuted = 0x8000'0000'0000'0000;
constexpr uint64_t kNoAddress = ~uint64_t{0};
constexpr uint64_t kPageSize = 4096;

// SDM Vol. 3A 2.5 (CR0) and Vol. 4 (MSR numbers).
constexpr uint64_t kCr0ProtectionEnable = 1u << 0;
constexpr uint64_t kCr0Paging = 1u << 31;
constexpr uint64_t kEferLongModeActive = 1u << 10;
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
constexpr uint32_t kMsrTscAux = 0xC000'0103;

constexpr uint8_t kHltOpcode = 0xF4;
constexpr uint64_t kIdleInstructionLength = 3;  // MONITOR, MWAIT
constexpr uint32_t kPageFaultVector = 14;
constexpr uint32_t kNmiVector = 2;
// EFLAGS bit 1 is reserved and always 1 (SDM Vol. 1 3.4.3); IF = 0.
constexpr uint64_t kRflagsInterruptsOff = 0x2;
// EFLAGS bits (SDM Vol. 1 3.4.3).
constexpr uint64_t kRflagsTrap = 1u << 8;
constexpr uint64_t kRflagsInterrupt = 1u << 9;
constexpr uint64_t kRflagsNestedTask = 1u << 14;
constexpr uint64_t kRflagsResume = 1u << 16;
constexpr uint64_t kRflagsVirtual8086 = 1u << 17;
constexpr uint64_t kRflagsAlignmentCheck = 1u << 18;

// State after INIT (SDM Vol. 3A 9.1.1, table 9-1).
constexpr uint64_t kCr0AfterInit = 0x6000'0010;  // CD, NW, ET
constexpr uint16_t kResetCodeSelector = 0xF000;
constexpr uint64_t kResetIp = 0xFFF0;
constexpr uint32_t kDescriptorTableLimitAfterInit = 0xFFFF;
constexpr uint64_t kDr6AfterInit = 0xFFFF'0FF0;
constexpr uint64_t kDr7AfterInit = 0x400;

// Gate types (SDM Vol. 3A 3.5 table 3-2, 6.11, 6.14.1).
constexpr uint8_t kTaskGate = 0x5;
constexpr uint8_t kInterruptGate16 = 0x6;
constexpr uint8_t kTrapGate16 = 0x7;
constexpr uint8_t kInterruptGate = 0xE;  // 32-bit, or 64-bit in long mode
constexpr uint8_t kTrapGate = 0xF;
// 64-bit TSS: IST1 at 0x24, IST2..7 follow (SDM Vol. 3A 7.7, figure 7-11).
constexpr uint64_t kTssIst1Offset = 0x24;

// Flat 4 GiB descriptors, base 0, G = 1, DPL 0 (SDM Vol. 3A 3.4.5): a 32-bit
// (D = 1) execute/read code segment and a read/write data segment.
constexpr uint64_t kFlatCode32Descriptor = 0x00CF'9A00'0000'FFFF;
constexpr uint64_t kFlatDataDescriptor = 0x00CF'9200'0000'FFFF;
constexpr uint16_t kMultibootCodeSelector = 0x08;
constexpr uint16_t kMultibootDataSelector = 0x10;

void check(uc_err err, const char* what) {
  if (err != UC_ERR_OK) throw std::runtime_error(fmt::format("unicorn: {}: {}", what, uc_strerror(err)));
}

// MSRs that are CPU state Unicorn keeps (mode, segment bases, SYSCALL and
// SYSENTER targets, PAT). Every RDMSR and WRMSR is trapped, so these are
// handed to Unicorn, with no host call, as KVM passes them through; without
// it no guest could set EFER.LME and enter long mode.
bool is_cpu_state_msr(uint32_t msr) {
  switch (msr) {
    case kMsrSysenterCs: case kMsrSysenterEsp: case kMsrSysenterEip: case kMsrPat:
    case kMsrEfer: case kMsrStar: case kMsrLstar: case kMsrCstar: case kMsrFmask:
    case kMsrFsBase: case kMsrGsBase: case kMsrKernelGsBase:
      return true;
    default:
      return false;
  }
}

const char* exception_name(uint32_t vector) {
  static constexpr std::array<const char*, 22> kNames = {
      "#DE", "#DB", "NMI", "#BP", "#OF", "#BR", "#UD", "#NM", "#DF", "coprocessor overrun", "#TS",
      "#NP", "#SS", "#GP", "#PF", "reserved", "#MF", "#AC", "#MC", "#XM", "#VE", "#CP"};
  return vector < kNames.size() ? kNames[vector] : "interrupt";
}

// The default operand and address size of the code being run, which is what
// Capstone needs to decode it (CS.D and CS.L, SDM Vol. 3A 3.4.5).
enum class CodeSize : uint8_t { Bits16, Bits32, Bits64 };
constexpr std::array kCodeSizes = {CodeSize::Bits16, CodeSize::Bits32, CodeSize::Bits64};

cs_mode capstone_mode(CodeSize size) {
  switch (size) {
    case CodeSize::Bits16: return CS_MODE_16;
    case CodeSize::Bits32: return CS_MODE_32;
    case CodeSize::Bits64: return CS_MODE_64;
  }
  throw std::logic_error("unknown code size");
}

// Instructions Unicorn would run wrongly; run() emulates them instead.
// Sites the vCPU hooks: the first four it stops at and emulates; IRET and
// PAUSE it only watches: an IRET ends NMI blocking (SDM 6.7.1), and PAUSEs
// are counted.
enum class TrapKind : uint8_t { Rdmsr, Wrmsr, Rdtsc, Rdtscp, Iret, Pause };

bool is_watched(TrapKind kind) { return kind == TrapKind::Iret || kind == TrapKind::Pause; }

std::optional<TrapKind> trap_kind(unsigned capstone_id) {
  switch (capstone_id) {
    case X86_INS_RDMSR: return TrapKind::Rdmsr;
    case X86_INS_WRMSR: return TrapKind::Wrmsr;
    case X86_INS_RDTSC: return TrapKind::Rdtsc;
    case X86_INS_RDTSCP: return TrapKind::Rdtscp;
    case X86_INS_IRET: case X86_INS_IRETD: case X86_INS_IRETQ: return TrapKind::Iret;
    case X86_INS_PAUSE: return TrapKind::Pause;
    default: return std::nullopt;
  }
}

// The opcode bytes each trapped instruction ends with (SDM Vol. 2).
std::span<const uint8_t> trap_opcode(TrapKind kind) {
  static constexpr uint8_t kRdmsr[] = {0x0F, 0x32}, kWrmsr[] = {0x0F, 0x30}, kRdtsc[] = {0x0F, 0x31},
                           kRdtscp[] = {0x0F, 0x01, 0xF9};
  switch (kind) {
    case TrapKind::Rdmsr: return kRdmsr;
    case TrapKind::Wrmsr: return kWrmsr;
    case TrapKind::Rdtsc: return kRdtsc;
    case TrapKind::Rdtscp: return kRdtscp;
    case TrapKind::Iret: case TrapKind::Pause: break;  // watched, never stopped at
  }
  throw std::logic_error("no emulated opcode for this trap kind");
}

// Instructions whose Unicorn hook calls VcpuHost in the middle of a block.
bool calls_host_mid_block(unsigned capstone_id) {
  switch (capstone_id) {
    case X86_INS_IN: case X86_INS_INSB: case X86_INS_INSW: case X86_INS_INSD:
    case X86_INS_OUT: case X86_INS_OUTSB: case X86_INS_OUTSW: case X86_INS_OUTSD:
    case X86_INS_CPUID:
      return true;
    default:
      return false;
  }
}

// A segment descriptor (SDM Vol. 3A 3.4.5, figure 3-8).
struct SegmentDescriptor {
  uint64_t raw = 0;
  uint64_t base() const { return ((raw >> 16) & 0xFF'FFFF) | ((raw >> 56) << 24); }
  uint8_t type() const { return (raw >> 40) & 0xF; }
  bool code_or_data() const { return (raw >> 44) & 1; }  // S
  unsigned dpl() const { return (raw >> 45) & 3; }
  bool present() const { return (raw >> 47) & 1; }
  bool long_mode() const { return (raw >> 53) & 1; }  // L
  bool big() const { return (raw >> 54) & 1; }        // D/B
  bool is_code() const { return present() && code_or_data() && (type() & 0x8); }
  // The same segment, whatever the accessed bit says.
  bool same_segment_as(const SegmentDescriptor& other) const {
    constexpr uint64_t kAccessed = uint64_t{1} << 40;
    return (raw | kAccessed) == (other.raw | kAccessed);
  }
};

// Legacy prefixes, and REX in 64-bit code (SDM Vol. 2 2.1.1, 2.2.1).
bool is_prefix(uint8_t b, CodeSize size) {
  return b == 0xF2 || b == 0xF3 || b == 0x66 || b == 0x67 || b == 0xF0 || b == 0x2E || b == 0x36 || b == 0x3E ||
         b == 0x26 || b == 0x64 || b == 0x65 || (size == CodeSize::Bits64 && (b & 0xF0) == 0x40);
}

// STI, MOV SS and POP SS hold off maskable interrupts for one instruction
// (SDM Vol. 3A 6.8.3). Unicorn ends a block after each of them
// (StiShadowDefersTheInterruptPastTheHlt, MovSsEndsItsBlockAndShadowsThe-
// NextInstruction), so a block that ends with one leaves the first
// instruction of the next block in the shadow; that instruction is then
// translated as a block of its own.
bool sets_interrupt_shadow(std::span<const uint8_t> bytes, CodeSize size) {
  size_t i = 0;
  while (i < bytes.size() && is_prefix(bytes[i], size)) ++i;
  if (i >= bytes.size()) return false;
  const uint8_t op = bytes[i];
  if (op == 0xFB) return true;                           // sti
  if (op == 0x17 && size != CodeSize::Bits64) return true;  // pop ss
  return op == 0x8E && i + 1 < bytes.size() && ((bytes[i + 1] >> 3) & 7) == 2;  // mov ss, r/m16
}

bool is_software_interrupt(unsigned capstone_id) {
  return capstone_id == X86_INS_INT3 || capstone_id == X86_INS_INT || capstone_id == X86_INS_INTO ||
         capstone_id == X86_INS_INT1;
}

// REP/REPE/REPNE in front of INS, OUTS, MOVS, CMPS, STOS, LODS or SCAS
// (SDM Vol. 2 "REP/REPE/REPZ/REPNE/REPNZ"). Capstone without detail mode
// does not report prefixes, so the bytes are read directly.
bool is_rep_string(std::span<const uint8_t> bytes, CodeSize size) {
  bool rep = false;
  size_t i = 0;
  for (; i < bytes.size(); ++i) {
    const uint8_t b = bytes[i];
    if (b == 0xF2 || b == 0xF3) {
      rep = true;
    } else if (!(b == 0x66 || b == 0x67 || b == 0xF0 || b == 0x2E || b == 0x36 || b == 0x3E || b == 0x26 ||
                 b == 0x64 || b == 0x65 || (size == CodeSize::Bits64 && (b & 0xF0) == 0x40))) {
      break;
    }
  }
  if (!rep || i == bytes.size()) return false;
  const uint8_t op = bytes[i];
  return (op >= 0x6C && op <= 0x6F) || (op >= 0xA4 && op <= 0xA7) || (op >= 0xAA && op <= 0xAF);
}

struct TrapSite {
  uint64_t address;
  TrapKind kind;
  uint8_t length;
};

// One translated block as Capstone sees it.
struct DecodedBlock {
  uint64_t start = 0;
  uint32_t size = 0;
  uint32_t count = 0;  // instructions retired when the block runs to its end
  CodeSize code_size = CodeSize::Bits32;
  bool fully_decoded = true;  // false: Capstone stopped early; the rest counts as one
  bool ends_with_software_interrupt = false;
  bool ends_with_interrupt_shadow = false;  // last instruction: STI, MOV SS or POP SS
  uint64_t rep_string_tail = kNoAddress;  // address of a final REP string instruction
  std::vector<uint16_t> offsets;          // instruction starts, from `start`
  std::vector<uint16_t> host_calls;       // indices of IN/OUT/INS/OUTS/CPUID, in order
  std::vector<TrapSite> traps;

  // Instructions of this block retired when execution stands at `rip`. A
  // `rip` outside the block means the block ran to its end and left.
  uint32_t instructions_before(uint64_t rip) const {
    if (rip < start || rip - start >= size) return count;
    const auto offset = static_cast<uint16_t>(rip - start);
    return static_cast<uint32_t>(std::lower_bound(offsets.begin(), offsets.end(), offset) - offsets.begin());
  }
  uint64_t address_of(uint32_t index) const { return start + offsets.at(index); }
  uint64_t end() const { return start + size; }
};

// Capstone, with one handle per code size.
class Disassembler {
 public:
  Disassembler() {
    for (CodeSize size : kCodeSizes) {
      Handle& h = handle(size);
      if (cs_open(CS_ARCH_X86, capstone_mode(size), &h.cs) != CS_ERR_OK)
        throw std::runtime_error("capstone: cannot open an x86 disassembler");
      h.insn = cs_malloc(h.cs);
    }
  }
  ~Disassembler() {
    for (Handle& h : handles_) {
      if (h.insn) cs_free(h.insn, 1);
      if (h.cs) cs_close(&h.cs);
    }
  }
  Disassembler(const Disassembler&) = delete;
  Disassembler& operator=(const Disassembler&) = delete;

  DecodedBlock decode_block(std::span<const uint8_t> code, uint64_t address, CodeSize size) {
    DecodedBlock block;
    block.start = address;
    block.size = static_cast<uint32_t>(code.size());
    block.code_size = size;
    Handle& h = handle(size);
    const uint8_t* bytes = code.data();
    size_t left = code.size();
    uint64_t at = address;
    while (left > 0) {
      const uint64_t insn_address = at;
      if (!cs_disasm_iter(h.cs, &bytes, &left, &at, h.insn)) {
        block.fully_decoded = false;
        block.offsets.push_back(static_cast<uint16_t>(insn_address - address));
        block.ends_with_software_interrupt = false;
        block.ends_with_interrupt_shadow = false;
        block.rep_string_tail = kNoAddress;
        break;
      }
      add_instruction(block, *h.insn, code.subspan(insn_address - address, h.insn->size));
    }
    block.count = static_cast<uint32_t>(block.offsets.size());
    return block;
  }

  // "mnemonic operands" of the instruction at the start of `code`.
  std::string describe(std::span<const uint8_t> code, uint64_t address, CodeSize size) {
    Handle& h = handle(size);
    const uint8_t* bytes = code.data();
    size_t left = code.size();
    if (!cs_disasm_iter(h.cs, &bytes, &left, &address, h.insn)) return "(does not decode)";
    return h.insn->op_str[0] ? fmt::format("{} {}", h.insn->mnemonic, h.insn->op_str) : h.insn->mnemonic;
  }

 private:
  struct Handle {
    csh cs = 0;
    cs_insn* insn = nullptr;
  };
  Handle& handle(CodeSize size) { return handles_[static_cast<size_t>(size)]; }

  static void add_instruction(DecodedBlock& block, const cs_insn& insn, std::span<const uint8_t> bytes) {
    const auto index = static_cast<uint16_t>(block.offsets.size());
    block.offsets.push_back(static_cast<uint16_t>(insn.address - block.start));
    if (calls_host_mid_block(insn.id)) block.host_calls.push_back(index);
    if (auto kind = trap_kind(insn.id)) block.traps.push_back({insn.address, *kind, static_cast<uint8_t>(insn.size)});
    block.ends_with_software_interrupt = is_software_interrupt(insn.id);
    block.ends_with_interrupt_shadow = sets_interrupt_shadow(bytes, block.code_size);
    block.rep_string_tail = is_rep_string(bytes, block.code_size) ? insn.address : kNoAddress;
  }

  std::array<Handle, kCodeSizes.size()> handles_;
};

// Decoded blocks by start address, in one lazily allocated table of 4 KiB
// slots per page of RAM: the block hook runs once per executed block, and
// this finds a block with three loads and no hashing. The table costs 8
// bytes per 4 KiB of RAM plus 32 KiB per page that holds code.
class BlockCache {
 public:
  explicit BlockCache(uint64_t ram_bytes) : pages_(ram_bytes / kPageSize) {}

  const DecodedBlock* find(uint64_t address, uint32_t size) const {
    const uint64_t page = address / kPageSize;
    if (page >= pages_.size() || !pages_[page]) return nullptr;
    const DecodedBlock* block = pages_[page]->slots[address % kPageSize].get();
    return block && block->size == size ? block : nullptr;
  }

  // Replaces any block cached at the same start (the code there changed).
  const DecodedBlock& insert(DecodedBlock block) {
    std::unique_ptr<Page>& page = pages_.at(block.start / kPageSize);
    if (!page) page = std::make_unique<Page>();
    auto& slot = page->slots[block.start % kPageSize];
    slot = std::make_unique<DecodedBlock>(std::move(block));
    return *slot;
  }

  void clear() {
    for (auto& page : pages_) page.reset();
  }

  // Addresses of the pages where some block starts.
  std::vector<uint64_t> code_pages() const {
    std::vector<uint64_t> addresses;
    for (uint64_t page = 0; page < pages_.size(); ++page)
      if (pages_[page]) addresses.push_back(page * kPageSize);
    return addresses;
  }

 private:
  struct Page {
    std::array<std::unique_ptr<DecodedBlock>, kPageSize> slots;
  };
  std::vector<std::unique_ptr<Page>> pages_;
};

// Owns a uc_engine for the length of a scope.
class UcHandle {
 public:
  explicit UcHandle(uc_mode mode) { check(uc_open(UC_ARCH_X86, mode, &uc_), "uc_open"); }
  ~UcHandle() { uc_close(uc_); }
  UcHandle(const UcHandle&) = delete;
  UcHandle& operator=(const UcHandle&) = delete;
  uc_engine* get() const { return uc_; }

 private:
  uc_engine* uc_ = nullptr;
};

// A saved CPU context (registers, descriptor caches, control registers and
// MSRs), owned for the length of a scope.
class UcContext {
 public:
  explicit UcContext(uc_engine* from) {
    check(uc_context_alloc(from, &context_), "uc_context_alloc");
    check(uc_context_save(from, context_), "uc_context_save");
  }
  ~UcContext() { uc_context_free(context_); }
  UcContext(const UcContext&) = delete;
  UcContext& operator=(const UcContext&) = delete;
  void restore_into(uc_engine* to) const { check(uc_context_restore(to, context_), "uc_context_restore"); }

 private:
  uc_context* context_ = nullptr;
};

// Loads real-mode segment registers (base = selector << 4, limit 0xFFFF)
// into an engine. A UC_MODE_64 engine sets only the selector when CS, DS,
// ES or SS is written, and cannot be switched to another mode. But the
// context API picks its register code by the mode of the engine that
// allocated the context (uc_context_reg_write), so the engine's state is
// saved into a context allocated from a UC_MODE_16 engine, the segments are
// written there (in real mode that only fills the descriptor cache; no guest
// memory is read) and the state is copied back. CR0.PE must be clear.
// It also holds the reset state of a UC_MODE_16 engine: writing CR0 or EFER
// to a UC_MODE_64 engine sets the value alone, and the hidden flags (PE,
// LMA, CS64) stay those of protected or long mode (InitStateRunsRealModeIret
// proves the way round), as the notes say for INIT/SIPI.
// One scratch engine per thread, not per vCPU: an engine costs 1-6 ms and
// ~2.8 MiB (the notes). Proven by StartAtSipiRunsRealModeCodeAtVectorTimes4K
// and the real-mode injection tests.
class RealModeSegmentLoader {
 public:
  static RealModeSegmentLoader& for_this_thread() {
    thread_local RealModeSegmentLoader loader;
    return loader;
  }
  void load(uc_engine* uc, std::initializer_list<std::pair<int, uint16_t>> segments) {
    check(uc_context_save(uc, context_), "uc_context_save (real-mode segments)");
    for (const auto& [reg, selector] : segments)
      check(uc_context_reg_write(context_, reg, &selector), "uc_context_reg_write (real-mode segment)");
    check(uc_context_restore(uc, context_), "uc_context_restore (real-mode segments)");
  }
  // Real mode, as a UC_MODE_16 engine starts: CR0.PE clear in the register
  // and in the hidden flags, EFER clear, 16-bit segments.
  void enter_real_mode(uc_engine* uc) { check(uc_context_restore(uc, reset_state_), "uc_context_restore (real mode)"); }
  ~RealModeSegmentLoader() {
    uc_context_free(context_);
    uc_context_free(reset_state_);
  }
  RealModeSegmentLoader(const RealModeSegmentLoader&) = delete;
  RealModeSegmentLoader& operator=(const RealModeSegmentLoader&) = delete;

 private:
  RealModeSegmentLoader() : engine_(UC_MODE_16) {
    check(uc_context_alloc(engine_.get(), &context_), "uc_context_alloc");
    check(uc_context_alloc(engine_.get(), &reset_state_), "uc_context_alloc");
    check(uc_context_save(engine_.get(), reset_state_), "uc_context_save (real mode)");
  }
  UcHandle engine_;  // never runs: its state stays the reset state
  uc_context* context_ = nullptr;
  uc_context* reset_state_ = nullptr;
};

VcpuExit exit_at(VcpuExit::Reason reason, uint64_t rip, std::string detail = {}) {
  VcpuExit exit;
  exit.reason = reason;
  exit.rip = rip;
  exit.detail = std::move(detail);
  return exit;
}

// Why the last uc_emu_start returned UC_ERR_OK, when we made it return.
enum class StopCause : uint8_t { None, QuantumEnd, StopRequested, Retranslate, TrapSite, Exception };

}  // namespace

const char* to_string(VcpuExit::Reason reason) {
  switch (reason) {
    case VcpuExit::Reason::QuantumEnd: return "quantum end";
    case VcpuExit::Reason::StopRequested: return "stop requested";
    case VcpuExit::Reason::Halt: return "halt";
    case VcpuExit::Reason::GeneralProtection: return "general protection";
    case VcpuExit::Reason::InvalidOpcode: return "invalid opcode";
    case VcpuExit::Reason::Exception: return "exception";
    case VcpuExit::Reason::UnmappedMemory: return "unmapped memory";
    case VcpuExit::Reason::Monitor: return "monitor";
    case VcpuExit::Reason::Mwait: return "mwait";
  }
  return "unknown";
}

struct Vcpu::Engine {
  Engine(unsigned index, GuestRam& ram, VcpuHost& host, EngineCpu engine_cpu);
  ~Engine();

  // --- Unicorn callbacks; user_data is the Engine ---
  static void on_block(uc_engine*, uint64_t address, uint32_t size, void* user);
  static void on_trap_site(uc_engine*, uint64_t address, uint32_t size, void* user);
  static void on_trace(uc_engine*, uint64_t address, uint32_t size, void* user);
  static int on_cpuid(uc_engine*, void* user);
  static uint32_t on_port_in(uc_engine*, uint32_t port, int size, void* user);
  static void on_port_out(uc_engine*, uint32_t port, int size, uint32_t value, void* user);
  static void on_interrupt(uc_engine*, uint32_t vector, void* user);
  static bool on_unmapped(uc_engine*, uc_mem_type type, uint64_t address, int size, int64_t value, void* user);

  // An exception must not unwind through Unicorn's C frames: keep it, stop
  // the run, and let run() rethrow it.
  template <typename Result = void, typename Body>
  Result guarded(Body&& body) noexcept {
    try {
      return body();
    } catch (...) {
      host_failure = std::current_exception();
      uc_emu_stop(uc);
      return Result();
    }
  }

  // --- the block hook and counting ---
  // The previous block ran to its end. Its fields stay until begin_block
  // or forget_current_block overwrites them.
  void retire_previous_block(uint64_t next_address) {
    retired += pending;
    // QEMU runs each iteration of a REP string instruction as a block that
    // jumps back to the instruction: another iteration is not another
    // instruction, so it stays unretired until the loop leaves it.
    if (next_address == rep_restart_address) [[unlikely]]
      --retired;
  }
  void forget_current_block() {
    pending = 0;
    current = nullptr;
    rep_restart_address = kNoAddress;
  }
  bool must_stop_before(const DecodedBlock& block) const {
    return stop_requested || (retired + block.count > budget_end && !first_block_of_run) ||
           (watch_interrupt_window && !first_block_of_run && interrupt_window_opened());
  }
  // Only while the machine holds an interrupt the vCPU could not take when
  // the run began: one EFLAGS read per block then, none otherwise.
  bool interrupt_window_opened() const {
    if (entering_shadowed) return false;
    uint64_t rflags = 0;
    uc_reg_read(uc, UC_X86_REG_EFLAGS, &rflags);
    return rflags & kRflagsInterrupt;
  }
  void begin_block(const DecodedBlock& block) {
    first_block_of_run = false;
    current = &block;
    pending = block.count;
    host_call_cursor = 0;
    rep_restart_address = block.rep_string_tail;
  }
  // Out of line, so that the fast path keeps its locals in registers.
  [[gnu::noinline]] void enter_block_slowly(uint64_t address, uint32_t size, const DecodedBlock* block,
                                            bool shadowed);
  void stop_at_block(StopCause cause, uint64_t address, bool shadowed);
  void settle_at(uint64_t rip);
  const DecodedBlock& decode_new_block(uint64_t address, uint32_t size);
  std::optional<uint16_t> translated_instruction_count(uint64_t address, uint32_t size);
  CodeSize code_size_from_registers();
  bool hook_trap_sites(const DecodedBlock& block);

  // --- callbacks that reach the host mid-block ---
  template <typename Call>
  auto call_host_mid_block(Call&& call);
  void answer_cpuid();
  void stop_at_trap_site(uint64_t address);
  void trace_instruction(uint64_t address, uint32_t size);

  // --- run() and its exits ---
  VcpuExit run(uint64_t budget);
  std::optional<VcpuExit> run_until_stop();
  VcpuExit exit_before_block(VcpuExit::Reason reason);
  VcpuExit exit_for_halt();
  VcpuExit exit_for_error(uc_err err);
  VcpuExit exit_for_unmapped(uint64_t rip, uint64_t linear);
  VcpuExit exit_for_exception();
  std::optional<VcpuExit> exit_for_monitor_or_mwait(uint64_t rip, uint64_t linear);
  uint64_t data_segment_base();
  void retire_emulated_instruction();
  std::optional<VcpuExit> emulate_trap();
  std::optional<VcpuExit> execute_trap(TrapKind kind, uint64_t rip);
  std::string describe(uint64_t address);

  // --- register and MSR access ---
  uint64_t read_reg(int reg) const;
  void write_reg(int reg, uint64_t value);
  uint64_t read_cpu_msr(uint32_t msr) const;
  void write_cpu_msr(uint32_t msr, uint64_t value);
  std::optional<uint64_t> read_msr(uint32_t msr);
  bool write_msr(uint32_t msr, uint64_t value);
  void write_edx_eax(uint64_t value);
  void load_flat_protected_mode();
  void enter_multiboot(uint32_t entry, uint32_t eax, uint32_t ebx);
  void set_trace(std::FILE* out);
  void flush_translations();
  void invalidate_translated_code();
  void remove_trap_hooks();

  // --- addresses, segments, INIT/SIPI ---
  uint64_t code_base();
  uint64_t linear_rip() { return code_base() + read_reg(UC_X86_REG_RIP); }
  void set_rip_to_linear(uint64_t address) { write_reg(UC_X86_REG_RIP, address - code_base()); }
  uc_x86_mmr read_mmr(int reg) const;
  std::optional<SegmentDescriptor> read_descriptor(uint16_t selector) const;
  void reset_for_init();
  void start_at_sipi(uint8_t vector);

  // --- interrupt and exception delivery ---
  Injection inject(uint8_t vector, std::optional<uint32_t> error_code, bool exception);
  Injection inject_real_mode(uint8_t vector, const std::string& what);
  Injection inject_protected_mode(uint8_t vector, std::optional<uint32_t> error_code, const std::string& what);
  Injection inject_long_mode(uint8_t vector, std::optional<uint32_t> error_code, const std::string& what);
  std::optional<std::string> check_handler_segment(uint16_t selector, bool need_64_bit);
  std::optional<uint64_t> push_frame(uint64_t stack_base, uint64_t sp, uint64_t sp_mask, unsigned width,
                                     std::initializer_list<uint64_t> values);
  void enter_handler(uint16_t selector, uint64_t offset, uint64_t rflags);

  // --- MMIO ---
  struct MmioWindow {
    Engine* engine;
    MmioHandler* handler;
    uint64_t size;
  };
  static uint64_t on_mmio_read(uc_engine*, uint64_t offset, unsigned size, void* user);
  static void on_mmio_write(uc_engine*, uint64_t offset, unsigned size, uint64_t value, void* user);
  void map_mmio(uint64_t base, uint64_t size, MmioHandler& handler);
  void unmap_mmio(uint64_t base, uint64_t size);

  const unsigned index;
  GuestRam& ram;
  VcpuHost& host;
  uc_engine* uc = nullptr;
  Disassembler disassembler;
  BlockCache blocks;

  struct HookedTrap {
    TrapKind kind;
    uint8_t length;
    uc_hook hook;
  };
  std::unordered_map<uint64_t, HookedTrap> trap_hooks;  // by instruction address
  uc_hook trace_hook = 0;
  std::FILE* trace_out = nullptr;

  // Counting (see the file comment).
  uint64_t retired = 0;
  uint64_t pending = 0;
  uint64_t pauses_retired = 0;  // counted by the PAUSE sites' hooks
  uint64_t in_flight = 0;  // during a mid-block host call: its index in the block
  uint64_t budget_end = 0;
  const DecodedBlock* current = nullptr;
  uint64_t rep_restart_address = kNoAddress;  // a REP string instruction ends `current`
  size_t host_call_cursor = 0;
  bool first_block_of_run = false;
  bool stop_requested = false;
  bool nmi_blocked = false;  // from an injected NMI to the next IRET
  bool watch_interrupt_window = false;
  // The block being entered runs in an interrupt shadow (set by on_block).
  bool entering_shadowed = false;

  // The instruction at RIP is in an STI / MOV SS / POP SS shadow.
  bool shadow = false;
  bool waits_for_sipi = false;
  // The last CS code_base() saw, with its base: the descriptor cache that
  // code_base() cannot read from the GDT (Multiboot state, real-mode CS
  // right after CR0.PE is set).
  struct {
    uint16_t selector = 0;
    uint64_t base = 0;
  } known_cs;
  std::unordered_map<uint64_t, std::unique_ptr<MmioWindow>> mmio;  // by base

  // What the callbacks saw during the last uc_emu_start.
  StopCause stop_cause = StopCause::None;
  uint64_t stopped_block = 0;
  bool stopped_block_shadowed = false;
  uint64_t trap_address = 0;
  struct {
    uint32_t vector = 0;
    uint64_t rip = 0;
    uint64_t cr2 = 0;
  } exception;
  struct {
    uc_mem_type type = UC_MEM_READ_UNMAPPED;
    uint64_t address = 0;
    int size = 0;
  } unmapped;
  std::exception_ptr host_failure;
};

Vcpu::Engine::Engine(unsigned index, GuestRam& ram, VcpuHost& host, EngineCpu engine_cpu)
    : index(index), ram(ram), host(host), blocks(ram.size()) {
  check(uc_open(UC_ARCH_X86, UC_MODE_64, &uc), "uc_open");
  try {
    // Before any memory is mapped, as uc_ctl_set_cpu_model requires. The
    // feature words survive the context copies below (a unit test shows it).
    const int model = engine_cpu == EngineCpu::SkylakeServer ? UC_CPU_X86_SKYLAKE_SERVER
                      : engine_cpu == EngineCpu::Epyc        ? UC_CPU_X86_EPYC
                                                             : UC_CPU_X86_QEMU64;
    check(uc_ctl_set_cpu_model(uc, model), "uc_ctl_set_cpu_model");
    check(uc_mem_map_ptr(uc, 0, ram.size(), UC_PROT_ALL, ram.data()), "uc_mem_map_ptr");
    uc_hook h;
    check(uc_hook_add(uc, &h, UC_HOOK_BLOCK, reinterpret_cast<void*>(on_block), this, 1, 0), "block hook");
    check(uc_hook_add(uc, &h, UC_HOOK_INSN, reinterpret_cast<void*>(on_cpuid), this, 1, 0, UC_X86_INS_CPUID),
          "cpuid hook");
    check(uc_hook_add(uc, &h, UC_HOOK_INSN, reinterpret_cast<void*>(on_port_in), this, 1, 0, UC_X86_INS_IN),
          "in hook");
    check(uc_hook_add(uc, &h, UC_HOOK_INSN, reinterpret_cast<void*>(on_port_out), this, 1, 0, UC_X86_INS_OUT),
          "out hook");
    check(uc_hook_add(uc, &h, UC_HOOK_INTR, reinterpret_cast<void*>(on_interrupt), this, 1, 0), "intr hook");
    check(uc_hook_add(uc, &h, UC_HOOK_MEM_UNMAPPED, reinterpret_cast<void*>(on_unmapped), this, 1, 0),
          "unmapped hook");
  } catch (...) {
    uc_close(uc);
    throw;
  }
}

Vcpu::Engine::~Engine() { uc_close(uc); }

// ---------------------------------------------------------------------------
// The block hook: the hot path, once per executed block.

// The fast path (a known block, within budget) only adds, compares and
// stores; everything that can throw or stop is behind it.
void Vcpu::Engine::on_block(uc_engine*, uint64_t address, uint32_t size, void* user) {
  auto& e = *static_cast<Engine*>(user);
  e.retire_previous_block(address);
  // The previous block ran to its end; without one (the first block of this
  // uc_emu_start) the shadow is what the last stop left.
  e.entering_shadowed = e.current ? e.current->ends_with_interrupt_shadow : e.shadow;
  const DecodedBlock* block = e.blocks.find(address, size);
  if (block && !e.must_stop_before(*block)) [[likely]]
    return e.begin_block(*block);
  const bool shadowed = e.entering_shadowed;
  e.forget_current_block();
  e.enter_block_slowly(address, size, block, shadowed);
}

void Vcpu::Engine::enter_block_slowly(uint64_t address, uint32_t size, const DecodedBlock* block, bool shadowed) {
  guarded([&] {
    if (!block) {
      block = &decode_new_block(address, size);
      // This block was translated before its trap sites were hooked.
      if (hook_trap_sites(*block)) return stop_at_block(StopCause::Retranslate, address, shadowed);
    }
    if (stop_requested) return stop_at_block(StopCause::StopRequested, address, shadowed);
    if (must_stop_before(*block)) return stop_at_block(StopCause::QuantumEnd, address, shadowed);
    begin_block(*block);
  });
}

// A stop requested from the block hook is exact: the block does not run
// (the notes, "the stop trap"). RIP is its start, except after code hooks
// (the trace) ran in the block before: Unicorn then leaves RIP at the last
// instruction a code hook saw. So run() puts RIP back to the block start
// (writing RIP here, in the hook, would cancel the stop).
void Vcpu::Engine::stop_at_block(StopCause cause, uint64_t address, bool shadowed) {
  stop_cause = cause;
  stopped_block = address;
  stopped_block_shadowed = shadowed;
  uc_emu_stop(uc);
}

// Ends the accounting of the current block at `rip`, after a stop inside it.
void Vcpu::Engine::settle_at(uint64_t rip) {
  if (current) retired += current->instructions_before(rip);
  forget_current_block();
}

// Capstone must decode in the mode the block was translated in. CR0 and EFER
// give it, except during a mode switch (16-bit protected mode right after
// CR0.PE is set, compatibility mode right after CR0.PG): then the
// instruction count of Unicorn's own translation picks the right mode.
const DecodedBlock& Vcpu::Engine::decode_new_block(uint64_t address, uint32_t size) {
  const auto code = ram.bytes(address, size);
  const CodeSize guess = code_size_from_registers();
  DecodedBlock block = disassembler.decode_block(code, address, guess);
  const std::optional<uint16_t> translated = translated_instruction_count(address, size);
  const auto matches = [&](const DecodedBlock& b) { return b.fully_decoded && b.count == *translated; };
  if (translated && !matches(block)) {
    for (CodeSize other : kCodeSizes) {
      if (other == guess) continue;
      DecodedBlock retry = disassembler.decode_block(code, address, other);
      if (matches(retry)) {
        block = std::move(retry);
        break;
      }
    }
  }
  return blocks.insert(std::move(block));
}

// The block being executed is in Unicorn's translation cache under the
// current CPU state, so this finds it rather than translating anew.
std::optional<uint16_t> Vcpu::Engine::translated_instruction_count(uint64_t address, uint32_t size) {
  uc_tb tb{};
  if (uc_ctl_request_cache(uc, address, &tb) != UC_ERR_OK || tb.pc != address || tb.size != size)
    return std::nullopt;
  return tb.icount;
}

CodeSize Vcpu::Engine::code_size_from_registers() {
  if (!(read_reg(UC_X86_REG_CR0) & kCr0ProtectionEnable)) return CodeSize::Bits16;
  if (read_cpu_msr(kMsrEfer) & kEferLongModeActive) return CodeSize::Bits64;
  return CodeSize::Bits32;
}

// UC_HOOK_INSN refuses RDMSR, WRMSR and RDTSC(P) (the notes), so each site
// gets a one-instruction UC_HOOK_CODE. Returns whether any hook was added,
// in which case the block's old translation is dropped so the next one
// calls the hook (a hook added after translation is not seen otherwise).
bool Vcpu::Engine::hook_trap_sites(const DecodedBlock& block) {
  bool added = false;
  for (const TrapSite& site : block.traps) {
    if (trap_hooks.contains(site.address)) continue;
    uc_hook hook;
    check(uc_hook_add(uc, &hook, UC_HOOK_CODE, reinterpret_cast<void*>(on_trap_site), this, site.address,
                      site.address),
          "trap site hook");
    trap_hooks.emplace(site.address, HookedTrap{site.kind, site.length, hook});
    added = true;
  }
  if (added) check(uc_ctl_remove_cache(uc, block.start, block.end()), "uc_ctl_remove_cache");
  return added;
}

// ---------------------------------------------------------------------------
// Callbacks in the middle of a block.

// Unicorn does not update RIP before IN/OUT hooks, so the calling
// instruction is found by order instead: a block is straight-line code,
// and its host calls arrive in the order of its IN/OUT/CPUID instructions.
template <typename Call>
auto Vcpu::Engine::call_host_mid_block(Call&& call) {
  if (current && !current->host_calls.empty())
    in_flight = current->host_calls[std::min(host_call_cursor++, current->host_calls.size() - 1)];
  struct ClearInFlight {
    uint64_t& in_flight;
    ~ClearInFlight() { in_flight = 0; }
  } clear{in_flight};
  return call();
}

int Vcpu::Engine::on_cpuid(uc_engine*, void* user) {
  auto& e = *static_cast<Engine*>(user);
  e.guarded([&] { e.answer_cpuid(); });
  return 1;  // skip Unicorn's own CPUID
}

// Writing the 64-bit registers zero-extends, as CPUID does in 64-bit mode.
void Vcpu::Engine::answer_cpuid() {
  const auto leaf = static_cast<uint32_t>(read_reg(UC_X86_REG_RAX));
  const auto subleaf = static_cast<uint32_t>(read_reg(UC_X86_REG_RCX));
  const CpuidRegs regs = call_host_mid_block([&] { return host.cpuid(leaf, subleaf); });
  write_reg(UC_X86_REG_RAX, regs.eax);
  write_reg(UC_X86_REG_RBX, regs.ebx);
  write_reg(UC_X86_REG_RCX, regs.ecx);
  write_reg(UC_X86_REG_RDX, regs.edx);
}

uint32_t Vcpu::Engine::on_port_in(uc_engine*, uint32_t port, int size, void* user) {
  auto& e = *static_cast<Engine*>(user);
  return e.guarded<uint32_t>([&] {
    return e.call_host_mid_block([&] { return e.host.port_in(static_cast<uint16_t>(port), size); });
  });
}

void Vcpu::Engine::on_port_out(uc_engine*, uint32_t port, int size, uint32_t value, void* user) {
  auto& e = *static_cast<Engine*>(user);
  e.guarded([&] {
    e.call_host_mid_block([&] { e.host.port_out(static_cast<uint16_t>(port), size, value); });
  });
}

void Vcpu::Engine::on_trap_site(uc_engine*, uint64_t address, uint32_t, void* user) {
  auto& e = *static_cast<Engine*>(user);
  auto it = e.trap_hooks.find(address);
  if (it != e.trap_hooks.end() && it->second.kind == TrapKind::Pause) {
    ++e.pauses_retired;
    return;
  }
  if (it != e.trap_hooks.end() && it->second.kind == TrapKind::Iret) {
    e.nmi_blocked = false;  // this IRET runs on; NMIs are taken again after it
    // IRET ends its block: the stop comes right after it, where a held NMI
    // or interrupt may now be taken.
    if (e.watch_interrupt_window) e.stop_requested = true;
    return;
  }
  e.guarded([&] { e.stop_at_trap_site(address); });
}

// A stop from a code hook happens before the instruction runs. The bytes
// are checked because the guest may have rewritten the code since.
void Vcpu::Engine::stop_at_trap_site(uint64_t address) {
  const HookedTrap& trap = trap_hooks.at(address);
  const auto opcode = trap_opcode(trap.kind);
  const auto bytes = ram.bytes(address, trap.length);
  if (!std::equal(opcode.begin(), opcode.end(), bytes.end() - opcode.size())) return;
  trap_address = address;
  stop_cause = StopCause::TrapSite;
  uc_emu_stop(uc);
}

// Unicorn has already raised the exception when this runs; RIP is the
// faulting instruction for a fault and the next one for INT n / INT3.
void Vcpu::Engine::on_interrupt(uc_engine*, uint32_t vector, void* user) {
  auto& e = *static_cast<Engine*>(user);
  e.guarded([&] {
    e.exception = {vector, e.read_reg(UC_X86_REG_RIP),
                   vector == kPageFaultVector ? e.read_reg(UC_X86_REG_CR2) : 0};
    e.stop_cause = StopCause::Exception;
    uc_emu_stop(e.uc);
  });
}

bool Vcpu::Engine::on_unmapped(uc_engine*, uc_mem_type type, uint64_t address, int size, int64_t, void* user) {
  auto& e = *static_cast<Engine*>(user);
  e.unmapped = {type, address, size};
  return false;  // let Unicorn end the run with UC_ERR_*_UNMAPPED
}

void Vcpu::Engine::on_trace(uc_engine*, uint64_t address, uint32_t size, void* user) {
  auto& e = *static_cast<Engine*>(user);
  e.guarded([&] {
    // Trapped instructions are printed when run() emulates them: the trap
    // hook may stop the run before this hook is called. Watched IRETs and PAUSEs run.
    auto it = e.trap_hooks.find(address);
    if (it == e.trap_hooks.end() || is_watched(it->second.kind)) e.trace_instruction(address, size);
  });
}

void Vcpu::Engine::trace_instruction(uint64_t address, uint32_t size) {
  const CodeSize code_size = current ? current->code_size : code_size_from_registers();
  const auto code = ram.bytes(address, size);
  fmt::print(trace_out, "cpu{} {:016x}: {:02x}  {}\n", index, address, fmt::join(code, " "),
             disassembler.describe(code, address, code_size));
}

// ---------------------------------------------------------------------------
// run() and its exits.

VcpuExit Vcpu::Engine::run(uint64_t budget) {
  if (waits_for_sipi) throw std::logic_error(fmt::format("cpu{} waits for SIPI: run() before start_at_sipi()", index));
  constexpr uint64_t kNoLimit = std::numeric_limits<uint64_t>::max();
  budget_end = budget > kNoLimit - retired ? kNoLimit : retired + budget;
  first_block_of_run = true;
  stop_requested = false;
  for (;;) {
    if (std::optional<VcpuExit> exit = run_until_stop()) return *exit;
  }
}

// One uc_emu_start. Returns the exit, or nullopt to go on within this run.
std::optional<VcpuExit> Vcpu::Engine::run_until_stop() {
  stop_cause = StopCause::None;
  const uc_err err = uc_emu_start(uc, read_reg(UC_X86_REG_RIP), kNeverExecuted, 0, 0);
  // Only a stop in front of a block can leave the next instruction shadowed.
  shadow = false;
  if (host_failure) {
    settle_at(linear_rip());
    std::rethrow_exception(std::exchange(host_failure, nullptr));
  }
  if (err != UC_ERR_OK) return exit_for_error(err);
  switch (stop_cause) {
    case StopCause::None: {
      // Unicorn 2.0.1 ends a run at a MONITOR or MWAIT it raised #UD for
      // with UC_ERR_OK rather than UC_ERR_INSN_INVALID once a 64-bit guest
      // has loaded an IDT (docs/unicorn.md). A stop inside the running
      // block is that: a HLT always ends its block.
      const uint64_t linear = linear_rip();
      if (current && linear >= current->start && linear < current->end())
        if (std::optional<VcpuExit> exit = exit_for_monitor_or_mwait(read_reg(UC_X86_REG_RIP), linear)) return *exit;
      return exit_for_halt();
    }
    case StopCause::QuantumEnd:
      shadow = stopped_block_shadowed;
      return exit_before_block(VcpuExit::Reason::QuantumEnd);
    case StopCause::StopRequested:
      shadow = stopped_block_shadowed;
      return exit_before_block(VcpuExit::Reason::StopRequested);
    case StopCause::Retranslate:
      shadow = stopped_block_shadowed;
      set_rip_to_linear(stopped_block);
      return std::nullopt;
    case StopCause::TrapSite: return emulate_trap();
    case StopCause::Exception: return exit_for_exception();
  }
  throw std::logic_error("unknown stop cause");
}

VcpuExit Vcpu::Engine::exit_before_block(VcpuExit::Reason reason) {
  set_rip_to_linear(stopped_block);
  return exit_at(reason, read_reg(UC_X86_REG_RIP));
}

// Unicorn returns OK at HLT exactly as at a stop of ours (the notes), and
// every stop of ours sets stop_cause.
VcpuExit Vcpu::Engine::exit_for_halt() {
  const uint64_t rip = read_reg(UC_X86_REG_RIP);
  const uint64_t linear = code_base() + rip;
  if (linear == 0 || !ram.contains(linear - 1, 1) || ram.read<uint8_t>(linear - 1) != kHltOpcode)
    throw std::runtime_error(fmt::format("unicorn stopped at {:#x} for no known reason", linear));
  settle_at(linear);
  return exit_at(VcpuExit::Reason::Halt, rip);
}

VcpuExit Vcpu::Engine::exit_for_error(uc_err err) {
  const uint64_t rip = read_reg(UC_X86_REG_RIP);
  const uint64_t linear = code_base() + rip;
  switch (err) {
    case UC_ERR_INSN_INVALID: {
      if (std::optional<VcpuExit> exit = exit_for_monitor_or_mwait(rip, linear)) return *exit;
      std::string detail = fmt::format("invalid opcode at {:#x}: {}", linear, describe(linear));
      settle_at(linear);
      return exit_at(VcpuExit::Reason::InvalidOpcode, rip, std::move(detail));
    }
    case UC_ERR_READ_UNMAPPED:
    case UC_ERR_WRITE_UNMAPPED:
    case UC_ERR_FETCH_UNMAPPED:
      return exit_for_unmapped(rip, linear);
    default:
      settle_at(linear);
      throw std::runtime_error(fmt::format("unicorn: run stopped at {:#x}: {}", linear, uc_strerror(err)));
  }
}

// A fetch fault leaves RIP at the target, exactly. A read or write fault
// leaves RIP at the start of the block holding the access, while the
// registers already show the instructions before it: Unicorn 2.0.1 leaves
// the block with cpu_loop_exit and never restores the guest PC. The exit
// reports that block start, and counts the block as not run.
VcpuExit Vcpu::Engine::exit_for_unmapped(uint64_t rip, uint64_t linear) {
  std::string detail;
  if (unmapped.type == UC_MEM_FETCH_UNMAPPED) {
    detail = fmt::format("fetch from unmapped memory at {:#x}", unmapped.address);
  } else {
    detail = fmt::format("{} of {} bytes at unmapped {:#x} by an instruction of the block at {:#x} ({}; Unicorn "
                         "does not say which instruction)",
                         unmapped.type == UC_MEM_WRITE_UNMAPPED ? "write" : "read", unmapped.size,
                         unmapped.address, linear, describe(linear));
  }
  settle_at(linear);
  VcpuExit exit = exit_at(VcpuExit::Reason::UnmappedMemory, rip, std::move(detail));
  exit.address = unmapped.address;
  return exit;
}

VcpuExit Vcpu::Engine::exit_for_exception() {
  const uint64_t rip = exception.rip;
  const uint64_t linear = code_base() + rip;
  // INT n and INT3 end their block and are traps: RIP is past them.
  const bool trap = current && current->ends_with_software_interrupt && linear == current->end();
  const uint64_t raised_at = trap ? current->address_of(current->count - 1) : linear;
  std::string detail = fmt::format("{} (vector {}) at {:#x}: {}", exception_name(exception.vector),
                                   exception.vector, raised_at, describe(raised_at));
  if (exception.vector == kPageFaultVector) detail += fmt::format(", CR2 {:#x}", exception.cr2);
  settle_at(linear);
  VcpuExit exit = exit_at(VcpuExit::Reason::Exception, rip, std::move(detail));
  exit.vector = static_cast<int>(exception.vector);
  return exit;
}

// MONITOR is 0F 01 C8 and MWAIT 0F 01 C9 (SDM Vol. 2), without prefixes:
// a prefixed form (a segment override on MONITOR, say) stays #UD.
std::optional<VcpuExit> Vcpu::Engine::exit_for_monitor_or_mwait(uint64_t rip, uint64_t linear) {
  if (!ram.contains(linear, kIdleInstructionLength)) return std::nullopt;
  const auto code = ram.bytes(linear, kIdleInstructionLength);
  if (code[0] != 0x0F || code[1] != 0x01 || (code[2] != 0xC8 && code[2] != 0xC9)) return std::nullopt;
  // The block holding it began in an STI shadow and it is the block's first
  // instruction: the shadow covers it (see the file comment).
  const bool shadowed = entering_shadowed && current && current->start == linear;
  const bool in_current = current && linear >= current->start && linear < current->end();
  const CodeSize code_size = in_current ? current->code_size : code_size_from_registers();
  settle_at(linear);
  shadow = shadowed;
  const bool monitor = code[2] == 0xC8;
  VcpuExit exit = exit_at(monitor ? VcpuExit::Reason::Monitor : VcpuExit::Reason::Mwait, rip,
                          fmt::format("{} at {:#x}", monitor ? "monitor" : "mwait", linear));
  exit.operands.eax = static_cast<uint32_t>(read_reg(UC_X86_REG_RAX));
  exit.operands.ecx = static_cast<uint32_t>(read_reg(UC_X86_REG_RCX));
  exit.operands.edx = static_cast<uint32_t>(read_reg(UC_X86_REG_RDX));
  if (monitor) {
    // DS:rAX with the address size of the code (SDM Vol. 2 MONITOR); in
    // 64-bit mode DS has no base.
    switch (code_size) {
      case CodeSize::Bits64: exit.address = read_reg(UC_X86_REG_RAX); break;
      case CodeSize::Bits32: exit.address = (data_segment_base() + exit.operands.eax) & 0xFFFF'FFFF; break;
      case CodeSize::Bits16: exit.address = data_segment_base() + (exit.operands.eax & 0xFFFF); break;
    }
  }
  if (trace_out) trace_instruction(linear, kIdleInstructionLength);
  return exit;
}

// DS.base, which Unicorn does not expose either: selector << 4 in real
// mode, else the GDT/LDT entry (0 when the tables do not describe DS, the
// flat Multiboot state).
uint64_t Vcpu::Engine::data_segment_base() {
  const auto selector = static_cast<uint16_t>(read_reg(UC_X86_REG_DS));
  if (!(read_reg(UC_X86_REG_CR0) & kCr0ProtectionEnable)) return uint64_t{selector} << 4;
  const std::optional<SegmentDescriptor> ds = read_descriptor(selector);
  return ds ? ds->base() : 0;
}

void Vcpu::Engine::retire_emulated_instruction() {
  ++retired;
  shadow = false;
  write_reg(UC_X86_REG_RIP, read_reg(UC_X86_REG_RIP) + kIdleInstructionLength);
}

// The trap hook stopped the run in front of the instruction. Emulate it,
// retire it and step over it.
// A code hook sets RIP to the *linear* address of its instruction, not to
// the offset in CS (TrapSiteInRealModeResumesAtTheRightOffset), so the offset
// is computed from the hooked address.
std::optional<VcpuExit> Vcpu::Engine::emulate_trap() {
  const uint64_t rip = trap_address - code_base();
  const HookedTrap& trap = trap_hooks.at(trap_address);
  settle_at(trap_address);
  if (trace_out) trace_instruction(trap_address, trap.length);
  if (std::optional<VcpuExit> fault = execute_trap(trap.kind, rip)) return fault;
  ++retired;
  const uint64_t next = rip + trap.length;
  write_reg(UC_X86_REG_RIP, next);
  if (stop_requested) return exit_at(VcpuExit::Reason::StopRequested, next);
  return std::nullopt;
}

// SDM Vol. 2: RDMSR, WRMSR, RDTSC, RDTSCP.
std::optional<VcpuExit> Vcpu::Engine::execute_trap(TrapKind kind, uint64_t rip) {
  const auto ecx = static_cast<uint32_t>(read_reg(UC_X86_REG_RCX));
  switch (kind) {
    case TrapKind::Rdmsr: {
      const std::optional<uint64_t> value = read_msr(ecx);
      if (!value)
        return exit_at(VcpuExit::Reason::GeneralProtection, rip,
                       fmt::format("rdmsr of unknown MSR {:#x} at {:#x}", ecx, rip));
      write_edx_eax(*value);
      return std::nullopt;
    }
    case TrapKind::Wrmsr: {
      const uint64_t value = (read_reg(UC_X86_REG_RDX) << 32) | static_cast<uint32_t>(read_reg(UC_X86_REG_RAX));
      if (!write_msr(ecx, value))
        return exit_at(VcpuExit::Reason::GeneralProtection, rip,
                       fmt::format("wrmsr of unknown MSR {:#x} (value {:#x}) at {:#x}", ecx, value, rip));
      return std::nullopt;
    }
    case TrapKind::Rdtsc:
      write_edx_eax(host.read_tsc());
      return std::nullopt;
    case TrapKind::Rdtscp: {
      // Without IA32_TSC_AUX the CPU has no RDTSCP, which is then #UD.
      const std::optional<uint64_t> aux = read_msr(kMsrTscAux);
      if (!aux)
        return exit_at(VcpuExit::Reason::InvalidOpcode, rip,
                       fmt::format("rdtscp at {:#x}, but the host has no IA32_TSC_AUX", rip));
      write_edx_eax(host.read_tsc());
      write_reg(UC_X86_REG_RCX, static_cast<uint32_t>(*aux));
      return std::nullopt;
    }
    case TrapKind::Iret:
    case TrapKind::Pause:
      break;  // never stopped at: on_trap_site lets it run
  }
  throw std::logic_error("unknown trap kind");
}

// The instruction at `address`, disassembled in the mode of the current
// block when it holds the address.
std::string Vcpu::Engine::describe(uint64_t address) {
  if (!ram.contains(address, 1)) return "(outside RAM)";
  const bool in_current = current && address >= current->start && address < current->end();
  const CodeSize code_size = in_current ? current->code_size : code_size_from_registers();
  const uint64_t length = std::min<uint64_t>(15, ram.size() - address);  // the longest x86 instruction
  return disassembler.describe(ram.bytes(address, length), address, code_size);
}

// ---------------------------------------------------------------------------
// Registers and MSRs.

uint64_t Vcpu::Engine::read_reg(int reg) const {
  uint64_t value = 0;
  check(uc_reg_read(uc, reg, &value), "uc_reg_read");
  return value;
}

void Vcpu::Engine::write_reg(int reg, uint64_t value) { check(uc_reg_write(uc, reg, &value), "uc_reg_write"); }

uint64_t Vcpu::Engine::read_cpu_msr(uint32_t msr) const {
  uc_x86_msr value{.rid = msr, .value = 0};
  check(uc_reg_read(uc, UC_X86_REG_MSR, &value), "uc_reg_read (MSR)");
  return value.value;
}

void Vcpu::Engine::write_cpu_msr(uint32_t msr, uint64_t value) {
  uc_x86_msr reg{.rid = msr, .value = value};
  check(uc_reg_write(uc, UC_X86_REG_MSR, &reg), "uc_reg_write (MSR)");
}

std::optional<uint64_t> Vcpu::Engine::read_msr(uint32_t msr) {
  if (is_cpu_state_msr(msr)) return read_cpu_msr(msr);
  return host.read_msr(msr);
}

bool Vcpu::Engine::write_msr(uint32_t msr, uint64_t value) {
  if (!is_cpu_state_msr(msr)) return host.write_msr(msr, value);
  write_cpu_msr(msr, value);
  return true;
}

// RDMSR, RDTSC and RDTSCP clear the upper halves of RAX and RDX in 64-bit mode.
void Vcpu::Engine::write_edx_eax(uint64_t value) {
  write_reg(UC_X86_REG_RAX, static_cast<uint32_t>(value));
  write_reg(UC_X86_REG_RDX, value >> 32);
}

// Unicorn 2.0.1 loads a segment descriptor on a CS/DS/ES/SS write only in
// an engine opened in 16- or 32-bit mode; in a UC_MODE_64 engine the write
// sets the selector alone and the hidden base, limit and D bit stay. So a
// scratch UC_MODE_32 engine loads flat descriptors from a GDT in its own
// memory, and its CPU context (registers, descriptor caches, CR0, EFER) is
// copied into ours, as the notes do for INIT/SIPI.
void Vcpu::Engine::load_flat_protected_mode() {
  UcHandle scratch(UC_MODE_32);
  uc_engine* s = scratch.get();
  const std::array<uint64_t, 3> gdt = {0, kFlatCode32Descriptor, kFlatDataDescriptor};
  check(uc_mem_map(s, 0, kPageSize, UC_PROT_ALL), "uc_mem_map (scratch)");
  check(uc_mem_write(s, 0, gdt.data(), sizeof gdt), "uc_mem_write (scratch GDT)");
  uc_x86_mmr gdtr{.selector = 0, .base = 0, .limit = sizeof gdt - 1, .flags = 0};
  check(uc_reg_write(s, UC_X86_REG_GDTR, &gdtr), "uc_reg_write (scratch GDTR)");
  const uint16_t code = kMultibootCodeSelector, data = kMultibootDataSelector;
  check(uc_reg_write(s, UC_X86_REG_CS, &code), "uc_reg_write (scratch CS)");
  for (int reg : {UC_X86_REG_DS, UC_X86_REG_ES, UC_X86_REG_SS, UC_X86_REG_FS, UC_X86_REG_GS})
    check(uc_reg_write(s, reg, &data), "uc_reg_write (scratch data segment)");

  UcContext(s).restore_into(uc);
}

void Vcpu::Engine::enter_multiboot(uint32_t entry, uint32_t eax, uint32_t ebx) {
  // Leaving protected mode makes Unicorn flush its TLB (cpu_x86_update_cr0),
  // which copying in a context does not: no stale paging entry survives.
  write_reg(UC_X86_REG_CR0, 0);
  load_flat_protected_mode();
  uc_x86_mmr no_gdt{};
  check(uc_reg_write(uc, UC_X86_REG_GDTR, &no_gdt), "uc_reg_write (GDTR)");
  write_reg(UC_X86_REG_CR4, 0);  // as after reset, and as QEMU's loader leaves it
  write_reg(UC_X86_REG_RFLAGS, kRflagsInterruptsOff);
  write_reg(UC_X86_REG_RAX, eax);
  write_reg(UC_X86_REG_RBX, ebx);
  write_reg(UC_X86_REG_RIP, entry);
  known_cs = {kMultibootCodeSelector, 0};
  shadow = false;
  waits_for_sipi = false;
  flush_translations();
}

void Vcpu::Engine::set_trace(std::FILE* out) {
  if (out && !trace_hook) {
    check(uc_hook_add(uc, &trace_hook, UC_HOOK_CODE, reinterpret_cast<void*>(on_trace), this, 1, 0),
          "trace hook");
  } else if (!out && trace_hook) {
    check(uc_hook_del(uc, trace_hook), "uc_hook_del (trace)");
    trace_hook = 0;
  }
  trace_out = out;
  // Translated code calls the hooks that existed when it was translated.
  invalidate_translated_code();
}

// The decoded blocks and their trap hooks go with the translations: they
// are rebuilt as code runs again.
void Vcpu::Engine::flush_translations() {
  invalidate_translated_code();
  remove_trap_hooks();
  blocks.clear();
}

// Drops Unicorn's translations of every page where a decoded block starts,
// which is all translated code: every block that ran went through on_block.
// Not uc_ctl_flush_tlb: in 2.0.1 it zero-fills the whole 1 GiB translation
// buffer (2.4 s and 1 GiB more RSS the first time, 14 ms after). And
// uc_ctl_remove_cache finds a page through the guest page tables: for a page
// they do not map it does nothing, silently, and sets CR2. So paging is
// turned off around it (the identity is all Unicorn 2.0.1 maps anyway) and
// the CPU context put back after.
void Vcpu::Engine::invalidate_translated_code() {
  const UcContext saved(uc);
  write_reg(UC_X86_REG_CR0, read_reg(UC_X86_REG_CR0) & ~kCr0Paging);
  for (uint64_t page : blocks.code_pages())
    check(uc_ctl_remove_cache(uc, page, page + kPageSize), "uc_ctl_remove_cache");
  saved.restore_into(uc);
  // The context brings paging back but not the TLB, which now holds entries
  // made with paging off; reloading CR3 flushes it (cpu_x86_update_cr3).
  write_reg(UC_X86_REG_CR3, read_reg(UC_X86_REG_CR3));
}

void Vcpu::Engine::remove_trap_hooks() {
  for (const auto& [address, trap] : trap_hooks) check(uc_hook_del(uc, trap.hook), "uc_hook_del (trap site)");
  trap_hooks.clear();
}

// ---------------------------------------------------------------------------
// Segments, INIT and SIPI.

uc_x86_mmr Vcpu::Engine::read_mmr(int reg) const {
  uc_x86_mmr value{};
  check(uc_reg_read(uc, reg, &value), "uc_reg_read (descriptor table register)");
  return value;
}

// The GDT or LDT entry of `selector`, read from RAM (the table base is
// linear, and linear = physical: the notes). nullopt for the null selector
// and for an entry beyond the table limit or outside RAM.
std::optional<SegmentDescriptor> Vcpu::Engine::read_descriptor(uint16_t selector) const {
  if ((selector & ~3u) == 0) return std::nullopt;
  const uc_x86_mmr table = read_mmr(selector & 4 ? UC_X86_REG_LDTR : UC_X86_REG_GDTR);
  const uint64_t index = selector & ~7u;
  if (index + 7 > table.limit || !ram.contains(table.base + index, 8)) return std::nullopt;
  return SegmentDescriptor{ram.read<uint64_t>(table.base + index)};
}

// CS.base, which Unicorn 2.0.1 does not expose (UC_X86_REG_CS reads the
// selector alone), from the architectural state:
// - real mode: selector << 4, which every CS load in real mode sets
//   (SDM Vol. 3A 20.1.1);
// - protected and long mode: the base in the GDT/LDT entry (0 for a 64-bit
//   segment), which is what the CPU loaded unless the guest changed the
//   entry since;
// - a CS the tables do not describe: the last one seen under the same
//   selector (the Multiboot state: flat CS and no GDT), else a CS loaded in
//   real mode just before CR0.PE was set (until the far jump), selector << 4.
uint64_t Vcpu::Engine::code_base() {
  const auto selector = static_cast<uint16_t>(read_reg(UC_X86_REG_CS));
  uint64_t base = uint64_t{selector} << 4;
  if (read_reg(UC_X86_REG_CR0) & kCr0ProtectionEnable) {
    if (const std::optional<SegmentDescriptor> cs = read_descriptor(selector); cs && cs->is_code()) {
      const bool long_mode = read_cpu_msr(kMsrEfer) & kEferLongModeActive;
      base = long_mode && cs->long_mode() ? 0 : cs->base();
    } else if (selector == known_cs.selector) {
      base = known_cs.base;
    }
  }
  known_cs = {selector, base};
  return base;
}

void Vcpu::Engine::reset_for_init() {
  nmi_blocked = false;  // INIT clears NMI blocking (SDM table 9-1)
  // The context brings real mode with it; the writes below set values whose
  // hidden effects that context already has.
  RealModeSegmentLoader::for_this_thread().enter_real_mode(uc);
  write_reg(UC_X86_REG_CR0, kCr0AfterInit);
  write_cpu_msr(kMsrEfer, 0);
  for (int reg : {UC_X86_REG_CR2, UC_X86_REG_CR3, UC_X86_REG_CR4}) write_reg(reg, 0);
  for (int reg : {UC_X86_REG_RAX, UC_X86_REG_RBX, UC_X86_REG_RCX, UC_X86_REG_RDX, UC_X86_REG_RSI, UC_X86_REG_RDI,
                  UC_X86_REG_RBP, UC_X86_REG_RSP, UC_X86_REG_R8, UC_X86_REG_R9, UC_X86_REG_R10, UC_X86_REG_R11,
                  UC_X86_REG_R12, UC_X86_REG_R13, UC_X86_REG_R14, UC_X86_REG_R15})
    write_reg(reg, 0);
  write_reg(UC_X86_REG_RFLAGS, kRflagsInterruptsOff);
  write_reg(UC_X86_REG_DR6, kDr6AfterInit);
  write_reg(UC_X86_REG_DR7, kDr7AfterInit);
  const uc_x86_mmr table{.selector = 0, .base = 0, .limit = kDescriptorTableLimitAfterInit, .flags = 0};
  for (int reg : {UC_X86_REG_GDTR, UC_X86_REG_IDTR, UC_X86_REG_LDTR, UC_X86_REG_TR})
    check(uc_reg_write(uc, reg, &table), "uc_reg_write (descriptor table register)");
  RealModeSegmentLoader::for_this_thread().load(
      uc, {{UC_X86_REG_CS, kResetCodeSelector}, {UC_X86_REG_DS, 0}, {UC_X86_REG_ES, 0}, {UC_X86_REG_SS, 0},
           {UC_X86_REG_FS, 0}, {UC_X86_REG_GS, 0}});
  write_reg(UC_X86_REG_RIP, kResetIp);
  known_cs = {kResetCodeSelector, uint64_t{kResetCodeSelector} << 4};
  shadow = false;
  stop_requested = false;
  waits_for_sipi = true;
}

void Vcpu::Engine::start_at_sipi(uint8_t vector) {
  if (!waits_for_sipi)
    throw std::logic_error(fmt::format("cpu{}: SIPI without INIT (the machine ignores a SIPI to a running CPU)", index));
  const auto selector = static_cast<uint16_t>(vector << 8);
  RealModeSegmentLoader::for_this_thread().load(uc, {{UC_X86_REG_CS, selector}});
  write_reg(UC_X86_REG_RIP, 0);
  known_cs = {selector, uint64_t{selector} << 4};
  waits_for_sipi = false;
  // The trampoline was written by another vCPU: drop whatever this engine
  // translated (the notes, "code written by others").
  flush_translations();
}

// ---------------------------------------------------------------------------
// Interrupt and exception delivery (SDM Vol. 3A 6.12 and 20.1.4). Unicorn has
// no inject API (the notes): the frame is written into guest RAM by the host
// (linear = physical), then RSP, RFLAGS, CS and RIP are set and the next
// uc_emu_start begins at the handler. Nothing is written before every check
// has passed, so a failed delivery leaves the vCPU as it was.

Injection Vcpu::Engine::inject(uint8_t vector, std::optional<uint32_t> error_code, bool exception) {
  const std::string what = fmt::format(
      "vector {} ({})", vector,
      exception ? exception_name(vector) : vector == kNmiVector ? "NMI" : "external interrupt");
  if (waits_for_sipi) return {false, what + ": the vCPU waits for SIPI"};
  Injection result;
  if (!(read_reg(UC_X86_REG_CR0) & kCr0ProtectionEnable))
    result = inject_real_mode(vector, what);
  else if (read_cpu_msr(kMsrEfer) & kEferLongModeActive)
    result = inject_long_mode(vector, error_code, what);
  else
    result = inject_protected_mode(vector, error_code, what);
  if (result) shadow = false;
  return result;
}

// Pushes `values` in order, each `width` bytes, below stack_base + sp (sp
// wraps at sp_mask). Returns the new stack pointer, or nullopt when the
// frame is not all in RAM (nothing is written then).
std::optional<uint64_t> Vcpu::Engine::push_frame(uint64_t stack_base, uint64_t sp, uint64_t sp_mask, unsigned width,
                                                 std::initializer_list<uint64_t> values) {
  std::vector<uint64_t> addresses;
  for (size_t i = 0; i < values.size(); ++i) {
    sp = (sp - width) & sp_mask;
    if (!ram.contains(stack_base + sp, width)) return std::nullopt;
    addresses.push_back(stack_base + sp);
  }
  auto address = addresses.begin();
  for (uint64_t value : values) std::memcpy(ram.bytes(*address++, width).data(), &value, width);  // little endian
  return sp;
}

// Same privilege only: the handler's code segment may not be more
// privileged than the interrupted code (no stack switch through the TSS),
// and its descriptor must be the one CS holds, because a CS write to a
// UC_MODE_64 engine sets the selector alone (docs/unicorn.md).
std::optional<std::string> Vcpu::Engine::check_handler_segment(uint16_t selector, bool need_64_bit) {
  const auto current = static_cast<uint16_t>(read_reg(UC_X86_REG_CS));
  const std::optional<SegmentDescriptor> target = read_descriptor(selector);
  if (!target || !target->is_code())
    return fmt::format("gate selector {:#x} is not a present code segment", selector);
  if (need_64_bit && !target->long_mode())
    return fmt::format("gate selector {:#x} is not a 64-bit code segment", selector);
  const unsigned cpl = current & 3;
  if (target->dpl() < cpl)
    return fmt::format("the handler runs in ring {} and the interrupted code in ring {}: privilege changes are "
                       "not supported",
                       target->dpl(), cpl);
  if ((selector & ~3u) != (current & ~3u)) {
    const std::optional<SegmentDescriptor> now = read_descriptor(current);
    if (!now || !now->same_segment_as(*target))
      return fmt::format("gate selector {:#x} differs from CS {:#x} and so does its descriptor: the vCPU cannot "
                         "load a code segment descriptor",
                         selector, current);
  }
  return std::nullopt;
}

void Vcpu::Engine::enter_handler(uint16_t selector, uint64_t offset, uint64_t rflags) {
  write_reg(UC_X86_REG_RFLAGS, rflags);
  const auto current = static_cast<uint16_t>(read_reg(UC_X86_REG_CS));
  const auto cs = static_cast<uint16_t>((selector & ~3u) | (current & 3u));  // RPL = CPL
  if (cs != current) write_reg(UC_X86_REG_CS, cs);  // same descriptor: see check_handler_segment
  write_reg(UC_X86_REG_RIP, offset);
}

// SDM Vol. 3A 20.1.4: the IVT holds IP:CS pairs; FLAGS, CS and IP are
// pushed; IF, TF and AC are cleared. Real mode pushes no error code.
Injection Vcpu::Engine::inject_real_mode(uint8_t vector, const std::string& what) {
  const uc_x86_mmr ivt = read_mmr(UC_X86_REG_IDTR);
  const uint64_t entry = uint64_t{vector} * 4;
  const std::string where = fmt::format("{} in real mode: IVT entry at {:#x}", what, ivt.base + entry);
  if (entry + 3 > ivt.limit) return {false, fmt::format("{} is beyond the IVT limit {:#x}", where, ivt.limit)};
  if (!ram.contains(ivt.base + entry, 4)) return {false, where + " is outside RAM"};
  const auto ip = ram.read<uint16_t>(ivt.base + entry);
  const auto cs = ram.read<uint16_t>(ivt.base + entry + 2);
  const uint64_t rflags = read_reg(UC_X86_REG_RFLAGS);
  const uint64_t rsp = read_reg(UC_X86_REG_RSP);
  const uint64_t ss_base = (read_reg(UC_X86_REG_SS) & 0xFFFF) << 4;
  const std::optional<uint64_t> sp =
      push_frame(ss_base, rsp & 0xFFFF, 0xFFFF, 2,
                 {rflags & 0xFFFF, read_reg(UC_X86_REG_CS) & 0xFFFF, read_reg(UC_X86_REG_RIP) & 0xFFFF});
  if (!sp) return {false, fmt::format("{}: the frame at SS:SP {:#x}:{:#x} is outside RAM", where, ss_base >> 4, rsp & 0xFFFF)};
  write_reg(UC_X86_REG_RSP, (rsp & ~uint64_t{0xFFFF}) | *sp);
  write_reg(UC_X86_REG_RFLAGS, rflags & ~(kRflagsInterrupt | kRflagsTrap | kRflagsAlignmentCheck));
  RealModeSegmentLoader::for_this_thread().load(uc, {{UC_X86_REG_CS, cs}});
  write_reg(UC_X86_REG_RIP, ip);
  known_cs = {cs, uint64_t{cs} << 4};
  return {true, {}};
}

// SDM Vol. 3A 6.11, 6.12.1: 8-byte gates; EFLAGS, CS, EIP and the error
// code are pushed on the current stack; TF, NT, RF and VM are cleared, and
// IF for an interrupt gate.
Injection Vcpu::Engine::inject_protected_mode(uint8_t vector, std::optional<uint32_t> error_code,
                                              const std::string& what) {
  const uc_x86_mmr idt = read_mmr(UC_X86_REG_IDTR);
  const uint64_t entry = uint64_t{vector} * 8;
  const std::string where = fmt::format("{} in 32-bit protected mode: IDT gate at {:#x}", what, idt.base + entry);
  if (entry + 7 > idt.limit) return {false, fmt::format("{} is beyond the IDT limit {:#x}", where, idt.limit)};
  if (!ram.contains(idt.base + entry, 8)) return {false, where + " is outside RAM"};
  const auto gate = ram.read<uint64_t>(idt.base + entry);
  const SegmentDescriptor as_descriptor{gate};  // same P, DPL and type fields
  const auto selector = static_cast<uint16_t>(gate >> 16);
  const uint64_t offset = (gate & 0xFFFF) | ((gate >> 48) << 16);
  const uint8_t type = as_descriptor.type();
  if (!as_descriptor.present()) return {false, where + " is not present"};
  if (as_descriptor.code_or_data() || (type != kInterruptGate && type != kTrapGate)) {
    const char* kind = type == kTaskGate                                    ? "a task gate"
                       : type == kInterruptGate16 || type == kTrapGate16 ? "a 16-bit gate"
                                                                            : "not an interrupt or trap gate";
    return {false, fmt::format("{} is {} (type {:#x}): not supported", where, kind, type)};
  }
  if (std::optional<std::string> why = check_handler_segment(selector, false)) return {false, where + ": " + *why};

  const auto ss = static_cast<uint16_t>(read_reg(UC_X86_REG_SS));
  const std::optional<SegmentDescriptor> stack = read_descriptor(ss);
  // A stack segment the GDT does not describe is the flat one a loader set.
  const uint64_t stack_base = stack ? stack->base() : 0;
  const uint64_t sp_mask = !stack || stack->big() ? 0xFFFF'FFFF : 0xFFFF;
  const uint64_t rsp = read_reg(UC_X86_REG_RSP);
  const uint64_t rflags = read_reg(UC_X86_REG_RFLAGS);
  const uint64_t cs = read_reg(UC_X86_REG_CS) & 0xFFFF;
  const uint64_t eip = read_reg(UC_X86_REG_RIP) & 0xFFFF'FFFF;
  const std::optional<uint64_t> sp =
      error_code ? push_frame(stack_base, rsp & sp_mask, sp_mask, 4, {rflags & 0xFFFF'FFFF, cs, eip, *error_code})
                 : push_frame(stack_base, rsp & sp_mask, sp_mask, 4, {rflags & 0xFFFF'FFFF, cs, eip});
  if (!sp) return {false, fmt::format("{}: the frame below ESP {:#x} is outside RAM", where, rsp & sp_mask)};
  write_reg(UC_X86_REG_RSP, (rsp & ~sp_mask) | *sp);
  uint64_t cleared = kRflagsTrap | kRflagsNestedTask | kRflagsResume | kRflagsVirtual8086;
  if (type == kInterruptGate) cleared |= kRflagsInterrupt;
  enter_handler(selector, offset, rflags & ~cleared);
  return {true, {}};
}

// SDM Vol. 3A 6.14: 16-byte gates; RSP aligned down to 16 (or the IST
// stack); SS, RSP, RFLAGS, CS, RIP and the error code pushed as 8 bytes each.
// SS is not changed: there is no privilege change.
Injection Vcpu::Engine::inject_long_mode(uint8_t vector, std::optional<uint32_t> error_code, const std::string& what) {
  const uc_x86_mmr idt = read_mmr(UC_X86_REG_IDTR);
  const uint64_t entry = uint64_t{vector} * 16;
  const std::string where = fmt::format("{} in long mode: IDT gate at {:#x}", what, idt.base + entry);
  if (entry + 15 > idt.limit) return {false, fmt::format("{} is beyond the IDT limit {:#x}", where, idt.limit)};
  if (!ram.contains(idt.base + entry, 16)) return {false, where + " is outside RAM"};
  const auto low = ram.read<uint64_t>(idt.base + entry);
  const auto high = ram.read<uint64_t>(idt.base + entry + 8);
  const SegmentDescriptor as_descriptor{low};
  const auto selector = static_cast<uint16_t>(low >> 16);
  const uint64_t offset = (low & 0xFFFF) | (((low >> 48) & 0xFFFF) << 16) | (high << 32);
  const unsigned ist = (low >> 32) & 7;
  const uint8_t type = as_descriptor.type();
  if (!as_descriptor.present()) return {false, where + " is not present"};
  if (as_descriptor.code_or_data() || (type != kInterruptGate && type != kTrapGate))
    return {false, fmt::format("{} is not a 64-bit interrupt or trap gate (type {:#x})", where, type)};
  if (std::optional<std::string> why = check_handler_segment(selector, true)) return {false, where + ": " + *why};

  const uint64_t rsp = read_reg(UC_X86_REG_RSP);
  uint64_t stack = rsp;
  if (ist != 0) {
    const uint64_t slot = read_mmr(UC_X86_REG_TR).base + kTssIst1Offset + 8 * (ist - 1);
    if (!ram.contains(slot, 8)) return {false, fmt::format("{}: IST{} slot at {:#x} is outside RAM", where, ist, slot)};
    stack = ram.read<uint64_t>(slot);
  }
  stack &= ~uint64_t{0xF};
  const uint64_t rflags = read_reg(UC_X86_REG_RFLAGS);
  const uint64_t ss = read_reg(UC_X86_REG_SS) & 0xFFFF;
  const uint64_t cs = read_reg(UC_X86_REG_CS) & 0xFFFF;
  const uint64_t rip = read_reg(UC_X86_REG_RIP);
  constexpr uint64_t kAll = ~uint64_t{0};
  const std::optional<uint64_t> sp = error_code
                                         ? push_frame(0, stack, kAll, 8, {ss, rsp, rflags, cs, rip, *error_code})
                                         : push_frame(0, stack, kAll, 8, {ss, rsp, rflags, cs, rip});
  if (!sp) return {false, fmt::format("{}: the frame below RSP {:#x} is outside RAM", where, stack)};
  write_reg(UC_X86_REG_RSP, *sp);
  uint64_t cleared = kRflagsTrap | kRflagsNestedTask | kRflagsResume | kRflagsVirtual8086;
  if (type == kInterruptGate) cleared |= kRflagsInterrupt;
  enter_handler(selector, offset, rflags & ~cleared);
  return {true, {}};
}

// ---------------------------------------------------------------------------
// MMIO windows: uc_mmio_map calls back synchronously in the middle of a
// block (the notes). A stop requested from a write is taken at the next
// block boundary like any other request, so the write is not replayed
// (RequestStopFromAnMmioWriteDoesNotReplayTheWrite).

uint64_t Vcpu::Engine::on_mmio_read(uc_engine*, uint64_t offset, unsigned size, void* user) {
  auto& w = *static_cast<MmioWindow*>(user);
  return w.engine->guarded<uint64_t>([&] { return w.handler->read(offset, size); });
}

void Vcpu::Engine::on_mmio_write(uc_engine*, uint64_t offset, unsigned size, uint64_t value, void* user) {
  auto& w = *static_cast<MmioWindow*>(user);
  w.engine->guarded([&] { w.handler->write(offset, size, value); });
}

void Vcpu::Engine::map_mmio(uint64_t base, uint64_t size, MmioHandler& handler) {
  if (size == 0 || base % kPageSize || size % kPageSize || base + size < base)
    throw std::invalid_argument(fmt::format("MMIO window {:#x}+{:#x} is not whole 4 KiB pages", base, size));
  if (base < ram.size())
    throw std::invalid_argument(fmt::format("MMIO window at {:#x} overlaps RAM (0..{:#x})", base, ram.size()));
  auto window = std::make_unique<MmioWindow>(MmioWindow{this, &handler, size});
  const uc_err err = uc_mmio_map(uc, base, size, on_mmio_read, window.get(), on_mmio_write, window.get());
  if (err != UC_ERR_OK)
    throw std::invalid_argument(fmt::format("MMIO window {:#x}+{:#x}: {}", base, size, uc_strerror(err)));
  mmio.emplace(base, std::move(window));
}

void Vcpu::Engine::unmap_mmio(uint64_t base, uint64_t size) {
  const auto it = mmio.find(base);
  if (it == mmio.end() || it->second->size != size)
    throw std::invalid_argument(fmt::format("no MMIO window {:#x}+{:#x}", base, size));
  check(uc_mem_unmap(uc, base, size), "uc_mem_unmap (MMIO)");
  mmio.erase(it);
}

// ---------------------------------------------------------------------------
// Vcpu: the public face.

Vcpu::Vcpu(unsigned index, GuestRam& ram, VcpuHost& host, EngineCpu engine_cpu)
    : engine_(std::make_unique<Engine>(index, ram, host, engine_cpu)) {}

Vcpu::~Vcpu() = default;

void Vcpu::enter_multiboot(uint32_t entry, uint32_t eax, uint32_t ebx) { engine_->enter_multiboot(entry, eax, ebx); }

VcpuExit Vcpu::run(uint64_t budget) { return engine_->run(budget); }

void Vcpu::reset_for_init() { engine_->reset_for_init(); }

void Vcpu::start_at_sipi(uint8_t vector) { engine_->start_at_sipi(vector); }

bool Vcpu::waiting_for_sipi() const { return engine_->waits_for_sipi; }

Injection Vcpu::inject_interrupt(uint8_t vector) { return engine_->inject(vector, std::nullopt, false); }

Injection Vcpu::inject_nmi() {
  Injection injection = engine_->inject(kNmiVector, std::nullopt, false);
  if (injection) engine_->nmi_blocked = true;
  return injection;
}

bool Vcpu::nmi_blocked() const { return engine_->nmi_blocked; }

void Vcpu::stop_when_interruptible(bool on) { engine_->watch_interrupt_window = on; }

Injection Vcpu::inject_exception(uint8_t vector, std::optional<uint32_t> error_code) {
  return engine_->inject(vector, error_code, true);
}

bool Vcpu::interrupt_window_open() const {
  return !engine_->waits_for_sipi && !engine_->shadow && (engine_->read_reg(UC_X86_REG_RFLAGS) & kRflagsInterrupt);
}

void Vcpu::map_mmio(uint64_t base, uint64_t size, MmioHandler& handler) { engine_->map_mmio(base, size, handler); }

void Vcpu::unmap_mmio(uint64_t base, uint64_t size) { engine_->unmap_mmio(base, size); }

void Vcpu::request_stop() { engine_->stop_requested = true; }

void Vcpu::retire_emulated_instruction() { engine_->retire_emulated_instruction(); }

uint64_t Vcpu::pauses() const { return engine_->pauses_retired; }

uint64_t Vcpu::instructions() const { return engine_->retired + engine_->in_flight; }

void Vcpu::set_trace(std::FILE* out) { engine_->set_trace(out); }

void Vcpu::flush_translations() { engine_->flush_translations(); }

unsigned Vcpu::index() const { return engine_->index; }

VcpuState Vcpu::state() const {
  const Engine& e = *engine_;
  const auto r = [&](int reg) { return e.read_reg(reg); };
  const auto selector = [&](int reg) { return static_cast<uint16_t>(e.read_reg(reg)); };
  return {
      .rax = r(UC_X86_REG_RAX), .rbx = r(UC_X86_REG_RBX), .rcx = r(UC_X86_REG_RCX), .rdx = r(UC_X86_REG_RDX),
      .rsi = r(UC_X86_REG_RSI), .rdi = r(UC_X86_REG_RDI), .rbp = r(UC_X86_REG_RBP), .rsp = r(UC_X86_REG_RSP),
      .r8 = r(UC_X86_REG_R8),   .r9 = r(UC_X86_REG_R9),   .r10 = r(UC_X86_REG_R10), .r11 = r(UC_X86_REG_R11),
      .r12 = r(UC_X86_REG_R12), .r13 = r(UC_X86_REG_R13), .r14 = r(UC_X86_REG_R14), .r15 = r(UC_X86_REG_R15),
      .rip = r(UC_X86_REG_RIP), .rflags = r(UC_X86_REG_RFLAGS),
      .cr0 = r(UC_X86_REG_CR0), .cr3 = r(UC_X86_REG_CR3), .cr4 = r(UC_X86_REG_CR4), .efer = e.read_cpu_msr(kMsrEfer),
      .cs = selector(UC_X86_REG_CS), .ds = selector(UC_X86_REG_DS), .es = selector(UC_X86_REG_ES),
      .ss = selector(UC_X86_REG_SS),
  };
}

}  // namespace topolab
