#include "emu/machine.h"

#include <cmath>
#include <filesystem>

#include <fmt/format.h>

namespace topolab {

namespace {

constexpr uint32_t kMsrTsc = 0x10;
constexpr uint32_t kMsrApicBase = 0x1b;
constexpr uint32_t kMsrMiscEnable = 0x1a0;
constexpr uint32_t kMsrTscAux = 0xc0000103;  // what RDTSCP returns in ECX
constexpr uint64_t kApicBaseDefault = 0xfee00000;
constexpr uint64_t kApicBaseBsp = 1u << 8;
constexpr uint64_t kApicBaseEnable = 1u << 11;
constexpr uint64_t kApicBaseX2apic = 1u << 10;
// IA32_MISC_ENABLE: fast strings, and MONITOR/MWAIT enabled when the model has it.
constexpr uint64_t kMiscFastStrings = 1u << 0;
constexpr uint64_t kMiscMonitorEnable = 1u << 18;
constexpr uint64_t kRflagsIf = 1u << 9;

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

Machine::Machine(const MachineConfig& config, std::function<void(uint8_t)> serial_out)
    : config_(config),
      cpuid_(Topology::parse(config.smp), parse_cpu(config.cpu)),
      ram_(checked_ram_bytes(config.ram_mib)),
      uart_(std::move(serial_out)),
      debug_exit_([this] { boot_cpu_->request_stop(); }),
      apic_base_(kApicBaseDefault | kApicBaseEnable | kApicBaseBsp) {
  if (config.quantum == 0) throw ConfigError("--quantum must be at least 1 instruction");
  if (!std::isfinite(config.time_limit_seconds) || config.time_limit_seconds <= 0 ||
      config.time_limit_seconds > MachineConfig::kMaxTimeLimitSeconds)
    throw ConfigError(fmt::format("--time-limit must be between 0 and {} seconds of virtual time",
                                  MachineConfig::kMaxTimeLimitSeconds));
  ports_.attach(Uart16550::kCom1Base, Uart16550::kPortCount, uart_);
  ports_.attach(DebugExit::kBase, DebugExit::kPortCount, debug_exit_);
  std::vector<uint8_t> image = read_image_file(config.image, ram_.size());
  std::vector<MultibootModule> modules = read_modules(config.initrd, ram_.size());
  // The guest sees the file name without its directories (QEMU passes the
  // path as typed), so where the image sits cannot change what it does.
  boot_ = load_multiboot(ram_, image, std::filesystem::path(config.image).filename().string(), config.append, modules);
  boot_cpu_ = std::make_unique<Vcpu>(0, ram_, static_cast<VcpuHost&>(*this), engine_cpu_for(cpuid_.cpu()));
  boot_cpu_->enter_multiboot(boot_.entry, MultibootBoot::kBootloaderMagic, boot_.info_address);
}

Machine::~Machine() = default;

RunResult Machine::run() {
  RunResult result;
  const uint64_t budget = VirtualClock::cycles_for_ns(static_cast<uint64_t>(config_.time_limit_seconds * 1e9)) /
                          VirtualClock::kCyclesPerInstruction;
  auto finish = [&](RunResult::Outcome outcome, std::string diagnosis) {
    result.outcome = outcome;
    result.diagnosis = std::move(diagnosis);
    result.instructions = boot_cpu_->instructions();
    result.virtual_ns = VirtualClock::ns_for_cycles(VirtualClock::cycles_for(result.instructions));
    return result;
  };

  while (true) {
    uint64_t done = boot_cpu_->instructions();
    if (done >= budget)
      return finish(RunResult::Outcome::BudgetExhausted,
                    fmt::format("the guest did not finish within {} s of virtual time ({} instructions); still running at "
                                "RIP {:#x} (raise --time-limit)",
                                config_.time_limit_seconds, done, boot_cpu_->state().rip));
    VcpuExit exit = boot_cpu_->run(std::min(config_.quantum, budget - done));
    if (debug_exit_.value()) {
      result.guest_value = debug_exit_.value();
      return finish(RunResult::Outcome::GuestExit, "");
    }
    switch (exit.reason) {
      case VcpuExit::Reason::QuantumEnd:
      case VcpuExit::Reason::StopRequested:
        continue;
      case VcpuExit::Reason::Halt: {
        // One CPU and no interrupt source yet: nothing can ever wake it.
        bool interrupts_on = boot_cpu_->state().rflags & kRflagsIf;
        return finish(RunResult::Outcome::Hung,
                      fmt::format("the guest halted {} at {} and nothing can wake it",
                                  interrupts_on ? "with interrupts enabled" : "with interrupts disabled", where(exit)));
      }
      case VcpuExit::Reason::GeneralProtection:
      case VcpuExit::Reason::InvalidOpcode:
      case VcpuExit::Reason::Exception:
      case VcpuExit::Reason::UnmappedMemory:
        return finish(RunResult::Outcome::Crashed, fmt::format("guest crashed: {} ({})", exit.detail, where(exit)));
    }
  }
}

std::string Machine::where(const VcpuExit& exit) const {
  VcpuState s = boot_cpu_->state();
  return fmt::format("cpu 0 RIP {:#x} RSP {:#x} CR0 {:#x}", exit.rip, s.rsp, s.cr0);
}

CpuidRegs Machine::cpuid(uint32_t leaf, uint32_t subleaf) { return cpuid_.query(0, leaf, subleaf); }

uint32_t Machine::port_in(uint16_t port, unsigned size) { return ports_.read(port, size); }

void Machine::port_out(uint16_t port, unsigned size, uint32_t value) { ports_.write(port, size, value); }

std::optional<uint64_t> Machine::read_msr(uint32_t msr) {
  switch (msr) {
    case kMsrTsc: return read_tsc();
    case kMsrApicBase: return apic_base_;
    case kMsrMiscEnable: return kMiscFastStrings | (cpuid_.cpu().has("monitor") ? kMiscMonitorEnable : 0);
    case kMsrTscAux: return tsc_aux_;
    default: return std::nullopt;
  }
}

bool Machine::write_msr(uint32_t msr, uint64_t value) {
  switch (msr) {
    case kMsrTsc:
      tsc_offset_ = static_cast<int64_t>(value - VirtualClock::cycles_for(boot_cpu_->instructions()));
      return true;
    case kMsrApicBase: {
      // SDM 10.4.4: base in bits 12..MAXPHYADDR-1, EN, EXTD, BSP read-only.
      // x2APIC (EXTD) needs the CPUID bit; the APIC itself comes with SMP.
      uint64_t reserved = ~(0xfffffff000ull | kApicBaseEnable | kApicBaseX2apic | kApicBaseBsp);
      if (value & reserved) return false;
      if ((value & kApicBaseX2apic) && !cpuid_.cpu().has("x2apic")) return false;
      apic_base_ = (value & ~kApicBaseBsp) | (apic_base_ & kApicBaseBsp);
      return true;
    }
    case kMsrMiscEnable: return true;
    case kMsrTscAux:
      // Only the low 32 bits exist (SDM: IA32_TSC_AUX[63:32] reserved).
      if (value >> 32) return false;
      tsc_aux_ = value;
      return true;
    default: return false;
  }
}

uint64_t Machine::read_tsc() {
  return VirtualClock::cycles_for(boot_cpu_->instructions()) + static_cast<uint64_t>(tsc_offset_);
}

}  // namespace topolab
