// The machine: RAM, the CPUID model, the platform devices and the vCPUs, and
// the loop that runs them. This machine runs the boot CPU only; the
// other CPUs of -smp exist in the topology and CPUID (the guest sees them)
// and start with SMP support.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "devices/debug_exit.h"
#include "devices/port_bus.h"
#include "devices/uart16550.h"
#include "emu/cpuid.h"
#include "emu/guest_ram.h"
#include "emu/vcpu.h"
#include "emu/virtual_clock.h"
#include "firmware/multiboot.h"

namespace topolab {

struct MachineConfig {
  std::string smp = "1";
  std::string cpu = "qemu64";
  uint64_t ram_mib = 128;
  std::string image;
  std::string append;
  std::vector<std::string> initrd;  // "PATH[ ARGS]" each, as QEMU's -initrd
  // The run ends, as an error, once the boot CPU's virtual time reaches this.
  static constexpr double kMaxTimeLimitSeconds = 1e6;
  double time_limit_seconds = 5.0;
  uint64_t quantum = 100'000;  // instructions per scheduling slice
};

struct RunResult {
  enum class Outcome {
    GuestExit,        // the guest wrote to isa-debug-exit
    BudgetExhausted,  // the virtual-time limit ran out
    Hung,             // halted with nothing that could ever wake it
    Crashed,          // a fault the guest could not handle
  };
  Outcome outcome = Outcome::Crashed;
  std::optional<uint32_t> guest_value;  // GuestExit: what the guest wrote
  std::string diagnosis;                // one line, for everything but GuestExit
  uint64_t instructions = 0;
  uint64_t virtual_ns = 0;
};

const char* to_string(RunResult::Outcome outcome);

class Machine : private VcpuHost {
 public:
  // `serial_out` receives every byte the guest sends to COM1. Throws
  // ConfigError (bad -smp/-cpu/-m) or ImageError (an image that cannot boot).
  Machine(const MachineConfig& config, std::function<void(uint8_t)> serial_out);
  ~Machine() override;

  void set_trace(std::FILE* out) { boot_cpu_->set_trace(out); }
  RunResult run();

  const CpuidModel& cpuid() const { return cpuid_; }
  const MultibootBoot& boot() const { return boot_; }

 private:
  // VcpuHost: what the boot CPU asks of the platform.
  CpuidRegs cpuid(uint32_t leaf, uint32_t subleaf) override;
  uint32_t port_in(uint16_t port, unsigned size) override;
  void port_out(uint16_t port, unsigned size, uint32_t value) override;
  std::optional<uint64_t> read_msr(uint32_t msr) override;
  bool write_msr(uint32_t msr, uint64_t value) override;
  uint64_t read_tsc() override;

  std::string where(const VcpuExit& exit) const;

  MachineConfig config_;
  CpuidModel cpuid_;
  GuestRam ram_;
  PortBus ports_;
  Uart16550 uart_;
  DebugExit debug_exit_;
  std::unique_ptr<Vcpu> boot_cpu_;
  MultibootBoot boot_;
  uint64_t apic_base_;
  int64_t tsc_offset_ = 0;
  uint64_t tsc_aux_ = 0;
};

}  // namespace topolab
