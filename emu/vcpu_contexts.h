// SPDX-License-Identifier: GPL-2.0-or-later
// Engine state and contexts: owning handles for a uc_engine and a saved
// CPU context, the scratch engines that load segments a UC_MODE_64 engine
// cannot, and the probe for the two fields of the engine's state that
// Unicorn has no API for. Part of the vCPU engine: only the vcpu_*.cc files
// include it.
#pragma once

#include "base/guest_ram.h"

#include <unicorn/unicorn.h>

#include <fmt/format.h>

#include <cstddef>
#include <vector>
#include <cstdint>
#include <cstring>
#include <span>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace topolab::vcpu_internal {

inline void check(uc_err err, const char* what) {
  if (err != UC_ERR_OK) throw std::runtime_error(fmt::format("unicorn: {}: {}", what, uc_strerror(err)));
}

// Owns a uc_engine for the length of a scope.
class UcHandle {
 public:
  explicit UcHandle(uc_mode mode) { check(uc_open(UC_ARCH_X86, mode, &uc_), "uc_open"); }
  ~UcHandle() { uc_close(uc_); }
  UcHandle(const UcHandle&) = delete;
  UcHandle& operator=(const UcHandle&) = delete;
  uc_engine* get() const { return uc_; }

 private:
  uc_engine* uc_ = nullptr;
};

// A saved CPU context (registers, descriptor caches, control registers and
// MSRs) allocated for the mode of the engine it was made from, owned for
// the length of its scope. Its bytes are the engine's CPU state
// (engine_state_offsets reads two fields of it).
class UcContext {
 public:
  // Allocates a context for `engine`'s mode and saves `engine` into it.
  explicit UcContext(uc_engine* engine) {
    check(uc_context_alloc(engine, &context_), "uc_context_alloc");
    save_from(engine);
  }
  ~UcContext() { uc_context_free(context_); }
  UcContext(const UcContext&) = delete;
  UcContext& operator=(const UcContext&) = delete;
  void save_from(uc_engine* from) { check(uc_context_save(from, context_), "uc_context_save"); }
  void restore_into(uc_engine* to) const { check(uc_context_restore(to, context_), "uc_context_restore"); }
  uc_context* get() const { return context_; }
  uint8_t* bytes() const { return reinterpret_cast<uint8_t*>(context_); }
  // The engine's CPU state alone: the context without Unicorn's header
  // (whose first word is the state's size; the rest holds pointers).
  std::span<uint8_t> cpu_state(uc_engine* engine) const {
    size_t state_size = 0;
    std::memcpy(&state_size, bytes(), sizeof state_size);
    return {bytes() + uc_context_size(engine) - state_size, state_size};
  }

 private:
  uc_context* context_ = nullptr;
};

// Loads real-mode segment registers (base = selector << 4, limit 0xFFFF)
// into an engine. A UC_MODE_64 engine sets only the selector when CS, DS,
// ES or SS is written, and cannot be switched to another mode. But the
// context API picks its register code by the mode of the engine that
// allocated the context (uc_context_reg_write), so the engine's state is
// saved into a context allocated from a UC_MODE_16 engine, the segments are
// written there (in real mode that only fills the descriptor cache; no guest
// memory is read) and the state is copied back. CR0.PE must be clear.
// It also holds the reset state of a UC_MODE_16 engine: writing CR0 or EFER
// to a UC_MODE_64 engine sets the value alone, and the hidden flags (PE,
// LMA, CS64) stay those of protected or long mode (InitStateRunsRealModeIret
// proves the way round), as docs/unicorn.md says for INIT/SIPI.
// One scratch engine per thread, not per vCPU: an engine costs 1-6 ms and
// ~2.8 MiB (docs/unicorn.md). Proven by StartAtSipiRunsRealModeCodeAtVectorTimes4K
// and the real-mode injection tests.
class RealModeSegmentLoader {
 public:
  static RealModeSegmentLoader& for_this_thread() {
    thread_local RealModeSegmentLoader loader;
    return loader;
  }
  void load(uc_engine* uc, std::initializer_list<std::pair<int, uint16_t>> segments) {
    context_.save_from(uc);
    for (const auto& [reg, selector] : segments)
      check(uc_context_reg_write(context_.get(), reg, &selector), "uc_context_reg_write (real-mode segment)");
    context_.restore_into(uc);
  }
  // Real mode, as a UC_MODE_16 engine starts: CR0.PE clear in the register
  // and in the hidden flags, EFER clear, 16-bit segments.
  void enter_real_mode(uc_engine* uc) { reset_state_.restore_into(uc); }
  RealModeSegmentLoader(const RealModeSegmentLoader&) = delete;
  RealModeSegmentLoader& operator=(const RealModeSegmentLoader&) = delete;

 private:
  RealModeSegmentLoader() = default;
  UcHandle engine_{UC_MODE_16};  // never runs: its state stays the reset state
  UcContext context_{engine_.get()};
  UcContext reset_state_{engine_.get()};
};

// Loads CS and SS of protected or long mode into an engine from the guest's
// own GDT/LDT, with the CPL their descriptors give, as an event delivery or
// SYSCALL/SYSENTER does. A UC_MODE_64 engine can do neither (a CS or SS
// write sets the selector alone: docs/unicorn.md), and no register write
// raises the CPL. So the engine's state goes through a scratch UC_MODE_32
// engine that maps the same guest RAM: there CR0.PE is cleared for a moment
// and SS loaded as in real mode, which gives CPL 0 (DPL 0, as real mode
// loads); with PE set again, CS and SS are loaded by selector, the way the
// guest's own MOV to a segment register is, through the guest's paging, and
// the state is copied back. Proven by the ring-change tests in
// vcpu_inject_test.cc (RingThreeInterruptsSwitchToRsp0AndIstAndIretqReturns, ...).
// One per thread; it maps the RAM of the machine that last used it.
class ProtectedModeSegmentLoader {
 public:
  static ProtectedModeSegmentLoader& for_this_thread() {
    thread_local ProtectedModeSegmentLoader loader;
    return loader;
  }
  // nullopt when loaded; else why the engine refused the segments.
  std::optional<std::string> load(uc_engine* uc, GuestRam& ram, uint16_t cs, uint16_t ss);
  ProtectedModeSegmentLoader(const ProtectedModeSegmentLoader&) = delete;
  ProtectedModeSegmentLoader& operator=(const ProtectedModeSegmentLoader&) = delete;

 private:
  ProtectedModeSegmentLoader() = default;
  void map(GuestRam& ram);
  // Made anew for each machine's RAM: an engine whose RAM was unmapped and
  // another mapped kept reading the old host pages in its page walks
  // (address_space_ldq on freed memory), which crashed the second Linux
  // machine an experiment thread ran.
  std::unique_ptr<UcHandle> engine_;
  std::unique_ptr<UcContext> context_;
  uint8_t* mapped_data_ = nullptr;
  std::vector<RamRegion> mapped_regions_;
};

// Two fields of the engine's CPU state that Unicorn 2.1.3 has no API for,
// found in its uc_context (which is that state, byte for byte):
// - error_code: the error code of the exception the engine raised;
// - old_exception: the exception "in flight", which QEMU clears when it
//   has delivered one. Unicorn never delivers, so it stays set, and QEMU's
//   own double-fault check then turns the guest's next contributory
//   exception into #DF and the one after into a silent shutdown (a stop
//   with UC_ERR_OK): it must be cleared after every exception.
// The offsets are found once per process by raising #GPs with known error
// codes in a scratch engine; old_exception lies 112 bytes after error_code
// in QEMU 5.0's CPUX86State, which the probe checks too (its value is 13,
// the #GP, there, and -1 before any exception). nullopt if the probe fails
// (another engine build): then every engine exception is refused with a
// line naming the probe (EngineStateProbeFindsBothFields proves it here).
struct EngineStateOffsets {
  size_t error_code;
  size_t old_exception;
};
std::optional<EngineStateOffsets> engine_state_offsets();

}  // namespace topolab::vcpu_internal
