// SPDX-License-Identifier: GPL-2.0-or-later
// The inside of one vCPU: the Engine behind Vcpu, and the helpers its
// parts share. Only the vcpu_*.cc files include this header; it is the one
// place besides them that sees Unicorn and Capstone.
//
// The parts:
//   vcpu.cc             construction, the device callbacks and the public face
//   vcpu_decode.cc      the block hook, Capstone decoding, the block cache, trap sites
//   vcpu_run.cc         run(), its exits and the callbacks in the middle of a block
//   vcpu_emulate.cc     the instructions a stop leaves to the vCPU: MONITOR/MWAIT,
//                       trap sites, SYSCALL/SYSENTER
//   vcpu_loop_watch.cc  stuck loops of any shape: which runs are watched, and
//                       the proofs of emu/loop_watch.h on the blocks they enter
//   vcpu_inject.cc      interrupt and exception delivery
//   vcpu_modes.cc       registers, MSRs, segments, Multiboot, INIT and SIPI
//   vcpu_memory_map.*   MMIO windows and open-bus pages (GuestMemoryMap)
//   vcpu_counter.h      the instruction count and the budget (InstructionCounter)
//   vcpu_trap_sites.*   the code hooks on trap sites and the block hooks on
//                       single loops (TrapSites)
//   vcpu_contexts.*     engine handles, saved contexts, the scratch engines
//                       that load segments, the engine-state probe
//   vcpu_blocks.h       decoded blocks and their cache, trap kinds, counted
//                       loops: no Unicorn (vcpu_blocks_test.cc)
//
//
// Addresses
//   Hooks get linear addresses (CS.base + RIP; proven in real mode by
//   StartAtSipiRunsRealModeCodeAtVectorTimes4K), while RIP and uc_emu_start's `begin`
//   are offsets in CS (a UC_MODE_64 engine writes `begin` to RIP as is).
//   Decoded blocks, trap sites and the trace use linear addresses; RIP is
//   converted with code_base() at every stop.
//
// How run() works
// - The engine is topolab's own build of Unicorn 2.1.3 (docs/unicorn.md,
//   emu/unicorn/0001-instruction-budget.patch): it counts instructions in
//   its generated code. run() hands it the budget (uc_topolab_set_budget);
//   each block pays its instruction count on entry, and the run stops,
//   exactly, in front of a block the budget cannot pay for (except the first
//   block of a run, which always runs).
// - The engine runs with an empty set of exit addresses (uc_ctl_exits_enable,
//   so uc_emu_start's `until` is ignored) and never a `count`. So Unicorn
//   returns OK only when we stopped it, for the budget, at HLT, or for a
//   debug exception (exit_for_halt).
// - Each new block is decoded once with Capstone when the engine translates
//   it (on_translate), and its trap sites hooked. The block hook (on_block)
//   is switched on only while something must see every block: a stop
//   request, a held interrupt's window, a spin the PLE detector watches.
//   A counted loop's block has a hook of its own (on_counted_loop).
// - IN/OUT, CPUID, RDTSC, RDTSCP, RDMSR and WRMSR reach VcpuHost from the
//   engine's instruction hooks (RDMSR and WRMSR by topolab's patch 0003),
//   in the middle of a block; an MSR access the host side must finish (a
//   #GP to name, a write of CPU state) stops the run in front of it
//   (answer_msr). MONITOR, MWAIT, SYSCALL and SYSENTER,
//   which Unicorn cannot hook (or runs wrongly), get a one-instruction
//   UC_HOOK_CODE that stops the run in front of them; run() then emulates
//   them on the host side (or hands them to the machine) and resumes.
// - Exceptions the engine raises and events the machine injects are
//   delivered through the guest's IDT by vcpu_inject.cc (arch/event_delivery's
//   rules); guest memory the host touches goes through arch/page_walker.
//
// Counting
//   instructions() = instructions retired before the one executing now,
//   kept by InstructionCounter (emu/vcpu_counter.h): the count up to the
//   start of the current uc_emu_start, and the engine's own count
//   (uc_topolab_retired), which charges each block in full when it enters
//   it. A stop inside a block (an exception, HLT, a trap site) gives back
//   the block's instructions from RIP on (settle_at); a callback in the
//   middle of a block sees the count at its block's start plus its
//   instruction's index, which the engine records.
//
// MONITOR/MWAIT
//   Trap sites on every engine model, so run() returns Reason::Monitor
//   or Reason::Mwait at the instruction with its operands; the machine
//   emulates it and retire_emulated_instruction() steps over it. An MWAIT
//   that is the first instruction after STI keeps the STI shadow until then,
//   so `sti; mwait` cannot take an interrupt before MWAIT has begun.
// PAUSE
//   Each PAUSE site gets a one-instruction code hook that counts it and lets
//   it run (as IRET sites are watched): spin loops pay for the count, the
//   block hook's fast path does not (counting there cost 20% with 16 vCPUs).
//   With pause-loop exiting on, the same hook feeds emu/pause_loop.h's
//   detector (the block hook tells it of blocks with side effects, the
//   RDTSC(P) hooks of time reads, the MMIO hook of device reads) and stops
//   the run in front of the PAUSE when the loop is a fixed point.
//
// Not supported
// - CS.base is not exposed by Unicorn; code_base() derives it from the
//   architectural state (see there). It is exact in real mode, in long mode
//   and for a CS whose GDT/LDT entry is unchanged since it was loaded, and
//   right after CR0.PE is set (CS still holds its real-mode descriptor).
// - A maskable interrupt's shadow after STI / MOV SS / POP SS is tracked at
//   block granularity: Unicorn ends a block right after each of them.
// - Interrupt delivery: see UnicornVcpu::inject_interrupt in vcpu.h. NMI blocking
//   until IRET is the machine's business (the vCPU does not see IRETs).
// - A load or store at a physical address with no RAM and no device goes to
//   an open-bus page (all ones, stores dropped); a fetch from one is refused.
// - Guest code rewritten in place keeps the trap-site hooks of its old
//   decoding (a hook at an address where no instruction starts now is never
//   called) until flush_translations(); the block is decoded again when its
//   bytes changed (DecodedBlock::code_hash).
// - Code other vCPUs rewrite: each engine has its own translations, and the
//   engines on one RAM tell each other of stores into code through a shared
//   CodeMap (emu/vcpu_code_map.h): an engine drops its translations of a
//   page another engine stored to before it runs again. Host writes into
//   RAM (uc_mem_write, a device's DMA, a snapshot's RAM) are not seen.
// - A store into the block that is running: Unicorn abandons the block at
//   the store and runs it again from there, so the instructions of the block
//   from the store on are counted twice (and traced twice), the same at every
//   budget (SelfModifyingStoreCountsTheSameAtEveryBudget).
#pragma once

#include "emu/unicorn_vcpu.h"
#include "emu/vcpu_contexts.h"
#include "emu/vcpu_counter.h"
#include "emu/vcpu_memory_map.h"
#include "emu/vcpu_trap_sites.h"
#include "emu/vcpu_blocks.h"
#include "emu/vcpu_code_map.h"
#include "emu/loop_watch.h"
#include "arch/descriptors.h"
#include "arch/event_delivery.h"
#include "arch/fast_syscall.h"
#include "arch/page_walker.h"
#include "arch/x86_arch.h"

#include <capstone/capstone.h>
#include <fmt/format.h>
#include <unicorn/unicorn.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <exception>
#include <functional>
#include <initializer_list>
#include <limits>
#include <span>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>


namespace topolab {
namespace vcpu_internal {


// uc_emu_start's `until` (ignored with exits enabled): non-canonical in
// long mode and above 4 GiB in every other mode, so no guest instruction is
// ever there.
inline constexpr uint64_t kNeverExecuted = 0x8000'0000'0000'0000;

// The general registers by their ModR/M number (with REX.B): MOV CR8's
// operand, as cr8_access decodes it.
inline constexpr std::array<int, 16> kCr8Gprs = {UC_X86_REG_RAX, UC_X86_REG_RCX, UC_X86_REG_RDX, UC_X86_REG_RBX,
                                                 UC_X86_REG_RSP, UC_X86_REG_RBP, UC_X86_REG_RSI, UC_X86_REG_RDI,
                                                 UC_X86_REG_R8,  UC_X86_REG_R9,  UC_X86_REG_R10, UC_X86_REG_R11,
                                                 UC_X86_REG_R12, UC_X86_REG_R13, UC_X86_REG_R14, UC_X86_REG_R15};

// CR0, MSR, gate and TSS constants are arch/x86_arch.h's.
inline constexpr uint8_t kHltOpcode = 0xF4;
inline constexpr uint8_t kIcebpOpcode = 0xF1;  // INT1
inline constexpr uint64_t kDr6SingleStep = 1u << 14;         // DR6.BS (SDM Vol. 3B 18.2.3)
inline constexpr uint64_t kDr6DebugRegisterAccess = 1u << 13;  // DR6.BD
inline constexpr uint64_t kDr6BreakpointHits = 0xF;            // DR6.B0-B3
inline constexpr uint64_t kDr7BreakpointEnables = 0xFF;      // L0-3, G0-3
inline constexpr uint64_t kDr7GeneralDetect = 1u << 13;       // DR7.GD (SDM Vol. 3B 18.2.4)
inline constexpr uint64_t kIdleInstructionLength = 3;  // MONITOR, MWAIT
inline constexpr uint32_t kTranslationBufferBytes = 128u << 20;  // per engine (Engine::Engine)
// EFLAGS bit 1 is reserved and always 1 (SDM Vol. 1 3.4.3); IF = 0.
inline constexpr uint64_t kRflagsInterruptsOff = 0x2;

// State after INIT (SDM Vol. 3A 9.1.1, table 9-1).
inline constexpr uint64_t kCr0AfterInit = 0x6000'0010;  // CD, NW, ET
inline constexpr uint16_t kResetCodeSelector = 0xF000;
inline constexpr uint64_t kResetIp = 0xFFF0;
inline constexpr uint32_t kDescriptorTableLimitAfterInit = 0xFFFF;
inline constexpr uint64_t kDr6AfterInit = 0xFFFF'0FF0;
inline constexpr uint64_t kDr7AfterInit = 0x400;

inline constexpr uint16_t kMultibootCodeSelector = 0x08;
inline constexpr uint16_t kMultibootDataSelector = 0x10;
// Linux's 32-bit boot protocol: __BOOT_CS and __BOOT_DS.
inline constexpr uint16_t kLinuxBootCodeSelector = 0x10;
inline constexpr uint16_t kLinuxBootDataSelector = 0x18;

// MSRs that are CPU state Unicorn keeps (mode, segment bases, SYSCALL and
// SYSENTER targets, PAT). Every RDMSR and WRMSR reaches a hook, so these are
// handed to Unicorn, with no host call, as KVM passes them through; without
// it no guest could set EFER.LME and enter long mode.
inline bool is_cpu_state_msr(uint32_t msr) {
  switch (msr) {
    case x86::kMsrSysenterCs: case x86::kMsrSysenterEsp: case x86::kMsrSysenterEip: case x86::kMsrPat:
    case x86::kMsrEfer: case x86::kMsrStar: case x86::kMsrLstar: case x86::kMsrCstar: case x86::kMsrFmask:
    case x86::kMsrFsBase: case x86::kMsrGsBase: case x86::kMsrKernelGsBase:
      return true;
    default:
      return false;
  }
}


inline VcpuExit exit_at(VcpuExit::Reason reason, uint64_t rip, std::string detail = {}) {
  VcpuExit exit;
  exit.reason = reason;
  exit.rip = rip;
  exit.detail = std::move(detail);
  return exit;
}

// Why the last uc_emu_start returned UC_ERR_OK, when we made it return.
enum class StopCause : uint8_t { None, QuantumEnd, StopRequested, Retranslate, TrapSite, Msr, Exception, PauseLoop, IdleLoop, Debug };


}  // namespace vcpu_internal

using namespace vcpu_internal;

struct UnicornVcpu::Engine final : GuestMemoryMap::Owner {
  Engine(unsigned index, GuestRam& ram, VcpuHost& host, EngineCpuModel engine_cpu);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // --- Unicorn callbacks; user_data is the Engine ---
  static void on_block(uc_engine*, uint64_t address, uint32_t size, void* user);
  static void on_translate(uc_engine*, uint64_t pc, uint32_t size, uint32_t count, void* user);
  static void on_counted_loop(uc_engine*, uint64_t address, uint32_t size, void* user);
  static void on_idle_loop(uc_engine*, uint64_t address, uint32_t size, void* user);
  static void on_trap_site(uc_engine*, uint64_t address, uint32_t size, void* user);
  static void on_trace(uc_engine*, uint64_t address, uint32_t size, void* user);
  static int on_cpuid(uc_engine*, void* user);
  static int on_rdtsc(uc_engine*, void* user);
  static int on_rdtscp(uc_engine*, void* user);
  static int on_rdmsr(uc_engine*, void* user);
  static int on_wrmsr(uc_engine*, void* user);
  static uint32_t on_port_in(uc_engine*, uint32_t port, int size, void* user);
  static void on_port_out(uc_engine*, uint32_t port, int size, uint32_t value, void* user);
  static void on_interrupt(uc_engine*, uint32_t vector, void* user);
  static bool on_unmapped(uc_engine*, uc_mem_type type, uint64_t address, int size, int64_t value, void* user);
  // Code coherence with the other engines on this RAM (emu/vcpu_code_map.h,
  // Unicorn patch 0004): a page's first block here, and a store that took
  // the slow path, by ram address (RAM is the engine's first map, at
  // physical 0, so a ram address below its size is the physical address).
  static void on_code_page(uc_engine*, uint64_t ram_addr, void* user);
  static bool on_store(uc_engine*, uint64_t ram_addr, uint32_t size, void* user);
  // Before each uc_emu_start: what the other engines' code and stores left
  // this one to do (protect pages, drop translations).
  void sync_code() {
    if (code_map->has_work(code_slot)) apply_code_work();
  }
  void apply_code_work();

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

  // --- counting (emu/vcpu_counter.h) and the block hook ---
  using EnteredBlock = InstructionCounter::EnteredBlock;
  EnteredBlock entered() const { return counter->entered(); }
  // Its decoded form (decoded when it was translated, or now).
  const DecodedBlock* decoded(const EnteredBlock& b);
  // The block hook is called only while something needs every block seen:
  // a stop request, a held interrupt's window, or a spin being watched.
  bool needs_block_hook() const {
    return stop_requested || watch_interrupt_window || (pause_loop.enabled() && pause_loop.watching()) ||
           loop_watch.active();
  }
  void update_block_hook() { uc_topolab_set_block_hook(uc, needs_block_hook()); }
  // Only while the machine holds an interrupt the vCPU could not take when
  // the run began: one EFLAGS read per block then, none otherwise.
  bool interrupt_window_opened(bool entering_shadowed) const {
    if (entering_shadowed) return false;
    uint64_t rflags = 0;
    uc_reg_read(uc, UC_X86_REG_EFLAGS, &rflags);
    return rflags & x86::kFlagIf;
  }
  void stop_at_block(StopCause cause);
  void skip_counted_turns(const DecodedBlock& block);
  // After a uc_emu_start: adds what it retired, up to `rip` (linear) when it
  // stopped inside a block. Once per uc_emu_start.
  void settle_at(uint64_t rip);
  const DecodedBlock& decode_new_block(uint64_t address, uint32_t size, uint32_t count);
  // The guest's bytes at `block` are still the ones it was decoded from.
  bool same_code(const DecodedBlock& block);
  CodeSize code_size_from_registers();
  bool hook_trap_sites(const DecodedBlock& block);
  bool hook_counted_loop(const DecodedBlock& block);
  bool is_jump_to_itself(const DecodedBlock& block);
  bool hook_idle_loop(const DecodedBlock& block);
  void watch_self_loop(const DecodedBlock& loop);
  // The last entry into a loop without effects (DecodedBlock::
  // loops_without_effects) in this run: where, the instruction count then
  // (retired + the engine's), the registers, and how many turns in a row
  // changed them.
  struct SelfLoopWatch {
    uint64_t start = kNoAddress;
    uint64_t instructions = 0;
    SpinRegisters registers;
    unsigned moved = 0;
    void forget() { start = kNoAddress; }  // the rest counts only with a start
  } self_loop;
  // Loops that changed their registers turn after turn (a sum, a search):
  // unhooked, until flush_translations, so that they run at full speed.
  std::set<uint64_t> moving_loops;
  // What the idle loop the last run stopped in front of is, for its exit:
  // its words, whether its registers move (a loop with no way out, not a
  // fixed point), and whether the run did nothing but turns of pure blocks
  // (nothing it did is visible outside the vCPU: VcpuExit::spin_recheck).
  std::string idle_loop_what;
  bool idle_loop_moves = false;
  bool idle_loop_recheck = false;
  // The instructions retired when this run began.
  uint64_t run_start_instructions = 0;
  // Stuck loops of any shape (vcpu_loop_watch.cc, emu/loop_watch.h).
  LoopWatch loop_watch;
  LoopWatchSchedule loop_watch_schedule;
  bool run_watched = false;
  std::optional<LoopWatch::Answer> last_loop_proof;  // what stopped this run, if the watch did
  void begin_loop_watch();
  void watch_block(const DecodedBlock* block);
  LoopState read_loop_state();
  void end_loop_watch(const VcpuExit& exit);
  void remove_cache(uint64_t begin, uint64_t end);
  // The engine may hold an exception "in flight" (an exception it raised, or
  // a fault inside uc_ctl_remove_cache) that QEMU's double-fault check
  // would combine with the guest's next one: cleared before the next run.
  bool exception_in_flight = false;
  // Whether the RDTSCP instruction hook answers RDTSCP: the machine has
  // IA32_TSC_AUX (its CPU model has RDTSCP; asked once) and the engine's own
  // model has it too (QEMU64's has not: Unicorn raises #UD before the hook,
  // RdtscpReturnsTheHostsTimeAndTscAux). Otherwise the site is trapped.
  bool rdtscp_hooked() {
    if (!tsc_aux_known) tsc_aux_present = read_msr(x86::kMsrTscAux).has_value(), tsc_aux_known = true;
    return tsc_aux_present && engine_cpu != EngineCpuModel::Qemu64;
  }

  // --- callbacks that reach the host mid-block ---
  template <typename Call>
  auto call_host_mid_block(Call&& call);
  void answer_cpuid();
  int answer_msr(TrapKind kind);
  int stop_for_msr(TrapKind kind);
  std::optional<VcpuExit> finish_stopped_msr();
  std::optional<VcpuExit> retire_at(uint64_t next);
  void stop_at_trap_site(uint64_t address);
  // A PAUSE site's hook: counts it, or stops the run for a pause-loop exit.
  void at_pause(uint64_t address);
  SpinRegisters read_spin_registers() const;
  void trace_instruction(uint64_t address, uint32_t size);

  // --- run() and its exits ---
  VcpuExit run(uint64_t budget);
  std::optional<VcpuExit> run_until_stop();
  VcpuExit exit_before_block(VcpuExit::Reason reason);
  std::optional<VcpuExit> exit_for_halt();
  std::optional<VcpuExit> exit_for_error(uc_err err);
  std::optional<std::optional<VcpuExit>> emulate_hypercall(uint64_t rip, uint64_t linear);
  std::optional<VcpuExit> exit_for_monitor_or_mwait(uint64_t rip, uint64_t linear);
  uint64_t data_segment_base();
  void retire_emulated_instruction();
  std::optional<VcpuExit> emulate_trap();
  struct TrapFault {
    x86::Fault fault;
    std::string origin;
  };
  std::optional<TrapFault> execute_trap(TrapKind kind, uint64_t rip);
  std::optional<VcpuExit> emulate_fast_system_call(TrapKind kind, uint64_t rip, uint8_t length);
  std::string describe(uint64_t address);

  // --- the debugger (vcpu_debug.cc) ---
  static void on_debug_break(uc_engine*, uint64_t address, uint32_t size, void* user);
  static void on_debug_step(uc_engine*, uint64_t address, uint32_t size, void* user);
  static void on_debug_access(uc_engine*, uc_mem_type type, uint64_t address, int size, int64_t value, void* user);
  void set_debug_points(const DebugPoints& points);
  void set_debug_step(bool on);
  void set_debug_stop_at(std::optional<uint64_t> count);
  // The step hook exists while a step, a stop at a count or a watch needs it.
  void update_step_hook();
  // From a code hook at `address`: stops the run in front of it for a
  // breakpoint there, a step, or a watch hit the last instruction made;
  // true when it stopped. Trap sites call it first, so the trap is
  // emulated (and a PAUSE counted) only once the debugger lets it run.
  bool debug_check(uint64_t address);
  // A step, a stop at a count, a watch, or a breakpoint inside `block`.
  bool debug_watches_block(const DecodedBlock& block) const;
  // The stop debug_check made: settles the count, calls the host, goes on.
  std::optional<VcpuExit> serve_debug_stop();
  bool read_register(x86::RegisterId id, std::span<uint8_t> out);
  bool write_register(x86::RegisterId id, std::span<const uint8_t> in);
  std::optional<uint64_t> translate_linear(uint64_t linear);
  struct DebugPosition {
    uint64_t address = kNoAddress;
    uint64_t instructions = 0;
    friend bool operator==(const DebugPosition&, const DebugPosition&) = default;
  };
  struct {
    std::unordered_map<uint64_t, uc_hook> breakpoints;  // by linear address
    std::vector<DebugWatch> watches;                    // physical ranges
    uc_hook access_hook = 0;  // every load and store, while a watch is set
    uc_hook step_hook = 0;    // every instruction, while stepping or watching
    bool stepping = false;
    std::optional<uint64_t> stop_at;  // stop in front of the instruction at this count
    DebugPosition step_from;  // where the step began: no stop there
    DebugPosition resumed_at; // where the last debug stop was: no stop there again
    std::optional<DebugStop> watch_hit;  // made by the instruction running now
    std::optional<DebugStop> stop;       // what debug_check stopped for
    uint64_t stop_address = 0;
    bool active() const { return !breakpoints.empty() || !watches.empty() || stepping || stop_at; }
  } debug;

  // --- register and MSR access ---
  uint64_t read_reg(int reg) const;
  // A 64-bit general register named the way Capstone names it (0 for others).
  uint64_t read_capstone_reg(x86_reg reg) const;
  void write_capstone_reg(x86_reg reg, uint64_t value);
  void write_reg(int reg, uint64_t value);
  uint64_t read_cpu_msr(uint32_t msr) const;
  void write_cpu_msr(uint32_t msr, uint64_t value);
  std::optional<uint64_t> read_msr(uint32_t msr);
  bool write_msr(uint32_t msr, uint64_t value);
  void write_edx_eax(uint64_t value);
  void load_flat_protected_mode(uint16_t code, uint16_t data);
  void enter_flat_protected_mode(uint32_t entry, uint16_t code, uint16_t data, const uc_x86_mmr& gdtr);
  void enter_multiboot(uint32_t entry, uint32_t eax, uint32_t ebx);
  void enter_linux32(uint32_t entry, uint32_t boot_params, uint32_t gdt, uint16_t gdt_limit);
  void set_trace(std::FILE* out);
  void flush_translations();
  // What save_state/load_state keep (vcpu_state.cc): one list for both ways.
  template <class Archive>
  void serialize_state(Archive& ar);
  void invalidate_translated_code();

  // --- addresses, segments, INIT/SIPI ---
  uint64_t code_base();
  uint64_t linear_rip() { return code_base() + read_reg(UC_X86_REG_RIP); }
  void set_rip_to_linear(uint64_t address) { write_reg(UC_X86_REG_RIP, address - code_base()); }
  uc_x86_mmr read_mmr(int reg) const;
  std::optional<x86::SegmentDescriptor> read_descriptor(uint16_t selector);
  void reset_for_init();
  // SIPI (vector << 8, 0) or a firmware's real-mode jump, from the INIT state.
  void start_in_real_mode(uint16_t selector, uint16_t ip);

  // --- guest memory through the guest's paging (arch/page_walker) ---
  x86::PagingState paging_state();
  x86::PagedMemory linear_memory() { return x86::PagedMemory(physical, paging_state()); }
  // Bytes at a linear address for the host's own eyes (decoding, traces,
  // diagnostics): no permission check, no A/D bits; nullopt where a page
  // is not mapped.
  std::optional<std::vector<uint8_t>> peek_linear(uint64_t linear, size_t len);
  // The same into `out`, with no allocation (the paths taken at every stop).
  bool peek_linear_into(uint64_t linear, std::span<uint8_t> out);
  std::optional<uint8_t> peek_byte(uint64_t linear);
  unsigned current_cpl();

  // --- interrupt and exception delivery ---
  x86::CpuState cpu_state();
  x86::CpuState cpu_state(x86::PagedMemory& memory);
  std::optional<VcpuExit> deliver(const x86::Event& event, const std::string& origin);
  std::optional<std::string> load_delivered(const x86::CpuState& before, const x86::Delivered& d);
  Injection inject(const x86::Event& event);
  std::optional<VcpuExit> deliver_engine_exception();
  std::optional<VcpuExit> take_engine_exception_state();
  bool clear_exception_in_flight(uint32_t* error_code);
  std::optional<VcpuExit> raise(x86::Fault fault, const std::string& origin);
  uint32_t page_fault_error_code(uint64_t linear_rip, uint64_t cr2);

  // --- the guest-physical map beyond RAM (emu/vcpu_memory_map.h) ---
  uint64_t device_read(MmioHandler& device, uint64_t offset, unsigned size) override;
  void device_write(MmioHandler& device, uint64_t offset, unsigned size, uint64_t value) override;
  void open_bus_access(uint64_t physical, unsigned size, bool write) override;

  const unsigned index;
  const EngineCpuModel engine_cpu;
  GuestRam& ram;
  x86::GuestRamMemory physical{ram};  // RAM, and open bus beyond it
  unsigned maxphyaddr = 0;            // CPUID.80000008H:EAX[7:0], asked once
  VcpuHost& host;
  uc_engine* uc = nullptr;
  std::optional<GuestMemoryMap> memory_map;  // made with the engine
  Disassembler disassembler;
  BlockCache blocks;
  std::shared_ptr<CodeMap> code_map;  // shared by the engines on `ram`
  unsigned code_slot = 0;

  std::optional<TrapSites> sites;  // made with the engine
  void at_cr8(const HookedTrap& trap, uint64_t address);
  void at_cr4(const HookedTrap& trap, uint64_t address);
  std::optional<uint64_t> cr4_settable;  // from CPUID, on the first MOV to CR4
  uc_hook trace_hook = 0;
  std::FILE* trace_out = nullptr;

  std::optional<InstructionCounter> counter;  // made with the engine
  uint64_t pauses_retired = 0;  // counted by the PAUSE sites' hooks
  PauseLoopDetector pause_loop;
  SpinRegisters spin_snapshot;  // at the PAUSE that filled the window
  struct {
    bool reads_time = false;
    bool recheck = false;
  } spin_exit;  // the pause-loop exit the hook stopped for
  // The block that ran last, after a stop inside it (nullptr after a stop
  // in front of a block).
  const DecodedBlock* current = nullptr;
  bool stop_requested = false;
  bool nmi_blocked = false;  // from an injected NMI to the next IRET
  bool watch_interrupt_window = false;

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

  // What the callbacks saw during the last uc_emu_start.
  StopCause stop_cause = StopCause::None;
  struct {
    uint64_t start = 0, end = 0;
  } retranslate;  // the block on_translate hooked new trap sites in
  uint64_t trap_address = 0;
  // The RDMSR or WRMSR the MSR hook stopped in front of (StopCause::Msr),
  // and the #GP it already found, if any.
  struct MsrStop {
    TrapKind kind = TrapKind::Rdmsr;
    std::optional<TrapFault> fault;
  } msr_stop;
  bool tsc_aux_known = false, tsc_aux_present = false;
  struct {
    uint32_t vector = 0;
    uint64_t rip = 0;
    uint64_t cr2 = 0;
    std::optional<uint32_t> engine_error_code;  // from the engine's state, when the probe found it
  } exception;
  struct {
    uc_mem_type type = UC_MEM_READ_UNMAPPED;
    uint64_t address = 0;
    int size = 0;
  } unmapped;
  std::exception_ptr host_failure;
  std::optional<UcContext> scratch_context;  // for the engine's error code and exception in flight
  UcContext& saved_state() {
    if (!scratch_context) scratch_context.emplace(uc);
    else scratch_context->save_from(uc);
    return *scratch_context;
  }
};

}  // namespace topolab
