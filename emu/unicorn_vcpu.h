// SPDX-License-Identifier: GPL-2.0-or-later
// The vCPU on one Unicorn engine: this header, vcpu_engine.h and the
// vcpu*.cc files are the only code that knows Unicorn exists (the
// benchmarks in bench/ link it too, to measure against it). See
// docs/unicorn.md for the engine's behaviour each workaround relies on, and
// emu/vcpu.h for what each call means.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "base/guest_ram.h"
#include "emu/vcpu.h"

namespace topolab {

class UnicornVcpu final : public Vcpu {
 public:
  UnicornVcpu(unsigned index, GuestRam& ram, VcpuHost& host, EngineCpuModel engine_cpu = EngineCpuModel::Qemu64);
  ~UnicornVcpu() override;
  UnicornVcpu(const UnicornVcpu&) = delete;
  UnicornVcpu& operator=(const UnicornVcpu&) = delete;

  void enter_multiboot(uint32_t entry, uint32_t eax, uint32_t ebx) override;
  void enter_linux32(uint32_t entry, uint32_t boot_params, uint32_t gdt, uint16_t gdt_limit) override;
  void reset_for_init() override;
  void start_at_sipi(uint8_t vector) override;
  void start_in_real_mode(uint16_t selector, uint16_t ip) override;
  bool waiting_for_sipi() const override;
  Injection inject_interrupt(uint8_t vector) override;
  Injection inject_nmi() override;
  bool nmi_blocked() const override;
  bool in_interrupt_shadow() const override;
  void stop_when_interruptible(bool on) override;
  Injection inject_exception(uint8_t vector, std::optional<uint32_t> error_code) override;
  bool interrupt_window_open() const override;
  void map_mmio(uint64_t base, uint64_t size, MmioHandler& handler) override;
  void unmap_mmio(uint64_t base, uint64_t size) override;
  VcpuExit run(uint64_t budget) override;
  void request_stop() override;
  void set_cr8(uint64_t value) override;
  void retire_emulated_instruction() override;
  uint64_t pauses() const override;
  void set_pause_loop_exiting(std::optional<PauseLoopExiting> ple) override;
  uint64_t instructions() const override;
  void set_trace(std::FILE* out) override;
  void flush_translations() override;
  VcpuState state() const override;
  void set_debug_points(const DebugPoints& points) override;
  void set_debug_step(bool on) override;
  void set_debug_stop_at(std::optional<uint64_t> count) override;
  bool read_register(x86::RegisterId id, std::span<uint8_t> out) override;
  bool write_register(x86::RegisterId id, std::span<const uint8_t> in) override;
  std::optional<uint64_t> translate_linear(uint64_t linear) override;
  uint64_t linear_rip() override;
  uint64_t cr4() const override;
  unsigned index() const override;
  std::string save_state() const override;         // vcpu_state.cc
  void load_state(std::string_view bytes) override;
  // How many times run() has entered the engine (uc_emu_start) since this
  // vCPU was made: each entry and the stop before it cost what a KVM exit
  // does (docs/benchmarks.md), so the tests of exits answered inside the
  // engine count them.
  uint64_t engine_entries() const;

 private:
  struct Engine;
  std::unique_ptr<Engine> engine_;
};

// The factory the machine builds its vCPUs with.
VcpuFactory unicorn_vcpu_factory();

// The version of the CPU engine the vCPUs run on ("2.1.3"), as the linked
// library reports it.
std::string engine_version();

// The offsets of the engine's error code and exception in flight in its
// saved context, as the start-up probe found them (vcpu_engine.h), for the
// test that proves the probe; nullopt if it failed.
std::optional<std::pair<size_t, size_t>> vcpu_probe_offsets_for_tests();

}  // namespace topolab
