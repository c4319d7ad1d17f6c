// SPDX-License-Identifier: GPL-2.0-or-later
// One vCPU as the machine keeps it: its engine (made at its first SIPI, so
// thousands of waiting APs cost nothing), its local APIC, its run state and
// virtual clock, its MONITOR line and the MSRs the machine emulates (the
// IPIs on their way to it are on the machine's timeline, emu/timeline.h).
// It answers its engine's calls (VcpuHost) and its
// xAPIC page (MmioHandler); what it needs of the rest of the machine it
// reaches through CpuPlatform, and the cost rules come from
// model/cost_rules.h.
//
// Virtual time: what it executed (instructions x CPI), plus what it spent
// in modelled exits, plus what it spent halted, waiting to resume or
// waiting for SIPI, plus the spins the machine skipped. A vCPU that was not running catches up to the time of
// whatever wakes it.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/guest_ram.h"
#include "devices/kvm_pv_msrs.h"
#include "devices/local_apic.h"
#include "devices/port_bus.h"
#include "emu/guest_clock.h"
#include "emu/activity_log.h"
#include "emu/platform_mmio.h"
#include "emu/stats.h"
#include "emu/timeline.h"
#include "emu/vcpu.h"
#include "model/cost_model.h"
#include "model/cpuid.h"
#include "model/msr_features.h"
#include "model/msr_file.h"

namespace topolab {

// What a vCPU tells the machine as it runs.
class CpuEvents {
 public:
  virtual ~CpuEvents() = default;
  // An ICR or SELF IPI write's message, leaving at `sent_ns`: routed once
  // the sender's slice ends. Returns whether the slice must end now: the
  // sender itself is among the targets, or the message is not a plain
  // fixed interrupt (INIT, SIPI, NMI...). A fixed IPI to others lets the
  // sender run on; each target takes it at its arrival time.
  virtual bool ipi_sent(const IpiInFlight& ipi) = 0;
  // What a register write did that the APIC bus must know (a new ID).
  virtual void apic_written(const ApicWrite& write) = 0;
  // The APIC EOIed a level-triggered vector: the EOI message the I/O APIC
  // hears (SDM 10.8.5).
  virtual void eoi_broadcast(uint8_t vector) = 0;
  // A guest error found outside an exit; the run stops with the first.
  virtual void guest_error(std::string diagnosis) = 0;
  // The vCPU stopped for its debugger (VcpuHost::debug_stop), inside its slice.
  virtual void debug_stop(unsigned vcpu, const DebugStop& stop) {}
};

// The parts of the machine every vCPU shares.
struct CpuPlatform {
  const Topology& topology;  // the machine configuration's
  const CpuidModel& cpuid;
  // Which MSRs CPUID announces; the others #GP (issue 14 F5). The vCPU
  // keeps EFER, PAT, SYSENTER and the SYSCALL MSRs itself, without asking;
  // each MachineCpu keeps the rest in its MsrFile.
  const MsrAvailability& msrs;
  const CostModel& cost;
  GuestRam& ram;
  PortBus& ports;
  Stats& stats;
  ActivityLog& activity;
  const VcpuFactory& make_vcpu;
  CpuEvents& events;
  // What the guest reads of time (TSC, TSC MSRs): never earlier than any vCPU read before.
  GuestClock& clock;
  // Spin skipping on: the engines' pause-loop exiting (nullopt: off).
  std::optional<PauseLoopExiting> pause_loop_exiting;
  // The I/O APIC page and the like; the APIC page may not move onto one.
  std::vector<PlatformMmio> mmio_windows = {};
};

class MachineCpu final : public VcpuHost, public MmioHandler {
 public:
  enum class State { Running, Halted, WaitForSipi };
  // MONITOR/MWAIT's line (CPUID.05H: the smallest and largest monitor-line size).
  static constexpr uint64_t kMonitorLine = 64;

  MachineCpu(const CpuPlatform& platform, unsigned index);

  unsigned index() const { return index_; }
  LocalApic& apic() { return apic_; }
  const LocalApic& apic() const { return apic_; }
  Vcpu* vcpu() { return vcpu_.get(); }
  const Vcpu* vcpu() const { return vcpu_.get(); }
  State state() const { return state_; }

  // --- Clock --------------------------------------------------------------
  uint64_t instructions() const { return vcpu_ ? vcpu_->instructions() : 0; }
  uint64_t pauses() const { return vcpu_ ? vcpu_->pauses() : 0; }
  uint64_t run_ns() const { return platform_.cost.ns_for_instructions(instructions()); }
  uint64_t now() const { return run_ns() + exit_ns_ + idle_ns_ + skipped_ns_ + stall_ns(); }
  // Cycles serializing system instructions took beyond CPI (system_instruction).
  uint64_t stall_ns() const { return stall_milli_cycles_ / platform_.cost.freq_mhz; }
  // Moves a vCPU that was not running forward to `at_ns` (it waited).
  void catch_up(uint64_t at_ns);
  // Moves a spinning vCPU forward to `at_ns` without running its loop
  // (a pause-loop exit at a fixed point, emu/pause_loop.h).
  void skip_spin_to(uint64_t at_ns);
  // Its last slice ended spinning at a fixed point, confirmed after every
  // store any vCPU could have made up to `store_epoch` (Machine's count of
  // slices that may have stored); `reads_time`: the loop reads the TSC.
  void park_in_spin(uint64_t store_epoch, bool reads_time) { spin_ = SpinPark{store_epoch, reads_time}; }
  void leave_spin() { spin_.reset(); }
  // Parked in a spin that nothing since could have changed and that time
  // cannot end: it will store nothing before another vCPU does.
  bool quiescent(uint64_t store_epoch) const { return spin_ && spin_->epoch == store_epoch && !spin_->reads_time; }
  // Parked the same way in a loop that reads the TSC: it stores nothing
  // before it leaves the loop, which it does by itself, at a time it reads.
  bool parked_on_time(uint64_t store_epoch) const { return spin_ && spin_->epoch == store_epoch && spin_->reads_time; }
  // A modelled VM exit: its count, and its cost on this vCPU's clock. Exit
  // costs count against the slice like instructions: a slice whose exits
  // took it past its planned end stops at the next block boundary, so no
  // vCPU runs ahead of the others by more than about a quantum of time.
  void charge_exit(ExitKind kind);
  // Also hands the engine the APIC's TPR for MOV from CR8 (Vcpu::set_cr8):
  // an INIT, a snapshot or a debugger may have changed either since.
  void begin_slice(uint64_t end_ns) {
    slice_end_ns_ = end_ns;
    if (vcpu_) vcpu_->set_cr8(apic_.read_cr8());
  }

  // --- Interrupts -----------------------------------------------------------
  // What it could take: one query of the vCPU and its APIC (crosvm's shape).
  struct PendingInterrupts {
    std::optional<uint8_t> vector;  // the APIC's highest vector that beats PPR
    bool extint = false;            // the 8259's INTR, high, through LINT0 (ExtINT ignores PPR)
    bool window_open = false;       // RFLAGS.IF = 1 and no STI / MOV SS shadow
    bool nmi = false;               // an NMI waits
    bool nmi_blocked = false;       // the previous NMI's handler has not IRETed
    bool shadowed = false;          // in an STI / MOV SS shadow, which holds NMIs too
    bool mwait_breaks = false;      // in MWAIT with ECX[0]: interrupts break it even with IF = 0

    bool takes_nmi() const { return nmi && !nmi_blocked && !shadowed; }
    // An NMI waits out the shadow only: one more instruction lets it in.
    bool nmi_after_shadow() const { return nmi && !nmi_blocked && shadowed; }
    bool interrupt() const { return vector || extint; }
    bool takes_interrupt() const { return interrupt() && window_open; }
    // Something waits for the vCPU to open its window or IRET its NMI.
    bool waits_for_window() const { return (interrupt() && !window_open) || (nmi && (nmi_blocked || shadowed)); }
    // An interrupt, once there, would end a halt: it would be taken now,
    // or MWAIT breaks for it.
    bool interrupts_end_halt() const { return window_open || mwait_breaks; }
    bool interrupt_ends_halt() const { return interrupt() && interrupts_end_halt(); }
  };
  PendingInterrupts pending_interrupts() const;
  bool nmi_pending() const { return nmi_pending_ > 0; }
  // The 8259's INTR as this vCPU last saw it (the machine samples it when
  // a change reaches the vCPU and at each slice's start); it counts only
  // while the APIC accepts it (LocalApic::accepts_pic_intr).
  void see_pic_intr(bool level) { pic_intr_ = level; }
  bool pic_intr() const { return pic_intr_; }
  // An NMI accepted by the APIC. As KVM (process_nmi), one may be in service
  // and one latched: while none is in service two can wait, so the first
  // is taken and the second stays latched behind it; while one is in
  // service, one. More merge into those.
  void accept_nmi() {
    const unsigned limit = vcpu_ && vcpu_->nmi_blocked() ? 1 : 2;
    nmi_pending_ = std::min(nmi_pending_ + 1, limit);
  }
  // The vCPU took one of the waiting NMIs.
  void take_nmi() {
    if (nmi_pending_ > 0) --nmi_pending_;
  }
  // A halted vCPU resumes for an NMI, or an interrupt that ends its halt.
  bool can_wake() const;
  // Its APIC timer could end a halt: unmasked, and an interrupt ends it.
  bool timer_can_wake() const;
  // Why it would wake now: an NMI it can take, else an interrupt.
  WakeCause wake_cause_now() const;

  // --- Halt, MWAIT, INIT, SIPI ----------------------------------------------
  // HLT: false when a kick (KVM_HC_KICK_CPU) came first, which the HLT
  // uses up instead of halting.
  bool halt();
  // KVM_HC_KICK_CPU reached it at `event_ns`: a vCPU blocked in HLT
  // resumes; any other but one waiting for SIPI keeps the kick for its
  // next HLT (KVM's pv_unhalted).
  void kick(uint64_t event_ns);
  bool kicked() const { return pv_unhalted_; }
  void park_in_mwait(bool break_on_interrupt);
  // Resumes a halted vCPU for an event at `event_ns`, as the cost rules say
  // (resume_from_halt); a vCPU that was not halted only catches up.
  void wake(uint64_t event_ns, WakeCause cause);
  void enter_wait_for_sipi();
  void start_at_sipi(uint8_t vector, uint64_t at_ns);
  // The firmware starts it at CS:IP in real mode at `at_ns` (an S3 resume).
  void start_in_real_mode(uint16_t selector, uint16_t ip, uint64_t at_ns);
  // Books the halt up to `t` (halted time, and host CPU while the host
  // halt-polls or the vCPU sits in MWAIT), so a measuring window that ends
  // during a halt gets its share of it.
  void accrue_idle(uint64_t t);
  // Books what it is still doing at the end of the run, up to `end_ns`.
  void record_final_activity(uint64_t end_ns);

  // MONITOR: arms the line with a copy of what it holds now.
  void arm_monitor(uint64_t line);
  bool ever_monitored() const { return ever_monitored_; }
  bool monitor_armed() const { return monitor_armed_; }
  uint64_t monitor_line() const { return monitor_line_; }
  void disarm_monitor() { monitor_armed_ = false; }
  // The armed line no longer holds what MONITOR saw: a store hit it. (A
  // store of the same bytes is missed: docs/deviations.md.)
  bool monitored_line_changed() const;
  bool parked_in_mwait() const { return state_ == State::Halted && in_mwait_; }
  // "halted" or "in MWAIT on line 0x...", for diagnoses.
  std::string idle_state() const;
  // "running", "halted (HLT)", "halted (MWAIT)" or "waiting for SIPI": what
  // the debugger's thread list and the monitor say of it.
  std::string describe_state() const;

  // Its state for a snapshot (emu/machine_snapshot.h), taken between
  // slices: the APIC, the clock's parts, halt and MWAIT, pending NMIs, the
  // MSRs, and its vCPU's own (Vcpu::save_state) once it has one. Loading
  // makes the vCPU an AP that has not started lacks yet, and maps the
  // APIC page where the loaded APIC has it.
  template <class Archive>
  void serialize(Archive& ar) {
    ar(apic_, state_, idle_ns_, exit_ns_, skipped_ns_, stall_milli_cycles_, spin_, slice_end_ns_, halted_since_, accrued_until_,
       poll_busy_ns_, waiting_since_);
    ar(in_mwait_, mwait_breaks_on_interrupt_, monitor_armed_, ever_monitored_, monitor_line_, monitor_snapshot_,
       nmi_pending_, pic_intr_, msr_file_, kvm_msrs_, pv_unhalted_);
    std::optional<std::string> engine;
    if constexpr (Archive::is_saving::value) {
      if (vcpu_) engine = vcpu_->save_state();
    }
    ar(engine);
    if constexpr (Archive::is_loading::value) {
      if (engine) {
        if (!vcpu_) create_engine();
        vcpu_->load_state(*engine);
        sync_apic_page();
      }
    }
  }

  // The APIC page follows IA32_APIC_BASE: it moves with the base and is
  // gone in x2APIC mode or when the APIC is disabled.
  void sync_apic_page();

  // --- VcpuHost ---------------------------------------------------------------
  CpuidRegs describe_cpuid(uint32_t leaf, uint32_t subleaf) override;
  CpuidRegs cpuid(uint32_t leaf, uint32_t subleaf) override;
  uint32_t port_in(uint16_t port, unsigned size) override;
  void port_out(uint16_t port, unsigned size, uint32_t value) override;
  std::optional<uint64_t> read_msr(uint32_t msr) override;
  bool write_msr(uint32_t msr, uint64_t value) override;
  uint64_t read_tsc() override;
  std::optional<uint64_t> read_tsc_aux() override;
  bool msr_announced(uint32_t msr) override { return platform_.msrs.announced(msr); }
  void open_bus_access(uint64_t, unsigned, bool write) override;
  std::optional<uint64_t> read_pmc(uint32_t ecx) override { return msr_file_.read_pmc(ecx); }
  void exception_taken(uint8_t vector) override { ++platform_.stats.vcpu(index_).exceptions_taken[vector]; }
  std::optional<int64_t> hypercall(const KvmHypercall& call) override;
  uint64_t read_cr8() override;
  void system_instruction(SystemInstruction kind) override;
  void write_cr8(uint64_t value) override;
  void debug_stop(const DebugStop& stop) override { platform_.events.debug_stop(index_, stop); }

  // --- MmioHandler: the xAPIC page --------------------------------------------
  uint64_t read(uint64_t offset, unsigned size) override;
  void write(uint64_t offset, unsigned size, uint64_t value) override;

 private:
  void create_engine();
  // From waiting for SIPI to running at `at_ns`.
  void leave_wait_for_sipi(uint64_t at_ns);
  // What an APIC write caused: its exit, its message, and a stop when it
  // left an interrupt pending (an EOI or TPR write can unmask one) or moved
  // the timer, so the machine delivers or re-plans at once.
  void after_apic_write(const ApicWrite& write, uint64_t written_ns);
  std::optional<uint64_t> read_machine_msr(uint32_t msr);
  bool write_machine_msr(uint32_t msr, uint64_t value);
  bool write_kvm_msr(uint32_t msr, uint64_t value);
  template <size_t N>
  void write_guest(uint64_t address, const std::array<uint8_t, N>& bytes);
  uint32_t guest_version_at(uint64_t address) const;
  void write_pvclock_page();
  void write_wall_clock();
  void record_steal_time();
  void record_halt_until(uint64_t end_ns);
  void leave_mwait() {
    in_mwait_ = false;
    monitor_armed_ = false;
  }

  const CpuPlatform& platform_;
  unsigned index_;
  LocalApic apic_;
  std::unique_ptr<Vcpu> vcpu_;
  State state_;
  uint64_t idle_ns_ = 0;       // halted, waiting to resume, or waiting for SIPI
  uint64_t exit_ns_ = 0;       // in modelled VM exits
  uint64_t skipped_ns_ = 0;    // in spins skipped, not run
  uint64_t stall_milli_cycles_ = 0;  // serializing instructions beyond CPI, in 1/1000 cycles
  struct SpinPark {
    uint64_t epoch;
    bool reads_time;
    template <class Archive>
    void serialize(Archive& ar) {
      ar(epoch, reads_time);
    }
  };
  std::optional<SpinPark> spin_;
  uint64_t slice_end_ns_ = 0;  // where the running slice is planned to end
  uint64_t halted_since_ = 0;
  uint64_t accrued_until_ = 0;  // the halt is booked in the stats up to here
  uint64_t poll_busy_ns_ = 0;   // the host is busy this long from halted_since_
  uint64_t waiting_since_ = 0;  // WaitForSipi since
  // MONITOR/MWAIT.
  bool in_mwait_ = false;  // while Halted: parked by MWAIT, not HLT
  bool mwait_breaks_on_interrupt_ = false;
  bool monitor_armed_ = false;
  bool ever_monitored_ = false;
  uint64_t monitor_line_ = 0;
  std::array<uint8_t, kMonitorLine> monitor_snapshot_{};
  unsigned nmi_pending_ = 0;  // NMIs waiting: at most 2 (accept_nmi)
  bool pic_intr_ = false;
  // The MSRs the machine keeps for this vCPU (TSC, MISC_ENABLE, MTRRs, PMU,
  // machine check...), from its own CPUID.
  MsrFile msr_file_;
  // KVM's paravirtual MSRs, and a kick that came while it was not in HLT.
  KvmPvMsrs kvm_msrs_;
  bool pv_unhalted_ = false;
  std::optional<uint64_t> mapped_apic_page_;
};

}  // namespace topolab
