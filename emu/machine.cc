// SPDX-License-Identifier: GPL-2.0-or-later
#include "emu/machine.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "arch/x86_arch.h"
#include "firmware/acpi.h"
#include "firmware/boot.h"
#include "firmware/legacy_bios.h"
#include "model/cost_rules.h"

namespace topolab {

namespace {

void check_run_limits(const MachineConfig& config) {
  if (!std::isfinite(config.time_limit_seconds) || config.time_limit_seconds <= 0 ||
      config.time_limit_seconds > MachineConfig::kMaxTimeLimitSeconds)
    throw ConfigError(fmt::format("--time-limit must be between 0 and {} seconds of virtual time",
                                  MachineConfig::kMaxTimeLimitSeconds));
  if (config.quantum == 0) throw ConfigError("--quantum must be at least 1 instruction");
}

// The engines' PLE controls: the cost model's gap and window in instructions.
std::optional<PauseLoopExiting> pause_loop_exiting(const MachineConfig& config) {
  if (!config.spin_skip || config.cost.ple_window == 0) return std::nullopt;
  return PauseLoopExiting{.gap_instructions = config.cost.instructions_for_cycles(config.cost.ple_gap),
                          .window_instructions = config.cost.instructions_for_cycles(config.cost.ple_window)};
}

// vCPU 0 starts as its boot protocol says.
void enter_boot_state(Vcpu& vcpu, const BootEntry& boot) {
  switch (boot.protocol) {
    case BootProtocol::Linux: vcpu.enter_linux32(boot.entry, boot.boot_data, boot.gdt, boot.gdt_limit); return;
    // PVH's entry state is Multiboot's with EBX the start_info (EAX unused).
    case BootProtocol::Pvh: vcpu.enter_multiboot(boot.entry, 0, boot.boot_data); return;
    case BootProtocol::Multiboot:
      vcpu.enter_multiboot(boot.entry, MultibootBoot::kBootloaderMagic, boot.boot_data);
      return;
  }
}

}  // namespace

Machine::Machine(const MachineConfig& config, std::optional<BootFiles> files, std::function<void(uint8_t)> serial_out,
                 VcpuFactory make_vcpu)
    : config_(config),
      cpuid_(config.topology, config.cpu, config.machine_options),
      // CPUID's feature bits are the same on every vCPU: vCPU 0 answers.
      msrs_([this](uint32_t leaf, uint32_t subleaf) { return cpuid_.query(0, leaf, subleaf); }),
      make_vcpu_(std::move(make_vcpu)),
      board_(PcBoardConfig{.topology = config_.topology,
                           .ram_mib = config.ram_mib,
                           .devices = config.devices,
                           .ioapic_extended_destination = config.cpu.offers_ext_dest_id(),
                           .phys_bits = config.cpu.phys_bits},
             std::move(serial_out), *this),
      stats_(config_.topology.cpus()),
      activity_(config_.topology.cpus()),
      platform_{.topology = config_.topology,
                .cpuid = cpuid_, .msrs = msrs_, .cost = config_.cost, .ram = board_.ram(), .ports = board_.ports(),
                .stats = stats_, .activity = activity_, .make_vcpu = make_vcpu_, .events = *this, .clock = clock_,
                .pause_loop_exiting = pause_loop_exiting(config), .mmio_windows = board_.mmio_windows()},
      timeline_(config_.topology.cpus()),
      mwait_line_of_(config_.topology.cpus()) {
  check_run_limits(config);
  // With the BIOS's state, its handlers take the top of the BIOS area.
  AcpiWindow acpi_window;
  if (config.legacy_bios) acpi_window.size = legacy_bios::kCodeBase - acpi_window.base;
  const AcpiTables acpi = build_acpi_tables(board_.ram(), config_.topology, config_.numa, acpi_window);
  facs_ = acpi.facs;
  // The guest sees a Multiboot image's file name without its directories
  // (QEMU passes the path as typed), so where the image sits cannot change
  // what it does.
  if (!files)
    files = read_boot_files(
        config.image,
        config.image_name.empty() ? std::filesystem::path(config.image).filename().string() : config.image_name,
        config.append, config.initrd, board_.ram().regions().front().size);
  // Before any vCPU exists, so before any read of a clock.
  clock_.set_synced(config.synced_clocks.value_or(files->is_linux_kernel()));
  const BootEntry boot = load_boot_image(board_.ram(), *files, acpi.rsdp);

  cpus_.reserve(config_.topology.cpus());
  std::vector<const LocalApic*> apics;
  for (unsigned i = 0; i < config_.topology.cpus(); ++i) {
    cpus_.push_back(std::make_unique<Cpu>(platform_, i));
    apics.push_back(&cpus_.back()->apic());
  }
  bus_.emplace(std::move(apics), [this](uint32_t id) { return config_.topology.index_of_apic_id(id); });
  enter_boot_state(*cpus_[0]->vcpu(), boot);
  if (config.legacy_bios) enter_legacy_bios_state();
  for (auto& cpu : cpus_) rekey(*cpu);
}

void Machine::enter_legacy_bios_state() {
  legacy_bios::write_ivt_and_handlers(board_.ram());
  // Through the devices' own ports, at virtual time 0, as the BIOS would.
  for (const legacy_bios::PortWrite& write : legacy_bios::port_writes())
    board_.ports().write(write.port, 1, write.value);
  route_sent_ipis();
  LocalApic& apic = cpus_[0]->apic();
  for (const legacy_bios::ApicSetting& setting : legacy_bios::bsp_apic_settings()) {
    if (apic.mmio_enabled()) {
      apic.mmio_write(setting.offset, 4, setting.value, 0);
    } else {
      apic.wrmsr(LocalApic::MSR_X2APIC_FIRST + setting.offset / 16, setting.value, 0);
    }
  }
}

Machine::~Machine() = default;

void Machine::set_trace(std::FILE* out) {
  for (auto& cpu : cpus_)
    if (cpu->vcpu()) cpu->vcpu()->set_trace(out);
}

// --- What the board's devices ask -------------------------------------------------

void Machine::request_shutdown(std::string how) {
  if (!shutdown_) shutdown_ = std::move(how);
  if (running_ && running_->vcpu()) running_->vcpu()->request_stop();
}

void Machine::request_suspend() {
  suspend_ = true;
  if (running_ && running_->vcpu()) running_->vcpu()->request_stop();
}

std::optional<RunResult> Machine::sleep_in_s3(uint64_t at_ns) {
  suspend_ = false;
  const std::optional<uint64_t> wake = board_.s3_wake_ns(at_ns);
  if (!wake)
    return finish(RunResult::Outcome::Hung,
                  "guest asleep for good: it entered S3 (PM1a_CNT SLP_TYP 1) with no wake source (the RTC alarm wakes "
                  "it only with PM1_EN.RTC_EN and the RTC's B.AIE set)");
  if (*wake >= limit_ns())
    return finish(RunResult::Outcome::BudgetExhausted,
                  fmt::format("the guest sleeps in S3 until its RTC alarm at {} ns of virtual time, after the {} s "
                              "limit (raise --time-limit)",
                              *wake, config_.time_limit_seconds));
  uint32_t vector = 0;
  std::memcpy(&vector, board_.ram().bytes(facs_ + kFacsWakingVector, 4).data(), 4);
  if (vector == 0 || vector >= memory_map::kFirstMiB)
    return finish(RunResult::Outcome::Crashed,
                  fmt::format("guest crashed: it woke from S3 with the FACS's firmware_waking_vector at {:#x}, which "
                              "real mode cannot reach (SeaBIOS would reboot)",
                              vector));
  // A platform reset for the CPUs: each waits for SIPI with its APIC reset.
  for (const auto& cpu : cpus_) {
    if (cpu->state() != Cpu::State::WaitForSipi) cpu->enter_wait_for_sipi();
    cpu->apic().reset();
    cpu->see_pic_intr(false);
  }
  board_.wake_from_s3();
  cpus_[0]->start_in_real_mode(static_cast<uint16_t>(vector >> 4), static_cast<uint16_t>(vector & 0xf), *wake);
  for (const auto& cpu : cpus_) rekey(*cpu);
  return std::nullopt;
}

void Machine::guest_exit_requested() {
  if (running_ && running_->vcpu()) running_->vcpu()->request_stop();
}

void Machine::charge_io_exit() {
  if (Cpu* cpu = accessing_cpu()) cpu->charge_exit(ExitKind::Io);
}

// Devices read time as the TSC does (emu/guest_clock.h).
uint64_t Machine::device_now_ns() { return clock_.read(running_ ? running_->now() : settled_time()); }

void Machine::send_device_interrupts(const IoApicMessages& messages) {
  if (messages.empty()) return;
  // Pins and entries change only in a vCPU's accesses, so one is running;
  // the fallback keeps a device call outside a slice harmless.
  Cpu* cpu = accessing_cpu();
  const uint64_t at = cpu ? cpu->now() : settled_time();
  for (const ApicMessage& message : messages)
    ipis_to_route_.push_back(
        IpiInFlight{.sender = cpu ? cpu->index() : 0, .message = message, .sent_ns = at, .from_device = true});
  if (cpu && cpu->vcpu()) cpu->vcpu()->request_stop();
}

void Machine::send_timed_interrupts(const IoApicMessages& messages, uint64_t at_ns) {
  for (const ApicMessage& message : messages)
    ipis_to_route_.push_back(
        IpiInFlight{.sender = IpiInFlight::kNoSender, .message = message, .sent_ns = at_ns, .from_device = true});
}

void Machine::pic_output_changed(std::optional<uint64_t> at_ns) {
  Cpu* cpu = at_ns ? nullptr : running_ ? running_ : in_slice_;
  const uint64_t at = at_ns ? *at_ns : cpu ? cpu->now() : settled_time();
  ipis_to_route_.push_back(
      IpiInFlight{.sender = IpiInFlight::kNoSender, .message = {}, .sent_ns = at, .from_device = true, .pic_intr = true});
  if (running_ && running_ == cpu && cpu->vcpu()) cpu->vcpu()->request_stop();
}

// --- Scheduling ------------------------------------------------------------------

// Each call moves the event strictly later (Pit8254::next_out_change), so
// this ends; the slices are cut at the event (slice_budget), so it rarely
// runs more than one.
void Machine::run_device_timers(uint64_t horizon_ns) {
  while (const std::optional<uint64_t> at = timeline_.device_event()) {
    if (*at > horizon_ns) return;
    board_.run_timers(*at);
    timeline_.set_device_event(board_.next_timer_event());
    route_sent_ipis();
  }
}

std::optional<uint64_t> Machine::device_event_that_may_interrupt() const {
  const std::optional<uint64_t> at = timeline_.device_event();
  if (!at) return std::nullopt;
  const uint32_t entry = board_.ioapic().redirection(PcBoard::kPitGsi);
  const bool pin_open = !(entry & ioapic::RTE_MASKED);
  const auto mode = static_cast<ApicDeliveryMode>((entry >> ioapic::RTE_DELIVERY_MODE_SHIFT) & 7);
  if (pin_open && mode != ApicDeliveryMode::Fixed && mode != ApicDeliveryMode::LowestPriority) return at;
  const bool pic_open = board_.pic().line_unmasked(0);
  for (const auto& cpu : cpus_) {
    const Cpu::State state = cpu->state();
    if ((state == Cpu::State::Halted || state == Cpu::State::Running) &&
        cpu->pending_interrupts().interrupts_end_halt() && (pin_open || (pic_open && cpu->apic().accepts_pic_intr())))
      return at;
  }
  return std::nullopt;
}

// Halted vCPUs whose APIC timer fires before `horizon_ns` wake at that time,
// so a timer interrupt is never later than the vCPUs still running. Each is
// handled once per call, as its timer stood when the call began.
void Machine::wake_due_timers(uint64_t horizon_ns) {
  for (unsigned index : timeline_.take_due_timers(horizon_ns)) {
    expire_timer(*cpus_[index], horizon_ns);
    rekey(*cpus_[index]);
  }
}

void Machine::expire_timer(Cpu& cpu, uint64_t horizon_ns) {
  const std::optional<uint64_t> when = cpu.apic().next_timer_event();
  if (!when || *when > horizon_ns) return;
  if (!cpu.timer_can_wake()) {
    // Expiries that can never wake it are settled in one step, not one
    // period at a time (a masked 1 ns periodic timer would spin the host).
    cpu.apic().on_time(horizon_ns);
    return;
  }
  cpu.catch_up(*when);
  cpu.apic().on_time(*when);
  if (cpu.can_wake()) cpu.wake(*when, WakeCause::Timer);
}

Machine::Cpu* Machine::pick_next(uint64_t limit_ns) {
#ifndef NDEBUG
  // The cross-check walks every vCPU: on large machines it would hide the
  // cost it guards (emu/machine_test.cc counts it).
  constexpr size_t kCheckedVcpus = 64;
  if (cpus_.size() <= kCheckedVcpus)
    if (const std::string mismatch = timeline_mismatch(); !mismatch.empty()) {
      std::fprintf(stderr, "topolab: the timeline is out of step with the vCPUs: %s\n", mismatch.c_str());
      std::abort();
    }
#endif
  std::optional<uint64_t> jumped_to;
  while (true) {
    if (std::optional<CpuAt> horizon = timeline_.earliest_clock()) {
      run_device_timers(horizon->time);
      wake_due_timers(horizon->time);
      // A device's INIT may have stopped the only running vCPU.
      const std::optional<CpuAt> next = timeline_.earliest_clock();
      if (!next) continue;
      timeline_.set_clock(next->cpu, std::nullopt);
      in_slice_ = cpus_[next->cpu].get();
      return in_slice_;
    }
    // Nobody runs: jump to the board's next timed event if it comes first
    // and could wake a vCPU (each jump moves it later), else to the
    // earliest APIC timer that can wake a halted vCPU.
    const std::optional<CpuAt> earliest = timeline_.next_waking_timer();
    if (const std::optional<uint64_t> device = device_event_that_may_interrupt();
        device && *device < limit_ns && (!earliest || *device <= earliest->time)) {
      run_device_timers(*device);
      continue;
    }
    if (!earliest || earliest->time >= limit_ns) return nullptr;
    // The invariant that makes a host hang impossible whatever a device
    // reports: each jump wakes a vCPU or moves the earliest timer later.
    // A timer that stays due without firing (F1 of issue 14: a deadline
    // wrapped to an early time) is a diagnosed hang, not a spin.
    if (jumped_to && earliest->time <= *jumped_to) {
      stall_ = fmt::format("guest hung: no vCPU can run and virtual time cannot advance: cpu {}'s APIC timer stays "
                           "due at {} ns without firing",
                           earliest->cpu, earliest->time);
      return nullptr;
    }
    jumped_to = earliest->time;
    wake_due_timers(earliest->time);
  }
}

std::optional<std::string> Machine::deliver_pending(Cpu& cpu) {
  Vcpu& vcpu = *cpu.vcpu();
  const Cpu::PendingInterrupts pending = cpu.pending_interrupts();
  // An NMI waits while the previous one's handler has not yet IRETed.
  if (pending.takes_nmi()) {
    cpu.take_nmi();
    if (Injection injection = vcpu.inject_nmi(); !injection)
      return fmt::format("an NMI has no usable handler: {}", injection.detail);
    return std::nullopt;
  }
  if (pending.takes_interrupt()) {
    // ExtINT goes first, whatever the APIC's priorities (QEMU's
    // apic_get_interrupt leaves it to the 8259). The INTA may find INTR
    // fallen since the vCPU heard it rise (an EOI or a mask in between):
    // then the 8259 has nothing for it, and the APIC is asked instead.
    const bool extint = pending.extint && board_.pic().output();
    if (pending.extint && !extint) {
      cpu.see_pic_intr(false);
      if (!cpu.pending_interrupts().takes_interrupt()) return std::nullopt;
    }
    const uint8_t vector = extint ? board_.acknowledge_pic_interrupt() : cpu.apic().acknowledge();
    if (extint) cpu.see_pic_intr(board_.pic().output());
    if (Injection injection = vcpu.inject_interrupt(vector); !injection)
      return fmt::format("interrupt {:#x} has no usable handler: {}", vector, injection.detail);
    ++stats_.vcpu(cpu.index()).interrupts_taken[vector];
  }
  return std::nullopt;
}

uint64_t Machine::total_instructions() const {
  uint64_t total = 0;
  for (const auto& cpu : cpus_) total += cpu->instructions();
  return total;
}

// --- Routing ------------------------------------------------------------------------

// Whether a fixed IPI reaches its sender is the sender's own APIC's
// matches(), which the bus asks of every target when it routes: no list of
// destinations is built twice per ICR write.
bool Machine::ipi_sent(const IpiInFlight& ipi) {
  ipis_to_route_.push_back(ipi);
  // A kick may be for the sender's own next HLT: routed before it.
  if (ipi.kvm_kick) return true;
  return ipi.message.delivery_mode != ApicDeliveryMode::Fixed || cpus_[ipi.sender]->apic().matches(ipi.message);
}

void Machine::route_sent_ipis() {
  std::vector<IpiInFlight> sent;
  sent.swap(ipis_to_route_);
  // A device's message leaves at the vCPU's clock, an ICR write's after its
  // send latency: by time, then in send order.
  std::stable_sort(sent.begin(), sent.end(),
                   [](const IpiInFlight& a, const IpiInFlight& b) { return a.sent_ns < b.sent_ns; });
  for (const IpiInFlight& ipi : sent) route(ipi);
}

void Machine::route(const IpiInFlight& ipi) {
  if (ipi.pic_intr) return route_pic_intr(ipi);
  const ApicMessage& message = ipi.message;
  if (ipi.kvm_kick) {
    // Not an IPI: no count, and a kick to no vCPU is lost, as in KVM.
    for (unsigned index : bus_->destinations(message)) {
      Cpu& target = *cpus_[index];
      if (target.state() == Cpu::State::Running && target.now() < ipi.sent_ns) {
        timeline_.schedule_arrival(ipi.sent_ns, index, ipi);
        continue;
      }
      deliver(target, ipi);
    }
    return;
  }
  // A device's message is no IPI: not counted, and the I/O APIC sends no
  // reserved delivery mode.
  if (!ipi.from_device) {
    if (message.delivery_mode == ApicDeliveryMode::Reserved) {
      // SDM 10.6.1: delivery mode 011b is reserved; what hardware does with it
      // is undefined, so the run stops here rather than guess.
      guest_error(fmt::format("cpu {} wrote an ICR with the reserved delivery mode 011b", ipi.sender));
      return;
    }
    stats_.record_send(ipi.sender, message.delivery_mode, message.shorthand, message.vector);
    if (message.is_init_level_deassert()) return;  // a no-op since the Pentium 4 (SDM 10.6.1)
  }

  const std::vector<unsigned> targets = bus_->destinations(message);
  if (targets.empty()) {
    if (!ipi.from_device) stats_.record_undeliverable(ipi.sender);
    return;
  }
  for (unsigned index : targets) {
    Cpu& target = *cpus_[index];
    // A running target sees the IPI a posted-interrupt latency after the
    // send: one whose clock is behind that gets it on the timeline. If it
    // halts first, the IPI finds it halted, at its send time (settle_halt).
    if (target.state() == Cpu::State::Running) {
      const uint64_t arrival = ipi_arrival_at_running_ns(config_.cost, ipi.sent_ns, index == ipi.sender);
      if (target.now() < arrival) {
        timeline_.schedule_arrival(arrival, index, ipi);
        continue;
      }
    }
    deliver(target, ipi);
  }
}

void Machine::route_pic_intr(const IpiInFlight& change) {
  const bool level = board_.pic().output();
  for (const auto& c : cpus_) {
    Cpu& target = *c;
    if (target.state() == Cpu::State::WaitForSipi) continue;
    if (!target.apic().accepts_pic_intr()) {
      target.see_pic_intr(level);
      continue;
    }
    if (target.state() == Cpu::State::Running) {
      const uint64_t arrival = ipi_arrival_at_running_ns(config_.cost, change.sent_ns, false);
      if (target.now() < arrival) {
        timeline_.schedule_arrival(arrival, target.index(), change);
        continue;
      }
    }
    deliver(target, change);
  }
}

void Machine::deliver(Cpu& target, const IpiInFlight& ipi) {
  const bool was_halted = target.state() == Cpu::State::Halted;
  const uint64_t wake_event =
      ipi_wake_event_ns(config_.cost, ipi.sent_ns, target.parked_in_mwait(), target.index() == ipi.sender);
  if (ipi.kvm_kick) {
    target.kick(wake_event);
    rekey(target);
    return;
  }
  if (ipi.pic_intr) {
    // INTR is a level: the vCPU sees it as it stands when the change arrives.
    target.see_pic_intr(board_.pic().output());
    if (target.can_wake()) target.wake(wake_event, WakeCause::Interrupt);
    rekey(target);
    return;
  }
  ApicAcceptResult accepted = target.apic().accept(ipi.message);
  switch (accepted.kind) {
    case ApicAccept::Interrupt:
      if (target.can_wake()) target.wake(wake_event, WakeCause::Interrupt);
      break;
    case ApicAccept::Nmi:
      target.accept_nmi();
      if (target.can_wake()) target.wake(wake_event, WakeCause::Nmi);
      break;
    case ApicAccept::Init:
      target.catch_up(ipi.sent_ns);
      target.enter_wait_for_sipi();
      break;
    case ApicAccept::StartUp:
      // A STARTUP to a vCPU that is not waiting for one is ignored (SDM 8.4.4.1).
      if (target.state() == Cpu::State::WaitForSipi) target.start_at_sipi(accepted.vector, ipi.sent_ns);
      break;
    case ApicAccept::Dropped:
    case ApicAccept::Refused:
      break;
  }
  if (!ipi.from_device)
    stats_.record_ipi(ipi.sender, target.index(), ipi.message.delivery_mode, ipi.message.vector, was_halted);
  rekey(target);
}

void Machine::settle_halt(Cpu& cpu) {
  // A halted vCPU's clock jumps to whatever wakes it: IPIs already sent to
  // it arrive now, each at its own time.
  for (const IpiInFlight& ipi : timeline_.take_arrivals(cpu.index(), std::numeric_limits<uint64_t>::max()))
    deliver(cpu, ipi);
  if (cpu.can_wake()) cpu.wake(cpu.now(), cpu.wake_cause_now());
}

uint64_t Machine::settled_time() const {
  uint64_t t = std::numeric_limits<uint64_t>::max();
  if (std::optional<CpuAt> earliest = timeline_.earliest_clock()) t = earliest->time;
  if (in_slice_ && in_slice_->state() == Cpu::State::Running) t = std::min(t, in_slice_->now());
  for (const IpiInFlight& ipi : ipis_to_route_) t = std::min(t, ipi.sent_ns);
  return t == std::numeric_limits<uint64_t>::max() ? 0 : t;
}

// --- The timeline ----------------------------------------------------------------------

void Machine::rekey(Cpu& cpu) {
  if (&cpu == in_slice_) return;  // its slice moves its clock; rekeyed when the slice ends
  const unsigned index = cpu.index();
  const bool running = cpu.state() == Cpu::State::Running, halted = cpu.state() == Cpu::State::Halted;
  timeline_.set_clock(index, running ? std::optional<uint64_t>(cpu.now()) : std::nullopt, clock_kind(cpu));
  timeline_.set_timer(index, halted ? cpu.apic().next_timer_event() : std::nullopt, halted && cpu.timer_can_wake());
  track_mwait_line(cpu);
}

Timeline::Clock Machine::clock_kind(const Cpu& cpu) const {
  if (cpu.quiescent(store_epoch_)) return Timeline::Clock::QuiescentSpin;
  if (cpu.parked_on_time(store_epoch_)) return Timeline::Clock::TimedSpin;
  return Timeline::Clock::MayStore;
}

std::string Machine::timeline_mismatch() const {
  auto ns = [](std::optional<uint64_t> t) { return t ? fmt::format("{} ns", *t) : std::string("none"); };
  for (const auto& c : cpus_) {
    const Cpu& cpu = *c;
    const unsigned i = cpu.index();
    const bool running = cpu.state() == Cpu::State::Running && &cpu != in_slice_;
    const bool halted = cpu.state() == Cpu::State::Halted;
    std::optional<uint64_t> clock;
    if (running) clock = cpu.now();
    if (timeline_.clock(i) != clock)
      return fmt::format("cpu {}'s clock is {} on the timeline, {} by its state", i, ns(timeline_.clock(i)), ns(clock));
    if (running && timeline_.clock_kind(i) != clock_kind(cpu))
      return fmt::format("cpu {}'s spin park changed without a rekey", i);
    std::optional<uint64_t> timer;
    if (halted) timer = cpu.apic().next_timer_event();
    if (timeline_.timer(i) != timer)
      return fmt::format("cpu {}'s timer is {} on the timeline, {} by its state", i, ns(timeline_.timer(i)), ns(timer));
    if (timer && timeline_.timer_wakes(i) != cpu.timer_can_wake())
      return fmt::format("cpu {}'s timer changed whether it can wake it without a rekey", i);
    if (mwait_line_of_[i] != (cpu.parked_in_mwait() ? std::optional<uint64_t>(cpu.monitor_line()) : std::nullopt))
      return fmt::format("cpu {}'s MWAIT line is not the one it is parked on", i);
  }
  return {};
}

// --- The loop --------------------------------------------------------------------------

uint64_t Machine::slice_budget(Cpu& cpu, uint64_t now, uint64_t limit_ns) const {
  // Run to the next event that concerns this vCPU, at most one quantum:
  // its APIC timer, an IPI on its way, the time limit, or the moment the
  // next vCPU's clock would be passed by much (the quantum bounds that).
  uint64_t until = limit_ns;
  if (auto timer = cpu.apic().next_timer_event()) until = std::min(until, *timer);
  if (auto arrival = timeline_.next_arrival(cpu.index())) until = std::min(until, *arrival);
  if (auto device = timeline_.device_event(); device && *device > now) until = std::min(until, *device);
  uint64_t budget = std::max<uint64_t>(1, config_.cost.instructions_for_ns(until > now ? until - now : 0));
  // An interrupt or NMI waiting out an STI shadow goes in after one instruction.
  const Cpu::PendingInterrupts pending = cpu.pending_interrupts();
  if (pending.interrupt() && !pending.window_open && (cpu.vcpu()->state().rflags & x86::kFlagIf)) budget = 1;
  if (pending.nmi_after_shadow()) budget = 1;
  return std::min(budget, config_.quantum);
}

std::optional<RunResult> Machine::run_slice(Cpu& cpu, uint64_t now, uint64_t limit_ns, bool& reset_itself) {
  reset_itself = false;
  for (const IpiInFlight& ipi : timeline_.take_arrivals(cpu.index(), now)) deliver(cpu, ipi);
  cpu.apic().on_time(now);
  if (auto failure = deliver_pending(cpu))
    return finish(RunResult::Outcome::Crashed,
                  fmt::format("guest crashed: {} (cpu {} RIP {:#x})", *failure, cpu.index(), cpu.vcpu()->state().rip));
  const uint64_t budget = slice_budget(cpu, now, limit_ns);
  if (debug_) debug_->before_slice(cpu);
  // An interrupt or NMI it cannot take yet goes in as soon as it can.
  cpu.vcpu()->stop_when_interruptible(cpu.pending_interrupts().waits_for_window());
  const uint64_t pauses_before = cpu.pauses();
  running_ = &cpu;
  cpu.begin_slice(now + config_.cost.ns_for_instructions(budget));
  VcpuExit exit = cpu.vcpu()->run(budget);
  running_ = nullptr;
  cpu.leave_spin();
  if (exit.reason != VcpuExit::Reason::PauseLoop || !exit.spin_recheck) {
    ++store_epoch_;
    timeline_.wake_parked_spinners();
  }
  activity_.record(cpu.index(), now, cpu.now(),
                   cpu.pauses() != pauses_before ? VcpuActivity::Spinning : VcpuActivity::Running);
  // Stores of this slice wake MWAITs at the slice's end, before whatever
  // its exit (a HLT, an INIT it sent itself) does to its clock.
  check_monitored_lines(cpu, cpu.now());
  route_sent_ipis();
  cpu.sync_apic_page();
  if (guest_error_) return finish(RunResult::Outcome::Crashed, *guest_error_);
  // An INIT it sent itself took effect at the ICR write: what its slice
  // did after that (a HLT, a fault) belongs to a CPU that no longer exists.
  if (cpu.state() == Cpu::State::WaitForSipi) {
    reset_itself = true;
    return std::nullopt;
  }
  if (board_.guest_exit_value()) return finish(RunResult::Outcome::GuestExit, "");
  if (shutdown_) return finish(RunResult::Outcome::Shutdown, *shutdown_);
  if (suspend_) {
    reset_itself = true;  // its clock and state are the S3 resume's, not its slice's
    return sleep_in_s3(cpu.now());
  }
  return handle_exit(cpu, exit);
}

RunResult Machine::run() {
  RunResult result = run_loop();
  if (debug_) debug_->finished(result);
  return result;
}

RunResult Machine::run_loop() {
  const uint64_t limit_ns = this->limit_ns();
  constexpr uint64_t kMaxIdleSlices = 1'000'000;
  uint64_t idle_slices = 0;
  while (true) {
    route_sent_ipis();
    // A slice's PIT or I/O APIC writes may have moved the board's next event.
    timeline_.set_device_event(board_.next_timer_event());
    if (board_.guest_exit_value()) return finish(RunResult::Outcome::GuestExit, "");
    if (shutdown_) return finish(RunResult::Outcome::Shutdown, *shutdown_);
    if (snapshot_at_ && settled_time() >= snapshot_at_->at_ns) {
      const SnapshotAt at = *std::exchange(snapshot_at_, std::nullopt);
      at.take(*this);
    }
    if (debug_) {
      debug_->between_slices();
      if (debug_->kill_requested()) return finish(RunResult::Outcome::Shutdown, "killed by the debugger (gdb's kill)");
    }

    Cpu* cpu = pick_next(limit_ns);
    if (!cpu && stall_) return finish(RunResult::Outcome::Hung, *stall_);
    if (!cpu) return finish_idle();
    const uint64_t now = cpu->now();
    if (now >= limit_ns)
      return finish(RunResult::Outcome::BudgetExhausted,
                    fmt::format("the guest did not finish within {} s of virtual time ({} instructions); still "
                                "running at cpu {} RIP {:#x} (raise --time-limit)",
                                config_.time_limit_seconds, total_instructions(), cpu->index(),
                                cpu->vcpu()->state().rip));
    const uint64_t instructions_before = cpu->instructions();
    bool reset_itself = false;
    if (auto result = run_slice(*cpu, now, limit_ns, reset_itself)) return *result;
    in_slice_ = nullptr;
    rekey(*cpu);
    if (reset_itself) continue;  // not judged for progress: its clock restarted
    // The same invariant for running vCPUs: a slice that ran no instruction
    // and moved no clock made no progress; a million of those in a row (far
    // more than any exit sequence needs) is a host spin that --time-limit,
    // on virtual time, could never end.
    if (cpu->instructions() == instructions_before && cpu->now() == now) {
      if (++idle_slices == kMaxIdleSlices)
        return finish(RunResult::Outcome::Hung,
                      fmt::format("guest hung: {} scheduling slices in a row ran no instruction and moved no clock "
                                  "(cpu {} RIP {:#x})",
                                  kMaxIdleSlices, cpu->index(), cpu->vcpu()->state().rip));
    } else {
      idle_slices = 0;
    }
  }
}

}  // namespace topolab
