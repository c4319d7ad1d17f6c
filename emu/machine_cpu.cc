// SPDX-License-Identifier: GPL-2.0-or-later
#include "emu/machine_cpu.h"

#include <algorithm>

#include <fmt/format.h>

#include "arch/x86_arch.h"
#include "devices/cmos_rtc.h"
#include "model/cost_rules.h"

namespace topolab {

MachineCpu::MachineCpu(const CpuPlatform& platform, unsigned index)
    : platform_(platform),
      index_(index),
      apic_(LocalApicConfig{.apic_id = platform.topology.apic_id(index),
                            .bsp = index == 0,
                            .x2apic_supported = platform.cpuid.cpu().has(CpuFeature::X2apic),
                            .tsc_hz = platform.cost.tsc_hz()}),
      state_(index == 0 ? State::Running : State::WaitForSipi),
      msr_file_([&platform, index](uint32_t leaf, uint32_t subleaf) { return platform.cpuid.query(index, leaf, subleaf); }),
      kvm_msrs_(KvmPvHost{.present = platform.cpuid.cpu().kvm_signature,
                          .enforce = platform.cpuid.cpu().kvm_pv_enforce_cpuid,
                          .features = platform.cpuid.cpu().kvm_pv.cpuid_eax()}) {
  // With APIC IDs past 254, firmware hands over every APIC in x2APIC mode
  // (xAPIC cannot address them), as a BIOS does and Linux expects.
  if (platform.topology.needs_x2apic())
    apic_.wrmsr(LocalApic::MSR_IA32_APIC_BASE, apic_.apic_base_msr() | apic::APIC_BASE_EN | apic::APIC_BASE_EXTD, 0);
  if (index == 0) create_engine();
}

void MachineCpu::create_engine() {
  vcpu_ = platform_.make_vcpu(index_, platform_.ram, *this, platform_.cpuid.cpu().model.engine);
  vcpu_->set_pause_loop_exiting(platform_.pause_loop_exiting);
  for (const PlatformMmio& window : platform_.mmio_windows) vcpu_->map_mmio(window.base, window.size, *window.handler);
  sync_apic_page();
}

// --- Clock ---------------------------------------------------------------------

void MachineCpu::catch_up(uint64_t at_ns) {
  const uint64_t t = now();
  if (at_ns > t) idle_ns_ += at_ns - t;
}

void MachineCpu::skip_spin_to(uint64_t at_ns) {
  const uint64_t t = now();
  if (at_ns <= t) return;
  skipped_ns_ += at_ns - t;
  platform_.stats.vcpu(index_).skipped_ns += at_ns - t;
  platform_.activity.record(index_, t, at_ns, VcpuActivity::Spinning);
}

void MachineCpu::charge_exit(ExitKind kind) {
  const uint64_t ns = platform_.cost.exit_ns(kind);
  VcpuStats& s = platform_.stats.vcpu(index_);
  ++s.exits[static_cast<size_t>(kind)];
  s.exit_ns += ns;
  exit_ns_ += ns;
  if (ns && vcpu_ && now() >= slice_end_ns_) vcpu_->request_stop();
}

void MachineCpu::system_instruction(SystemInstruction kind) {
  const uint64_t extra = platform_.cost.system_extra_milli_cycles(kind);
  ++platform_.stats.vcpu(index_).system_instructions[static_cast<size_t>(kind)];
  if (!extra) return;
  stall_milli_cycles_ += extra;
  if (vcpu_ && now() >= slice_end_ns_) vcpu_->request_stop();
}

// --- Interrupts ----------------------------------------------------------------

MachineCpu::PendingInterrupts MachineCpu::pending_interrupts() const {
  return {.vector = apic_.pending_vector(),
          .extint = pic_intr_ && apic_.accepts_pic_intr(),
          .window_open = vcpu_->interrupt_window_open(),
          .nmi = nmi_pending_ > 0,
          .nmi_blocked = vcpu_->nmi_blocked(),
          .shadowed = vcpu_->in_interrupt_shadow(),
          .mwait_breaks = state_ == State::Halted && in_mwait_ && mwait_breaks_on_interrupt_};
}

bool MachineCpu::can_wake() const {
  if (state_ != State::Halted) return false;
  const PendingInterrupts p = pending_interrupts();
  return p.takes_nmi() || p.interrupt_ends_halt();
}

bool MachineCpu::timer_can_wake() const {
  return state_ == State::Halted && apic_.timer_interrupts() && pending_interrupts().interrupts_end_halt();
}

WakeCause MachineCpu::wake_cause_now() const {
  return pending_interrupts().takes_nmi() ? WakeCause::Nmi : WakeCause::Interrupt;
}

// --- Halt, MWAIT, INIT, SIPI -------------------------------------------------

bool MachineCpu::halt() {
  if (pv_unhalted_) {
    // KVM_HC_KICK_CPU came first: the HLT exits and the vCPU runs on (KVM's
    // pv_unhalted makes it runnable before it blocks).
    pv_unhalted_ = false;
    ++platform_.stats.vcpu(index_).hlt_entries;
    return false;
  }
  state_ = State::Halted;
  in_mwait_ = false;
  ++platform_.stats.vcpu(index_).hlt_entries;
  halted_since_ = accrued_until_ = now();
  // The guest's haltpoll driver may have switched the host's polling off
  // (MSR_KVM_POLL_CONTROL).
  poll_busy_ns_ = kvm_msrs_.host_may_poll() ? platform_.cost.halt_poll_ns : 0;
  return true;
}

void MachineCpu::kick(uint64_t event_ns) {
  if (state_ == State::Halted && !in_mwait_) {
    wake(event_ns, WakeCause::PvKick);
    return;
  }
  // Not blocked in HLT: the next HLT returns at once. (A vCPU in MWAIT is
  // in guest mode, which a kick does not interrupt.)
  if (state_ != State::WaitForSipi) pv_unhalted_ = true;
}

void MachineCpu::park_in_mwait(bool break_on_interrupt) {
  state_ = State::Halted;
  in_mwait_ = true;
  mwait_breaks_on_interrupt_ = break_on_interrupt;
  halted_since_ = accrued_until_ = now();
  poll_busy_ns_ = 0;
}

void MachineCpu::wake(uint64_t event_ns, WakeCause cause) {
  if (state_ == State::Halted) {
    const Resumption r = resume_from_halt(
        platform_.cost,
        {.halted_since_ns = halted_since_, .in_mwait = in_mwait_, .host_polls = kvm_msrs_.host_may_poll()}, event_ns);
    VcpuStats& s = platform_.stats.vcpu(index_);
    if (r.poll == HaltPoll::Hit) {
      ++s.halt_poll_hits;
      s.halt_poll_success_ns += r.resume_ns - halted_since_;
    }
    if (r.poll == HaltPoll::Miss) {
      ++s.halt_poll_misses;
      s.halt_poll_fail_ns += platform_.cost.halt_poll_ns;
    }
    // KVM's halt_wakeup and halt_wait_ns: the host blocked the vCPU (after
    // polling in vain, or without polling) and woke it.
    if (!in_mwait_ && r.poll != HaltPoll::Hit && r.resume_ns > halted_since_) {
      ++s.halt_wakeups;
      s.halt_wait_ns += r.resume_ns - halted_since_ - (r.poll == HaltPoll::Miss ? platform_.cost.halt_poll_ns : 0);
    }
    if (r.poll_busy_ns) poll_busy_ns_ = *r.poll_busy_ns;
    catch_up(r.resume_ns);
    accrue_idle(now());
    record_halt_until(now());
    leave_mwait();
  } else {
    catch_up(event_ns);
  }
  state_ = State::Running;
  platform_.stats.record_wake(index_, cause);
}

void MachineCpu::enter_wait_for_sipi() {
  accrue_idle(now());
  if (state_ == State::Halted) record_halt_until(now());
  waiting_since_ = now();
  state_ = State::WaitForSipi;
  leave_spin();
  leave_mwait();
  ever_monitored_ = false;
  if (vcpu_) vcpu_->reset_for_init();
  nmi_pending_ = 0;
  // KVM's vCPU reset: kvmclock, steal time and PV EOI off, host polling on.
  kvm_msrs_.reset();
  pv_unhalted_ = false;
}

void MachineCpu::start_at_sipi(uint8_t vector, uint64_t at_ns) {
  if (!vcpu_) create_engine();
  vcpu_->reset_for_init();
  vcpu_->start_at_sipi(vector);
  leave_wait_for_sipi(at_ns);
  platform_.stats.record_wake(index_, WakeCause::Sipi);
}

void MachineCpu::start_in_real_mode(uint16_t selector, uint16_t ip, uint64_t at_ns) {
  if (!vcpu_) create_engine();
  vcpu_->reset_for_init();
  vcpu_->start_in_real_mode(selector, ip);
  leave_wait_for_sipi(at_ns);
}

void MachineCpu::leave_wait_for_sipi(uint64_t at_ns) {
  catch_up(at_ns);
  platform_.activity.record(index_, waiting_since_, now(), VcpuActivity::WaitForSipi);
  state_ = State::Running;
}

void MachineCpu::accrue_idle(uint64_t t) {
  if (state_ != State::Halted || t <= accrued_until_) return;
  VcpuStats& s = platform_.stats.vcpu(index_);
  s.halted_ns += t - accrued_until_;
  if (in_mwait_) {
    s.host_mwait_ns += t - accrued_until_;
  } else {
    const uint64_t busy_end = halted_since_ + poll_busy_ns_;
    const uint64_t from = std::max(accrued_until_, halted_since_), to = std::min(t, busy_end);
    if (to > from) s.host_poll_ns += to - from;
  }
  accrued_until_ = t;
}

void MachineCpu::record_halt_until(uint64_t end_ns) {
  platform_.activity.record(index_, halted_since_, end_ns, in_mwait_ ? VcpuActivity::Mwait : VcpuActivity::Halted);
}

void MachineCpu::record_final_activity(uint64_t end_ns) {
  if (state_ == State::Halted) record_halt_until(end_ns);
  if (state_ == State::WaitForSipi) platform_.activity.record(index_, waiting_since_, end_ns, VcpuActivity::WaitForSipi);
}

void MachineCpu::arm_monitor(uint64_t line) {
  monitor_line_ = line;
  monitor_armed_ = true;
  ever_monitored_ = true;
  auto bytes = platform_.ram.bytes(line, kMonitorLine);
  std::copy(bytes.begin(), bytes.end(), monitor_snapshot_.begin());
}

bool MachineCpu::monitored_line_changed() const {
  auto bytes = platform_.ram.bytes(monitor_line_, kMonitorLine);
  return !std::equal(bytes.begin(), bytes.end(), monitor_snapshot_.begin());
}

std::string MachineCpu::describe_state() const {
  switch (state_) {
    case State::WaitForSipi: return "waiting for SIPI";
    case State::Halted: return parked_in_mwait() ? "halted (MWAIT)" : "halted (HLT)";
    case State::Running: return "running";
  }
  return "?";
}

std::string MachineCpu::idle_state() const {
  if (!parked_in_mwait()) return "halted";
  return fmt::format("in MWAIT on line {:#x}{}", monitor_line_,
                     mwait_breaks_on_interrupt_ ? " (interrupts break it)" : "");
}

void MachineCpu::sync_apic_page() {
  std::optional<uint64_t> want;
  if (apic_.mmio_enabled()) want = apic_.base_address();
  if (want == mapped_apic_page_) return;
  if (mapped_apic_page_) vcpu_->unmap_mmio(*mapped_apic_page_, LocalApic::kMmioSize);
  mapped_apic_page_.reset();
  for (const PlatformMmio& window : platform_.mmio_windows)
    if (want && *want < window.base + window.size && window.base < *want + LocalApic::kMmioSize) {
      // The engine cannot overlay one window on another.
      platform_.events.guest_error(fmt::format(
          "cpu {} moved its APIC page onto a device window at {:#x} (IA32_APIC_BASE): unsupported", index_, *want));
      return;
    }
  if (want && platform_.ram.is_ram(*want, LocalApic::kMmioSize)) {
    // Hardware would overlay the page on RAM for this CPU; the engine
    // cannot, so say so rather than let APIC writes land in memory.
    platform_.events.guest_error(
        fmt::format("cpu {} moved its APIC page onto RAM at {:#x} (IA32_APIC_BASE): unsupported", index_, *want));
    return;
  }
  if (want) {
    vcpu_->map_mmio(*want, LocalApic::kMmioSize, *this);
    mapped_apic_page_ = want;
  }
}

// --- VcpuHost --------------------------------------------------------------------

CpuidRegs MachineCpu::describe_cpuid(uint32_t leaf, uint32_t subleaf) {
  return platform_.cpuid.query(index_, leaf, subleaf);
}

CpuidRegs MachineCpu::cpuid(uint32_t leaf, uint32_t subleaf) {
  charge_exit(ExitKind::Cpuid);
  // The guest state CPUID follows (OSPKE, the APIC bit); the model applies it.
  const CpuidDynamic dynamic{.cr4_pke = (vcpu_->cr4() & x86::kCr4Pke) != 0,
                             .apic_enabled = (apic_.apic_base_msr() & apic::APIC_BASE_EN) != 0};
  return platform_.cpuid.query(index_, leaf, subleaf, dynamic);
}

uint32_t MachineCpu::port_in(uint16_t port, unsigned size) {
  charge_exit(ExitKind::Io);
  return platform_.ports.read(port, size);
}

void MachineCpu::port_out(uint16_t port, unsigned size, uint32_t value) {
  charge_exit(ExitKind::Io);
  platform_.ports.write(port, size, value);
}

std::optional<uint64_t> MachineCpu::read_msr(uint32_t msr) {
  if (kvm_msrs_.handles(msr)) {
    charge_exit(ExitKind::Msr);
    return kvm_msrs_.read(msr);
  }
  // An MSR CPUID does not announce does not exist: #GP (SDM Vol. 4 2.1).
  if (!platform_.msrs.announced(msr)) {
    charge_exit(ExitKind::Msr);
    return std::nullopt;
  }
  // APICv reads the APIC's registers without an exit.
  if (LocalApic::is_apic_msr(msr) && msr != LocalApic::MSR_IA32_APIC_BASE) return apic_.rdmsr(msr, now());
  charge_exit(ExitKind::Msr);
  if (LocalApic::is_apic_msr(msr)) return apic_.rdmsr(msr, now());
  return read_machine_msr(msr);
}

// The TSC before any guest write: virtual time at the TSC's frequency.
std::optional<uint64_t> MachineCpu::read_machine_msr(uint32_t msr) {
  return msr_file_.read(msr, platform_.cost.tsc_for_ns(platform_.clock.read(now())));
}

bool MachineCpu::write_msr(uint32_t msr, uint64_t value) {
  if (kvm_msrs_.handles(msr)) {
    charge_exit(ExitKind::Msr);
    return write_kvm_msr(msr, value);
  }
  if (!platform_.msrs.announced(msr)) {
    charge_exit(ExitKind::Msr);
    return false;
  }
  if (LocalApic::is_apic_msr(msr)) {
    const uint64_t at = now();
    const ApicWrite w = apic_.wrmsr(msr, value, at);
    if (auto exit = apic_write_exit(platform_.cost, w.kind)) charge_exit(*exit);
    if (w.gp) return false;
    after_apic_write(w, at);
    if (w.base_written) vcpu_->request_stop();  // the page moves or goes
    return true;
  }
  charge_exit(ExitKind::Msr);
  return write_machine_msr(msr, value);
}

bool MachineCpu::write_machine_msr(uint32_t msr, uint64_t value) {
  if (!msr_file_.write(msr, value, platform_.cost.tsc_for_ns(platform_.clock.read(now())))) return false;
  // A new TSC offset: KVM updates kvmclock's page (KVM_REQ_CLOCK_UPDATE).
  if (msr == x86::kMsrTsc || msr == x86::kMsrTscAdjust) write_pvclock_page();
  return true;
}

// --- KVM's paravirtual MSRs (devices/kvm_pv_msrs.h) -----------------------------

bool MachineCpu::write_kvm_msr(uint32_t msr, uint64_t value) {
  const std::optional<KvmPvUpdate> update = kvm_msrs_.write(msr, value);
  if (!update) return false;
  ++platform_.stats.vcpu(index_).kvm_msr_writes[msr];
  switch (*update) {
    case KvmPvUpdate::None: break;
    case KvmPvUpdate::WallClock: write_wall_clock(); break;
    case KvmPvUpdate::SystemTime: write_pvclock_page(); break;
    case KvmPvUpdate::StealTime: record_steal_time(); break;
  }
  return true;
}

// KVM writes guest memory through its memslots: an address outside RAM
// takes nothing, and the write is lost (kvm_write_guest fails quietly).
template <size_t N>
void MachineCpu::write_guest(uint64_t address, const std::array<uint8_t, N>& bytes) {
  if (!platform_.ram.is_ram(address, N)) return;
  std::span<uint8_t> to = platform_.ram.bytes(address, N);
  std::copy(bytes.begin(), bytes.end(), to.begin());
}

uint32_t MachineCpu::guest_version_at(uint64_t address) const {
  return platform_.ram.is_ram(address, 4) ? platform_.ram.read<uint32_t>(address) : 0;
}

// kvmclock's page: this vCPU's TSC now and the virtual time it stands for.
// topolab's TSC runs at the modelled clock from virtual time, so one page
// holds for ever; KVM rewrites it only when the TSC's offset changes
// (write_machine_msr) or the vCPU is reset.
void MachineCpu::write_pvclock_page() {
  const std::optional<uint64_t> page = kvm_msrs_.system_time_page();
  if (!page) return;
  // KVM's gfn_to_pfn cache refuses a structure that crosses a page.
  if ((*page & 0xFFF) + 32 > 0x1000) return;
  const uint64_t ns = platform_.clock.read(now());
  const uint64_t tsc = msr_file_.tsc(platform_.cost.tsc_for_ns(ns));
  const uint8_t flags = kvm_msrs_.stable_clock() ? PVCLOCK_TSC_STABLE_BIT : 0;
  write_guest(*page, pvclock_time_info(pvclock_next_version(guest_version_at(*page)), tsc, ns,
                                       pvclock_scale(platform_.cost.tsc_hz()), flags));
}

// The wall-clock time at which kvmclock read 0: the RTC's, whose Unix time
// at virtual time 0 is CmosRtc::kDefaultStart.
void MachineCpu::write_wall_clock() {
  const uint64_t at = kvm_msrs_.wall_clock_address();
  write_guest(at, pvclock_wall_clock(pvclock_next_version(guest_version_at(at)),
                                     static_cast<uint32_t>(CmosRtc::kDefaultStart), 0));
}

// KVM's record_steal_time: the version moves on, `preempted` is cleared
// and the steal grows by what the host ran instead of this vCPU: nothing,
// each vCPU having a host CPU of its own in the cost model.
void MachineCpu::record_steal_time() {
  const std::optional<uint64_t> area = kvm_msrs_.steal_time_area();
  if (!area || !platform_.ram.is_ram(*area, 64)) return;
  const uint64_t version_at = *area + kStealTimeVersionOffset;
  platform_.ram.write<uint32_t>(version_at, pvclock_next_version(platform_.ram.read<uint32_t>(version_at)));
  platform_.ram.write<uint8_t>(*area + kStealTimePreemptedOffset, 0);
}

uint64_t MachineCpu::read_tsc() { return msr_file_.tsc(platform_.cost.tsc_for_ns(platform_.clock.read(now()))); }

// RDTSCP: no exit, as on KVM (an RDMSR of the same MSR is one).
std::optional<uint64_t> MachineCpu::read_tsc_aux() {
  if (!platform_.msrs.announced(x86::kMsrTscAux)) return std::nullopt;
  return read_machine_msr(x86::kMsrTscAux);
}

uint64_t MachineCpu::read_cr8() { return apic_.read_cr8(); }

// A TPR write, which APICv virtualizes (no exit); a lower TPR may let an
// interrupt in.
void MachineCpu::write_cr8(uint64_t value) {
  // The same TPR again changes nothing (a guest may write it in a loop).
  if (apic_.tpr() == (value << 4)) return;
  const uint64_t at = now();
  after_apic_write(apic_.write_cr8(value, at), at);
}

std::optional<int64_t> MachineCpu::hypercall(const KvmHypercall& call) {
  // Only a guest told it runs on a hypervisor (CPUID.01H:ECX[31]) makes
  // hypercalls (devices/kvm_hypercall.h).
  if (!platform_.cpuid.cpu().has(CpuFeature::Hypervisor)) return std::nullopt;
  charge_exit(ExitKind::Hypercall);
  const uint64_t at = now();
  const Topology& topology = platform_.topology;
  KvmHypercallResult result =
      kvm_hypercall(call, kvm_msrs_.host(), [&](uint32_t id) { return topology.index_of_apic_id(id).has_value(); });
  ++platform_.stats.vcpu(index_).hypercalls[call.long_mode ? call.nr : static_cast<uint32_t>(call.nr)];
  for (ApicMessage& message : result.ipis) {
    message.source_id = apic_.id();
    if (platform_.events.ipi_sent({index_, message, ipi_send_ns(platform_.cost, at)})) vcpu_->request_stop();
  }
  if (result.kick) {
    // KVM delivers the kick as an APIC message to a physical destination
    // (kvm_pv_kick_cpu_op), from the hypercall's exit.
    const ApicMessage to{.destination_mode = ApicDestinationMode::Physical, .destination = *result.kick,
                         .source_id = apic_.id(), .x2apic = true};
    if (platform_.events.ipi_sent(
            {.sender = index_, .message = to, .sent_ns = ipi_send_ns(platform_.cost, at), .kvm_kick = true}))
      vcpu_->request_stop();
  }
  return result.ret;
}

void MachineCpu::open_bus_access(uint64_t, unsigned, bool write) {
  VcpuStats& s = platform_.stats.vcpu(index_);
  ++(write ? s.open_bus_writes : s.open_bus_reads);
}

// --- The xAPIC page ----------------------------------------------------------------

uint64_t MachineCpu::read(uint64_t offset, unsigned size) {
  return apic_.mmio_read(static_cast<uint32_t>(offset), size, now());
}

void MachineCpu::write(uint64_t offset, unsigned size, uint64_t value) {
  const uint64_t at = now();
  const ApicWrite w = apic_.mmio_write(static_cast<uint32_t>(offset), size, static_cast<uint32_t>(value), at);
  if (auto exit = apic_write_exit(platform_.cost, w.kind)) charge_exit(*exit);
  after_apic_write(w, at);
}

void MachineCpu::after_apic_write(const ApicWrite& write, uint64_t written_ns) {
  if (vcpu_) vcpu_->set_cr8(apic_.read_cr8());  // a TPR write through MMIO, an MSR or CR8
  platform_.events.apic_written(write);
  if (write.eoi_broadcast) platform_.events.eoi_broadcast(*write.eoi_broadcast);
  if (write.message) {
    if (platform_.events.ipi_sent({index_, *write.message, ipi_send_ns(platform_.cost, written_ns)}))
      vcpu_->request_stop();
  }
  if (write.interrupt_pending || write.timer_changed) vcpu_->request_stop();
}

}  // namespace topolab
