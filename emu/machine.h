// SPDX-License-Identifier: GPL-2.0-or-later
// The machine: the CPUID model, the PC board (RAM and the platform devices,
// emu/pc_board.h), the firmware tables and the vCPUs with their local
// APICs, and the loop that runs them one at a time on virtual time.
//
// Scheduling: the runnable vCPU whose virtual clock is earliest runs next
// (ties by index) for at most one quantum, counted exactly. A halted vCPU
// does not advance; an IPI or its APIC timer wakes it, and its clock catches
// up to the waker's. Every cross-vCPU effect (an ICR write) is routed after
// the sender's slice ends, at the sender's time: the same image and flags
// give the same run on any host. What comes next, and when, is on one
// timeline (emu/timeline.h), so no step of the loop walks every vCPU.
// docs/machine.md describes the loop.
//
// Where things are: one vCPU's machine-side state in emu/machine_cpu.h,
// routing in devices/apic_bus.h, the cost rules in model/cost_rules.h, the
// devices and where they sit in emu/pc_board.h; this
// file's machine.cc runs the loop and routes, machine_exits.cc handles
// what a vCPU stops for, machine_window.cc keeps the measuring window and
// writes the diagnoses.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/state_sized.h"
#include "devices/apic_bus.h"
#include "devices/io_apic.h"
#include "devices/local_apic.h"
#include "devices/measure_port.h"
#include "firmware/boot.h"
#include "model/cost_model.h"
#include "model/cpuid.h"
#include "model/msr_features.h"
#include "emu/activity_log.h"
#include "emu/machine_config.h"
#include "emu/machine_cpu.h"
#include "emu/pc_board.h"
#include "emu/run_result.h"
#include "emu/stats.h"
#include "emu/timeline.h"
#include "emu/vcpu.h"

namespace topolab {

// What a debugger (emu/machine_debug.h) is told as the machine runs. Every
// call is on the thread that runs the machine; each may block there, with
// the whole machine standing still, for as long as the debugger looks.
class MachineDebugHooks {
 public:
  virtual ~MachineDebugHooks() = default;
  // Between two slices, before the next is picked: where a stop the
  // debugger asked for from outside (^C, a client that just attached, -S)
  // happens.
  virtual void between_slices() = 0;
  // `cpu`'s slice is about to begin: its engine gets the debugger's
  // breakpoints and watchpoints if it has not had them yet.
  virtual void before_slice(MachineCpu& cpu) = 0;
  // A vCPU stopped for its debugger in the middle of its slice.
  virtual void stopped(unsigned vcpu, const DebugStop& stop) = 0;
  // The debugger asked for the run to end (gdb's `k`).
  virtual bool kill_requested() const = 0;
  // run() is about to return `result`.
  virtual void finished(const RunResult& result) = 0;
};

class Machine final : private CpuEvents, private BoardEvents {
 public:
  // `serial_out` receives every byte the guest sends to COM1; `make_vcpu`
  // builds the vCPUs (unicorn_vcpu_factory(), or a test's fake). Throws
  // ConfigError (bad -smp/-cpu/-m) or ImageError (an image that cannot boot).
  // Boots config.image and config.initrd, read from their files.
  Machine(const MachineConfig& config, std::function<void(uint8_t)> serial_out, VcpuFactory make_vcpu)
      : Machine(config, std::nullopt, std::move(serial_out), std::move(make_vcpu)) {}
  // Boots `files`, read already (config.image and config.initrd are not read).
  Machine(const MachineConfig& config, BootFiles files, std::function<void(uint8_t)> serial_out, VcpuFactory make_vcpu)
      : Machine(config, std::optional<BootFiles>(std::move(files)), std::move(serial_out), std::move(make_vcpu)) {}
  ~Machine();
  Machine(const Machine&) = delete;
  Machine& operator=(const Machine&) = delete;

  void set_trace(std::FILE* out);
  RunResult run();
  // A debugger for the next run(); nullptr: none (the default, at no cost).
  void attach_debugger(MachineDebugHooks* hooks) { debug_ = hooks; }

  // One vCPU's machine-side state, for the debugger and the monitor.
  MachineCpu& cpu(unsigned index) { return *cpus_.at(index); }
  const MachineCpu& cpu(unsigned index) const { return *cpus_.at(index); }
  GuestRam& ram() { return board_.ram(); }
  const MachineConfig& config() const { return config_; }
  const PcBoard& board() const { return board_; }

  // The machine's topology, owned by its configuration: the CPUID model,
  // the APICs, firmware and the reports all describe this one.
  const Topology& topology() const { return config_.topology; }
  const CpuidModel& cpuid() const { return cpuid_; }
  const Stats& stats() const { return stats_; }
  // What each vCPU did over virtual time, span by span.
  const ActivityLog& activity() const { return activity_; }
  const CostModel& cost() const { return config_.cost; }
  // The guest's measuring window, once it began one.
  const std::optional<MeasureWindow>& window() const { return window_; }
  unsigned vcpu_count() const { return static_cast<unsigned>(cpus_.size()); }
  // Every local APIC's state, like QEMU's `info lapic`.
  std::string describe_apics() const;

  // --- Snapshots (emu/machine_snapshot.h) ------------------------------------------
  // Everything the machine is beyond its configuration and its RAM: the
  // devices, every vCPU with its APIC and engine, the timeline, the clocks,
  // the statistics, the activity and the measuring window. Taken between
  // two slices (snapshot_at, or a debugger stopped between slices), loaded
  // into a machine just built from the same configuration, before run():
  // that run goes on as the saved one would have, to the byte.
  template <class Archive>
  void serialize(Archive& ar) {
    ar(board_, shutdown_, clock_, stats_, activity_, timeline_, mwait_lines_);
    if (stats_.vcpu_count() != cpus_.size()) throw std::length_error("a snapshot's statistics have another size");
    serialize_sized(ar, mwait_line_of_, "MWAIT table");
    ar(store_epoch_);
    ar(ipis_to_route_, guest_error_, stall_, window_begin_, window_, *bus_);
    for (const std::unique_ptr<Cpu>& cpu : cpus_) ar(*cpu);
  }
  // Calls `take` once, between two slices, at the first that virtual time
  // (settled_time: no vCPU's clock is earlier) has reached `at_ns`.
  void snapshot_at(uint64_t at_ns, std::function<void(Machine&)> take) {
    snapshot_at_ = SnapshotAt{at_ns, std::move(take)};
  }
  // Virtual time between two slices: no vCPU's clock, and no wakeup to come, is earlier.
  uint64_t virtual_time() const { return settled_time(); }
  // Instructions every vCPU has retired.
  uint64_t instructions() const { return total_instructions(); }

 private:
  using Cpu = MachineCpu;

  // The files are read, when not given, after every check of the
  // configuration, so a bad flag is reported before a missing file.
  Machine(const MachineConfig& config, std::optional<BootFiles> files, std::function<void(uint8_t)> serial_out,
          VcpuFactory make_vcpu);
  // MachineConfig::legacy_bios: the devices, the BSP's APIC and the IVT as
  // SeaBIOS leaves them, before vCPU 0's first instruction.
  void enter_legacy_bios_state();

  // CpuEvents
  bool ipi_sent(const IpiInFlight& ipi) override;
  void apic_written(const ApicWrite& write) override { bus_->note_write(write); }
  void eoi_broadcast(uint8_t vector) override { board_.broadcast_eoi(vector); }
  void guest_error(std::string diagnosis) override {
    if (!guest_error_) guest_error_ = std::move(diagnosis);
  }
  void debug_stop(unsigned vcpu, const DebugStop& stop) override {
    if (debug_) debug_->stopped(vcpu, stop);
  }

  // BoardEvents: what the board's devices ask of the machine (machine.cc).
  // Interrupt messages a device sent during the running vCPU's slice: they
  // leave at its clock and are routed, like its IPIs, when the slice ends
  // (which they end).
  void send_device_interrupts(const IoApicMessages& messages) override;
  // A timed line's messages (the PIT's IRQ 0): they leave at its time, from
  // no vCPU, and are routed at once (run_device_timers).
  void send_timed_interrupts(const IoApicMessages& messages, uint64_t at_ns) override;
  // The 8259's INTR changed: in an access (which it ends), in the INTA of
  // the vCPU in its slice, or at a timed line's time. The change travels to
  // the vCPUs as a device message does.
  void pic_output_changed(std::optional<uint64_t> at_ns) override;
  // The PIT or pin 2's entry was written: the slice ends after the access.
  void device_timers_changed() override { guest_exit_requested(); }
  // A reset or power-off: the run ends once the running slice does.
  void request_shutdown(std::string how) override;
  // S3: the machine sleeps once the running slice ends (sleep_in_s3).
  void request_suspend() override;
  void guest_exit_requested() override;
  // The virtual time a device reads: the accessing vCPU's clock.
  uint64_t device_now_ns() override;
  void charge_io_exit() override;
  void measure_mark(MeasurePort::Mark mark) override;  // machine_window.cc
  // The vCPU whose access is being handled (device callbacks run inside one).
  Cpu* accessing_cpu() const { return running_; }

  // The loop (machine.cc).
  RunResult run_loop();
  // The runnable vCPU with the earliest clock, taken off the timeline's
  // clocks for its slice (rekey puts it back).
  Cpu* pick_next(uint64_t limit_ns);
  void wake_due_timers(uint64_t horizon_ns);
  // The board's timed lines due at or before `horizon_ns` change, each at
  // its own time, in time order; their interrupts are routed as they go.
  void run_device_timers(uint64_t horizon_ns);
  // The board's next timed event, if an interrupt it sends could be taken:
  // some vCPU, running or halted, has its interrupt window open (or sits in
  // an MWAIT that interrupts break) while pin 2 is unmasked or the 8259's
  // IRQ 0 is open and its APIC takes INTR, or pin 2 sends an NMI, INIT or
  // other non-fixed message. Otherwise it only sets IRR bits nobody acts on
  // before the next event that counts, so a halt or a spin need not stop
  // at it: a `cli; hlt` or `cli; jmp .` guest with the PIT ticking is
  // still a hang, found at once.
  std::optional<uint64_t> device_event_that_may_interrupt() const;
  // One halted vCPU's timer, due at or before `horizon_ns`: fires, and wakes it if it can.
  void expire_timer(Cpu& cpu, uint64_t horizon_ns);
  // Tells the timeline where `cpu` stands now: its clock if it runs, its
  // APIC timer if it is halted, its MWAIT line if it is parked on one. Every
  // change the loop makes to a vCPU other than the one in its slice ends in
  // a rekey (deliver, expire_timer, an MWAIT store wake); the vCPU in its
  // slice is re-keyed when the slice ends.
  void rekey(Cpu& cpu);
  Timeline::Clock clock_kind(const Cpu& cpu) const;
  // Debug builds: the first difference between the timeline and what a walk
  // over every vCPU finds (the scans the timeline replaced); empty if none.
  std::string timeline_mismatch() const;
  uint64_t limit_ns() const { return static_cast<uint64_t>(config_.time_limit_seconds * 1e9); }
  // Runs `cpu` for one slice from its clock `now`; a result ends the run.
  // `reset_itself`: an INIT it sent itself, or the S3 sleep it entered,
  // reset it during the slice.
  std::optional<RunResult> run_slice(Cpu& cpu, uint64_t now, uint64_t limit_ns, bool& reset_itself);
  // The instructions `cpu` may run from `now`: to its next event, at most a quantum.
  uint64_t slice_budget(Cpu& cpu, uint64_t now, uint64_t limit_ns) const;
  // Injects a pending NMI or interrupt the vCPU can take now; a one-line
  // diagnosis when the guest has no usable handler for it.
  std::optional<std::string> deliver_pending(Cpu& cpu);
  uint64_t total_instructions() const;
  // Routes every IPI sent in the slice that just ended, in send order.
  void route_sent_ipis();
  void route(const IpiInFlight& ipi);
  // A change of the 8259's INTR reaches each vCPU whose APIC takes it as a
  // message would; the others, which cannot act on it, just note the level.
  void route_pic_intr(const IpiInFlight& change);
  // Hands one IPI to one target APIC and acts on what it accepted.
  void deliver(Cpu& target, const IpiInFlight& ipi);
  // A vCPU that just halted (HLT or MWAIT): IPIs already sent to it arrive
  // now, each at its own time, and it resumes at once if one ends the halt.
  void settle_halt(Cpu& cpu);
  // The earliest time any wakeup still to come can carry: no vCPU's clock,
  // and no IPI waiting to be routed, is earlier.
  uint64_t settled_time() const;

  // What a vCPU stopped for (machine_exits.cc).
  std::optional<RunResult> handle_exit(Cpu& cpu, const VcpuExit& exit);
  std::optional<RunResult> emulate_monitor(Cpu& cpu, const VcpuExit& exit);
  std::optional<RunResult> emulate_mwait(Cpu& cpu, const VcpuExit& exit);
  // A pause-loop or idle-loop exit: skips the loop, or ends the run as a
  // hang when nothing can end the loop before the time limit.
  std::optional<RunResult> handle_loop_exit(Cpu& cpu, const VcpuExit& exit);
  // A pause-loop exit: charges it and skips the spin (spin_horizon).
  void skip_spin(Cpu& cpu, const VcpuExit& exit);
  // The earliest time anything a vCPU spinning at a fixed point can observe
  // could change: another vCPU that may store runs (a running one's clock,
  // unless it is itself quiescent in a spin; a halted one's timer that
  // wakes it), its own timer fires or an IPI reaches it, or the run's time
  // limit. Its clock when an interrupt or NMI waits for it now. A spinner
  // that reads the TSC (`reads_time`) is not held back by others parked on
  // the TSC: its own skip is bounded by a quantum.
  uint64_t spin_horizon(const Cpu& spinner, bool reads_time) const;
  // Raises #GP(0) for a bad MONITOR/MWAIT extension; a crash result when
  // the guest cannot take it.
  std::optional<RunResult> raise_gp_for(Cpu& cpu, const VcpuExit& exit, const char* instruction, uint32_t ecx);
  // Wakes vCPUs parked in MWAIT whose line `writer` changed in the slice
  // that ended at `slice_end_ns`: only the vCPUs parked on a line are
  // compared, line by line (mwait_lines_), not every vCPU.
  void check_monitored_lines(Cpu& writer, uint64_t slice_end_ns);
  // Keeps mwait_lines_ to `cpu`'s state (from rekey).
  void track_mwait_line(const Cpu& cpu);

  // The window and the end of the run (machine_window.cc).
  // Brings the per-vCPU counters that live in the vCPUs up to date.
  void settle_stats();
  std::string deadlock_diagnosis() const;
  // No vCPU but `stuck` could end its loop before the time limit: each other
  // one is halted, waits for SIPI, or is parked in a spin with no timer,
  // IPI or interrupt of its own to come before the limit.
  bool nothing_else_can_end_it(const Cpu& stuck) const;
  // "guest hang: cpu N loops forever in LOOP at RIP ... with interrupts
  // on|off: WHY nothing can end it ...; the time limit".
  std::string stuck_loop_diagnosis(const Cpu& cpu, const VcpuExit& exit) const;
  // Nobody can run: the time limit, a timer still to come, or a deadlock.
  RunResult finish_idle();
  // The guest entered S3 at `at_ns`: every vCPU stops, virtual time moves
  // to the wake event, and vCPU 0 resumes at the FACS waking vector in real
  // mode, the others waiting for SIPI, as after SeaBIOS's s3_resume. A
  // result when nothing can wake it, or not before the time limit.
  std::optional<RunResult> sleep_in_s3(uint64_t at_ns);
  RunResult finish(RunResult::Outcome outcome, std::string diagnosis);

  MachineConfig config_;
  CpuidModel cpuid_;
  MsrAvailability msrs_;  // CpuPlatform::msrs says what it is for
  VcpuFactory make_vcpu_;
  PcBoard board_;
  std::optional<std::string> shutdown_;  // how the guest reset or powered off
  bool suspend_ = false;                 // it entered S3 in the running slice
  uint32_t facs_ = 0;                    // the FACS's address (the S3 waking vector)
  GuestClock clock_;  // before platform_, which refers to it
  Stats stats_;
  ActivityLog activity_;
  CpuPlatform platform_;
  std::vector<std::unique_ptr<Cpu>> cpus_;
  std::optional<ApicBus> bus_;  // over cpus_, made once they exist
  Timeline timeline_;
  // The vCPU whose slice is under way, from its pick to its rekey: its clock
  // moves as it runs, so it is not among the timeline's clocks meanwhile.
  Cpu* in_slice_ = nullptr;
  // vCPUs parked in MWAIT, by monitored line, and the line each is parked on.
  std::map<uint64_t, std::set<unsigned>> mwait_lines_;
  std::vector<std::optional<uint64_t>> mwait_line_of_;
  // Slices that may have stored to memory: every slice but a spinner's
  // recheck of its parked loop (emu/pause_loop.h). A parked spinner that
  // confirmed its loop at the current count is quiescent.
  uint64_t store_epoch_ = 0;
  // ICR writes and device interrupt messages of the running slice, routed
  // when it ends (see the top) in (send time, send order).
  std::vector<IpiInFlight> ipis_to_route_;
  // A guest error found outside a vCPU exit (a reserved ICR delivery mode).
  std::optional<std::string> guest_error_;
  // Set by pick_next when virtual time cannot advance: the hang's diagnosis.
  std::optional<std::string> stall_;
  Cpu* running_ = nullptr;
  std::optional<Stats> window_begin_;
  std::optional<MeasureWindow> window_;
  MachineDebugHooks* debug_ = nullptr;
  struct SnapshotAt {
    uint64_t at_ns;
    std::function<void(Machine&)> take;
  };
  std::optional<SnapshotAt> snapshot_at_;
};

}  // namespace topolab
