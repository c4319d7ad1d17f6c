// SPDX-License-Identifier: GPL-2.0-or-later
// What a vCPU stops for: HLT, MONITOR, MWAIT, and what it cannot deliver
// or run (a triple fault, something topolab does not model).
#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "arch/x86_arch.h"
#include "emu/machine.h"

namespace topolab {

namespace {

// MWAIT (SDM Vol. 2): the extension "interrupts break MWAIT even with IF =
// 0" (ECX[0], enumerated by CPUID.05H:ECX[1]), and the hints valid when
// CPUID.05H:EDX enumerates no sub-states: C1 (0x00) and C0 (0xF0).
constexpr uint32_t kMwaitBreakOnInterrupt = 1u << 0;
constexpr uint32_t kMwaitHintC1 = 0x00, kMwaitHintC0 = 0xF0;

bool on_apic_page(uint64_t address) {
  return address >= LocalApic::kDefaultBase && address < LocalApic::kDefaultBase + LocalApic::kMmioSize;
}

// "guest crashed: WHY (cpu N RIP ... RSP ... CR0 ...)".
std::string crash_line(const Vcpu& vcpu, unsigned index, const VcpuExit& exit, const std::string& why) {
  const VcpuState s = vcpu.state();
  return fmt::format("guest crashed: {} (cpu {} RIP {:#x} RSP {:#x} CR0 {:#x})", why, index, exit.rip, s.rsp, s.cr0);
}

}  // namespace

std::optional<RunResult> Machine::handle_exit(Cpu& cpu, const VcpuExit& exit) {
  Vcpu& vcpu = *cpu.vcpu();
  switch (exit.reason) {
    case VcpuExit::Reason::QuantumEnd:
    case VcpuExit::Reason::StopRequested:
      return std::nullopt;
    case VcpuExit::Reason::PauseLoop:
      return handle_loop_exit(cpu, exit);
    case VcpuExit::Reason::Halt:
      cpu.charge_exit(ExitKind::Hlt);
      if (cpu.halt()) settle_halt(cpu);
      return std::nullopt;
    // The vCPU delivers every exception through the guest's IDT itself;
    // these are what it cannot deliver.
    case VcpuExit::Reason::TripleFault: {
      RunResult r = finish(RunResult::Outcome::Crashed, fmt::format("guest crashed: {}", exit.detail));
      r.triple_fault = true;
      return r;
    }
    case VcpuExit::Reason::Unsupported:
      return finish(RunResult::Outcome::Crashed, fmt::format("guest needs what topolab does not model: {}", exit.detail));
    case VcpuExit::Reason::Monitor:
    case VcpuExit::Reason::Mwait:
      if (!config_.cpu.has(CpuFeature::Monitor)) {
        // No MONITOR/MWAIT in this model (CPUID.01H:ECX[3]): #UD, as on hardware.
        const std::string why = fmt::format(
            "invalid opcode: {} (the CPU model has no MONITOR/MWAIT; add +monitor to -cpu)", exit.detail);
        Injection injection = vcpu.inject_exception(x86::kInvalidOpcode, std::nullopt);
        if (injection) return std::nullopt;
        return finish(RunResult::Outcome::Crashed,
                      crash_line(vcpu, cpu.index(), exit, fmt::format("{}; no usable handler: {}", why, injection.detail)));
      }
      return exit.reason == VcpuExit::Reason::Monitor ? emulate_monitor(cpu, exit) : emulate_mwait(cpu, exit);
  }
  return finish(RunResult::Outcome::Crashed, crash_line(vcpu, cpu.index(), exit, exit.detail));
}

std::optional<RunResult> Machine::raise_gp_for(Cpu& cpu, const VcpuExit& exit, const char* instruction, uint32_t ecx) {
  if (Injection injection = cpu.vcpu()->inject_exception(x86::kGeneralProtection, 0); !injection)
    return finish(RunResult::Outcome::Crashed,
                  fmt::format("guest crashed: {} with ECX {:#x} raised #GP; no usable handler: {} (cpu {} RIP {:#x})",
                              instruction, ecx, injection.detail, cpu.index(), exit.rip));
  return std::nullopt;
}

// MONITOR (SDM Vol. 2): arms the 64-byte line holding DS:rAX. ECX holds
// extensions, of which none exist (#GP otherwise); EDX hints are ignored.
std::optional<RunResult> Machine::emulate_monitor(Cpu& cpu, const VcpuExit& exit) {
  if (exit.operands.ecx != 0) return raise_gp_for(cpu, exit, "MONITOR", exit.operands.ecx);
  const uint64_t line = exit.address & ~(Cpu::kMonitorLine - 1);
  if (!board_.ram().is_ram(line, Cpu::kMonitorLine))
    return finish(RunResult::Outcome::Crashed,
                  fmt::format("guest error: cpu {} MONITOR at RIP {:#x} on {:#x}, which is not RAM ({}); topolab "
                              "watches stores to RAM only",
                              cpu.index(), exit.rip, exit.address,
                              on_apic_page(exit.address) ? "the local APIC page" : "MMIO or unmapped"));
  if (!config_.cost.mwait_passthrough) cpu.charge_exit(ExitKind::Monitor);
  cpu.arm_monitor(line);
  ++stats_.vcpu(cpu.index()).monitor_arms;
  cpu.vcpu()->retire_emulated_instruction();
  return std::nullopt;
}

// MWAIT (SDM Vol. 2): waits for a store to the armed line, an interrupt
// (with IF = 0 too when ECX[0] is set), NMI, INIT or SIPI. Without an armed
// line it does nothing, as the SDM says; never having armed one at all is
// reported as the guest bug it is.
std::optional<RunResult> Machine::emulate_mwait(Cpu& cpu, const VcpuExit& exit) {
  const uint32_t hint = exit.operands.eax, extensions = exit.operands.ecx;
  if (extensions & ~kMwaitBreakOnInterrupt) return raise_gp_for(cpu, exit, "MWAIT", extensions);
  if (hint != kMwaitHintC1 && hint != kMwaitHintC0)
    return finish(RunResult::Outcome::Crashed,
                  fmt::format("guest error: cpu {} MWAIT at RIP {:#x} with hint EAX {:#x}: this CPU model enumerates no "
                              "C-state sub-states (CPUID.05H:EDX = 0), so only 0x0 (C1) and 0xf0 (C0) are valid",
                              cpu.index(), exit.rip, hint));
  if (!cpu.ever_monitored())
    return finish(RunResult::Outcome::Crashed,
                  fmt::format("guest error: cpu {} MWAIT at RIP {:#x} with no MONITOR before it: nothing could wake it "
                              "by a store",
                              cpu.index(), exit.rip));
  if (!config_.cost.mwait_passthrough) cpu.charge_exit(ExitKind::Mwait);
  VcpuStats& s = stats_.vcpu(cpu.index());
  ++s.mwait_entries;
  ++s.mwait_hints[hint];
  cpu.vcpu()->retire_emulated_instruction();
  if (!cpu.monitor_armed()) return std::nullopt;
  if (cpu.monitored_line_changed()) {  // the store came between MONITOR and MWAIT
    cpu.disarm_monitor();
    return std::nullopt;
  }
  cpu.park_in_mwait(extensions & kMwaitBreakOnInterrupt);
  settle_halt(cpu);
  return std::nullopt;
}

// A loop the vCPU proved it cannot leave by itself (an idle loop), or a
// PAUSE loop at a fixed point. Why calling one a hang is sound:
// - a fixed point (a PAUSE loop that reads no time, `jmp .`, a loop of pure
//   blocks whose registers came back: emu/loop_watch.h) does the same turn
//   for ever until an interrupt, NMI, INIT or another vCPU's store changes
//   what it sees; spin_horizon is the earliest time any of those could
//   come, so a skip to the time limit means none comes before it;
// - a loop with no way out but moving registers (loop_state_moves) cannot
//   be skipped to an earlier event, so it is skipped only when spin_horizon
//   says nothing can end it before the time limit, and otherwise runs on;
// - either way, another vCPU parked in a spin of its own is left out of
//   spin_horizon while it is quiescent, but its own APIC timer, an IPI on
//   its way or an interrupt waiting for it could still start it storing:
//   nothing_else_can_end_it checks every other vCPU before the run ends as
//   a hang (else it ends at the time limit, as before).
// A loop that reads the TSC is never called stuck: it leaves at a time it
// reads, which may be after the limit.
std::optional<RunResult> Machine::handle_loop_exit(Cpu& cpu, const VcpuExit& exit) {
  const bool never_leaves_by_itself = exit.idle_loop || !exit.loop_reads_time;
  if (exit.loop_state_moves && spin_horizon(cpu, false) < limit_ns()) return std::nullopt;
  skip_spin(cpu, exit);
  if (never_leaves_by_itself && cpu.now() >= limit_ns() && nothing_else_can_end_it(cpu))
    return finish(RunResult::Outcome::Hung, stuck_loop_diagnosis(cpu, exit));
  return std::nullopt;
}

// While it is skipped its loop would see the same memory (no other vCPU runs
// before the horizon), so for a loop at a fixed point this is exact. One
// that reads the TSC is skipped by at most a quantum of time: it leaves
// within a quantum of when it would have (emu/pause_loop.h).
// A recheck (the spinner came back and found its loop unchanged) is no exit
// of KVM's: the spinner never stopped spinning there, so it costs nothing.
void Machine::skip_spin(Cpu& cpu, const VcpuExit& exit) {
  if (!exit.spin_recheck && !exit.idle_loop) {
    cpu.charge_exit(ExitKind::PauseLoop);
    ++stats_.vcpu(cpu.index()).ple_exits;
  }
  cpu.park_in_spin(store_epoch_, exit.loop_reads_time);
  uint64_t until = spin_horizon(cpu, exit.loop_reads_time);
  if (exit.loop_reads_time) until = std::min(until, cpu.now() + config_.cost.ns_for_instructions(config_.quantum));
  cpu.skip_spin_to(until);
}

uint64_t Machine::spin_horizon(const Cpu& spinner, bool reads_time) const {
  const Cpu::PendingInterrupts pending = spinner.pending_interrupts();
  if (pending.takes_nmi() || pending.takes_interrupt()) return spinner.now();
  uint64_t t = limit_ns();
  if (auto timer = spinner.apic().next_timer_event()) t = std::min(t, *timer);
  if (auto arrival = timeline_.next_arrival(spinner.index())) t = std::min(t, *arrival);
  for (const IpiInFlight& ipi : ipis_to_route_) t = std::min(t, ipi.sent_ns);
  // The spinner is in its slice, so not among the timeline's clocks. A
  // spinner on the TSC skips a quantum at most: another one parked on the
  // TSC, which can leave its loop only at a time it reads, does not hold it
  // back (it would see that one's store at most a quantum late, the bound
  // its own skip already has). Otherwise they would advance in lockstep,
  // each no further than the slowest.
  if (auto storing = timeline_.earliest_storing_clock(reads_time)) t = std::min(t, *storing);
  if (auto timer = timeline_.next_waking_timer()) t = std::min(t, timer->time);
  // A timed device line's interrupt (the PIT's) may reach it or a vCPU that stores.
  if (auto device = device_event_that_may_interrupt()) t = std::min(t, *device);
  return t;
}

void Machine::check_monitored_lines(Cpu& writer, uint64_t slice_end_ns) {
  std::vector<unsigned> woken;
  for (const auto& [line, parked] : mwait_lines_)
    for (unsigned index : parked)
      if (index != writer.index() && cpus_[index]->monitored_line_changed()) woken.push_back(index);
  // Each wake touches its own vCPU only; index order as the walk over every vCPU had.
  std::sort(woken.begin(), woken.end());
  for (unsigned index : woken) {
    cpus_[index]->wake(slice_end_ns, WakeCause::MwaitStore);
    rekey(*cpus_[index]);
  }
}

void Machine::track_mwait_line(const Cpu& cpu) {
  const std::optional<uint64_t> line = cpu.parked_in_mwait() ? std::optional<uint64_t>(cpu.monitor_line()) : std::nullopt;
  std::optional<uint64_t>& tracked = mwait_line_of_[cpu.index()];
  if (tracked == line) return;
  if (tracked) {
    auto it = mwait_lines_.find(*tracked);
    it->second.erase(cpu.index());
    if (it->second.empty()) mwait_lines_.erase(it);
  }
  if (line) mwait_lines_[*line].insert(cpu.index());
  tracked = line;
}

}  // namespace topolab
