// SPDX-License-Identifier: GPL-2.0-or-later
// A DebugTarget for the stub's tests and its fuzz harness: a few vCPUs
// with registers (rip = 0x1000 + vcpu), 64 KiB of memory per address
// space (less if asked), and a log of every call that changes something,
// so a test can say exactly what a packet asked of the machine.
#pragma once

#include <algorithm>
#include <array>
#include <deque>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "debug/debug_target.h"

namespace topolab::debug {

// Stop events built field by field (-Wmissing-field-initializers warns on
// aggregate initialisation that leaves `detail` out).
inline StopEvent stop_event(StopEvent::Kind kind, unsigned vcpu = 0) {
  StopEvent e;
  e.kind = kind;
  e.vcpu = vcpu;
  return e;
}
inline StopEvent watch_event(uint64_t address, BreakpointKind kind) {
  StopEvent e = stop_event(StopEvent::Kind::kWatch);
  e.watch_address = address;
  e.watch_kind = kind;
  return e;
}
inline StopEvent exit_event(int code, std::string detail = {}) {
  StopEvent e = stop_event(StopEvent::Kind::kExited);
  e.exit_code = code;
  e.detail = std::move(detail);
  return e;
}

class FakeDebugTarget : public DebugTarget {
 public:
  static constexpr uint64_t kMemorySize = 0x10000;

  explicit FakeDebugTarget(unsigned vcpus = 2, bool reverse = false, uint64_t memory_size = kMemorySize) {
    for (auto& space : memory_) space.resize(memory_size);
    reset(vcpus, reverse);
  }

  // Back to what the constructor leaves, with `vcpus` and `reverse`, the
  // memory zeroed in place: a fuzz harness reuses one target for every
  // input instead of allocating one.
  void reset(unsigned vcpus, bool reverse) {
    vcpus_ = vcpus;
    reverse_ = reverse;
    // One flat array of every vCPU's registers, 16 bytes a register.
    registers_.assign(size_t{vcpus} * kRegisters * kSlot, 0);
    for (unsigned v = 0; v < vcpus; ++v) set_register(v, x86::RegisterId::kRip, 0x1000 + v);
    for (auto& space : memory_) std::fill(space.begin(), space.end(), uint8_t{0});
    calls.clear();
    resumes.clear();
    stops.clear();
    monitor_output.clear();
    polls_per_resume = 0;
    poll_pause = nullptr;
    max_breakpoint_kind = 4;
    unavailable_.reset();
    read_only_.reset();
  }

  void set_register(unsigned vcpu, x86::RegisterId id, uint64_t value) {
    const std::span<uint8_t> bytes = register_value(vcpu, id);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i < 8 ? value >> (8 * i) : 0);
  }
  // The register's bytes; the vCPU must exist.
  std::span<uint8_t> register_value(unsigned vcpu, x86::RegisterId id) {
    if (vcpu >= vcpus_) throw std::out_of_range("no such vCPU");
    const size_t at = (size_t{vcpu} * kRegisters + static_cast<unsigned>(id)) * kSlot;
    return std::span(registers_).subspan(at, x86::register_bytes(id));
  }
  std::vector<uint8_t>& memory(AddressSpace space) { return memory_[static_cast<unsigned>(space)]; }

  unsigned vcpu_count() const override { return vcpus_; }
  std::string describe_vcpu(unsigned vcpu) const override { return fmt::format("CPU {} running", vcpu); }

  bool read_register(unsigned vcpu, x86::RegisterId id, std::span<uint8_t> out) override {
    if (unavailable_ == id) return false;
    const std::span<uint8_t> bytes = register_value(vcpu, id);
    if (out.size() != bytes.size()) return false;
    std::copy(bytes.begin(), bytes.end(), out.begin());
    return true;
  }
  bool write_register(unsigned vcpu, x86::RegisterId id, std::span<const uint8_t> in) override {
    calls.push_back(fmt::format("write_register {} {}", vcpu, x86::register_info(id).name));
    if (read_only_ == id) return false;
    const std::span<uint8_t> bytes = register_value(vcpu, id);
    if (in.size() != bytes.size()) return false;
    std::copy(in.begin(), in.end(), bytes.begin());
    return true;
  }

  size_t read_memory(unsigned vcpu, AddressSpace space, uint64_t address, std::span<uint8_t> out) override {
    const auto& bytes = memory_[static_cast<unsigned>(space)];
    if (address >= bytes.size()) return 0;
    const size_t n = std::min<uint64_t>(out.size(), bytes.size() - address);
    std::copy_n(bytes.begin() + static_cast<ptrdiff_t>(address), n, out.begin());
    return n;
  }
  bool write_memory(unsigned vcpu, AddressSpace space, uint64_t address, std::span<const uint8_t> in) override {
    calls.push_back(fmt::format("write_memory {} {} {:#x} {}", vcpu, space == AddressSpace::kPhysical ? "phys" : "virt",
                                address, in.size()));
    auto& bytes = memory_[static_cast<unsigned>(space)];
    if (address >= bytes.size() || in.size() > bytes.size() - address) return false;
    std::copy(in.begin(), in.end(), bytes.begin() + static_cast<ptrdiff_t>(address));
    return true;
  }

  bool insert_breakpoint(BreakpointKind kind, uint64_t address, unsigned length) override {
    calls.push_back(fmt::format("insert {} {:#x} {}", static_cast<int>(kind), address, length));
    return static_cast<int>(kind) <= max_breakpoint_kind;
  }
  bool remove_breakpoint(BreakpointKind kind, uint64_t address, unsigned length) override {
    calls.push_back(fmt::format("remove {} {:#x} {}", static_cast<int>(kind), address, length));
    return static_cast<int>(kind) <= max_breakpoint_kind;
  }
  bool can_reverse() const override { return reverse_; }

  // Answers each resume with the next of `stops` (a plain step stop on
  // vCPU 0 when none is left), polling the control `polls_per_resume` times
  // first; a poll's answer other than kNothing ends the run at once.
  StopEvent resume(const ResumeRequest& request, const RunControl& control) override {
    resumes.push_back(request);
    for (unsigned i = 0; i < polls_per_resume; ++i) {
      const RunControl::Poll poll = control.poll();
      if (poll == RunControl::Poll::kInterrupt) return stop_event(StopEvent::Kind::kInterrupted);
      if (poll == RunControl::Poll::kClientGone) {
        calls.push_back("client gone");
        return exit_event(0, "ran to the end");
      }
      if (poll_pause) poll_pause();
    }
    if (stops.empty()) return stop_event(StopEvent::Kind::kStepped);
    StopEvent stop = stops.front();
    stops.pop_front();
    return stop;
  }

  std::string monitor(std::string_view line) override {
    calls.push_back(fmt::format("monitor {}", line));
    return monitor_output;
  }
  void detach() override { calls.push_back("detach"); }
  void kill() override { calls.push_back("kill"); }

  std::vector<std::string> calls;
  std::vector<ResumeRequest> resumes;
  std::deque<StopEvent> stops;
  std::string monitor_output;
  unsigned polls_per_resume = 0;
  std::function<void()> poll_pause;  // between polls (a test's sleep)
  int max_breakpoint_kind = 4;       // kinds above it are unsupported
  std::optional<x86::RegisterId> unavailable_;
  std::optional<x86::RegisterId> read_only_;

 private:
  unsigned vcpus_ = 0;
  bool reverse_ = false;
  static constexpr unsigned kRegisters = static_cast<unsigned>(x86::RegisterId::kCount);
  static constexpr unsigned kSlot = 16;
  std::vector<uint8_t> registers_;
  std::array<std::vector<uint8_t>, 2> memory_;
};

}  // namespace topolab::debug
