// The machine: RAM, the CPUID model, the platform devices, the firmware
// tables and the vCPUs with their local APICs, and the loop that runs them
// one at a time on virtual time.
//
// Scheduling: the runnable vCPU whose virtual clock is earliest runs next
// (ties by index) for at most one quantum, counted exactly. A halted vCPU
// does not advance; an IPI or its APIC timer wakes it, and its clock catches
// up to the waker's. Every cross-vCPU effect (an ICR write) is routed after
// the sender's slice ends, at the sender's time: the same image and flags
// give the same run on any host.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "devices/debug_exit.h"
#include "devices/fw_cfg.h"
#include "devices/local_apic.h"
#include "devices/measure_port.h"
#include "devices/pic_stub.h"
#include "devices/port_bus.h"
#include "devices/uart16550.h"
#include "model/cost_model.h"
#include "model/cpuid.h"
#include "base/guest_ram.h"
#include "model/msr_features.h"
#include "emu/activity_log.h"
#include "emu/stats.h"
#include "emu/vcpu.h"
#include "firmware/multiboot.h"

namespace topolab {

struct MachineConfig {
  std::string smp = "1";
  std::string cpu = "qemu64";
  uint64_t ram_mib = 128;
  std::string image;
  // The name the guest sees as the first word of its command line; empty:
  // the image's file name, as QEMU passes it.
  std::string image_name;
  std::string append;
  std::vector<std::string> initrd;  // "PATH[ ARGS]" each, as QEMU's -initrd
  // The run ends, as an error, once every running vCPU's virtual time
  // reaches this.
  static constexpr double kMaxTimeLimitSeconds = 1e6;
  double time_limit_seconds = 5.0;
  uint64_t quantum = 100'000;  // instructions per scheduling slice
  CostModel cost = CostModel::defaults();
};

struct RunResult {
  enum class Outcome {
    GuestExit,        // the guest wrote to isa-debug-exit
    BudgetExhausted,  // the virtual-time limit ran out
    Hung,             // every vCPU halted with nothing that could wake it
    Crashed,          // a fault the guest could not handle
  };
  Outcome outcome = Outcome::Crashed;
  std::optional<uint32_t> guest_value;  // GuestExit: what the guest wrote
  std::string diagnosis;                // one line, for everything but GuestExit
  uint64_t instructions = 0;            // all vCPUs together
  uint64_t virtual_ns = 0;              // the latest vCPU clock
};

// What happened between the guest's two writes to the measuring port
// (devices/measure_port.h), or from its begin write to the end of the run.
struct MeasureWindow {
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
  bool ended_by_guest = false;
  Stats stats{0};  // counters accrued in the window
};

const char* to_string(RunResult::Outcome outcome);

class Machine {
 public:
  // `serial_out` receives every byte the guest sends to COM1. Throws
  // ConfigError (bad -smp/-cpu/-m) or ImageError (an image that cannot boot).
  Machine(const MachineConfig& config, std::function<void(uint8_t)> serial_out);
  ~Machine();
  Machine(const Machine&) = delete;
  Machine& operator=(const Machine&) = delete;

  void set_trace(std::FILE* out);
  RunResult run();

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

 private:
  class Cpu;
  friend class Cpu;
  // An ICR write on its way: sent at sent_ns (the write, plus the part of
  // its exit before KVM sends it), routed once the sender's slice ends, and
  // held in a running target's inbox until the target's clock reaches
  // arrive_ns (the posted-interrupt latency later).
  struct PendingMessage {
    unsigned sender;
    ApicMessage message;
    uint64_t sent_ns;
    uint64_t arrive_ns;
  };

  Cpu* pick_next(uint64_t limit_ns);
  void wake_due_timers(uint64_t horizon_ns);
  // Injects a pending NMI or interrupt the vCPU can take now; a one-line
  // diagnosis when the guest has no usable handler for it.
  std::optional<std::string> deliver_pending(Cpu& cpu);
  uint64_t total_instructions() const;
  void route(unsigned sender, const ApicMessage& message, uint64_t sent_ns);
  // Hands one IPI sent at `sent_ns` to one target APIC and acts on what it
  // accepted.
  void deliver(unsigned sender, Cpu& target, const ApicMessage& message, uint64_t sent_ns);
  std::optional<RunResult> handle_exit(Cpu& cpu, const VcpuExit& exit);
  std::optional<RunResult> emulate_monitor(Cpu& cpu, const VcpuExit& exit);
  std::optional<RunResult> emulate_mwait(Cpu& cpu, const VcpuExit& exit);
  // Wakes vCPUs parked in MWAIT whose line `writer` changed in the slice
  // that ended at `slice_end_ns`.
  void check_monitored_lines(Cpu& writer, uint64_t slice_end_ns);
  // The earliest time any wakeup still to come can carry: no vCPU's clock,
  // and no IPI waiting to be routed, is earlier.
  uint64_t settled_time() const;
  void on_measure_mark(MeasurePort::Mark mark);
  // Brings the per-vCPU counters that live in the vCPUs up to date.
  void settle_stats();
  std::string deadlock_diagnosis() const;
  RunResult finish(RunResult::Outcome outcome, std::string diagnosis);

  MachineConfig config_;
  CpuidModel cpuid_;
  // Which MSRs CPUID announces; the others #GP (issue 14 F5). The vCPU
  // keeps EFER, PAT, SYSENTER and the SYSCALL MSRs itself, without asking.
  MsrAvailability msrs_;
  GuestRam ram_;
  PortBus ports_;
  Uart16550 uart_;
  DebugExit debug_exit_;
  FwCfg fw_cfg_;
  PicStub pic_master_, pic_slave_;
  MeasurePort measure_port_;
  Stats stats_;
  ActivityLog activity_;
  std::vector<std::unique_ptr<Cpu>> cpus_;
  // ICR writes wait here until the sender's slice ends (see the top).
  std::vector<PendingMessage> pending_messages_;
  // A guest error found outside a vCPU exit (a reserved ICR delivery mode).
  std::optional<std::string> guest_error_;
  // Set by pick_next when virtual time cannot advance: the hang's diagnosis.
  std::optional<std::string> stall_;
  Cpu* running_ = nullptr;
  std::optional<Stats> window_begin_;
  std::optional<MeasureWindow> window_;
};

}  // namespace topolab
