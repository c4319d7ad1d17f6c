// SPDX-License-Identifier: GPL-2.0-or-later
// The instructions the vCPU stops in front of and emulates itself (run()
// in vcpu_run.cc stops, this runs them): MONITOR and MWAIT, handed to the
// machine; the trap sites (RDPMC, RDTSCP without IA32_TSC_AUX, MOV CR4/CR8
// when their hook stopped); SYSCALL and SYSENTER by arch/fast_syscall.
#include "emu/vcpu_engine.h"

namespace topolab {

// MONITOR is 0F 01 C8 and MWAIT 0F 01 C9 (SDM Vol. 2), without prefixes:
// a prefixed form (a segment override on MONITOR, say) stays #UD.
std::optional<VcpuExit> UnicornVcpu::Engine::exit_for_monitor_or_mwait(uint64_t rip, uint64_t linear) {
  const std::optional<std::vector<uint8_t>> bytes = peek_linear(linear, kIdleInstructionLength);
  if (!bytes) return std::nullopt;
  const std::vector<uint8_t>& code = *bytes;
  if (code[0] != 0x0F || code[1] != 0x01 || (code[2] != 0xC8 && code[2] != 0xC9)) return std::nullopt;
  // The block holding it began in an STI shadow and it is the block's first
  // instruction: the shadow covers it (see the file comment).
  const EnteredBlock holding = entered();
  const bool shadowed = holding.any && holding.shadowed && holding.start == linear;
  settle_at(linear);
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
uint64_t UnicornVcpu::Engine::data_segment_base() {
  const auto selector = static_cast<uint16_t>(read_reg(UC_X86_REG_DS));
  if (!(read_reg(UC_X86_REG_CR0) & x86::kCr0Pe)) return uint64_t{selector} << 4;
  const std::optional<x86::SegmentDescriptor> ds = read_descriptor(selector);
  return ds ? ds->base : 0;
}

void UnicornVcpu::Engine::retire_emulated_instruction() {
  counter->retire_one();
  shadow = false;
  write_reg(UC_X86_REG_RIP, read_reg(UC_X86_REG_RIP) + kIdleInstructionLength);
}

// The trap hook stopped the run in front of the instruction. Emulate it,
// retire it and step over it.
// A code hook sets RIP to the *linear* address of its instruction, not to
// the offset in CS (TrapSiteInRealModeResumesAtTheRightOffset), so the offset
// is computed from the hooked address.
std::optional<VcpuExit> UnicornVcpu::Engine::emulate_trap() {
  const uint64_t rip = trap_address - code_base();
  write_reg(UC_X86_REG_RIP, rip);  // the code hook left the linear address there
  const HookedTrap& trap = sites->hooked(trap_address);
  if (trap.kind == TrapKind::Monitor || trap.kind == TrapKind::Mwait) {
    if (std::optional<VcpuExit> exit = exit_for_monitor_or_mwait(rip, trap_address)) {
      if (exit->reason != VcpuExit::Reason::Monitor) return exit;
      // MONITOR checks and faults as a byte load (SDM Vol. 2 MONITOR); the
      // machine watches the physical line.
      const x86::WalkResult walk = x86::walk(physical, paging_state(), exit->address, x86::Access::kRead,
                                             x86::Accessor{.cpl = current_cpl()});
      if (walk.fault) return raise(*walk.fault, fmt::format("monitor at {:#x} on {:#x}", trap_address, exit->address));
      exit->address = walk.translation.physical;
      return exit;
    }
    // A prefixed form (a segment override, say) is not emulated: #UD.
    settle_at(trap_address);
    return raise({.vector = x86::kInvalidOpcode, .error_code = std::nullopt},
                 fmt::format("a prefixed MONITOR/MWAIT ({})", describe(trap_address)));
  }
  settle_at(trap_address);
  if (trace_out) trace_instruction(trap_address, trap.length);
  if (trap.kind == TrapKind::Syscall || trap.kind == TrapKind::Sysenter)
    return emulate_fast_system_call(trap.kind, rip, trap.length);
  if (std::optional<TrapFault> fault = execute_trap(trap.kind, rip)) return raise(fault->fault, fault->origin);
  return retire_at(rip + trap.length);
}

// SYSCALL and SYSENTER (SDM Vol. 2B) by arch/fast_syscall's rules, with the
// MSRs the engine keeps. CS and SS are loaded from the GDT entries their
// selectors name, where the CPU loads fixed flat descriptors: the same for
// every guest whose GDT matches its STAR/SYSENTER_CS (docs/deviations.md).
std::optional<VcpuExit> UnicornVcpu::Engine::emulate_fast_system_call(TrapKind kind, uint64_t rip, uint8_t length) {
  const x86::CpuState cpu = cpu_state();
  x86::FastCallState in{.mode = cpu.mode, .cpl = cpu.cpl, .cs = cpu.cs, .ss = cpu.ss, .rip = rip,
                        .instruction_length = length, .rsp = cpu.rsp, .rflags = cpu.rflags,
                        .rcx = read_reg(UC_X86_REG_RCX), .rdx = read_reg(UC_X86_REG_RDX),
                        .r11 = read_reg(UC_X86_REG_R11)};
  const x86::FastCallMsrs msrs{.efer = read_cpu_msr(x86::kMsrEfer), .star = read_cpu_msr(x86::kMsrStar),
                               .lstar = read_cpu_msr(x86::kMsrLstar), .cstar = read_cpu_msr(x86::kMsrCstar),
                               .fmask = read_cpu_msr(x86::kMsrFmask), .sysenter_cs = read_cpu_msr(x86::kMsrSysenterCs),
                               .sysenter_esp = read_cpu_msr(x86::kMsrSysenterEsp),
                               .sysenter_eip = read_cpu_msr(x86::kMsrSysenterEip)};
  const CpuidRegs vendor = host.describe_cpuid(0, 0);
  const x86::CpuVendor cpu_vendor = vendor.ebx == 0x6874'7541 ? x86::CpuVendor::kAmd : x86::CpuVendor::kIntel;  // "Auth"
  const x86::FastCallOutcome out =
      kind == TrapKind::Syscall ? x86::syscall(in, msrs, cpu_vendor) : x86::sysenter(in, msrs, cpu_vendor);
  const char* name = kind == TrapKind::Syscall ? "syscall" : "sysenter";
  if (const auto* fault = std::get_if<x86::Fault>(&out)) return raise(*fault, name);
  const auto& s = std::get<x86::FastCallState>(out);
  if (std::optional<std::string> why =
          ProtectedModeSegmentLoader::for_this_thread().load(uc, ram, s.cs.selector, s.ss.selector))
    return exit_at(VcpuExit::Reason::Unsupported, rip, fmt::format("cpu {} {}: {}", index, name, *why));
  known_cs = {s.cs.selector, s.cs.desc.l ? 0 : s.cs.desc.base};
  write_reg(UC_X86_REG_RCX, s.rcx);
  write_reg(UC_X86_REG_RDX, s.rdx);
  write_reg(UC_X86_REG_R11, s.r11);
  write_reg(UC_X86_REG_RSP, s.rsp);
  write_reg(UC_X86_REG_RFLAGS, s.rflags);
  return retire_at(s.rip);
}

// SDM Vol. 2: RDMSR, WRMSR, RDPMC, RDTSC, RDTSCP.
std::optional<UnicornVcpu::Engine::TrapFault> UnicornVcpu::Engine::execute_trap(TrapKind kind, uint64_t rip) {
  const auto ecx = static_cast<uint32_t>(read_reg(UC_X86_REG_RCX));
  switch (kind) {
    case TrapKind::Rdmsr: {
      const std::optional<uint64_t> value = read_msr(ecx);
      if (!value) return TrapFault{{.vector = x86::kGeneralProtection, .error_code = 0},
                                   fmt::format("rdmsr of unknown MSR {:#x}", ecx)};
      write_edx_eax(*value);
      return std::nullopt;
    }
    case TrapKind::Wrmsr: {
      const uint64_t value = (read_reg(UC_X86_REG_RDX) << 32) | static_cast<uint32_t>(read_reg(UC_X86_REG_RAX));
      if (!write_msr(ecx, value))
        return TrapFault{{.vector = x86::kGeneralProtection, .error_code = 0},
                         fmt::format("wrmsr of unknown MSR {:#x} (value {:#x})", ecx, value)};
      return std::nullopt;
    }
    case TrapKind::Rdpmc: {
      // #GP(0) outside ring 0 unless CR4.PCE, and for a counter the CPU
      // does not have; else the counter's value, which is what the guest
      // last wrote (topolab's counters do not count: docs/msrs.md).
      if (current_cpl() != 0 && !(read_reg(UC_X86_REG_CR4) & x86::kCr4Pce))
        return TrapFault{{.vector = x86::kGeneralProtection, .error_code = 0}, "rdpmc outside ring 0 without CR4.PCE"};
      const std::optional<uint64_t> value = host.read_pmc(ecx);
      if (!value) return TrapFault{{.vector = x86::kGeneralProtection, .error_code = 0},
                                   fmt::format("rdpmc of counter {:#x}, which this CPU does not have", ecx)};
      write_edx_eax(*value);
      return std::nullopt;
    }
    case TrapKind::Rdtscp: {
      // Without IA32_TSC_AUX the CPU has no RDTSCP, which is then #UD.
      const std::optional<uint64_t> aux = host.read_tsc_aux();
      if (!aux) return TrapFault{{.vector = x86::kInvalidOpcode, .error_code = std::nullopt},
                                 "rdtscp, but the host has no IA32_TSC_AUX"};
      pause_loop.note_time_read(SpinRegisters::kRdtscpOutputs);
      write_edx_eax(host.read_tsc());
      write_reg(UC_X86_REG_RCX, static_cast<uint32_t>(*aux));
      return std::nullopt;
    }
    case TrapKind::Monitor:
    case TrapKind::Mwait:
    case TrapKind::Syscall:
    case TrapKind::Sysenter:
      break;  // emulate_trap hands them elsewhere
    case TrapKind::Iret:
    case TrapKind::Pause:
      break;  // never stopped at: on_trap_site lets it run
    case TrapKind::System:
    case TrapKind::MovFromDr: {
      // Stopped at only for a MOV DR with DR7.GD set (on_trap_site): a
      // fault-like #DB before it runs, DR6.BD set and DR6.B0-B3 clear, and
      // GD cleared so the handler can use the debug registers (SDM Vol. 3B
      // 18.2.4, 18.2.3; KVM's handle_dr and kvm_deliver_exception_payload).
      write_reg(UC_X86_REG_DR6, (read_reg(UC_X86_REG_DR6) & ~kDr6BreakpointHits) | kDr6DebugRegisterAccess);
      write_reg(UC_X86_REG_DR7, read_reg(UC_X86_REG_DR7) & ~kDr7GeneralDetect);
      return TrapFault{{.vector = x86::kDebug, .error_code = std::nullopt},
                       "a MOV to or from a debug register with DR7.GD set"};
    }
    case TrapKind::MovFromCr8:
      break;  // no site: the engine reads its CR8 (Vcpu::set_cr8)
    case TrapKind::MovToCr4:
      // at_cr4 stops here only for a value with a bit this CPU cannot set.
      return TrapFault{{.vector = x86::kGeneralProtection, .error_code = 0},
                       fmt::format("mov cr4 of {:#x}: a bit CPUID does not allow (settable {:#x})",
                                   read_reg(kCr8Gprs[sites->hooked(trap_address).gpr]), cr4_settable.value_or(0))};
    case TrapKind::MovToCr8: {
      // CR access is CPL 0 only; MOV to CR8 with bits 63:4 set is #GP(0).
      std::array<uint8_t, 16> buffer;
      const HookedTrap& trap = sites->hooked(trap_address);
      const std::span<uint8_t> bytes = std::span(buffer).first(trap.length);
      const std::optional<Cr8Access> cr8 =
          peek_linear_into(trap_address, bytes) ? cr8_access(bytes, CodeSize::Bits64) : std::nullopt;
      if (!cr8) throw std::logic_error("a CR8 trap site that is no MOV CR8");
      if (current_cpl() != 0)
        return TrapFault{{.vector = x86::kGeneralProtection, .error_code = 0}, "mov cr8 at CPL > 0"};
      const uint64_t value = read_reg(kCr8Gprs[cr8->gpr]);
      if (value >> 4)
        return TrapFault{{.vector = x86::kGeneralProtection, .error_code = 0},
                         fmt::format("mov cr8 of {:#x}: bits 63:4 are reserved", value)};
      host.write_cr8(value);
      return std::nullopt;
    }
  }
  throw std::logic_error("unknown trap kind");
}

// The instruction at `address`, disassembled in the mode of the current
// block when it holds the address.
std::string UnicornVcpu::Engine::describe(uint64_t address) {
  const bool in_current = current && address >= current->start && address < current->end();
  const CodeSize code_size = in_current ? current->code_size : code_size_from_registers();
  // The longest x86 instruction is 15 bytes; near the end of a mapping, fewer.
  for (size_t length = 15; length > 0; --length)
    if (const std::optional<std::vector<uint8_t>> code = peek_linear(address, length))
      return disassembler.describe(*code, address, code_size);
  return "(not mapped)";
}

}  // namespace topolab
