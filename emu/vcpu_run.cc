// run() and its exits: the callbacks in the middle of a block, the stops,
// and the instructions the vCPU traps and emulates.
#include "emu/vcpu_engine.h"

namespace topolab {

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

// RDTSC and RDTSCP (SDM Vol. 2) read virtual time from the host. Unicorn
// 2.1.3 hooks them like CPUID, with RIP exact; returning 1 skips its own
// (host TSC) answer. An RDTSCP that has no IA32_TSC_AUX never gets here: its
// site is trapped as #UD (hook_trap_sites).
int Vcpu::Engine::on_rdtsc(uc_engine*, void* user) {
  auto& e = *static_cast<Engine*>(user);
  e.guarded([&] { e.write_edx_eax(e.call_host_mid_block([&] { return e.host.read_tsc(); })); });
  return 1;
}

int Vcpu::Engine::on_rdtscp(uc_engine*, void* user) {
  auto& e = *static_cast<Engine*>(user);
  e.guarded([&] {
    e.call_host_mid_block([&] {
      e.write_edx_eax(e.host.read_tsc());
      e.write_reg(UC_X86_REG_RCX, static_cast<uint32_t>(e.read_msr(kMsrTscAux).value_or(0)));
    });
  });
  return 1;
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
    case StopCause::None: return exit_for_halt();
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
  if (trap.kind == TrapKind::Monitor || trap.kind == TrapKind::Mwait) {
    if (std::optional<VcpuExit> exit = exit_for_monitor_or_mwait(rip, trap_address)) return exit;
    // A prefixed form (a segment override, say) is not emulated: #UD.
    settle_at(trap_address);
    return exit_at(VcpuExit::Reason::InvalidOpcode, rip,
                   fmt::format("invalid opcode at {:#x}: {} (prefixed MONITOR/MWAIT)", trap_address, describe(trap_address)));
  }
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
    case TrapKind::Monitor:
    case TrapKind::Mwait:
      break;  // emulate_trap hands them to the machine
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


}  // namespace topolab
