// SPDX-License-Identifier: GPL-2.0-or-later
// The end of a run and the guest's measuring window: the counters settled,
// halts booked up to the end, and the one-line diagnoses of a run that
// cannot go on.
#include <algorithm>

#include <fmt/format.h>

#include "arch/x86_arch.h"
#include "emu/machine.h"

namespace topolab {

RunResult Machine::finish(RunResult::Outcome outcome, std::string diagnosis) {
  RunResult result;
  result.outcome = outcome;
  result.diagnosis = std::move(diagnosis);
  if (outcome == RunResult::Outcome::GuestExit) result.guest_value = board_.guest_exit_value();
  settle_stats();
  for (const auto& cpu : cpus_) {
    result.instructions += cpu->instructions();
    result.virtual_ns = std::max(result.virtual_ns, cpu->now());
  }
  // vCPUs still halted at the end were halted until the end.
  for (const auto& cpu : cpus_) {
    cpu->accrue_idle(result.virtual_ns);
    cpu->record_final_activity(result.virtual_ns);
  }
  // A window the guest began but did not end ends with the run.
  if (window_begin_ && (!window_ || !window_->ended_by_guest)) {
    window_ = MeasureWindow{.begin_ns = window_->begin_ns,
                            .end_ns = result.virtual_ns,
                            .ended_by_guest = false,
                            .stats = stats_.minus(*window_begin_)};
  }
  return result;
}

RunResult Machine::finish_idle() {
  // A timer, or a timed device line a vCPU could take, still to come: the
  // limit ended the run, not a deadlock.
  if (timeline_.next_waking_timer() || device_event_that_may_interrupt())
    return finish(RunResult::Outcome::BudgetExhausted,
                  fmt::format("the guest did not finish within {} s of virtual time (halted, waiting for timers; "
                              "raise --time-limit)",
                              config_.time_limit_seconds));
  return finish(RunResult::Outcome::Hung, deadlock_diagnosis());
}

void Machine::settle_stats() {
  for (const auto& cpu : cpus_) {
    VcpuStats& s = stats_.vcpu(cpu->index());
    s.instructions = cpu->instructions();
    s.run_ns = cpu->run_ns() + cpu->stall_ns();  // a serializing instruction's cycles are the guest's
    s.pauses = cpu->pauses();
  }
}

// A mark takes the settled time, not the writing vCPU's clock: halts in
// progress are booked up to it and no later wakeup can come before it, so
// nothing is booked twice and a window never ends before it began, even
// when another vCPU (behind in time) writes its end. The price: a window's
// bounds are as exact as the vCPUs are close in time, about a quantum.
void Machine::measure_mark(MeasurePort::Mark mark) {
  const uint64_t at = std::max(settled_time(), window_ ? window_->begin_ns : 0);
  for (const auto& cpu : cpus_) cpu->accrue_idle(at);
  settle_stats();
  if (mark == MeasurePort::Mark::Begin) {
    window_begin_ = stats_;
    window_ = MeasureWindow{.begin_ns = at, .end_ns = at, .ended_by_guest = false, .stats = Stats(0)};
    return;
  }
  // An end without a begin changes nothing; a second end moves the end
  // (a guest that retries its closing read).
  if (!window_begin_ || !window_) return;
  window_->end_ns = at;
  window_->ended_by_guest = true;
  window_->stats = stats_.minus(*window_begin_);
}

namespace {

// One vCPU in a deadlock: where it waits and why nothing reaches it.
std::string describe_stuck_cpu(const MachineCpu& cpu) {
  if (cpu.state() == MachineCpu::State::WaitForSipi) return fmt::format("cpu {} waits for SIPI", cpu.index());
  VcpuState s = cpu.vcpu()->state();
  const LocalApic& apic = cpu.apic();
  std::optional<uint8_t> pending = apic.pending_vector();
  return fmt::format("cpu {} {} with interrupts {} at RIP {:#x} (APIC {}, TPR {:#x}, PPR {:#x}, {})", cpu.index(),
                     cpu.idle_state(), s.rflags & x86::kFlagIf ? "enabled" : "disabled", s.rip,
                     apic.software_enabled() ? "enabled" : "software-disabled", apic.task_priority(),
                     apic.processor_priority(),
                     pending ? fmt::format("vector {:#x} pending", *pending) : std::string("nothing pending"));
}

}  // namespace

std::string Machine::deadlock_diagnosis() const {
  if (cpus_.size() == 1) {
    const Cpu& cpu = *cpus_[0];
    if (cpu.state() == Cpu::State::WaitForSipi)
      return "cpu 0 took an INIT and waits for a SIPI that no other vCPU can send";
    VcpuState s = cpu.vcpu()->state();
    return fmt::format("the guest {} with interrupts {} at cpu 0 RIP {:#x} RSP {:#x} CR0 {:#x} and nothing can wake it",
                       cpu.parked_in_mwait() ? "waits " + cpu.idle_state() : std::string("halted"),
                       s.rflags & x86::kFlagIf ? "enabled" : "disabled", s.rip, s.rsp, s.cr0);
  }
  std::string text = "guest deadlock: no vCPU can run and nothing can wake one:";
  constexpr size_t kShown = 8;
  size_t shown = 0, started = 0;
  for (const auto& cpu : cpus_) {
    if (cpu->state() != Cpu::State::WaitForSipi) ++started;
    if (shown < kShown && (cpu->state() != Cpu::State::WaitForSipi || cpu->index() == 0 || shown < 2)) {
      text += fmt::format(" {};", describe_stuck_cpu(*cpu));
      ++shown;
    }
  }
  text += fmt::format(" ({} of {} vCPUs started)", started, cpus_.size());
  return text;
}

bool Machine::nothing_else_can_end_it(const Cpu& stuck) const {
  const uint64_t limit = limit_ns();
  const auto timer_before_limit = [&](const Cpu& cpu) {
    const std::optional<uint64_t> timer = cpu.apic().next_timer_event();
    return timer && *timer < limit && cpu.apic().timer_interrupts();
  };
  for (const auto& c : cpus_) {
    const Cpu& other = *c;
    if (&other == &stuck) continue;
    switch (other.state()) {
      case Cpu::State::WaitForSipi:
        continue;  // only an INIT and SIPI from a vCPU that runs could start it
      case Cpu::State::Halted:
        // Its timer would be on the timeline, which spin_horizon read;
        // checked again here so that this rule stands alone.
        if (other.can_wake() || (other.timer_can_wake() && timer_before_limit(other))) return false;
        continue;
      case Cpu::State::Running: {
        if (!other.quiescent(store_epoch_)) return false;
        const Cpu::PendingInterrupts pending = other.pending_interrupts();
        if (pending.takes_nmi() || pending.takes_interrupt() || timer_before_limit(other)) return false;
        if (timeline_.next_arrival(other.index())) return false;
        continue;
      }
    }
  }
  return true;
}

namespace {

// Why no interrupt reaches a vCPU that has them on, for a hang's diagnosis.
std::string why_no_interrupt(const MachineCpu& cpu) {
  const LocalApic& apic = cpu.apic();
  std::string timer = "its APIC timer is not running";
  if (const std::optional<uint64_t> next = apic.next_timer_event())
    timer = apic.timer_interrupts() ? fmt::format("its APIC timer next fires at {} ns, after the limit", *next)
                                    : std::string("its APIC timer is masked");
  return fmt::format("interrupts are on, but no interrupt source is armed: {}, nothing is pending in its APIC, and no "
                     "device or other vCPU is left to raise one",
                     timer);
}

// Where the other vCPUs are, for a hang's diagnosis.
std::string where_the_others_are(const std::vector<std::unique_ptr<MachineCpu>>& cpus, const MachineCpu& stuck) {
  if (cpus.size() == 1) return "it is the only vCPU";
  std::string text = "every other vCPU is halted or stuck too (";
  constexpr size_t kNamed = 4;
  size_t named = 0;
  for (const auto& c : cpus) {
    const MachineCpu& other = *c;
    if (&other == &stuck) continue;
    if (named++ == kNamed) {
      text += fmt::format(", and {} more", cpus.size() - 1 - kNamed);
      break;
    }
    if (named > 1) text += ", ";
    // An AP that waits for its first SIPI has no engine yet: nothing to read.
    if (other.state() == MachineCpu::State::WaitForSipi) {
      text += fmt::format("cpu {} waits for SIPI", other.index());
      continue;
    }
    const VcpuState s = other.vcpu()->state();
    const char* interrupts = s.rflags & x86::kFlagIf ? "on" : "off";
    if (other.state() == MachineCpu::State::Halted)
      text += fmt::format("cpu {} {} with interrupts {}", other.index(), other.idle_state(), interrupts);
    else
      text += fmt::format("cpu {} loops forever at RIP {:#x} with interrupts {}", other.index(), s.rip, interrupts);
  }
  return text + ")";
}

}  // namespace

std::string Machine::stuck_loop_diagnosis(const Cpu& cpu, const VcpuExit& exit) const {
  const bool interrupts_on = cpu.vcpu()->state().rflags & x86::kFlagIf;
  const std::string loop =
      exit.detail.empty() ? "a PAUSE loop that stores nothing and comes back to the same registers every turn"
                          : exit.detail;
  const std::string why =
      interrupts_on ? why_no_interrupt(cpu) : std::string("interrupts are off and nothing in the loop can turn them on");
  return fmt::format("guest hang: cpu {} loops forever in {} at RIP {:#x} with interrupts {}: {}; {}; nothing can end "
                     "it before the time limit ({} s of virtual time)",
                     cpu.index(), loop, exit.rip, interrupts_on ? "on" : "off", why,
                     where_the_others_are(cpus_, cpu), config_.time_limit_seconds);
}

std::string Machine::describe_apics() const {
  std::string out;
  for (const auto& cpu : cpus_) out += fmt::format("cpu {}: {}\n", cpu->index(), cpu->apic().describe(cpu->now()));
  return out;
}

}  // namespace topolab
