// SPDX-License-Identifier: GPL-2.0-or-later
// What the vCPU knows of the guest's code, with no engine involved: the
// instructions of a translated block decoded with Capstone (their count,
// the trap sites the engine must stop at, STI shadows, REP strings), and
// the cache of decoded blocks keyed by linear address, with far pages for
// higher-half code. Used by the engine (vcpu_engine.h); no Unicorn here.
#pragma once

#include <capstone/capstone.h>
#include <sys/mman.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/event_kinds.h"

namespace topolab {
namespace vcpu_internal {

inline constexpr uint64_t kNoAddress = ~uint64_t{0};
inline constexpr uint64_t kPageSize = 4096;

enum class CodeSize : uint8_t { Bits16, Bits32, Bits64 };
inline constexpr std::array kCodeSizes = {CodeSize::Bits16, CodeSize::Bits32, CodeSize::Bits64};

inline cs_mode capstone_mode(CodeSize size) {
  switch (size) {
    case CodeSize::Bits16: return CS_MODE_16;
    case CodeSize::Bits32: return CS_MODE_32;
    case CodeSize::Bits64: return CS_MODE_64;
  }
  throw std::logic_error("unknown code size");
}

// Instructions Unicorn would run wrongly; run() emulates them instead.
// Sites the vCPU hooks: MONITOR
// and MWAIT it stops at for the machine to emulate (Unicorn 2.1.3 raises #UD
// for them on some engine models and runs them as no-ops on others:
// MonitorStopsAfterInitAndSipiOnEveryEngineCpu); RDTSCP only on a machine
// without IA32_TSC_AUX, where it is #UD (elsewhere the RDTSCP instruction
// hook answers it). IRET and PAUSE it only watches: an IRET ends NMI
// blocking (SDM 6.7.1), and PAUSEs are counted.
// System: a serializing system instruction (base/event_kinds.h), watched so
// that the clock charges its cycles (system_instruction, below).
// SYSCALL and SYSENTER are stopped at and emulated too: Unicorn runs them
// as no-ops that only call a hook (arch/fast_syscall has their rules).
// RDMSR and WRMSR are no sites: their instruction hooks answer them
// (topolab's engine patch 0003); the kinds name them for execute_trap.
enum class TrapKind : uint8_t {
  Rdmsr, Wrmsr, Rdpmc, Rdtscp, Monitor, Mwait, Syscall, Sysenter, Iret, Pause, MovToCr8, MovFromCr8, MovToCr4, System,
  MovFromDr,  // watched for DR7.GD only (MOV to DR is a System site)
};

inline bool is_watched(TrapKind kind) {
  return kind == TrapKind::Iret || kind == TrapKind::Pause || kind == TrapKind::System || kind == TrapKind::MovFromDr;
}

inline std::optional<TrapKind> trap_kind(unsigned capstone_id) {
  switch (capstone_id) {
    case X86_INS_RDPMC: return TrapKind::Rdpmc;  // QEMU's TCG raises #UD for it
    case X86_INS_RDTSCP: return TrapKind::Rdtscp;
    case X86_INS_MONITOR: return TrapKind::Monitor;
    case X86_INS_MWAIT: return TrapKind::Mwait;
    case X86_INS_SYSCALL: return TrapKind::Syscall;
    case X86_INS_SYSENTER: return TrapKind::Sysenter;
    case X86_INS_IRET: case X86_INS_IRETD: case X86_INS_IRETQ: return TrapKind::Iret;
    case X86_INS_PAUSE: return TrapKind::Pause;
    default: return std::nullopt;
  }
}

// The opcode bytes each trapped instruction ends with (SDM Vol. 2).
inline std::span<const uint8_t> trap_opcode(TrapKind kind) {
  static constexpr uint8_t kRdpmc[] = {0x0F, 0x33},
                           kRdtscp[] = {0x0F, 0x01, 0xF9},
                           kMonitor[] = {0x0F, 0x01, 0xC8}, kMwait[] = {0x0F, 0x01, 0xC9},
                           kSyscall[] = {0x0F, 0x05}, kSysenter[] = {0x0F, 0x34};
  switch (kind) {
    case TrapKind::Rdpmc: return kRdpmc;
    case TrapKind::Rdtscp: return kRdtscp;
    case TrapKind::Monitor: return kMonitor;
    case TrapKind::Mwait: return kMwait;
    case TrapKind::Syscall: return kSyscall;
    case TrapKind::Sysenter: return kSysenter;
    case TrapKind::Iret: case TrapKind::Pause: case TrapKind::System: case TrapKind::MovFromDr:
      break;  // watched; a MOV DR stops only for DR7.GD (is_mov_dr)
    case TrapKind::Rdmsr: case TrapKind::Wrmsr: break;  // answered by their instruction hooks
    case TrapKind::MovToCr8: case TrapKind::MovFromCr8: case TrapKind::MovToCr4: break;  // see cr8_access
  }
  throw std::logic_error("no emulated opcode for this trap kind");
}


// Legacy prefixes, and REX in 64-bit code (SDM Vol. 2 2.1.1, 2.2.1).
inline bool is_prefix(uint8_t b, CodeSize size) {
  return b == 0xF2 || b == 0xF3 || b == 0x66 || b == 0x67 || b == 0xF0 || b == 0x2E || b == 0x36 || b == 0x3E ||
         b == 0x26 || b == 0x64 || b == 0x65 || (size == CodeSize::Bits64 && (b & 0xF0) == 0x40);
}

// ICEBP (INT1, F1) behind any legacy prefixes or REX: its length, else 0.
inline size_t icebp_length(std::span<const uint8_t> bytes, CodeSize size) {
  size_t i = 0;
  while (i < bytes.size() && is_prefix(bytes[i], size)) ++i;
  return i < bytes.size() && bytes[i] == 0xF1 ? i + 1 : 0;
}

// STI, MOV SS and POP SS hold off maskable interrupts for one instruction
// (SDM Vol. 3A 6.8.3). Unicorn ends a block after each of them
// (StiShadowDefersTheInterruptPastTheHlt, MovSsEndsItsBlockAndShadowsThe-
// NextInstruction), so a block that ends with one leaves the first
// instruction of the next block in the shadow; that instruction is then
// translated as a block of its own.
inline bool sets_interrupt_shadow(std::span<const uint8_t> bytes, CodeSize size) {
  size_t i = 0;
  while (i < bytes.size() && is_prefix(bytes[i], size)) ++i;
  if (i >= bytes.size()) return false;
  const uint8_t op = bytes[i];
  if (op == 0xFB) return true;                           // sti
  if (op == 0x17 && size != CodeSize::Bits64) return true;  // pop ss
  return op == 0x8E && i + 1 < bytes.size() && ((bytes[i + 1] >> 3) & 7) == 2;  // mov ss, r/m16
}

// MOV to or from CR8 in 64-bit code (SDM Vol. 2B "MOV—Move to/from Control
// Registers"): REX.R, 0F 22 /r (to) or 0F 20 /r (from), ModR/M.reg = 0.
// The engine has no local APIC for CR8 to reach (its TPR), so the vCPU
// traps both and the machine's APIC answers. `gpr` is the general register
// ModR/M.rm and REX.B name (0 RAX ... 15 R15).
struct Cr8Access {
  TrapKind kind;
  unsigned gpr;
};
inline std::optional<Cr8Access> cr8_access(std::span<const uint8_t> bytes, CodeSize size) {
  if (size == CodeSize::Bits16) return std::nullopt;
  size_t i = 0;
  uint8_t rex = 0;
  while (i < bytes.size() && is_prefix(bytes[i], size)) {
    if ((bytes[i] & 0xF0) == 0x40) rex = bytes[i];
    ++i;
  }
  if (i + 3 > bytes.size() || bytes[i] != 0x0F || (bytes[i + 1] != 0x22 && bytes[i + 1] != 0x20)) return std::nullopt;
  const uint8_t modrm = bytes[i + 2];
  const unsigned cr = ((modrm >> 3) & 7u) | ((rex & 0x04u) << 1);
  // MOV to CR4 too (any mode but real): its reserved bits must #GP, which
  // QEMU 5.0's TCG does not check (at_cr4).
  if (cr == 4 && bytes[i + 1] == 0x22) return Cr8Access{TrapKind::MovToCr4, (modrm & 7u) | ((rex & 0x01u) << 3)};
  if (size != CodeSize::Bits64 || cr != 8) return std::nullopt;  // CR8 is REX.R with reg 0
  return Cr8Access{bytes[i + 1] == 0x22 ? TrapKind::MovToCr8 : TrapKind::MovFromCr8,
                   (modrm & 7u) | ((rex & 0x01u) << 3)};
}

inline bool is_software_interrupt(unsigned capstone_id) {
  return capstone_id == X86_INS_INT3 || capstone_id == X86_INS_INT || capstone_id == X86_INS_INTO ||
         capstone_id == X86_INS_INT1;
}

// REP/REPE/REPNE in front of INS, OUTS, MOVS, CMPS, STOS, LODS or SCAS
// (SDM Vol. 2 "REP/REPE/REPZ/REPNE/REPNZ"). Capstone without detail mode
// does not report prefixes, so the bytes are read directly.
inline bool is_rep_string(std::span<const uint8_t> bytes, CodeSize size) {
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

// Whether an instruction has no effect the rest of the machine could see:
// it writes registers only (never memory, a port, an MSR or a control
// register) and makes no exit. Pause-loop exiting (emu/pause_loop.h) may
// skip a loop made of these alone. A short list, not Capstone's access
// flags alone: those miss implicit stores (PUSH, CALL, string
// instructions) and get some wrong (CMPXCHG's destination reads as a load
// in Capstone 4). Everything not on the list counts as a side effect.
inline bool without_side_effects(const cs_insn& insn) {
  switch (insn.id) {
    case X86_INS_MOV: case X86_INS_MOVZX: case X86_INS_MOVSX: case X86_INS_MOVSXD: case X86_INS_MOVABS:
    case X86_INS_LEA: case X86_INS_CMP: case X86_INS_TEST: case X86_INS_ADD: case X86_INS_SUB: case X86_INS_ADC:
    case X86_INS_SBB: case X86_INS_AND: case X86_INS_OR: case X86_INS_XOR: case X86_INS_NOT: case X86_INS_NEG:
    case X86_INS_INC: case X86_INS_DEC: case X86_INS_SHL: case X86_INS_SAL: case X86_INS_SHR: case X86_INS_SAR:
    case X86_INS_ROL: case X86_INS_ROR: case X86_INS_BT: case X86_INS_BSF: case X86_INS_BSR: case X86_INS_IMUL:
    case X86_INS_CDQ: case X86_INS_CDQE: case X86_INS_CQO: case X86_INS_CWDE: case X86_INS_CBW: case X86_INS_CWD:
    case X86_INS_NOP: case X86_INS_PAUSE: case X86_INS_LFENCE: case X86_INS_MFENCE: case X86_INS_SFENCE:
    case X86_INS_RDTSC: case X86_INS_RDTSCP: case X86_INS_JMP:
    case X86_INS_JAE: case X86_INS_JA: case X86_INS_JBE: case X86_INS_JB: case X86_INS_JE: case X86_INS_JGE:
    case X86_INS_JG: case X86_INS_JLE: case X86_INS_JL: case X86_INS_JNE: case X86_INS_JNO: case X86_INS_JNP:
    case X86_INS_JNS: case X86_INS_JO: case X86_INS_JP: case X86_INS_JS:
    case X86_INS_CMOVA: case X86_INS_CMOVAE: case X86_INS_CMOVB: case X86_INS_CMOVBE: case X86_INS_CMOVE:
    case X86_INS_CMOVG: case X86_INS_CMOVGE: case X86_INS_CMOVL: case X86_INS_CMOVLE: case X86_INS_CMOVNE:
    case X86_INS_CMOVNO: case X86_INS_CMOVNP: case X86_INS_CMOVNS: case X86_INS_CMOVO: case X86_INS_CMOVP:
    case X86_INS_CMOVS:
    case X86_INS_SETAE: case X86_INS_SETA: case X86_INS_SETBE: case X86_INS_SETB: case X86_INS_SETE:
    case X86_INS_SETGE: case X86_INS_SETG: case X86_INS_SETLE: case X86_INS_SETL: case X86_INS_SETNE:
    case X86_INS_SETNO: case X86_INS_SETNP: case X86_INS_SETNS: case X86_INS_SETO: case X86_INS_SETP:
    case X86_INS_SETS:
      break;
    default:
      return false;
  }
  const cs_x86& x86 = insn.detail->x86;
  if (x86.prefix[0] == X86_PREFIX_LOCK) return false;
  for (uint8_t i = 0; i < x86.op_count; ++i)
    if (x86.operands[i].type == X86_OP_MEM && (x86.operands[i].access & CS_AC_WRITE)) return false;
  return true;
}

// A block that is a whole counted loop on itself: PAUSEs and NOPs, then a
// decrement of one register and a branch back to the block's start while
// it has not run out:
//   dec r; jnz start        (or sub r, 1 / add r, -1; jnz): r turns (0: 2^w)
//   sub r, 1; jae start                                   : r + 1 turns
// Nothing else changes from turn to turn, so the block hook may run all
// turns but the last by subtracting them from the counter and adding their
// instructions (exact: the last turn, run for real, leaves the flags and
// the counter as the whole loop would). The guest library's delay loops
// and the sched guest's burn loop have this shape.
struct CountedLoop {
  x86_reg counter = X86_REG_INVALID;  // the 64-bit register holding it
  uint8_t width = 4;                  // bytes of it the loop counts in: 4 or 8
  bool runs_counter_plus_one = false;  // sub r, 1; jae
  uint8_t pauses = 0;                  // PAUSEs per turn
  // Turns the loop still runs when it is entered with `value` in the counter.
  uint64_t turns(uint64_t value) const {
    const uint64_t mask = width == 8 ? ~uint64_t{0} : 0xFFFF'FFFF;
    value &= mask;
    // Never more than the loop runs (fewer only means fewer turns skipped
    // at once): 2^64 turns do not fit, and a dec from 0 runs 2^w.
    if (runs_counter_plus_one) return value == ~uint64_t{0} ? value : value + 1;
    return value == 0 ? mask : value;
  }
};

// The 64-bit register a 32- or 64-bit general register is part of, and
// the width named; X86_REG_INVALID for anything else.
inline std::pair<x86_reg, uint8_t> general_register(x86_reg reg) {
  static constexpr std::array<std::array<x86_reg, 2>, 16> kNames = {{
      {X86_REG_EAX, X86_REG_RAX}, {X86_REG_ECX, X86_REG_RCX}, {X86_REG_EDX, X86_REG_RDX},
      {X86_REG_EBX, X86_REG_RBX}, {X86_REG_ESP, X86_REG_RSP}, {X86_REG_EBP, X86_REG_RBP},
      {X86_REG_ESI, X86_REG_RSI}, {X86_REG_EDI, X86_REG_RDI}, {X86_REG_R8D, X86_REG_R8},
      {X86_REG_R9D, X86_REG_R9},  {X86_REG_R10D, X86_REG_R10}, {X86_REG_R11D, X86_REG_R11},
      {X86_REG_R12D, X86_REG_R12}, {X86_REG_R13D, X86_REG_R13}, {X86_REG_R14D, X86_REG_R14},
      {X86_REG_R15D, X86_REG_R15}}};
  for (const auto& [r32, r64] : kNames) {
    if (reg == r32) return {r64, 4};
    if (reg == r64) return {r64, 8};
  }
  return {X86_REG_INVALID, 0};
}

// What decide_counted_loop needs of one instruction.
struct LoopStep {
  unsigned id = X86_INS_INVALID;
  x86_reg reg = X86_REG_INVALID;  // operand 0, a register
  std::optional<int64_t> imm;     // operand 1 (or 0 for a branch), an immediate
  bool lock = false;
  bool jump = false;  // JMP or a Jcc (Capstone's jump group)
  static LoopStep of(const cs_insn& insn) {
    LoopStep s;
    s.id = insn.id;
    const cs_detail& detail = *insn.detail;
    s.jump = std::find(detail.groups, detail.groups + detail.groups_count, X86_GRP_JUMP) !=
             detail.groups + detail.groups_count;
    const cs_x86& x86 = detail.x86;
    s.lock = x86.prefix[0] == X86_PREFIX_LOCK;
    if (x86.op_count >= 1 && x86.operands[0].type == X86_OP_REG) s.reg = x86.operands[0].reg;
    if (x86.op_count == 1 && x86.operands[0].type == X86_OP_IMM) s.imm = x86.operands[0].imm;
    if (x86.op_count == 2 && x86.operands[1].type == X86_OP_IMM) s.imm = x86.operands[1].imm;
    return s;
  }
};

inline std::optional<CountedLoop> decide_counted_loop(std::span<const LoopStep> steps, uint64_t start) {
  if (steps.size() < 2) return std::nullopt;
  CountedLoop loop;
  for (const LoopStep& s : steps.first(steps.size() - 2)) {
    if (s.id == X86_INS_PAUSE) ++loop.pauses;
    else if (s.id != X86_INS_NOP) return std::nullopt;
  }
  const LoopStep& step = steps[steps.size() - 2];
  const LoopStep& branch = steps.back();
  if (step.lock || !branch.imm || static_cast<uint64_t>(*branch.imm) != start) return std::nullopt;
  const auto [counter, width] = general_register(step.reg);
  if (counter == X86_REG_INVALID || counter == X86_REG_RSP) return std::nullopt;
  loop.counter = counter;
  loop.width = width;
  const bool dec = step.id == X86_INS_DEC && !step.imm;
  const bool sub1 = step.id == X86_INS_SUB && step.imm == 1;
  const bool add_minus1 = step.id == X86_INS_ADD && step.imm == -1;
  if (branch.id == X86_INS_JNE && (dec || sub1 || add_minus1)) return loop;
  if (branch.id == X86_INS_JAE && sub1) {
    loop.runs_counter_plus_one = true;
    return loop;
  }
  return std::nullopt;
}

struct TrapSite {
  uint64_t address;
  TrapKind kind;
  uint8_t length;
  uint8_t gpr = 0;  // MOV CR8: the general register (Cr8Access::gpr)
  SystemInstruction system = SystemInstruction::Cr0Write;  // TrapKind::System: which
};

// The serializing system instructions the clock charges cycles for
// (model/cost_model.h), but MOV to CR4, whose own trap kind charges them.
inline std::optional<SystemInstruction> system_instruction(const cs_insn& insn) {
  switch (insn.id) {
    case X86_INS_CLTS: case X86_INS_LMSW: return SystemInstruction::Cr0Write;
    case X86_INS_INVLPG: return SystemInstruction::Invlpg;
    case X86_INS_INVPCID: return SystemInstruction::Invpcid;
    case X86_INS_LGDT: case X86_INS_LIDT: case X86_INS_LLDT: case X86_INS_LTR: return SystemInstruction::DescriptorLoad;
    case X86_INS_WBINVD: case X86_INS_INVD: return SystemInstruction::CacheFlush;
    case X86_INS_MOV: break;
    default: return std::nullopt;
  }
  const cs_x86& x86 = insn.detail->x86;
  if (x86.op_count != 2 || x86.operands[0].type != X86_OP_REG) return std::nullopt;
  const x86_reg reg = x86.operands[0].reg;
  if (reg == X86_REG_CR0) return SystemInstruction::Cr0Write;
  if (reg == X86_REG_CR3) return SystemInstruction::Cr3Write;
  if (reg >= X86_REG_DR0 && reg <= X86_REG_DR15) return SystemInstruction::DrWrite;
  return std::nullopt;
}

// MOV from a debug register (0F 21 /r): a site for DR7.GD alone, which
// makes every MOV to or from a debug register fault (SDM Vol. 3B 18.2.4).
inline bool is_mov_from_dr(const cs_insn& insn) {
  if (insn.id != X86_INS_MOV) return false;
  const cs_x86& x86 = insn.detail->x86;
  return x86.op_count == 2 && x86.operands[1].type == X86_OP_REG && x86.operands[1].reg >= X86_REG_DR0 &&
         x86.operands[1].reg <= X86_REG_DR15;
}

// The bytes of a MOV to or from a debug register end in 0F 21 or 0F 23 and
// ModR/M (the instruction may have been rewritten since it was decoded).
inline bool is_mov_dr(std::span<const uint8_t> bytes) {
  return bytes.size() >= 3 && bytes[bytes.size() - 3] == 0x0F &&
         (bytes[bytes.size() - 2] == 0x21 || bytes[bytes.size() - 2] == 0x23);
}

// One translated block as Capstone sees it.
struct DecodedBlock {
  uint64_t start = 0;
  uint32_t size = 0;
  uint32_t count = 0;  // instructions retired when the block runs to its end
  // The block that ran after this one last time: the block hook tries it
  // first, which spares it the cache's three dependent loads on the common
  // path (a loop, a call and its return); beside start and size, on the
  // cache line the hook reads anyway. Valid while the cache lives:
  // BlockCache never frees a block before clear().
  mutable const DecodedBlock* next = nullptr;
  // xxHash3 of the bytes decoded: a block translated again at the same start
  // and size (the guest rewrote its code, as Linux's alternatives and static
  // keys do) is decoded again only if they changed (on_translate).
  uint64_t code_hash = 0;
  CodeSize code_size = CodeSize::Bits32;
  bool fully_decoded = true;  // false: Capstone stopped early; the rest counts as one
  bool ends_with_software_interrupt = false;
  bool ends_with_hlt = false;
  bool ends_with_interrupt_shadow = false;  // last instruction: STI, MOV SS or POP SS
  // Some instruction may have an effect outside the registers (a store,
  // I/O, an exit; without_side_effects): a pause loop through it is no spin.
  bool has_side_effects = false;
  std::optional<CountedLoop> counted_loop;
  // A loop on itself that only changes registers: it ends with a jump or a
  // conditional jump back to its start, and no instruction in it has a side
  // effect, pauses or reads the time (`1: cmp dword [x], 0; je 1b`). A turn
  // that leaves every register as it found it is then followed by the same
  // turn for ever, until something else writes the memory it reads
  // (watch_self_loop proves it idle). Not a counted loop, which always moves.
  bool loops_without_effects = false;
  // For the loop watch (emu/loop_watch.h WatchedBlock): RDTSC or RDTSCP in
  // it; a MOV to a segment, control or debug register (state the register
  // comparison does not see); no memory operand whose address a register
  // gives; where it can go when its last instruction is done.
  bool reads_time = false;
  bool writes_system_state = false;
  bool cannot_fault = true;
  // Its side effects, if any, are stack transfers alone (PUSH of a register,
  // an immediate or memory; CALL; POP to a register; RET without an
  // immediate): how many pushes and pops one pass makes, and whether some
  // other instruction writes the stack pointer (which would move where they
  // land).
  bool stack_effects_only = true;
  uint8_t stack_pushes = 0, stack_pops = 0;
  bool writes_stack_pointer = false;
  bool successors_known = false;
  std::array<uint64_t, 2> successors{};
  uint8_t successor_count = 0;
  uint64_t rep_string_tail = kNoAddress;  // address of a final REP string instruction
  std::vector<uint16_t> offsets;          // instruction starts, from `start`
  std::vector<TrapSite> traps;

  // Instructions of this block retired when execution stands at `rip`. A
  // `rip` outside the block means the block ran to its end and left.
  uint32_t instructions_before(uint64_t rip) const {
    if (rip < start || rip - start >= size) return count;
    const auto offset = static_cast<uint16_t>(rip - start);
    return static_cast<uint32_t>(std::lower_bound(offsets.begin(), offsets.end(), offset) - offsets.begin());
  }
  uint64_t address_of(uint32_t index) const { return start + offsets.at(index); }
  bool rep_string_tail_set() const { return rep_string_tail != kNoAddress; }
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
      // Operands for without_side_effects; decoding happens once per block.
      cs_option(h.cs, CS_OPT_DETAIL, CS_OPT_ON);
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
    std::vector<LoopStep> steps;
    while (left > 0) {
      const uint64_t insn_address = at;
      if (!cs_disasm_iter(h.cs, &bytes, &left, &at, h.insn)) {
        block.fully_decoded = false;
        block.offsets.push_back(static_cast<uint16_t>(insn_address - address));
        block.ends_with_software_interrupt = false;
        block.ends_with_hlt = false;
        block.ends_with_interrupt_shadow = false;
        block.rep_string_tail = kNoAddress;
        block.has_side_effects = true;
        break;
      }
      add_instruction(block, *h.insn, code.subspan(insn_address - address, h.insn->size));
      if (steps.size() < kMaxLoopSteps) steps.push_back(LoopStep::of(*h.insn));
    }
    block.count = static_cast<uint32_t>(block.offsets.size());
    if (block.fully_decoded && steps.size() == block.count && !block.rep_string_tail_set())
      block.counted_loop = decide_counted_loop(steps, address);
    block.loops_without_effects = block.fully_decoded && steps.size() == block.count && !block.has_side_effects &&
                                  !block.writes_system_state && block.traps.empty() && !block.counted_loop &&
                                  loops_to(steps, address);
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
  // The length of the instruction at the start of `code` (1 when it does not decode).
  uint32_t length(std::span<const uint8_t> code, uint64_t address, CodeSize size) {
    Handle& h = handle(size);
    const uint8_t* bytes = code.data();
    size_t left = code.size();
    if (!cs_disasm_iter(h.cs, &bytes, &left, &address, h.insn)) return 1;
    return h.insn->size;
  }

 private:
  struct Handle {
    csh cs = 0;
    cs_insn* insn = nullptr;
  };
  // The last step jumps back to `start`, and no step reads the time.
  static bool loops_to(std::span<const LoopStep> steps, uint64_t start) {
    for (const LoopStep& s : steps)
      if (s.id == X86_INS_RDTSC || s.id == X86_INS_RDTSCP || s.id == X86_INS_PAUSE) return false;
    // A direct jump (its target an immediate); the blocks without effects
    // hold no jump that also counts (LOOP, JCXZ: not without_side_effects).
    const LoopStep& last = steps.back();
    return last.jump && last.imm && static_cast<uint64_t>(*last.imm) == start;
  }
  Handle& handle(CodeSize size) { return handles_[static_cast<size_t>(size)]; }

  static void add_instruction(DecodedBlock& block, const cs_insn& insn, std::span<const uint8_t> bytes) {
    block.offsets.push_back(static_cast<uint16_t>(insn.address - block.start));
    if (!without_side_effects(insn)) {
      block.has_side_effects = true;
      note_stack_transfer(block, insn);
    }
    note_loop_facts(block, insn);
    if (auto kind = trap_kind(insn.id)) block.traps.push_back({insn.address, *kind, static_cast<uint8_t>(insn.size)});
    else if (const std::optional<Cr8Access> cr8 = cr8_access(bytes, block.code_size)) {
      // A read runs in the engine, which keeps the APIC's TPR[7:4] (Unicorn
      // patch 0009, Vcpu::set_cr8): no site.
      if (cr8->kind != TrapKind::MovFromCr8) {
        block.traps.push_back(
            {insn.address, cr8->kind, static_cast<uint8_t>(insn.size), static_cast<uint8_t>(cr8->gpr)});
        block.has_side_effects = true;  // the TPR, CR4
      }
    } else if (const std::optional<SystemInstruction> system = system_instruction(insn)) {
      block.traps.push_back({.address = insn.address, .kind = TrapKind::System,
                             .length = static_cast<uint8_t>(insn.size), .system = *system});
    } else if (is_mov_from_dr(insn)) {
      block.traps.push_back({insn.address, TrapKind::MovFromDr, static_cast<uint8_t>(insn.size)});
    }
    block.ends_with_software_interrupt = is_software_interrupt(insn.id);
    block.ends_with_hlt = insn.id == X86_INS_HLT;
    block.ends_with_interrupt_shadow = sets_interrupt_shadow(bytes, block.code_size);
    block.rep_string_tail = is_rep_string(bytes, block.code_size) ? insn.address : kNoAddress;
  }

  // What the loop watch needs of the instruction (DecodedBlock, above). The
  // successors are those of the block's last instruction: each instruction
  // overwrites them, so the last one's stay.
  static void note_loop_facts(DecodedBlock& block, const cs_insn& insn) {
    const cs_x86& x86 = insn.detail->x86;
    if (insn.id == X86_INS_RDTSC || insn.id == X86_INS_RDTSCP) block.reads_time = true;
    if (insn.id == X86_INS_MOV && x86.op_count >= 1 && x86.operands[0].type == X86_OP_REG &&
        is_system_register(x86.operands[0].reg))
      block.writes_system_state = true;
    for (uint8_t i = 0; i < x86.op_count; ++i)
      if (x86.operands[i].type == X86_OP_REG && is_stack_pointer(x86.operands[i].reg) &&
          (x86.operands[i].access & CS_AC_WRITE))
        block.writes_stack_pointer = true;
    if (insn.id != X86_INS_LEA && insn.id != X86_INS_NOP)
      for (uint8_t i = 0; i < x86.op_count; ++i) {
        const x86_op_mem& mem = x86.operands[i].mem;
        if (x86.operands[i].type != X86_OP_MEM) continue;
        const bool fixed_base = mem.base == X86_REG_INVALID || mem.base == X86_REG_RIP || mem.base == X86_REG_EIP;
        if (!fixed_base || mem.index != X86_REG_INVALID) block.cannot_fault = false;
      }
    const cs_detail& detail = *insn.detail;
    const bool jump = std::find(detail.groups, detail.groups + detail.groups_count, X86_GRP_JUMP) !=
                      detail.groups + detail.groups_count;
    const uint64_t next = insn.address + insn.size;
    block.successor_count = 0;
    block.successors_known = true;
    const bool call = insn.id == X86_INS_CALL, ret = insn.id == X86_INS_RET;
    if (call && x86.op_count == 1 && x86.operands[0].type == X86_OP_IMM) {
      block.successors[block.successor_count++] = static_cast<uint64_t>(x86.operands[0].imm);
    } else if (call || ret) {
      block.successors_known = false;  // through a register, memory or the stack
    } else if (!jump) {
      block.successors[block.successor_count++] = next;
    } else if (x86.op_count == 1 && x86.operands[0].type == X86_OP_IMM) {
      block.successors[block.successor_count++] = static_cast<uint64_t>(x86.operands[0].imm);
      if (insn.id != X86_INS_JMP) block.successors[block.successor_count++] = next;
    } else {
      block.successors_known = false;  // through a register or memory
    }
  }
  // A side effect that is a stack transfer (DecodedBlock::stack_effects_only)
  // is counted; any other clears stack_effects_only. Its memory access is at
  // the stack pointer, which a loop may move: such a block never "cannot
  // fault".
  static void note_stack_transfer(DecodedBlock& block, const cs_insn& insn) {
    const cs_x86& x86 = insn.detail->x86;
    const bool lone_register = x86.op_count == 1 && x86.operands[0].type == X86_OP_REG &&
                               !is_system_register(x86.operands[0].reg);
    block.cannot_fault = false;
    const bool push_source = x86.op_count == 1 && (x86.operands[0].type != X86_OP_REG || lone_register);
    if ((insn.id == X86_INS_PUSH && push_source) || insn.id == X86_INS_CALL) {
      ++block.stack_pushes;
      return;
    }
    if ((insn.id == X86_INS_POP && lone_register) || (insn.id == X86_INS_RET && x86.op_count == 0)) {
      ++block.stack_pops;
      return;
    }
    block.stack_effects_only = false;
  }
  static bool is_stack_pointer(x86_reg reg) {
    return reg == X86_REG_RSP || reg == X86_REG_ESP || reg == X86_REG_SP || reg == X86_REG_SPL;
  }
  static bool is_system_register(x86_reg reg) {
    return (reg >= X86_REG_CR0 && reg <= X86_REG_CR15) || (reg >= X86_REG_DR0 && reg <= X86_REG_DR15) ||
           reg == X86_REG_CS || reg == X86_REG_DS || reg == X86_REG_ES || reg == X86_REG_FS || reg == X86_REG_GS ||
           reg == X86_REG_SS;
  }

  static constexpr size_t kMaxLoopSteps = 8;  // a counted loop is short
  std::array<Handle, kCodeSizes.size()> handles_;
};

// Decoded blocks by start address, in one table of 4 KiB slots per page of
// linear addresses below `direct_bytes`: the block hook runs once per
// executed block, and this finds a block with three loads and no hashing.
// The table is 8 bytes per 4 KiB of that span, in an anonymous mapping the
// kernel backs only where an entry is written (untouched, it reads zeros:
// null pointers), plus 32 KiB per page that holds code; code elsewhere
// costs a hash lookup. The vCPU gives RAM's first region (all of RAM but
// what lies above 4 GiB), where identity-mapped guests run: a vCPU of a
// large guest pays for the pages it runs code from, not for its RAM.
class BlockCache {
 public:
  explicit BlockCache(uint64_t direct_bytes) : direct_pages_(direct_bytes / kPageSize) {
    if (direct_pages_ == 0) return;
    void* p = mmap(nullptr, direct_pages_ * sizeof(Page*), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    direct_ = static_cast<Page**>(p);  // pointers, an implicit-lifetime type: all null
  }
  ~BlockCache() {
    if (direct_) munmap(direct_, direct_pages_ * sizeof(Page*));
  }
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  const DecodedBlock* find(uint64_t address, uint32_t size) const {
    const uint64_t page = address / kPageSize;
    const Page* p = page < direct_pages_ ? direct_[page] : find_far(page);
    if (!p) return nullptr;
    const DecodedBlock* block = p->slots[address % kPageSize].get();
    return block && block->size == size ? block : nullptr;
  }

  // Replaces any block cached at the same start (the code there changed).
  // The old one stays allocated until clear(), so that no block's `next`
  // ever points at freed memory.
  const DecodedBlock& insert(DecodedBlock block) {
    const uint64_t number = block.start / kPageSize;
    Page* page = number < direct_pages_ ? direct_[number] : nullptr;
    if (number < direct_pages_ && !page) {
      direct_owned_.emplace_back(number, std::make_unique<Page>());
      page = direct_[number] = direct_owned_.back().second.get();
    } else if (number >= direct_pages_) {
      std::unique_ptr<Page>& far = far_pages_[number];
      if (!far) far = std::make_unique<Page>();
      page = far.get();
    }
    auto& slot = page->slots[block.start % kPageSize];
    if (slot) replaced_.push_back(std::move(slot));
    slot = std::make_unique<DecodedBlock>(std::move(block));
    return *slot;
  }

  void clear() {
    for (const auto& [number, page] : direct_owned_) direct_[number] = nullptr;
    direct_owned_.clear();
    far_pages_.clear();
    replaced_.clear();
  }

  // Linear addresses of the pages where some block starts.
  std::vector<uint64_t> code_pages() const {
    std::vector<uint64_t> addresses;
    for (const auto& [number, page] : direct_owned_) addresses.push_back(number * kPageSize);
    for (const auto& [number, page] : far_pages_) addresses.push_back(number * kPageSize);
    std::sort(addresses.begin(), addresses.end());
    return addresses;
  }

 private:
  struct Page {
    std::array<std::unique_ptr<DecodedBlock>, kPageSize> slots;
  };
  // Code at linear addresses beyond the table (a higher-half kernel):
  // one hash lookup per block there.
  [[gnu::noinline]] const Page* find_far(uint64_t page) const {
    const auto it = far_pages_.find(page);
    return it == far_pages_.end() ? nullptr : it->second.get();
  }
  uint64_t direct_pages_;
  Page** direct_ = nullptr;  // linear addresses below direct_bytes, by page
  std::vector<std::pair<uint64_t, std::unique_ptr<Page>>> direct_owned_;  // the pages direct_ points at
  std::unordered_map<uint64_t, std::unique_ptr<Page>> far_pages_;
  std::vector<std::unique_ptr<DecodedBlock>> replaced_;
};

}  // namespace vcpu_internal
}  // namespace topolab
