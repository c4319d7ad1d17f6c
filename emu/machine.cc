#include "emu/machine.h"

#include "arch/x86_arch.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "firmware/acpi.h"

namespace topolab {

namespace {

constexpr uint32_t kMsrTsc = 0x10;
constexpr uint32_t kMsrMiscEnable = 0x1a0;
// IA32_MISC_ENABLE: fast strings, and MONITOR/MWAIT enabled when the model has it.
constexpr uint64_t kMiscFastStrings = 1u << 0;
constexpr uint64_t kMiscMonitorEnable = 1u << 18;
constexpr uint64_t kApicBaseEnable = 1u << 11;  // IA32_APIC_BASE.EN
constexpr uint64_t kApicBaseExtd = 1u << 10;    // IA32_APIC_BASE.EXTD: x2APIC mode
constexpr uint32_t kLeaf7EcxPku = 1u << 3;
constexpr uint32_t kLeaf7EcxOspke = 1u << 4;
// APIC registers a KVM host with APICv virtualises (no exit) and the ICR.
constexpr uint32_t kApicTprOffset = 0x80, kApicEoiOffset = 0xB0, kApicIcrLowOffset = 0x300;
constexpr uint32_t kX2ApicTprMsr = 0x808, kX2ApicEoiMsr = 0x80B, kX2ApicIcrMsr = 0x830, kX2ApicSelfIpiMsr = 0x83F;
// MONITOR/MWAIT (SDM Vol. 2): the monitored line of CPUID.05H, the MWAIT
// extension "interrupts break MWAIT even with IF = 0" (ECX[0], enumerated
// by CPUID.05H:ECX[1]), and the hints valid when CPUID.05H:EDX enumerates
// no sub-states: C1 (0x00) and C0 (0xF0).
constexpr uint64_t kMonitorLine = 64;
constexpr uint32_t kMwaitBreakOnInterrupt = 1u << 0;
constexpr uint32_t kMwaitHintC1 = 0x00, kMwaitHintC0 = 0xF0;

constexpr uint64_t kMaxRamMib = 3 * 1024;  // below the 32-bit PCI hole and the APIC page

uint64_t checked_ram_bytes(uint64_t mib) {
  if (mib < 2) throw ConfigError(fmt::format("-m {}: guest RAM must be at least 2 MiB", mib));
  if (mib > kMaxRamMib) throw ConfigError(fmt::format("-m {}: at most {} MiB of guest RAM is supported", mib, kMaxRamMib));
  return mib << 20;
}

std::vector<MultibootModule> read_modules(const std::vector<std::string>& specs, uint64_t ram_bytes) {
  std::vector<MultibootModule> modules;
  for (const std::string& spec : specs) {
    // QEMU's -initrd "FILE ARGS": the file name ends at the first space.
    std::string path = spec.substr(0, spec.find(' '));
    modules.push_back({spec, read_image_file(path, ram_bytes)});
  }
  return modules;
}

// The engine's own model whose instruction set matches the CPUID model best.
EngineCpu engine_cpu_for(const CpuConfig& cpu) {
  if (cpu.model.name == "Skylake-Server") return EngineCpu::SkylakeServer;
  if (cpu.model.name == "EPYC") return EngineCpu::Epyc;
  return EngineCpu::Qemu64;
}


IpiMode ipi_mode(ApicDeliveryMode mode) {
  switch (mode) {
    case ApicDeliveryMode::Fixed: return IpiMode::Fixed;
    case ApicDeliveryMode::LowestPriority: return IpiMode::LowestPriority;
    case ApicDeliveryMode::Smi: return IpiMode::Smi;
    case ApicDeliveryMode::Nmi: return IpiMode::Nmi;
    case ApicDeliveryMode::Init: return IpiMode::Init;
    case ApicDeliveryMode::StartUp: return IpiMode::StartUp;
    case ApicDeliveryMode::ExtInt: case ApicDeliveryMode::Reserved: break;
  }
  return IpiMode::ExtInt;
}

}  // namespace

const char* to_string(RunResult::Outcome outcome) {
  switch (outcome) {
    case RunResult::Outcome::GuestExit: return "guest-exit";
    case RunResult::Outcome::BudgetExhausted: return "budget-exhausted";
    case RunResult::Outcome::Hung: return "hung";
    case RunResult::Outcome::Crashed: return "crashed";
  }
  return "?";
}

// One vCPU: its engine (created at its first SIPI, so thousands of waiting
// APs cost nothing), its local APIC, and what it asks of the platform.
class Machine::Cpu final : public VcpuHost, public MmioHandler {
 public:
  enum class State { Running, Halted, WaitForSipi };

  Cpu(Machine& machine, unsigned index)
      : machine_(machine),
        index_(index),
        apic_(LocalApicConfig{.apic_id = machine.cpuid_.topology().apic_id(index),
                              .bsp = index == 0,
                              .x2apic_supported = machine.cpuid_.cpu().has("x2apic"),
                              .tsc_hz = machine.config_.cost.tsc_hz()}),
        state_(index == 0 ? State::Running : State::WaitForSipi) {
    // With APIC IDs past 254, firmware hands over every APIC in x2APIC mode
    // (xAPIC cannot address them), as a BIOS does and Linux expects.
    if (machine.cpuid_.topology().needs_x2apic())
      apic_.wrmsr(LocalApic::MSR_IA32_APIC_BASE,
                  apic_.apic_base_msr() | kApicBaseEnable | kApicBaseExtd, 0);
    if (index == 0) create_engine();
  }

  unsigned index() const { return index_; }
  LocalApic& apic() { return apic_; }
  const LocalApic& apic() const { return apic_; }
  Vcpu* vcpu() { return vcpu_.get(); }
  State state() const { return state_; }
  bool nmi_pending() const { return nmi_pending_; }

  // IPIs sent at a time this running vCPU has not reached yet, by time.
  void defer(const PendingMessage& m) { inbox_.emplace(m.arrive_ns, m); }
  std::optional<uint64_t> next_arrival() const {
    if (inbox_.empty()) return std::nullopt;
    return inbox_.begin()->first;
  }
  // Takes the messages due by `until_ns`, oldest first.
  std::vector<PendingMessage> take_arrivals(uint64_t until_ns) {
    std::vector<PendingMessage> due;
    while (!inbox_.empty() && inbox_.begin()->first <= until_ns) {
      due.push_back(inbox_.begin()->second);
      inbox_.erase(inbox_.begin());
    }
    return due;
  }
  void set_nmi_pending(bool pending) { nmi_pending_ = pending; }

  uint64_t instructions() const { return vcpu_ ? vcpu_->instructions() : 0; }
  uint64_t pauses() const { return vcpu_ ? vcpu_->pauses() : 0; }
  uint64_t run_ns() const { return machine_.config_.cost.ns_for_instructions(instructions()); }
  // Virtual time: what it executed, plus what it spent in exits, halted or
  // waiting.
  uint64_t now() const { return run_ns() + exit_ns_ + idle_ns_; }

  // A modelled VM exit: its count, and its cost on this vCPU's clock. Exit
  // costs count against the slice like instructions: a slice whose exits
  // took it past its planned end stops at the next block boundary, so no
  // vCPU runs ahead of the others by more than about a quantum of time.
  void charge_exit(ExitKind kind) {
    uint64_t ns = machine_.config_.cost.exit_ns(kind);
    VcpuStats& s = machine_.stats_.vcpu(index_);
    ++s.exits[static_cast<size_t>(kind)];
    s.exit_ns += ns;
    exit_ns_ += ns;
    if (ns && vcpu_ && now() >= slice_end_ns_) vcpu_->request_stop();
  }
  void begin_slice(uint64_t end_ns) { slice_end_ns_ = end_ns; }

  // Moves a vCPU that was not running forward to `at_ns` (it waited).
  void catch_up(uint64_t at_ns) {
    uint64_t t = now();
    if (at_ns > t) idle_ns_ += at_ns - t;
  }

  void halt() {
    state_ = State::Halted;
    in_mwait_ = false;
    ++machine_.stats_.vcpu(index_).hlt_entries;
    halted_since_ = accrued_until_ = now();
    poll_busy_ns_ = machine_.config_.cost.halt_poll_ns;
  }

  // Books the halt up to `t` (halted time, and host CPU while the host
  // halt-polls or the vCPU sits in MWAIT), so a measuring window that ends
  // during a halt gets its share of it.
  void accrue_idle(uint64_t t) {
    if (state_ != State::Halted || t <= accrued_until_) return;
    VcpuStats& s = machine_.stats_.vcpu(index_);
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

  // MONITOR: arms the line with a copy of what it holds now.
  void arm_monitor(uint64_t line) {
    monitor_line_ = line;
    monitor_armed_ = true;
    ever_monitored_ = true;
    auto bytes = machine_.ram_.bytes(line, kMonitorLine);
    std::copy(bytes.begin(), bytes.end(), monitor_snapshot_.begin());
  }
  bool ever_monitored() const { return ever_monitored_; }
  bool monitor_armed() const { return monitor_armed_; }
  void disarm_monitor() { monitor_armed_ = false; }
  // The armed line no longer holds what MONITOR saw: a store hit it. (A
  // store of the same bytes is missed: docs/deviations.md.)
  bool monitored_line_changed() const {
    auto bytes = machine_.ram_.bytes(monitor_line_, kMonitorLine);
    return !std::equal(bytes.begin(), bytes.end(), monitor_snapshot_.begin());
  }
  bool parked_in_mwait() const { return state_ == State::Halted && in_mwait_; }
  // "halted" or "in MWAIT on line 0x...", for diagnoses.
  std::string idle_state() const {
    if (!parked_in_mwait()) return "halted";
    return fmt::format("in MWAIT on line {:#x}{}", monitor_line_,
                       mwait_breaks_on_interrupt_ ? " (interrupts break it)" : "");
  }
  void park_in_mwait(bool break_on_interrupt) {
    state_ = State::Halted;
    in_mwait_ = true;
    mwait_breaks_on_interrupt_ = break_on_interrupt;
    halted_since_ = accrued_until_ = now();
    poll_busy_ns_ = 0;
  }

  // Resumes a halted vCPU for an event at `event_ns`, as the cost model
  // says: after a passed-through MWAIT, once out of C1; after a HLT (or a
  // trapped MWAIT), at once if the event was already there when it halted,
  // soon if the host was still halt-polling, else after a host wakeup.
  void wake(uint64_t event_ns, WakeCause cause) {
    if (state_ == State::Halted) {
      const CostModel& cost = machine_.config_.cost;
      VcpuStats& s = machine_.stats_.vcpu(index_);
      const uint64_t event = std::max(event_ns, halted_since_);
      const uint64_t waited = event - halted_since_;
      uint64_t resume = event;
      if (waited == 0) {
        // The event was there when it halted: HLT (KVM checks before it
        // blocks or polls) and MWAIT (the CPU does not enter C1) go on.
      } else if (in_mwait_) {
        // Passed through: out of C1. Trapped: the guest was spinning
        // through MWAIT exits, busy too, and sees the event at once.
        if (cost.mwait_passthrough) resume = event + cost.mwait_wake_ns;
      } else if (waited > 0 && waited <= cost.halt_poll_ns) {
        ++s.halt_poll_hits;
        resume = event + cost.poll_wake_ns;
        poll_busy_ns_ = resume - halted_since_;  // it polled, then entered
      } else if (waited > 0) {
        if (cost.halt_poll_ns) ++s.halt_poll_misses;
        resume = event + cost.halt_wake_ns;
      }
      catch_up(resume);
      accrue_idle(now());
      machine_.activity_.record(index_, halted_since_, now(), in_mwait_ ? VcpuActivity::Mwait : VcpuActivity::Halted);
      leave_mwait();
    } else {
      catch_up(event_ns);
    }
    state_ = State::Running;
    machine_.stats_.record_wake(index_, cause);
  }

  void enter_wait_for_sipi() {
    accrue_idle(now());
    if (state_ == State::Halted)
      machine_.activity_.record(index_, halted_since_, now(), in_mwait_ ? VcpuActivity::Mwait : VcpuActivity::Halted);
    waiting_since_ = now();
    state_ = State::WaitForSipi;
    leave_mwait();
    ever_monitored_ = false;
    if (vcpu_) vcpu_->reset_for_init();
    nmi_pending_ = false;
  }

  void start_at_sipi(uint8_t vector, uint64_t at_ns) {
    if (!vcpu_) create_engine();
    vcpu_->reset_for_init();
    vcpu_->start_at_sipi(vector);
    catch_up(at_ns);
    machine_.activity_.record(index_, waiting_since_, now(), VcpuActivity::WaitForSipi);
    state_ = State::Running;
    machine_.stats_.record_wake(index_, WakeCause::Sipi);
  }

  // Books what it is still doing at the end of the run, up to `end_ns`.
  void record_final_activity(uint64_t end_ns) {
    if (state_ == State::Halted)
      machine_.activity_.record(index_, halted_since_, end_ns, in_mwait_ ? VcpuActivity::Mwait : VcpuActivity::Halted);
    else if (state_ == State::WaitForSipi)
      machine_.activity_.record(index_, waiting_since_, end_ns, VcpuActivity::WaitForSipi);
  }

  // An interrupt ends the halt: the vCPU would take it now, or it waits in
  // an MWAIT whose ECX[0] makes interrupts break it even with IF = 0.
  bool interrupt_ends_halt() const {
    return vcpu_->interrupt_window_open() || (in_mwait_ && mwait_breaks_on_interrupt_);
  }

  // Its APIC timer could end a halt: unmasked, and an interrupt ends it.
  bool timer_can_wake() const {
    return state_ == State::Halted && apic_.timer_interrupts() && interrupt_ends_halt();
  }

  // A halted vCPU resumes for an NMI, or an interrupt that ends its halt.
  bool can_wake() const {
    if (state_ != State::Halted) return false;
    return (nmi_pending_ && !vcpu_->nmi_blocked()) || (apic_.pending_vector() && interrupt_ends_halt());
  }

  // The APIC page follows IA32_APIC_BASE: it moves with the base and is
  // gone in x2APIC mode or when the APIC is disabled.
  void sync_apic_page() {
    std::optional<uint64_t> want;
    if (apic_.mmio_enabled()) want = apic_.base_address();
    if (want == mapped_apic_page_) return;
    if (mapped_apic_page_) vcpu_->unmap_mmio(*mapped_apic_page_, LocalApic::kMmioSize);
    mapped_apic_page_.reset();
    if (want && machine_.ram_.contains(*want, LocalApic::kMmioSize)) {
      // Hardware would overlay the page on RAM for this CPU; the engine
      // cannot, so say so rather than let APIC writes land in memory.
      if (!machine_.guest_error_)
        machine_.guest_error_ = fmt::format("cpu {} moved its APIC page onto RAM at {:#x} (IA32_APIC_BASE): unsupported",
                                            index_, *want);
      return;
    }
    if (want) {
      vcpu_->map_mmio(*want, LocalApic::kMmioSize, *this);
      mapped_apic_page_ = want;
    }
  }

  // VcpuHost
  CpuidRegs describe_cpuid(uint32_t leaf, uint32_t subleaf) override {
    return machine_.cpuid_.query(index_, leaf, subleaf);
  }
  CpuidRegs cpuid(uint32_t leaf, uint32_t subleaf) override {
    charge_exit(ExitKind::Cpuid);
    CpuidRegs r = machine_.cpuid_.query(index_, leaf, subleaf);
    // CPUID.07H:ECX[4] OSPKE mirrors CR4.PKE (SDM): the one leaf bit that
    // follows guest state, now that no model offers XSAVE (OSXSAVE).
    if (leaf == 7 && subleaf == 0 && (r.ecx & kLeaf7EcxPku) && (vcpu_->state().cr4 & x86::kCr4Pke)) r.ecx |= kLeaf7EcxOspke;
    return r;
  }
  uint32_t port_in(uint16_t port, unsigned size) override {
    charge_exit(ExitKind::Io);
    return machine_.ports_.read(port, size);
  }
  void port_out(uint16_t port, unsigned size, uint32_t value) override {
    charge_exit(ExitKind::Io);
    machine_.ports_.write(port, size, value);
  }

  std::optional<uint64_t> read_msr(uint32_t msr) override {
    // An MSR CPUID does not announce does not exist: #GP (SDM Vol. 4 2.1).
    if (!machine_.msrs_.announced(msr)) {
      charge_exit(ExitKind::Msr);
      return std::nullopt;
    }
    // APICv reads the APIC's registers without an exit.
    if (LocalApic::is_apic_msr(msr) && msr != LocalApic::MSR_IA32_APIC_BASE) return apic_.rdmsr(msr, now());
    charge_exit(ExitKind::Msr);
    if (LocalApic::is_apic_msr(msr)) return apic_.rdmsr(msr, now());
    switch (msr) {
      case kMsrTsc: return read_tsc();
      case kMsrMiscEnable:
        return kMiscFastStrings | (machine_.cpuid_.cpu().has("monitor") ? kMiscMonitorEnable : 0);
      case x86::kMsrTscAux: return tsc_aux_;
      default: return std::nullopt;
    }
  }

  bool write_msr(uint32_t msr, uint64_t value) override {
    if (!machine_.msrs_.announced(msr)) {
      charge_exit(ExitKind::Msr);
      return false;
    }
    if (LocalApic::is_apic_msr(msr)) {
      const auto timer_before = apic_.next_timer_event();
      const uint64_t at = now();
      charge_apic_write_exit(msr == kX2ApicIcrMsr, msr == kX2ApicEoiMsr || msr == kX2ApicTprMsr ||
                                                       msr == kX2ApicSelfIpiMsr);
      LocalApic::MsrWrite w = apic_.wrmsr(msr, value, at);
      if (w.gp) return false;
      if (w.message) send(*w.message, at);
      if (msr == LocalApic::MSR_IA32_APIC_BASE) vcpu_->request_stop();  // the page moves or goes
      stop_if_apic_needs_attention(timer_before);
      return true;
    }
    charge_exit(ExitKind::Msr);
    switch (msr) {
      case kMsrTsc:
        tsc_offset_ = static_cast<int64_t>(value - machine_.config_.cost.tsc_for_ns(now()));
        return true;
      case kMsrMiscEnable: return true;
      case x86::kMsrTscAux:
        if (value >> 32) return false;  // IA32_TSC_AUX[63:32] are reserved
        tsc_aux_ = value;
        return true;
      default: return false;
    }
  }

  uint64_t read_tsc() override { return machine_.config_.cost.tsc_for_ns(now()) + static_cast<uint64_t>(tsc_offset_); }
  bool msr_announced(uint32_t msr) override { return machine_.msrs_.announced(msr); }
  void open_bus_access(uint64_t, unsigned, bool write) override {
    VcpuStats& s = machine_.stats_.vcpu(index_);
    ++(write ? s.open_bus_writes : s.open_bus_reads);
  }

  // MmioHandler: the xAPIC page.
  uint64_t read(uint64_t offset, unsigned size) override {
    return apic_.mmio_read(static_cast<uint32_t>(offset), size, now());
  }
  void write(uint64_t offset, unsigned size, uint64_t value) override {
    const auto timer_before = apic_.next_timer_event();
    const uint64_t at = now();
    const auto reg = static_cast<uint32_t>(offset) & ~0xFu;
    charge_apic_write_exit(reg == kApicIcrLowOffset, reg == kApicEoiOffset || reg == kApicTprOffset);
    if (auto message = apic_.mmio_write(static_cast<uint32_t>(offset), size, static_cast<uint32_t>(value), at))
      send(*message, at);
    stop_if_apic_needs_attention(timer_before);
  }

 private:
  void create_engine() {
    vcpu_ = std::make_unique<Vcpu>(index_, machine_.ram_, *this, engine_cpu_for(machine_.cpuid_.cpu()));
    sync_apic_page();
  }

  // An APIC write that left an interrupt pending (an EOI or TPR write can
  // unmask one) or moved the timer must not wait for the slice to end: the
  // machine delivers or re-plans at once. Plain EOIs cost nothing.
  void stop_if_apic_needs_attention(const std::optional<uint64_t>& timer_before) {
    if (apic_.pending_vector() || apic_.next_timer_event() != timer_before) vcpu_->request_stop();
  }

  // An ICR write: routed once this slice ends, at the time the host (or,
  // with IPI virtualisation, the CPU) sends it.
  void send(const ApicMessage& message, uint64_t written_ns) {
    const CostModel& cost = machine_.config_.cost;
    const uint64_t sent = written_ns + (cost.ipiv ? 0 : cost.icr_send_ns);
    machine_.pending_messages_.push_back({index_, message, sent, sent});
    vcpu_->request_stop();
  }

  // With APICv, EOI, TPR and self-IPI writes stay in the guest; an ICR
  // write exits unless IPIs are virtualised; any other write exits.
  void charge_apic_write_exit(bool icr, bool virtualised) {
    if (icr) {
      if (!machine_.config_.cost.ipiv) charge_exit(ExitKind::Icr);
    } else if (!virtualised) {
      charge_exit(ExitKind::Apic);
    }
  }

  void leave_mwait() {
    in_mwait_ = false;
    monitor_armed_ = false;
  }

  Machine& machine_;
  unsigned index_;
  LocalApic apic_;
  std::unique_ptr<Vcpu> vcpu_;
  State state_;
  uint64_t idle_ns_ = 0;  // halted, waiting to resume, or waiting for SIPI
  uint64_t exit_ns_ = 0;  // in modelled VM exits
  uint64_t slice_end_ns_ = 0;  // where the running slice is planned to end
  uint64_t halted_since_ = 0;
  uint64_t accrued_until_ = 0;  // the halt is booked in the stats up to here
  uint64_t poll_busy_ns_ = 0;   // the host is busy this long from halted_since_
  // MONITOR/MWAIT.
  bool in_mwait_ = false;  // while Halted: parked by MWAIT, not HLT
  bool mwait_breaks_on_interrupt_ = false;
  bool monitor_armed_ = false;
  bool ever_monitored_ = false;
  uint64_t monitor_line_ = 0;
  std::array<uint8_t, kMonitorLine> monitor_snapshot_{};
  bool nmi_pending_ = false;
  uint64_t waiting_since_ = 0;  // WaitForSipi since
  int64_t tsc_offset_ = 0;
  uint64_t tsc_aux_ = 0;
  std::optional<uint64_t> mapped_apic_page_;
  std::multimap<uint64_t, PendingMessage> inbox_;
};

Machine::Machine(const MachineConfig& config, std::function<void(uint8_t)> serial_out)
    : config_(config),
      cpuid_(Topology::parse(config.smp), parse_cpu(config.cpu)),
      // CPUID's feature bits are the same on every vCPU: vCPU 0 answers.
      msrs_([this](uint32_t leaf, uint32_t subleaf) { return cpuid_.query(0, leaf, subleaf); }),
      ram_(checked_ram_bytes(config.ram_mib)),
      uart_(std::move(serial_out)),
      debug_exit_([this] {
        if (running_ && running_->vcpu()) running_->vcpu()->request_stop();
      }),
      fw_cfg_(FwCfg::Config{
          .nb_cpus = static_cast<uint16_t>(cpuid_.topology().cpus()),
          .apic_id_limit = static_cast<uint16_t>(
              std::min<uint32_t>(cpuid_.topology().apic_id(cpuid_.topology().max_cpus() - 1) + 1, 0xffff)),
          .ram_size = ram_.size()}),
      pic_master_(PicStub::Role::kMaster),
      pic_slave_(PicStub::Role::kSlave),
      measure_port_([this](MeasurePort::Mark mark) { on_measure_mark(mark); }),
      stats_(cpuid_.topology().cpus()),
      activity_(cpuid_.topology().cpus()) {
  if (!std::isfinite(config.time_limit_seconds) || config.time_limit_seconds <= 0 ||
      config.time_limit_seconds > MachineConfig::kMaxTimeLimitSeconds)
    throw ConfigError(fmt::format("--time-limit must be between 0 and {} seconds of virtual time",
                                  MachineConfig::kMaxTimeLimitSeconds));
  if (config.quantum == 0) throw ConfigError("--quantum must be at least 1 instruction");
  ports_.attach(Uart16550::kCom1Base, Uart16550::kPortCount, uart_);
  ports_.attach(DebugExit::kBase, DebugExit::kPortCount, debug_exit_);
  ports_.attach(FwCfg::kBase, FwCfg::kPortCount, fw_cfg_);
  ports_.attach(PicStub::kMasterBase, PicStub::kPortCount, pic_master_);
  ports_.attach(PicStub::kSlaveBase, PicStub::kPortCount, pic_slave_);
  ports_.attach(MeasurePort::kBase, MeasurePort::kPortCount, measure_port_);

  build_acpi_tables(ram_, cpuid_.topology());
  std::vector<uint8_t> image = read_image_file(config.image, ram_.size());
  std::vector<MultibootModule> modules = read_modules(config.initrd, ram_.size());
  // The guest sees the file name without its directories (QEMU passes the
  // path as typed), so where the image sits cannot change what it does.
  MultibootBoot boot = load_multiboot(
      ram_, image,
      config.image_name.empty() ? std::filesystem::path(config.image).filename().string() : config.image_name,
      config.append, modules);

  cpus_.reserve(cpuid_.topology().cpus());
  for (unsigned i = 0; i < cpuid_.topology().cpus(); ++i) cpus_.push_back(std::make_unique<Cpu>(*this, i));
  cpus_[0]->vcpu()->enter_multiboot(boot.entry, MultibootBoot::kBootloaderMagic, boot.info_address);
}

Machine::~Machine() = default;

void Machine::set_trace(std::FILE* out) {
  for (auto& cpu : cpus_)
    if (cpu->vcpu()) cpu->vcpu()->set_trace(out);
}

RunResult Machine::finish(RunResult::Outcome outcome, std::string diagnosis) {
  RunResult result;
  result.outcome = outcome;
  result.diagnosis = std::move(diagnosis);
  if (outcome == RunResult::Outcome::GuestExit) result.guest_value = debug_exit_.value();
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

void Machine::settle_stats() {
  for (const auto& cpu : cpus_) {
    VcpuStats& s = stats_.vcpu(cpu->index());
    s.instructions = cpu->instructions();
    s.run_ns = cpu->run_ns();
    s.pauses = cpu->pauses();
  }
}

// A mark takes the settled time, not the writing vCPU's clock: halts in
// progress are booked up to it and no later wakeup can come before it, so
// nothing is booked twice and a window never ends before it began, even
// when another vCPU (behind in time) writes its end. The price: a window's
// bounds are as exact as the vCPUs are close in time, about a quantum.
void Machine::on_measure_mark(MeasurePort::Mark mark) {
  const uint64_t at = std::max(settled_time(), window_ ? window_->begin_ns : 0);
  for (const auto& cpu : cpus_) cpu->accrue_idle(at);
  settle_stats();
  if (mark == MeasurePort::Mark::Begin) {
    window_begin_ = stats_;
    window_ = MeasureWindow{.begin_ns = at, .end_ns = at, .ended_by_guest = false, .stats = Stats(0)};
    return;
  }
  if (!window_begin_ || !window_ || window_->ended_by_guest) return;  // an end without a begin
  window_->end_ns = at;
  window_->ended_by_guest = true;
  window_->stats = stats_.minus(*window_begin_);
}

// Halted vCPUs whose APIC timer fires before `horizon_ns` wake at that time,
// so a timer interrupt is never later than the vCPUs still running.
void Machine::wake_due_timers(uint64_t horizon_ns) {
  for (auto& cpu : cpus_) {
    if (cpu->state() != Cpu::State::Halted) continue;
    std::optional<uint64_t> when = cpu->apic().next_timer_event();
    if (!when || *when > horizon_ns) continue;
    if (!cpu->timer_can_wake()) {
      // Expiries that can never wake it are settled in one step, not one
      // period at a time (a masked 1 ns periodic timer would spin the host).
      cpu->apic().on_time(horizon_ns);
      continue;
    }
    cpu->catch_up(*when);
    cpu->apic().on_time(*when);
    if (cpu->can_wake()) cpu->wake(*when, WakeCause::Timer);
  }
}

Machine::Cpu* Machine::pick_next(uint64_t limit_ns) {
  std::optional<uint64_t> jumped_to;
  while (true) {
    uint64_t horizon = std::numeric_limits<uint64_t>::max();
    for (const auto& cpu : cpus_)
      if (cpu->state() == Cpu::State::Running) horizon = std::min(horizon, cpu->now());
    if (horizon != std::numeric_limits<uint64_t>::max()) {
      wake_due_timers(horizon);
      Cpu* best = nullptr;
      for (auto& cpu : cpus_)
        if (cpu->state() == Cpu::State::Running && (!best || cpu->now() < best->now())) best = cpu.get();
      return best;
    }
    // Nobody runs: jump to the earliest APIC timer that can wake a halted vCPU.
    std::optional<uint64_t> earliest;
    unsigned owner = 0;
    for (const auto& cpu : cpus_)
      if (cpu->state() == Cpu::State::Halted && cpu->timer_can_wake())
        if (auto when = cpu->apic().next_timer_event(); when && (!earliest || *when < *earliest)) {
          earliest = when;
          owner = cpu->index();
        }
    if (!earliest || *earliest >= limit_ns) return nullptr;
    // The invariant that makes a host hang impossible whatever a device
    // reports: each jump wakes a vCPU or moves the earliest timer later.
    // A timer that stays due without firing (F1 of issue 14: a deadline
    // wrapped to an early time) is a diagnosed hang, not a spin.
    if (jumped_to && *earliest <= *jumped_to) {
      stall_ = fmt::format("guest hung: no vCPU can run and virtual time cannot advance: cpu {}'s APIC timer stays "
                           "due at {} ns without firing",
                           owner, *earliest);
      return nullptr;
    }
    jumped_to = earliest;
    wake_due_timers(*earliest);
  }
}

std::optional<std::string> Machine::deliver_pending(Cpu& cpu) {
  Vcpu& vcpu = *cpu.vcpu();
  // An NMI waits while the previous one's handler has not yet IRETed.
  if (cpu.nmi_pending() && !vcpu.nmi_blocked()) {
    cpu.set_nmi_pending(false);
    if (Injection injection = vcpu.inject_nmi(); !injection)
      return fmt::format("an NMI has no usable handler: {}", injection.detail);
    return std::nullopt;
  }
  if (cpu.apic().pending_vector() && vcpu.interrupt_window_open()) {
    uint8_t vector = cpu.apic().acknowledge();
    if (Injection injection = vcpu.inject_interrupt(vector); !injection)
      return fmt::format("interrupt {:#x} has no usable handler: {}", vector, injection.detail);
  }
  return std::nullopt;
}

uint64_t Machine::total_instructions() const {
  uint64_t total = 0;
  for (const auto& cpu : cpus_) total += cpu->instructions();
  return total;
}

void Machine::route(unsigned sender, const ApicMessage& message, uint64_t sent_ns) {
  if (message.delivery_mode == ApicDeliveryMode::Reserved) {
    // SDM 10.6.1: delivery mode 011b is reserved; what hardware does with it
    // is undefined, so the run stops here rather than guess.
    if (!guest_error_)
      guest_error_ = fmt::format("cpu {} wrote an ICR with the reserved delivery mode 011b", sender);
    return;
  }
  IpiMode mode = ipi_mode(message.delivery_mode);
  auto shorthand = static_cast<IpiShorthand>(message.shorthand);
  stats_.record_send(sender, mode, shorthand, message.vector);
  if (message.is_init_level_deassert()) return;  // a no-op since the Pentium 4 (SDM 10.6.1)

  std::vector<Cpu*> targets;
  for (auto& cpu : cpus_)
    if (cpu->apic().matches(message)) targets.push_back(cpu.get());
  if (message.delivery_mode == ApicDeliveryMode::LowestPriority && targets.size() > 1) {
    // Deterministic arbitration: lowest arbitration priority, then lowest APIC ID.
    Cpu* chosen = *std::min_element(targets.begin(), targets.end(), [](Cpu* a, Cpu* b) {
      return std::pair(a->apic().arbitration_priority(), a->apic().id()) <
             std::pair(b->apic().arbitration_priority(), b->apic().id());
    });
    targets = {chosen};
  }
  if (targets.empty()) {
    stats_.record_undeliverable(sender);
    return;
  }
  for (Cpu* target : targets) {
    // A running target sees the IPI ipi_running_ns after the send (a self
    // IPI at once): one whose clock is behind that waits for it in its inbox.
    // If it halts first, the IPI finds it halted, at its send time (below).
    if (target->state() == Cpu::State::Running) {
      const uint64_t arrival = sent_ns + (target->index() == sender ? 0 : config_.cost.ipi_running_ns);
      if (target->now() < arrival) {
        target->defer({sender, message, sent_ns, arrival});
        continue;
      }
    }
    deliver(sender, *target, message, sent_ns);
  }
}

void Machine::deliver(unsigned sender, Cpu& target, const ApicMessage& message, uint64_t sent_ns) {
  bool was_halted = target.state() == Cpu::State::Halted;
  // The wakeup of a halted vCPU starts at the send: KVM kicks a blocked
  // vCPU from the sender's exit (halt_wake_ns covers the rest). A vCPU in
  // MWAIT is in guest mode (passed through, or spinning on trapped MWAITs)
  // and gets a posted interrupt, as a running one does.
  const uint64_t wake_event =
      sent_ns + (target.parked_in_mwait() && target.index() != sender ? config_.cost.ipi_running_ns : 0);
  ApicAcceptResult accepted = target.apic().accept(message);
  switch (accepted.kind) {
    case ApicAccept::Interrupt:
      if (target.can_wake()) target.wake(wake_event, WakeCause::Interrupt);
      break;
    case ApicAccept::Nmi:
      target.set_nmi_pending(true);
      if (target.can_wake()) target.wake(wake_event, WakeCause::Nmi);
      break;
    case ApicAccept::Init:
      target.catch_up(sent_ns);
      target.enter_wait_for_sipi();
      break;
    case ApicAccept::StartUp:
      // A STARTUP to a vCPU that is not waiting for one is ignored (SDM 8.4.4.1).
      if (target.state() == Cpu::State::WaitForSipi) target.start_at_sipi(accepted.vector, sent_ns);
      break;
    case ApicAccept::Dropped:
    case ApicAccept::Refused:
      break;
  }
  stats_.record_ipi(sender, target.index(), ipi_mode(message.delivery_mode), message.vector, was_halted);
}

std::optional<RunResult> Machine::handle_exit(Cpu& cpu, const VcpuExit& exit) {
  Vcpu& vcpu = *cpu.vcpu();
  auto crash = [&](const std::string& why) {
    VcpuState s = vcpu.state();
    return finish(RunResult::Outcome::Crashed, fmt::format("guest crashed: {} (cpu {} RIP {:#x} RSP {:#x} CR0 {:#x})",
                                                           why, cpu.index(), exit.rip, s.rsp, s.cr0));
  };
  switch (exit.reason) {
    case VcpuExit::Reason::QuantumEnd:
    case VcpuExit::Reason::StopRequested:
      return std::nullopt;
    case VcpuExit::Reason::Halt:
      cpu.charge_exit(ExitKind::Hlt);
      cpu.halt();
      // A halted vCPU's clock jumps to whatever wakes it: IPIs already sent
      // to it arrive now, each at its own time.
      for (const PendingMessage& m : cpu.take_arrivals(std::numeric_limits<uint64_t>::max()))
        deliver(m.sender, cpu, m.message, m.sent_ns);
      if (cpu.can_wake())
        cpu.wake(cpu.now(), cpu.nmi_pending() && !vcpu.nmi_blocked() ? WakeCause::Nmi : WakeCause::Interrupt);
      return std::nullopt;
    // The vCPU delivers every exception through the guest's IDT itself;
    // these are what it cannot deliver.
    case VcpuExit::Reason::TripleFault:
      return finish(RunResult::Outcome::Crashed, fmt::format("guest crashed: {}", exit.detail));
    case VcpuExit::Reason::Unsupported:
      return finish(RunResult::Outcome::Crashed, fmt::format("guest needs what topolab does not model: {}", exit.detail));
    case VcpuExit::Reason::Monitor:
    case VcpuExit::Reason::Mwait:
      if (!cpuid_.cpu().has("monitor")) {
        // No MONITOR/MWAIT in this model (CPUID.01H:ECX[3]): #UD, as on hardware.
        VcpuExit ud = exit;
        ud.detail = fmt::format("invalid opcode: {} (the CPU model has no MONITOR/MWAIT; add +monitor to -cpu)",
                                exit.detail);
        Injection injection = vcpu.inject_exception(x86::kInvalidOpcode, std::nullopt);
        if (injection) return std::nullopt;
        return crash(fmt::format("{}; no usable handler: {}", ud.detail, injection.detail));
      }
      return exit.reason == VcpuExit::Reason::Monitor ? emulate_monitor(cpu, exit) : emulate_mwait(cpu, exit);
  }
  return crash(exit.detail);
}

// MONITOR (SDM Vol. 2): arms the 64-byte line holding DS:rAX. ECX holds
// extensions, of which none exist (#GP otherwise); EDX hints are ignored.
std::optional<RunResult> Machine::emulate_monitor(Cpu& cpu, const VcpuExit& exit) {
  Vcpu& vcpu = *cpu.vcpu();
  if (exit.operands.ecx != 0) {
    if (Injection injection = vcpu.inject_exception(x86::kGeneralProtection, 0); !injection)
      return finish(RunResult::Outcome::Crashed,
                    fmt::format("guest crashed: MONITOR with ECX {:#x} raised #GP; no usable handler: {} (cpu {} RIP {:#x})",
                                exit.operands.ecx, injection.detail, cpu.index(), exit.rip));
    return std::nullopt;
  }
  const uint64_t line = exit.address & ~(kMonitorLine - 1);
  if (!ram_.contains(line, kMonitorLine))
    return finish(RunResult::Outcome::Crashed,
                  fmt::format("guest error: cpu {} MONITOR at RIP {:#x} on {:#x}, which is not RAM ({}); topolab "
                              "watches stores to RAM only",
                              cpu.index(), exit.rip, exit.address,
                              exit.address >= LocalApic::kDefaultBase && exit.address < LocalApic::kDefaultBase + LocalApic::kMmioSize
                                  ? "the local APIC page"
                                  : "MMIO or unmapped"));
  if (!config_.cost.mwait_passthrough) cpu.charge_exit(ExitKind::Monitor);
  cpu.arm_monitor(line);
  ++stats_.vcpu(cpu.index()).monitor_arms;
  vcpu.retire_emulated_instruction();
  return std::nullopt;
}

// MWAIT (SDM Vol. 2): waits for a store to the armed line, an interrupt
// (with IF = 0 too when ECX[0] is set), NMI, INIT or SIPI. Without an armed
// line it does nothing, as the SDM says; never having armed one at all is
// reported as the guest bug it is.
std::optional<RunResult> Machine::emulate_mwait(Cpu& cpu, const VcpuExit& exit) {
  Vcpu& vcpu = *cpu.vcpu();
  const uint32_t hint = exit.operands.eax, extensions = exit.operands.ecx;
  if (extensions & ~kMwaitBreakOnInterrupt) {
    if (Injection injection = vcpu.inject_exception(x86::kGeneralProtection, 0); !injection)
      return finish(RunResult::Outcome::Crashed,
                    fmt::format("guest crashed: MWAIT with ECX {:#x} raised #GP; no usable handler: {} (cpu {} RIP {:#x})",
                                extensions, injection.detail, cpu.index(), exit.rip));
    return std::nullopt;
  }
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
  vcpu.retire_emulated_instruction();
  if (!cpu.monitor_armed()) return std::nullopt;
  if (cpu.monitored_line_changed()) {  // the store came between MONITOR and MWAIT
    cpu.disarm_monitor();
    return std::nullopt;
  }
  cpu.park_in_mwait(extensions & kMwaitBreakOnInterrupt);
  for (const PendingMessage& m : cpu.take_arrivals(std::numeric_limits<uint64_t>::max()))
    deliver(m.sender, cpu, m.message, m.sent_ns);
  if (cpu.can_wake())
    cpu.wake(cpu.now(), cpu.nmi_pending() && !vcpu.nmi_blocked() ? WakeCause::Nmi : WakeCause::Interrupt);
  return std::nullopt;
}

void Machine::check_monitored_lines(Cpu& writer, uint64_t slice_end_ns) {
  for (auto& cpu : cpus_)
    if (cpu.get() != &writer && cpu->parked_in_mwait() && cpu->monitored_line_changed())
      cpu->wake(slice_end_ns, WakeCause::MwaitStore);
}

uint64_t Machine::settled_time() const {
  uint64_t t = std::numeric_limits<uint64_t>::max();
  for (const auto& cpu : cpus_)
    if (cpu->state() == Cpu::State::Running) t = std::min(t, cpu->now());
  for (const PendingMessage& p : pending_messages_) t = std::min(t, p.sent_ns);
  return t == std::numeric_limits<uint64_t>::max() ? 0 : t;
}

std::string Machine::deadlock_diagnosis() const {
  auto describe = [](const Cpu& cpu) {
    if (cpu.state() == Cpu::State::WaitForSipi) return fmt::format("cpu {} waits for SIPI", cpu.index());
    VcpuState s = const_cast<Cpu&>(cpu).vcpu()->state();
    const LocalApic& apic = cpu.apic();
    std::optional<uint8_t> pending = apic.pending_vector();
    return fmt::format("cpu {} {} with interrupts {} at RIP {:#x} (APIC {}, TPR {:#x}, PPR {:#x}, {})", cpu.index(),
                       cpu.idle_state(), s.rflags & x86::kFlagIf ? "enabled" : "disabled", s.rip,
                       apic.software_enabled() ? "enabled" : "software-disabled", apic.task_priority(),
                       apic.processor_priority(),
                       pending ? fmt::format("vector {:#x} pending", *pending) : std::string("nothing pending"));
  };
  if (cpus_.size() == 1) {
    if (cpus_[0]->state() == Cpu::State::WaitForSipi)
      return "cpu 0 took an INIT and waits for a SIPI that no other vCPU can send";
    VcpuState s = cpus_[0]->vcpu()->state();
    return fmt::format("the guest {} with interrupts {} at cpu 0 RIP {:#x} RSP {:#x} CR0 {:#x} and nothing can wake it",
                       cpus_[0]->parked_in_mwait() ? "waits " + cpus_[0]->idle_state() : std::string("halted"),
                       s.rflags & x86::kFlagIf ? "enabled" : "disabled", s.rip, s.rsp, s.cr0);
  }
  std::string text = "guest deadlock: no vCPU can run and nothing can wake one:";
  constexpr size_t kShown = 8;
  size_t shown = 0, started = 0;
  for (const auto& cpu : cpus_) {
    if (cpu->state() != Cpu::State::WaitForSipi) ++started;
    if (shown < kShown && (cpu->state() != Cpu::State::WaitForSipi || cpu->index() == 0 || shown < 2)) {
      text += fmt::format(" {};", describe(*cpu));
      ++shown;
    }
  }
  text += fmt::format(" ({} of {} vCPUs started)", started, cpus_.size());
  return text;
}

RunResult Machine::run() {
  const uint64_t limit_ns = static_cast<uint64_t>(config_.time_limit_seconds * 1e9);
  constexpr uint64_t kMaxIdleSlices = 1'000'000;
  uint64_t idle_slices = 0;
  while (true) {
    for (const PendingMessage& p : pending_messages_) route(p.sender, p.message, p.sent_ns);
    pending_messages_.clear();
    if (debug_exit_.value()) return finish(RunResult::Outcome::GuestExit, "");

    Cpu* cpu = pick_next(limit_ns);
    if (!cpu && stall_) return finish(RunResult::Outcome::Hung, *stall_);
    if (!cpu) {
      bool any_timer = false;
      for (const auto& c : cpus_)
        if (c->state() == Cpu::State::Halted && c->timer_can_wake() && c->apic().next_timer_event()) any_timer = true;
      if (any_timer)
        return finish(RunResult::Outcome::BudgetExhausted,
                      fmt::format("the guest did not finish within {} s of virtual time (halted, waiting for timers; "
                                  "raise --time-limit)",
                                  config_.time_limit_seconds));
      return finish(RunResult::Outcome::Hung, deadlock_diagnosis());
    }
    uint64_t now = cpu->now();
    if (now >= limit_ns)
      return finish(RunResult::Outcome::BudgetExhausted,
                    fmt::format("the guest did not finish within {} s of virtual time ({} instructions); still "
                                "running at cpu {} RIP {:#x} (raise --time-limit)",
                                config_.time_limit_seconds, total_instructions(),
                                cpu->index(), cpu->vcpu()->state().rip));

    for (const PendingMessage& m : cpu->take_arrivals(now)) deliver(m.sender, *cpu, m.message, m.sent_ns);
    cpu->apic().on_time(now);
    if (auto failure = deliver_pending(*cpu))
      return finish(RunResult::Outcome::Crashed,
                    fmt::format("guest crashed: {} (cpu {} RIP {:#x})", *failure, cpu->index(), cpu->vcpu()->state().rip));

    // Run to the next event that concerns this vCPU, at most one quantum:
    // its APIC timer, the time limit, or the moment the next vCPU's clock
    // would be passed by much (the quantum bounds that).
    uint64_t until = limit_ns;
    if (auto timer = cpu->apic().next_timer_event()) until = std::min(until, *timer);
    if (auto arrival = cpu->next_arrival()) until = std::min(until, *arrival);
    uint64_t budget = std::max<uint64_t>(1, config_.cost.instructions_for_ns(until > now ? until - now : 0));
    // An interrupt waiting out an STI shadow goes in after one instruction.
    if (cpu->apic().pending_vector() && !cpu->vcpu()->interrupt_window_open() &&
        (cpu->vcpu()->state().rflags & x86::kFlagIf))
      budget = 1;
    budget = std::min(budget, config_.quantum);

    // An interrupt or NMI it cannot take yet goes in as soon as it can.
    cpu->vcpu()->stop_when_interruptible(
        (cpu->apic().pending_vector() && !cpu->vcpu()->interrupt_window_open()) ||
        (cpu->nmi_pending() && cpu->vcpu()->nmi_blocked()));
    const uint64_t instructions_before = cpu->instructions(), pauses_before = cpu->pauses();
    running_ = cpu;
    cpu->begin_slice(now + config_.cost.ns_for_instructions(budget));
    VcpuExit exit = cpu->vcpu()->run(budget);
    running_ = nullptr;
    activity_.record(cpu->index(), now, cpu->now(),
                     cpu->pauses() != pauses_before ? VcpuActivity::Spinning : VcpuActivity::Running);
    // Stores of this slice wake MWAITs at the slice's end, before whatever
    // its exit (a HLT, an INIT it sent itself) does to its clock.
    check_monitored_lines(*cpu, cpu->now());
    for (const PendingMessage& p : pending_messages_) route(p.sender, p.message, p.sent_ns);
    pending_messages_.clear();
    cpu->sync_apic_page();
    if (guest_error_) return finish(RunResult::Outcome::Crashed, *guest_error_);
    // An INIT it sent itself took effect at the ICR write: what its slice
    // did after that (a HLT, a fault) belongs to a CPU that no longer exists.
    if (cpu->state() == Cpu::State::WaitForSipi) continue;
    if (debug_exit_.value()) return finish(RunResult::Outcome::GuestExit, "");
    if (auto result = handle_exit(*cpu, exit)) return *result;
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

std::string Machine::describe_apics() const {
  std::string out;
  for (const auto& cpu : cpus_) out += fmt::format("cpu {}: {}\n", cpu->index(), cpu->apic().describe(cpu->now()));
  return out;
}

}  // namespace topolab
