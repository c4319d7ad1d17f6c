// SPDX-License-Identifier: GPL-2.0-or-later
// What the machine tests share: a scripted fake vCPU, the actions its
// scripts are made of, and a Rig that builds a machine of them (nothing
// boots, no Unicorn links).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "arch/x86_arch.h"
#include "emu/machine.h"
#include "firmware/multiboot_test_image.h"

namespace topolab::machine_test {

using namespace apic;

class FakeVcpu;
// One slice of a fake vCPU: what the guest does in it, and why it stopped.
using Action = std::function<VcpuExit(FakeVcpu&, uint64_t budget)>;

inline VcpuExit exit_for(VcpuExit::Reason reason) {
  VcpuExit exit;
  exit.reason = reason;
  return exit;
}

// A vCPU that runs a script: each run() takes the next action; after the
// last it halts. Actions call the machine as a guest would, through its
// VcpuHost calls and the APIC page the machine maps.
class FakeVcpu final : public Vcpu {
 public:
  FakeVcpu(unsigned index, VcpuHost& host, std::vector<Action> script)
      : index_(index), host_(host), script_(std::move(script)) {}

  // --- For actions ---
  VcpuHost& host() { return host_; }
  GuestRam* ram = nullptr;  // the machine's RAM: a store the machine sees at the slice's end
  void retire(uint64_t n) { instructions_ += n; }
  void write_apic(uint32_t offset, uint32_t value) {
    ASSERT_NE(apic_page_, nullptr) << "cpu " << index_ << " has no APIC page";
    apic_page_->write(offset, 4, value);
  }
  // An ICR write, xAPIC: the destination, then the command.
  void send_ipi(uint32_t destination, uint32_t icr_low) {
    write_apic(REG_ICR_HIGH, destination << 24);
    write_apic(REG_ICR_LOW, icr_low);
  }
  bool interrupts_enabled = true;  // RFLAGS.IF, no shadow
  // What the machine injected, and the guest's TSC when it did.
  std::vector<uint8_t> injected;
  std::vector<uint64_t> injected_at;
  std::optional<uint8_t> sipi_vector;
  std::optional<std::pair<uint16_t, uint16_t>> real_mode_start;  // CS, IP
  std::optional<PauseLoopExiting> pause_loop_exiting;  // what the machine asked for
  // How often the machine asked for its clock or its interrupt window: a
  // walk over every vCPU asks each of them.
  mutable uint64_t queries = 0;

  // --- Vcpu ---
  void enter_multiboot(uint32_t, uint32_t, uint32_t) override {}
  void enter_linux32(uint32_t, uint32_t, uint32_t, uint16_t) override {}
  void reset_for_init() override { waiting_for_sipi_ = true; }
  void start_at_sipi(uint8_t vector) override {
    waiting_for_sipi_ = false;
    sipi_vector = vector;
  }
  void start_in_real_mode(uint16_t selector, uint16_t ip) override {
    waiting_for_sipi_ = false;
    real_mode_start = std::pair<uint16_t, uint16_t>(selector, ip);
  }
  bool waiting_for_sipi() const override { return waiting_for_sipi_; }
  Injection inject_interrupt(uint8_t vector) override { return record_injection(vector); }
  Injection inject_nmi() override { return record_injection(x86::kNmi); }
  bool nmi_blocked() const override { return false; }
  bool in_interrupt_shadow() const override { return false; }
  void stop_when_interruptible(bool) override {}
  Injection inject_exception(uint8_t vector, std::optional<uint32_t>) override { return record_injection(vector); }
  bool interrupt_window_open() const override {
    ++queries;
    return interrupts_enabled;
  }
  // The I/O APIC's page is the one platform window tests reach; every other
  // window is the APIC page, wherever it moved.
  void map_mmio(uint64_t base, uint64_t, MmioHandler& handler) override {
    (base == IoApic::kBase ? ioapic_page_ : apic_page_) = &handler;
  }
  void unmap_mmio(uint64_t base, uint64_t) override { (base == IoApic::kBase ? ioapic_page_ : apic_page_) = nullptr; }
  void write_ioapic(uint32_t reg, uint32_t value) {
    ASSERT_NE(ioapic_page_, nullptr);
    ioapic_page_->write(ioapic::MMIO_IOREGSEL, 4, reg);
    ioapic_page_->write(ioapic::MMIO_IOWIN, 4, value);
  }
  uint32_t read_ioapic(uint32_t reg) {
    if (!ioapic_page_) return 0xdead;
    ioapic_page_->write(ioapic::MMIO_IOREGSEL, 4, reg);
    return static_cast<uint32_t>(ioapic_page_->read(ioapic::MMIO_IOWIN, 4));
  }
  VcpuExit run(uint64_t budget) override {
    if (next_ >= script_.size()) return exit_for(VcpuExit::Reason::Halt);
    return script_[next_++](*this, budget);
  }
  void request_stop() override {}
  void retire_emulated_instruction() override { ++instructions_; }
  uint64_t pauses() const override { return 0; }
  void set_pause_loop_exiting(std::optional<PauseLoopExiting> ple) override { pause_loop_exiting = ple; }
  uint64_t instructions() const override {
    ++queries;
    return instructions_;
  }
  void set_trace(std::FILE*) override {}
  void flush_translations() override {}
  VcpuState state() const override {
    VcpuState s{};
    s.rip = 0x100000 + instructions_;
    s.rflags = x86::kFlagReserved1 | (interrupts_enabled ? x86::kFlagIf : 0);
    return s;
  }
  unsigned index() const override { return index_; }

 private:
  Injection record_injection(uint8_t vector) {
    injected.push_back(vector);
    injected_at.push_back(host_.read_tsc());
    Injection done;
    done.delivered = true;
    return done;
  }

  unsigned index_;
  VcpuHost& host_;
  std::vector<Action> script_;
  size_t next_ = 0;
  uint64_t instructions_ = 0;
  bool waiting_for_sipi_ = false;
  MmioHandler* apic_page_ = nullptr;
  MmioHandler* ioapic_page_ = nullptr;
};

// ICR commands (SDM figure 10-12): level assert, delivery mode, shorthand.
constexpr uint32_t kIcrInitAllButSelf = 0xC4500;
constexpr uint32_t kIcrSipiAllButSelf = 0xC4600;
constexpr uint32_t kIcrFixed = 0x4000;

// Actions.
inline VcpuExit stop() { return exit_for(VcpuExit::Reason::StopRequested); }
inline Action run_for(uint64_t instructions) {
  return [=](FakeVcpu& v, uint64_t) {
    v.retire(instructions);
    return stop();
  };
}
// Runs exactly the budget the machine gave: a slice ends where the machine planned it.
inline Action run_budget() {
  return [](FakeVcpu& v, uint64_t budget) {
    v.retire(budget);
    return stop();
  };
}
inline Action enable_apic_and_halt(bool interrupts = true) {
  return [=](FakeVcpu& v, uint64_t) {
    v.write_apic(REG_SVR, SVR_APIC_ENABLED | 0xff);
    v.interrupts_enabled = interrupts;
    v.retire(1);
    return exit_for(VcpuExit::Reason::Halt);
  };
}
inline Action start_aps(uint8_t sipi_vector = 0x10) {
  return [=](FakeVcpu& v, uint64_t) {
    v.write_apic(REG_SVR, SVR_APIC_ENABLED | 0xff);
    v.send_ipi(0, kIcrInitAllButSelf);
    v.send_ipi(0, kIcrSipiAllButSelf | sipi_vector);
    return stop();
  };
}
inline Action send_fixed(uint32_t destination, uint8_t vector, uint64_t* sent_at = nullptr) {
  return [=](FakeVcpu& v, uint64_t) {
    if (sent_at) *sent_at = v.host().read_tsc();
    v.send_ipi(destination, kIcrFixed | vector);
    return stop();
  };
}
inline Action guest_exit(uint32_t value) {
  return [=](FakeVcpu& v, uint64_t) {
    v.host().port_out(DebugExit::kBase, 4, value);
    return stop();
  };
}
inline Action measure(MeasurePort::Mark mark) {
  return [=](FakeVcpu& v, uint64_t) {
    v.host().port_out(MeasurePort::kBase, 4, static_cast<uint32_t>(mark));
    return stop();
  };
}

// A machine of fake vCPUs, each with its script. Costs default to none at
// 1 GHz and CPI 1: one instruction is one nanosecond (and one TSC tick).
struct Rig {
  Rig(const std::string& smp, std::vector<std::vector<Action>> scripts, const std::string& cost = "",
      bool spin_skip = true, std::function<void(MachineConfig&)> configure = {}) {
    MachineConfig config;
    config.topology = Topology::parse(smp);
    config.cpu = parse_cpu("Skylake-Server");
    config.time_limit_seconds = 0.01;
    config.spin_skip = spin_skip;
    config.cost = CostModel::parse("none,cpi=1,freq_mhz=1000" + (cost.empty() ? "" : "," + cost), CostModel::defaults());
    if (configure) configure(config);
    fakes.resize(Topology::parse(smp).cpus(), nullptr);
    BootFiles image;  // a HLT at 1 MiB, never run by the fakes
    image.image = make_elf(0x100000, {0xf4});
    image.image_name = "rig.elf";
    machine = std::make_unique<Machine>(
        config, std::move(image), [this](uint8_t b) { serial.push_back(static_cast<char>(b)); },
        [this, scripts](unsigned index, GuestRam& ram, VcpuHost& host, EngineCpuModel) -> std::unique_ptr<Vcpu> {
          auto fake = std::make_unique<FakeVcpu>(index, host, index < scripts.size() ? scripts[index] : std::vector<Action>{});
          fake->ram = &ram;
          fakes[index] = fake.get();
          return fake;
        });
  }
  FakeVcpu& cpu(unsigned i) { return *fakes.at(i); }
  const VcpuStats& stats(unsigned i) const { return machine->stats().vcpu(i); }
  uint64_t wakes(unsigned i, WakeCause cause) const { return stats(i).wakes[static_cast<size_t>(cause)]; }

  std::string serial;
  std::vector<FakeVcpu*> fakes;
  std::unique_ptr<Machine> machine;
};

}  // namespace topolab::machine_test
