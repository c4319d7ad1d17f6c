// SPDX-License-Identifier: GPL-2.0-or-later
// run() and its exits: the callbacks in the middle of a block, the stops,
// and the instructions the vCPU traps and emulates.
#include "emu/vcpu_engine.h"

namespace topolab {

// ---------------------------------------------------------------------------
// Callbacks in the middle of a block.

// Unicorn does not update RIP before IN/OUT hooks; the engine records the
// calling instruction's index in its block instead (uc_topolab_insn_index).
template <typename Call>
auto UnicornVcpu::Engine::call_host_mid_block(Call&& call) {
  const InstructionCounter::MidBlockCall site(*counter);
  return call();
}

int UnicornVcpu::Engine::on_cpuid(uc_engine*, void* user) {
  auto& e = *static_cast<Engine*>(user);
  e.guarded([&] { e.answer_cpuid(); });
  return 1;  // skip Unicorn's own CPUID
}

// Writing the 64-bit registers zero-extends, as CPUID does in 64-bit mode.
void UnicornVcpu::Engine::answer_cpuid() {
  const auto leaf = static_cast<uint32_t>(read_reg(UC_X86_REG_RAX));
  const auto subleaf = static_cast<uint32_t>(read_reg(UC_X86_REG_RCX));
  const CpuidRegs regs = call_host_mid_block([&] { return host.cpuid(leaf, subleaf); });
  write_reg(UC_X86_REG_RAX, regs.eax);
  write_reg(UC_X86_REG_RBX, regs.ebx);
  write_reg(UC_X86_REG_RCX, regs.ecx);
  write_reg(UC_X86_REG_RDX, regs.edx);
}

// RDTSC and RDTSCP (SDM Vol. 2) read virtual time from the host. Unicorn
// 2.1.3 hooks them like CPUID, with RIP exact; returning 1 skips its own
// (host TSC) answer. An RDTSCP that has no IA32_TSC_AUX never gets here: its
// site is trapped as #UD (hook_trap_sites).
int UnicornVcpu::Engine::on_rdtsc(uc_engine*, void* user) {
  auto& e = *static_cast<Engine*>(user);
  e.pause_loop.note_time_read(SpinRegisters::kRdtscOutputs);
  e.guarded([&] { e.write_edx_eax(e.call_host_mid_block([&] { return e.host.read_tsc(); })); });
  return 1;
}

int UnicornVcpu::Engine::on_rdtscp(uc_engine*, void* user) {
  auto& e = *static_cast<Engine*>(user);
  e.pause_loop.note_time_read(SpinRegisters::kRdtscpOutputs);
  e.guarded([&] {
    e.call_host_mid_block([&] {
      e.write_edx_eax(e.host.read_tsc());
      e.write_reg(UC_X86_REG_RCX, static_cast<uint32_t>(e.host.read_tsc_aux().value_or(0)));
    });
  });
  return 1;
}

// RDMSR and WRMSR reach their instruction hooks (topolab's engine patch
// 0003-msr-hooks) at CPL 0, inside the generated code, and are answered
// there: an x2APIC EOI or ICR write, or a TSC-deadline write, costs no stop
// of the engine. The hook stops the run in front of the instruction only
// when the host side must finish it (stop_for_msr).
int UnicornVcpu::Engine::on_rdmsr(uc_engine*, void* user) {
  return static_cast<Engine*>(user)->answer_msr(TrapKind::Rdmsr);
}

int UnicornVcpu::Engine::on_wrmsr(uc_engine*, void* user) {
  return static_cast<Engine*>(user)->answer_msr(TrapKind::Wrmsr);
}

int UnicornVcpu::Engine::answer_msr(TrapKind kind) {
  return guarded<int>([&] {
    return call_host_mid_block([&] {
      // A CPU-state write (EFER, a segment base) changes the state the
      // engine translated the rest of the block for: it is made between
      // runs, as it always was.
      if (kind == TrapKind::Wrmsr && is_cpu_state_msr(static_cast<uint32_t>(read_reg(UC_X86_REG_RCX))))
        return stop_for_msr(kind);
      if (std::optional<TrapFault> fault = execute_trap(kind, read_reg(UC_X86_REG_RIP))) {
        // The #GP is raised on the host side, which names the MSR; the host
        // has already charged and counted the access.
        msr_stop.fault = std::move(fault);
        return stop_for_msr(kind);
      }
      return UC_TOPOLAB_MSR_DONE;
    });
  });
}

int UnicornVcpu::Engine::stop_for_msr(TrapKind kind) {
  msr_stop.kind = kind;
  stop_cause = StopCause::Msr;
  uc_emu_stop(uc);
  return UC_TOPOLAB_MSR_STOP;
}

// The MSR hook stopped the run in front of the instruction, which did not
// retire: raise the #GP the hook found, or make the CPU-state write.
std::optional<VcpuExit> UnicornVcpu::Engine::finish_stopped_msr() {
  const uint64_t rip = read_reg(UC_X86_REG_RIP);
  const uint64_t linear = code_base() + rip;
  settle_at(linear);  // the trace hook has printed it
  std::optional<TrapFault> fault = std::exchange(msr_stop.fault, std::nullopt);
  if (!fault) fault = execute_trap(msr_stop.kind, rip);
  if (fault) return raise(fault->fault, fault->origin);
  // settle_at left `current` at the block the instruction ends.
  if (!current || linear < current->start || linear >= current->end())
    throw std::logic_error(fmt::format("cpu{}: an MSR stop at {:#x} outside the block that ran", index, linear));
  return retire_at(rip + (current->end() - linear));
}

// The host ran the instruction: it retires, and the guest goes on at `next`
// (an offset in CS), unless a stop was asked for meanwhile.
std::optional<VcpuExit> UnicornVcpu::Engine::retire_at(uint64_t next) {
  counter->retire_one();
  write_reg(UC_X86_REG_RIP, next);
  if (stop_requested) return exit_at(VcpuExit::Reason::StopRequested, next);
  return std::nullopt;
}

uint32_t UnicornVcpu::Engine::on_port_in(uc_engine*, uint32_t port, int size, void* user) {
  auto& e = *static_cast<Engine*>(user);
  return e.guarded<uint32_t>([&] {
    return e.call_host_mid_block([&] { return e.host.port_in(static_cast<uint16_t>(port), size); });
  });
}

void UnicornVcpu::Engine::on_port_out(uc_engine*, uint32_t port, int size, uint32_t value, void* user) {
  auto& e = *static_cast<Engine*>(user);
  e.guarded([&] {
    e.call_host_mid_block([&] { e.host.port_out(static_cast<uint16_t>(port), size, value); });
  });
}

void UnicornVcpu::Engine::on_trap_site(uc_engine*, uint64_t address, uint32_t, void* user) {
  auto& e = *static_cast<Engine*>(user);
  // The debugger first: a trap stopped for it is emulated (a PAUSE
  // counted) once, when the run goes on.
  if (e.debug.active() && e.guarded<bool>([&] { return e.debug_check(address); })) return;
  const HookedTrap* trap = e.sites->at(address);
  if (trap && trap->kind == TrapKind::Pause) return e.guarded([&] { e.at_pause(address); });
  if (trap && trap->kind == TrapKind::Iret) {
    e.nmi_blocked = false;  // this IRET runs on; NMIs are taken again after it
    // IRET ends its block: the stop comes right after it (the block hook is
    // on while the window is watched), where a held NMI or interrupt may now
    // be taken.
    if (e.watch_interrupt_window) e.stop_requested = true;
    return;
  }
  if (trap && trap->kind == TrapKind::MovToCr8) return e.guarded([&] { e.at_cr8(*trap, address); });
  if (trap && trap->kind == TrapKind::MovToCr4) return e.guarded([&] { e.at_cr4(*trap, address); });
  // A serializing instruction is charged when it is reached, faulting or not (docs/cost_model.md).
  if (trap && trap->kind == TrapKind::System)
    e.guarded([&] { e.call_host_mid_block([&] { e.host.system_instruction(trap->system); }); });
  const bool mov_dr = trap && (trap->kind == TrapKind::MovFromDr ||
                               (trap->kind == TrapKind::System && trap->system == SystemInstruction::DrWrite));
  // DR7.GD: a MOV to or from a debug register faults with #DB instead of
  // running (at CPL 0: at CPL > 0 the engine's #GP comes first).
  if (mov_dr && e.guarded<bool>([&] {
        return (e.read_reg(UC_X86_REG_DR7) & kDr7GeneralDetect) && e.current_cpl() == 0;
      }))
    return e.guarded([&] { e.stop_at_trap_site(address); });
  if (trap && (trap->kind == TrapKind::System || trap->kind == TrapKind::MovFromDr)) return;
  e.guarded([&] { e.stop_at_trap_site(address); });
}

// MOV CR8 as the engine runs it (with Unicorn patch 0009): a write goes to
// the engine's own CR8, which a read returns; the engine has no APIC. The
// machine keeps that CR8 equal to the APIC's TPR[7:4] (Vcpu::set_cr8), so
// a read runs in the engine with no hook. Stopping at every write would
// cost a guest that loops on CR8 (kvm-unit-tests' vmexit mov_to_cr8 runs
// 10^8) minutes, so the write's hook hands it to the APIC and lets the
// instruction run; a write with reserved bits set stops to be emulated
// (execute_trap). At CPL > 0 the engine raises the #GP itself.
// MOV to CR4 runs in the engine, which checks no reserved bits (QEMU 5.0's
// TCG): a bit the CPU's CPUID does not allow (CR4.OSXSAVE without XSAVE,
// say) stops it, to raise #GP(0) as the SDM says (execute_trap).
void UnicornVcpu::Engine::at_cr4(const HookedTrap& trap, uint64_t address) {
  call_host_mid_block([&] {
    uint64_t value = read_reg(kCr8Gprs[trap.gpr]);
    const DecodedBlock* block = decoded(entered());
    if (!block || block->code_size != CodeSize::Bits64) value = static_cast<uint32_t>(value);
    const uint64_t changed = value ^ read_reg(UC_X86_REG_CR4);
    const bool global_flush = (changed & x86::kCr4Pge) || (changed & x86::kCr4Pcide & ~value);
    host.system_instruction(global_flush ? SystemInstruction::Cr4GlobalFlush : SystemInstruction::Cr4Write);
    if (current_cpl() != 0) return;  // the engine's own #GP
    if (!cr4_settable) {
      const CpuidRegs leaf1 = host.describe_cpuid(1, 0), leaf7 = host.describe_cpuid(7, 0);
      // A host that describes no CPUID (zeros: unknown) gets no check.
      cr4_settable = leaf1.ecx == 0 && leaf1.edx == 0 ? ~uint64_t{0}
                                                      : x86::cr4_settable_bits(leaf1.ecx, leaf1.edx, leaf7.ebx, leaf7.ecx);
    }
    if (value & ~*cr4_settable) stop_at_trap_site(address);
  });
}

void UnicornVcpu::Engine::at_cr8(const HookedTrap& trap, uint64_t address) {
  call_host_mid_block([&] {
    if (current_cpl() != 0) return;
    const uint64_t value = read_reg(kCr8Gprs[trap.gpr]);
    if (value >> 4) {
      stop_at_trap_site(address);
      return;
    }
    host.write_cr8(value);
  });
}

void UnicornVcpu::Engine::at_pause(uint64_t address) {
  if (pause_loop.enabled()) {
    const uint64_t before = counter->mid_block(counter->insn_index());
    switch (pause_loop.on_pause(address, before)) {
      case PauseLoopDetector::Action::Run: break;
      case PauseLoopDetector::Action::Snapshot: spin_snapshot = read_spin_registers(); break;
      case PauseLoopDetector::Action::CheckAndExit:
      {
        const SpinRegisters now = read_spin_registers();
        if (now.same_as(spin_snapshot, pause_loop.time_outputs())) {
          // Before the PAUSE, which the next run executes (and counts).
          spin_exit = {.reads_time = pause_loop.reads_time(), .recheck = pause_loop.recheck()};
          pause_loop.exited(before);
          trap_address = address;
          stop_cause = StopCause::PauseLoop;
          uc_emu_stop(uc);
          return;
        }
        if (pause_loop.not_a_fixed_point(before)) spin_snapshot = now;
        break;
      }
    }
    update_block_hook();
  }
  ++pauses_retired;
}

SpinRegisters UnicornVcpu::Engine::read_spin_registers() const {
  static constexpr std::array<int, SpinRegisters::kCount> kRegs = {
      UC_X86_REG_RAX, UC_X86_REG_RCX, UC_X86_REG_RDX, UC_X86_REG_RBX, UC_X86_REG_RSP, UC_X86_REG_RBP,
      UC_X86_REG_RSI, UC_X86_REG_RDI, UC_X86_REG_R8,  UC_X86_REG_R9,  UC_X86_REG_R10, UC_X86_REG_R11,
      UC_X86_REG_R12, UC_X86_REG_R13, UC_X86_REG_R14, UC_X86_REG_R15, UC_X86_REG_EFLAGS};
  SpinRegisters r;
  std::array<void*, SpinRegisters::kCount> out;
  for (size_t i = 0; i < out.size(); ++i) out[i] = &r.values[i];
  check(uc_reg_read_batch(uc, const_cast<int*>(kRegs.data()), out.data(), static_cast<int>(kRegs.size())),
        "uc_reg_read_batch (spin registers)");
  return r;
}

// A stop from a code hook happens before the instruction runs. The bytes
// are checked because the guest may have rewritten the code since.
void UnicornVcpu::Engine::stop_at_trap_site(uint64_t address) {
  const HookedTrap& trap = sites->hooked(address);
  std::array<uint8_t, 16> buffer;
  const std::span<uint8_t> bytes = std::span(buffer).first(trap.length);
  if (!peek_linear_into(address, bytes)) return;
  // The instruction is still the one decoded (code may have changed since).
  if (trap.kind == TrapKind::MovToCr8 || trap.kind == TrapKind::MovToCr4) {
    const DecodedBlock* block = decoded(entered());
    const std::optional<Cr8Access> cr8 = cr8_access(bytes, block ? block->code_size : code_size_from_registers());
    if (!cr8 || cr8->kind != trap.kind) return;
  } else if (trap.kind == TrapKind::System || trap.kind == TrapKind::MovFromDr) {
    if (!is_mov_dr(bytes)) return;  // only a MOV DR stops (DR7.GD)
  } else if (const auto opcode = trap_opcode(trap.kind);
             !std::equal(opcode.begin(), opcode.end(), bytes.end() - opcode.size())) {
    return;
  }
  trap_address = address;
  stop_cause = StopCause::TrapSite;
  uc_emu_stop(uc);
}

// Unicorn has already raised the exception when this runs; RIP is the
// faulting instruction for a fault and the next one for INT n / INT3.
// The engine's error code is read from its state here, before anything
// else can overwrite it (engine_error_code_offset).
void UnicornVcpu::Engine::on_interrupt(uc_engine*, uint32_t vector, void* user) {
  auto& e = *static_cast<Engine*>(user);
  e.guarded([&] {
    e.exception = {vector, e.read_reg(UC_X86_REG_RIP),
                   vector == x86::kPageFault ? e.read_reg(UC_X86_REG_CR2) : 0, std::nullopt};
    // Here, in the hook: by the time uc_emu_start returns, the engine has
    // cleared it.
    if (const std::optional<EngineStateOffsets> offsets = engine_state_offsets()) {
      uint32_t code = 0;
      std::memcpy(&code, e.saved_state().bytes() + offsets->error_code, sizeof code);
      e.exception.engine_error_code = code;
    }
    e.exception_in_flight = true;
    e.stop_cause = StopCause::Exception;
    uc_emu_stop(e.uc);
  });
}

// A load or store at a physical address with no RAM and no device: open bus
// is mapped there (all ones read, stores dropped, each counted; a window at
// a time, GuestMemoryMap) and the access is retried, so it never ends the run. A fetch from
// there is not emulated (the engine cannot execute MMIO): run() reports it.
bool UnicornVcpu::Engine::on_unmapped(uc_engine*, uc_mem_type type, uint64_t address, int size, int64_t, void* user) {
  auto& e = *static_cast<Engine*>(user);
  e.unmapped = {type, address, size};
  if (type == UC_MEM_FETCH_UNMAPPED) return false;
  return e.guarded<bool>([&] {
    e.memory_map->map_open_bus(address);
    return true;
  });
}

void UnicornVcpu::Engine::on_trace(uc_engine*, uint64_t address, uint32_t size, void* user) {
  auto& e = *static_cast<Engine*>(user);
  e.guarded([&] {
    // Trapped instructions are printed when run() emulates them: the trap
    // hook may stop the run before this hook is called. Watched IRETs and PAUSEs run.
    // MOV CR4/CR8 usually run too (at_cr4, at_cr8): printed here unless
    // their hook stopped the run to emulate them.
    const HookedTrap* trap = e.sites->at(address);
    const bool stopped_here = e.stop_cause == StopCause::TrapSite && e.trap_address == address;
    const TrapKind kind = trap ? trap->kind : TrapKind::Pause;
    const bool control_register = kind == TrapKind::MovToCr4 || kind == TrapKind::MovToCr8;
    if (!trap || is_watched(kind) || (control_register && !stopped_here))
      e.trace_instruction(address, size);
  });
}

// Unicorn passes the size 0xF1F1F1F1 when it does not know it: the length
// is then what Capstone decodes (at most 15 bytes, SDM Vol. 2 2.3.11).
void UnicornVcpu::Engine::trace_instruction(uint64_t address, uint32_t size) {
  const DecodedBlock* block = counter->running() ? decoded(entered()) : current;
  const CodeSize code_size = block ? block->code_size : code_size_from_registers();
  if (size == 0 || size > 15) size = disassembler.length(peek_linear(address, 15).value_or(std::vector<uint8_t>{}),
                                                         address, code_size);
  const std::vector<uint8_t> code = peek_linear(address, size).value_or(std::vector<uint8_t>{});
  fmt::print(trace_out, "cpu{} {:016x}: {:02x}  {}\n", index, address, fmt::join(code, " "),
             code.empty() ? "(not mapped)" : disassembler.describe(code, address, code_size));
}

// ---------------------------------------------------------------------------
// run() and its exits.

VcpuExit UnicornVcpu::Engine::run(uint64_t budget) {
  if (waits_for_sipi) throw std::logic_error(fmt::format("cpu{} waits for SIPI: run() before start_at_sipi()", index));
  counter->begin_run(budget);
  // A spin goes on across runs: what the machine does between them that the
  // loop could see (an injection, INIT) forgets it.
  pause_loop.mark_run_start();
  self_loop.forget();  // other vCPUs may have written what a loop reads since
  begin_loop_watch();
  stop_requested = false;
  update_block_hook();
  for (;;) {
    if (std::optional<VcpuExit> exit = run_until_stop()) {
      end_loop_watch(*exit);
      return *exit;
    }
  }
}

// One uc_emu_start. Returns the exit, or nullopt to go on within this run.
std::optional<VcpuExit> UnicornVcpu::Engine::run_until_stop() {
  stop_cause = StopCause::None;
  if (exception_in_flight) clear_exception_in_flight(nullptr);
  sync_code();
  counter->enter_engine();
  const uc_err err = uc_emu_start(uc, read_reg(UC_X86_REG_RIP), kNeverExecuted, 0, 0);
  counter->leave_engine();
  const EnteredBlock last = entered();
  // Only a stop in front of a block can leave the next instruction shadowed:
  // the one the block before it ended with (or, if none ran, the one the
  // last stop left).
  const bool shadow_before = shadow;
  shadow = false;
  const auto shadow_in_front = [&] {
    const DecodedBlock* previous = decoded(last);
    return previous ? previous->ends_with_interrupt_shadow : shadow_before;
  };
  if (host_failure) {
    settle_at(linear_rip());
    std::rethrow_exception(std::exchange(host_failure, nullptr));
  }
  if (err != UC_ERR_OK) return exit_for_error(err);
  if (stop_cause == StopCause::None && uc_topolab_budget_stopped(uc)) stop_cause = StopCause::QuantumEnd;
  switch (stop_cause) {
    case StopCause::None: return exit_for_halt();
    case StopCause::QuantumEnd:
      shadow = shadow_in_front();
      return exit_before_block(VcpuExit::Reason::QuantumEnd);
    case StopCause::StopRequested:
      shadow = shadow_in_front();
      return exit_before_block(VcpuExit::Reason::StopRequested);
    case StopCause::Retranslate: {
      shadow = shadow_in_front();
      settle_at(retranslate.start);
      remove_cache(retranslate.start, retranslate.end);
      return std::nullopt;
    }
    case StopCause::TrapSite: return emulate_trap();
    case StopCause::Msr: return finish_stopped_msr();
    case StopCause::PauseLoop: {
      // The code hook left RIP at the PAUSE's linear address.
      settle_at(trap_address);
      set_rip_to_linear(trap_address);
      VcpuExit exit = exit_at(VcpuExit::Reason::PauseLoop, read_reg(UC_X86_REG_RIP));
      exit.loop_reads_time = spin_exit.reads_time;
      exit.spin_recheck = spin_exit.recheck;
      return exit;
    }
    case StopCause::Exception: return deliver_engine_exception();
    case StopCause::Debug: return serve_debug_stop();
    case StopCause::IdleLoop: {
      shadow = shadow_in_front();
      settle_at(linear_rip());
      VcpuExit exit = exit_at(VcpuExit::Reason::PauseLoop, read_reg(UC_X86_REG_RIP), std::exchange(idle_loop_what, {}));
      exit.idle_loop = true;
      exit.loop_state_moves = std::exchange(idle_loop_moves, false);
      exit.spin_recheck = std::exchange(idle_loop_recheck, false);
      return exit;
    }
  }
  throw std::logic_error("unknown stop cause");
}

// The engine put RIP at the start of the block it did not enter.
VcpuExit UnicornVcpu::Engine::exit_before_block(VcpuExit::Reason reason) {
  settle_at(linear_rip());
  return exit_at(reason, read_reg(UC_X86_REG_RIP));
}

// Unicorn returns OK at HLT exactly as at a stop of ours (docs/unicorn.md), and
// every stop of ours sets stop_cause. Anything else is named, never guessed.
// Besides HLT, the engine stops with UC_ERR_OK for a debug exception
// (QEMU's EXCP_DEBUG, which Unicorn treats as an exit request and never
// hands to the interrupt hook): ICEBP at RIP, or a single step with
// RFLAGS.TF. Those are delivered as the SDM's #DB traps (QEMU 7.2 raises
// #UD for ICEBP: docs/deviations.md).
std::optional<VcpuExit> UnicornVcpu::Engine::exit_for_halt() {
  const uint64_t rip = read_reg(UC_X86_REG_RIP);
  const uint64_t linear = code_base() + rip;
  settle_at(linear);
  // The common case, without reading guest memory: the block that ran
  // ended with its HLT and RIP is right after it. (Nothing else stops the
  // engine with UC_ERR_OK at the end of such a block but a single step.)
  if (current && current->ends_with_hlt && current->end() == linear && !(read_reg(UC_X86_REG_RFLAGS) & x86::kFlagTf)) {
    settle_at(linear);
    return exit_at(VcpuExit::Reason::Halt, rip);
  }
  const std::optional<uint8_t> before = linear ? peek_byte(linear - 1) : std::nullopt;
  const std::optional<uint8_t> at = peek_byte(linear);
  settle_at(linear);
  if (at == kIcebpOpcode)
    return deliver({.kind = x86::EventKind::kPrivilegedSoftwareException, .vector = x86::kDebug, .instruction_length = 1},
                   fmt::format("{:#x}: int1", linear));
  if (read_reg(UC_X86_REG_RFLAGS) & x86::kFlagTf) {
    write_reg(UC_X86_REG_DR6, (read_reg(UC_X86_REG_DR6) & ~uint64_t{0xF}) | kDr6SingleStep);
    return deliver({.kind = x86::EventKind::kHardwareException, .vector = x86::kDebug},
                   fmt::format("a single step (RFLAGS.TF) before {:#x}", linear));
  }
  if (before == kHltOpcode) return exit_at(VcpuExit::Reason::Halt, rip);
  if (read_reg(UC_X86_REG_DR7) & kDr7BreakpointEnables)
    return exit_at(VcpuExit::Reason::Unsupported, rip,
                   fmt::format("cpu {} stopped at {:#x} with debug-register breakpoints enabled (DR7 {:#x}): topolab "
                               "does not deliver their #DB",
                               index, linear, read_reg(UC_X86_REG_DR7)));
  throw std::runtime_error(fmt::format("cpu{}: the engine stopped at RIP {:#x} ({}, bytes {:02x}) with UC_ERR_OK and "
                                       "no stop of ours: no known reason",
                                       index, linear, describe(linear),
                                       fmt::join(peek_linear(linear, 15).value_or(std::vector<uint8_t>{}), " ")));
}

// VMCALL (0F 01 C1) and VMMCALL (0F 01 D9), which the engine #UDs: a KVM
// host takes both (it patches the other vendor's), and so does topolab's
// when the host has hypercalls at all. nullopt: not one, or no host for it.
std::optional<std::optional<VcpuExit>> UnicornVcpu::Engine::emulate_hypercall(uint64_t rip, uint64_t linear) {
  std::array<uint8_t, 3> code{};
  if (!peek_linear_into(linear, code) || code[0] != 0x0F || code[1] != 0x01 || (code[2] != 0xC1 && code[2] != 0xD9))
    return std::nullopt;
  const KvmHypercall call{.nr = read_reg(UC_X86_REG_RAX), .a0 = read_reg(UC_X86_REG_RBX), .a1 = read_reg(UC_X86_REG_RCX),
                          .a2 = read_reg(UC_X86_REG_RDX), .a3 = read_reg(UC_X86_REG_RSI),
                          .long_mode = code_size_from_registers() == CodeSize::Bits64 &&
                                       (!current || current->code_size == CodeSize::Bits64),
                          .cpl = current_cpl()};
  const std::optional<int64_t> result = host.hypercall(call);
  if (!result) return std::nullopt;
  write_reg(UC_X86_REG_RAX, call.long_mode ? static_cast<uint64_t>(*result) : static_cast<uint32_t>(*result));
  return std::optional<std::optional<VcpuExit>>(retire_at(rip + code.size()));
}

std::optional<VcpuExit> UnicornVcpu::Engine::exit_for_error(uc_err err) {
  const uint64_t rip = read_reg(UC_X86_REG_RIP);
  const uint64_t linear = code_base() + rip;
  switch (err) {
    case UC_ERR_INSN_INVALID:
      settle_at(linear);
      // QEMU 7.2's TCG raises #UD for ICEBP; the SDM's is a #DB trap. The
      // engine raises #UD for one behind prefixes (kvm-unit-tests' debug
      // runs 2E 2E F1) and stops at a bare one (exit_for_halt).
      if (const size_t length =
              icebp_length(peek_linear(linear, 15).value_or(std::vector<uint8_t>{}), code_size_from_registers()))
        return deliver({.kind = x86::EventKind::kPrivilegedSoftwareException, .vector = x86::kDebug,
                        .instruction_length = static_cast<uint8_t>(length)},
                       fmt::format("{:#x}: int1", linear));
      if (std::optional<std::optional<VcpuExit>> done = emulate_hypercall(rip, linear)) return *done;
      return raise({.vector = x86::kInvalidOpcode, .error_code = std::nullopt},
                   fmt::format("an invalid opcode ({})", describe(linear)));
    case UC_ERR_FETCH_UNMAPPED:
    case UC_ERR_FETCH_PROT: {
      // No RAM there, or an open-bus page a load made earlier (MMIO is not
      // executable).
      const x86::WalkResult walk = x86::translate(physical, paging_state(), linear, x86::Access::kFetch,
                                                  x86::Accessor{.cpl = 0, .implicit_supervisor = true});
      const uint64_t where = err == UC_ERR_FETCH_UNMAPPED ? unmapped.address
                             : walk.ok()                  ? walk.translation.physical
                                                          : linear;
      settle_at(linear);
      if (err == UC_ERR_FETCH_PROT && ram.is_ram(where, 1))
        throw std::runtime_error(fmt::format("cpu{}: the engine refused a fetch at {:#x} from RAM at {:#x} ({})", index,
                                             linear, where, uc_strerror(err)));
      return exit_at(VcpuExit::Reason::Unsupported, rip,
                     fmt::format("cpu {} fetches an instruction at {:#x} from physical {:#x}, where there is no RAM "
                                 "(open bus, which topolab does not execute)",
                                 index, linear, where));
    }
    default: {
      // READ/WRITE_UNMAPPED cannot happen (open bus maps the page); the rest
      // are engine states topolab does not expect.
      const std::optional<std::vector<uint8_t>> bytes = peek_linear(linear, 15);
      settle_at(linear);
      throw std::runtime_error(fmt::format("cpu{}: the engine stopped at {:#x} (bytes {:02x}) with {}", index, linear,
                                           fmt::join(bytes.value_or(std::vector<uint8_t>{}), " "), uc_strerror(err)));
    }
  }
}

namespace {

bool canonical(uint64_t linear) {
  const auto high = static_cast<int64_t>(linear) >> 47;
  return high == 0 || high == -1;
}

// Whether the 64-bit instruction in `code` makes a stack access (SDM Vol. 1
// 3.4.2: an SS-relative one, by an RSP- or RBP-based operand, an SS
// override, or the implicit stack of PUSH, POP, CALL, RET and friends) at a
// non-canonical address, given the engine's register values.
bool non_canonical_stack_access(std::span<const uint8_t> code, uint64_t address,
                                const std::function<uint64_t(x86_reg)>& reg) {
  thread_local struct Detail {
    csh cs = 0;
    cs_insn* insn = nullptr;
    Detail() {
      if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) == CS_ERR_OK) {
        cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
        insn = cs_malloc(cs);
      }
    }
    ~Detail() {
      if (insn) cs_free(insn, 1);
      if (cs) cs_close(&cs);
    }
  } d;
  if (!d.insn) return false;
  const uint8_t* bytes = code.data();
  size_t left = code.size();
  uint64_t at = address;
  if (!cs_disasm_iter(d.cs, &bytes, &left, &at, d.insn)) return false;
  const cs_x86& x86 = d.insn->detail->x86;
  for (uint8_t i = 0; i < x86.op_count; ++i) {
    const cs_x86_op& op = x86.operands[i];
    if (op.type != X86_OP_MEM) continue;
    const x86_reg base = op.mem.base;
    const bool stack = op.mem.segment == X86_REG_SS ||
                       (op.mem.segment == X86_REG_INVALID && (base == X86_REG_RSP || base == X86_REG_RBP));
    if (!stack) continue;
    uint64_t linear = static_cast<uint64_t>(op.mem.disp);
    if (base != X86_REG_INVALID) linear += reg(base);
    if (op.mem.index != X86_REG_INVALID) linear += reg(op.mem.index) * static_cast<uint64_t>(op.mem.scale);
    if (!canonical(linear)) return true;
  }
  // The implicit stack: PUSH writes below RSP, POP and RET read at RSP.
  for (uint8_t i = 0; i < d.insn->detail->regs_read_count; ++i)
    if (d.insn->detail->regs_read[i] == X86_REG_RSP) {
      const uint64_t rsp = reg(X86_REG_RSP);
      return !canonical(rsp) || !canonical(rsp - 8);
    }
  return false;
}

}  // namespace

// An exception the engine raised, delivered through the guest's IDT with
// its error code: the engine's own (engine_error_code_offset), except for
// #PF, whose code comes from the page walker (the SDM's, where QEMU's is
// not: docs/deviations.md).
std::optional<VcpuExit> UnicornVcpu::Engine::deliver_engine_exception() {
  if (std::optional<VcpuExit> refused = take_engine_exception_state()) return refused;
  const uint64_t rip = exception.rip;
  const uint64_t linear = code_base() + rip;
  settle_at(linear);
  const auto vector = static_cast<uint8_t>(exception.vector);
  // INT n, INT3, INTO and INT1 end their block and are traps: RIP is past them.
  const bool software = current && current->ends_with_software_interrupt && linear == current->end();
  const uint64_t raised_at = software ? current->address_of(current->count - 1) : linear;
  settle_at(linear);
  x86::Event event;
  event.vector = vector;
  if (software) {
    const auto length = static_cast<uint8_t>(linear - raised_at);
    const uint8_t opcode = peek_byte(raised_at).value_or(0);
    event.kind = opcode == 0xCD   ? x86::EventKind::kSoftwareInterrupt
                 : opcode == 0xF1 ? x86::EventKind::kPrivilegedSoftwareException
                                  : x86::EventKind::kSoftwareException;
    event.instruction_length = length;
    write_reg(UC_X86_REG_RIP, rip - length);  // the rules push rip + length
    return deliver(event, fmt::format("{:#x}: {}", raised_at, describe(raised_at)));
  }
  event.kind = x86::EventKind::kHardwareException;
  if (vector == x86::kPageFault) {
    event.cr2 = exception.cr2;
    event.error_code = page_fault_error_code(linear, exception.cr2);
  } else if (x86::pushes_error_code(vector)) {
    event.error_code = exception.engine_error_code.value_or(0);
  }
  // QEMU's TCG raises #GP(0) for a non-canonical stack access; the SDM's is
  // #SS(0) (Vol. 3A 6.15, "Interrupt 12").
  if (vector == x86::kGeneralProtection && event.error_code == 0 &&
      (read_cpu_msr(x86::kMsrEfer) & x86::kEferLma))
    if (const auto code = peek_linear(linear, 15);
        code && non_canonical_stack_access(*code, linear, [&](x86_reg r) { return read_capstone_reg(r); }))
      event.vector = x86::kStackFault;
  return deliver(event, fmt::format("{:#x}: {}", raised_at, describe(raised_at)));
}

// Clears the engine's exception in flight (see engine_state_offsets) and
// reads its error code; false when this engine build has no known layout.
bool UnicornVcpu::Engine::clear_exception_in_flight(uint32_t* error_code) {
  const std::optional<EngineStateOffsets> offsets = engine_state_offsets();
  if (!offsets) return false;
  UcContext& state = saved_state();
  uint8_t* bytes = state.bytes();
  if (error_code) std::memcpy(error_code, bytes + offsets->error_code, sizeof *error_code);
  const int32_t none = -1;
  std::memcpy(bytes + offsets->old_exception, &none, sizeof none);
  state.restore_into(uc);
  exception_in_flight = false;
  return true;
}

std::optional<VcpuExit> UnicornVcpu::Engine::take_engine_exception_state() {
  if (!engine_state_offsets())
    return exit_at(VcpuExit::Reason::Unsupported, exception.rip,
                   fmt::format("cpu {} raised {} but this Unicorn build keeps its exception state where topolab's "
                               "probe cannot find it (docs/unicorn.md)",
                               index, x86::exception_mnemonic(exception.vector)));
  return std::nullopt;
}

// A fault the vCPU itself raises (an unknown MSR, MONITOR's #PF, ...), at
// the instruction RIP stands at.
std::optional<VcpuExit> UnicornVcpu::Engine::raise(x86::Fault fault, const std::string& origin) {
  x86::Event event = x86::Event::from_fault(fault);
  if (fault.vector == x86::kPageFault) write_reg(UC_X86_REG_CR2, fault.cr2);
  return deliver(event, origin);
}

// The #PF error code (SDM 4.7) of the access that faulted at CR2. Which
// access it was (read, write or fetch, user or supervisor) is in the
// engine's own error code; the walker then computes the code the SDM
// gives for it (QEMU leaves P clear on a reserved-bit fault). Without the
// engine's code: a fetch if CR2 is in the instruction, else a write if a
// write there faults, else a read.
uint32_t UnicornVcpu::Engine::page_fault_error_code(uint64_t linear_rip, uint64_t cr2) {
  x86::PagingState state = paging_state();
  x86::Accessor who{.cpl = current_cpl()};
  std::array<x86::Access, 4> candidates{};
  size_t count = 0;
  if (const std::optional<uint32_t> engine = exception.engine_error_code) {
    if (!(*engine & x86::kPfErrorUs)) who.cpl = 0;  // an implicit supervisor access, or ring 0
    candidates[count++] = *engine & x86::kPfErrorId   ? x86::Access::kFetch
                          : *engine & x86::kPfErrorWr ? x86::Access::kWrite
                                                      : x86::Access::kRead;
  }
  if (cr2 - linear_rip < 15) candidates[count++] = x86::Access::kFetch;
  candidates[count++] = x86::Access::kWrite;
  candidates[count++] = x86::Access::kRead;
  for (x86::Access access : std::span(candidates).first(count)) {
    const x86::WalkResult walk = x86::translate(physical, state, cr2, access, who);
    if (walk.fault && walk.fault->vector == x86::kPageFault) return walk.fault->error_code.value_or(0);
  }
  // The walker finds no fault: the engine faulted on a translation it had
  // cached (the guest changed an entry without INVLPG). Its code stands.
  return exception.engine_error_code.value_or(0);
}

}  // namespace topolab
