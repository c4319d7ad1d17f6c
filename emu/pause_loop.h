// SPDX-License-Identifier: GPL-2.0-or-later
// Pause-loop exiting, as the vCPU detects it: KVM's PLE (SDM Vol. 3C
// 25.1.3, "PAUSE-loop exiting") with the gap and window counted in retired
// instructions, plus the proof topolab needs before it may skip the loop's
// time instead of running it. Pure logic: the engine feeds it the PAUSEs,
// the impure blocks and the time reads it sees and does what it answers.
//
// A spin, as the SDM defines it: PAUSEs at one site, each within `gap`
// instructions of the one before, for at least `window` instructions.
// What topolab adds, so that skipping is exact and not a guess:
// - clean: no block between two of those PAUSEs may store to memory, do
//   I/O, execute CPUID or an MSR access, or anything outside a short list of
//   register and load instructions (emu/vcpu_blocks.h decides, per block);
//   a write to a device (the APIC page) counts as impure too;
// - a fixed point: the general registers and RFLAGS at the last PAUSE equal
//   those at the one before. Memory is unchanged (nothing stored) and the
//   registers are too, so every further iteration does exactly what this
//   one did until something outside the vCPU changes: another vCPU's store,
//   an interrupt, or time. A counted loop (a delay of N PAUSEs, a bounded
//   wait) changes a register each iteration and is never skipped.
// - time: a loop that read the TSC since the first PAUSE of its window is
//   compared without the registers RDTSC (RAX, RDX) or RDTSCP (and RCX)
//   write and RFLAGS, which a `now - start < ticks` compare derives from
//   them. Such a loop is a fixed point only up to the time it reads, so the
//   machine skips it by at most one quantum of time: it leaves within one
//   quantum of when it would have. A device read (the APIC timer's count
//   lands in any register) is not modelled that way: it forgets the spin,
//   and such a loop runs every instruction.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

namespace topolab {

// The SDM's two PLE controls, in retired instructions at the model's CPI.
struct PauseLoopExiting {
  uint64_t gap_instructions = 0;
  uint64_t window_instructions = 0;
};

// The registers the fixed-point check compares: RAX, RCX, RDX, RBX, RSP,
// RBP, RSI, RDI, R8-R15 and RFLAGS, in that order.
struct SpinRegisters {
  static constexpr size_t kCount = 17;
  static constexpr size_t kRax = 0, kRcx = 1, kRdx = 2, kRflags = 16;
  std::array<uint64_t, kCount> values{};
  template <class Archive>
  void serialize(Archive& ar) {
    ar(values);
  }

  // Bits (1 << index) of registers a time read wrote.
  static constexpr uint32_t kRdtscOutputs = 1u << kRax | 1u << kRdx | 1u << kRflags;
  static constexpr uint32_t kRdtscpOutputs = kRdtscOutputs | 1u << kRcx;

  // Equal but for the registers in `ignored` (bits as above).
  bool same_as(const SpinRegisters& other, uint32_t ignored) const {
    for (size_t i = 0; i < kCount; ++i)
      if (!(ignored >> i & 1) && values[i] != other.values[i]) return false;
    return true;
  }
};

// The detector's states: idle; counting a window (a spin begins at its
// first PAUSE); parked (the last run ended in a pause-loop exit here, and
// the vCPU has only come back to check on its loop). Parked, one iteration
// is enough: the registers at the next PAUSE equal the snapshot again, and
// the loop, which is still clean, exits at once; that is a recheck. So a
// spinner costs the host one window when it begins to spin and a few
// instructions each time it comes back, however long it spins.
class PauseLoopDetector {
 public:
  // What the engine must do at a PAUSE.
  enum class Action : uint8_t {
    Run,           // let it run
    Snapshot,      // the window is full: save the registers, let it run
    CheckAndExit,  // compare the registers with the snapshot: equal, exit
                   // here (exited()); else not_a_fixed_point()
  };
  // A parked loop may change registers (the lock word it reads changed
  // under it) and settle again: this many times in a row it is resnapped,
  // then it must fill a window again.
  static constexpr unsigned kMaxParkedChanges = 4;

  void configure(std::optional<PauseLoopExiting> ple) {
    ple_ = ple;
    forget();
  }
  bool enabled() const { return ple_.has_value(); }
  // A spin may be under way: every block until the next PAUSE must be shown
  // to the detector (forget() for an impure one).
  bool watching() const { return state_ != State::Idle; }

  // Something observable happened (a store, I/O, an exit, an injected
  // event, INIT): no spin goes on across it.
  void forget() {
    state_ = State::Idle;
    run_stayed_parked_ = false;
  }
  // A run begins: whether it only rechecks its parked loop is known at its
  // pause-loop exit (recheck()).
  void mark_run_start() { run_stayed_parked_ = state_ == State::Parked; }
  // The loop read the TSC, writing `outputs` (SpinRegisters bits).
  void note_time_read(uint32_t outputs) { time_outputs_ |= outputs; }
  bool reads_time() const { return time_outputs_ != 0; }
  // The registers the fixed-point check leaves out.
  uint32_t time_outputs() const { return time_outputs_; }
  // At CheckAndExit: this run did nothing but come back to its parked loop
  // (nothing it did can be seen outside the vCPU).
  bool recheck() const { return run_stayed_parked_; }

  // A PAUSE at `site` with `instructions` retired before it.
  Action on_pause(uint64_t site, uint64_t instructions) {
    if (!ple_) return Action::Run;
    if (state_ == State::Idle || site != site_ || instructions - last_ > ple_->gap_instructions) {
      restart(site, instructions);
      return Action::Run;
    }
    if (state_ == State::Parked) {
      // The PAUSE the exit stopped at runs first: one iteration must pass.
      if (instructions == exited_at_) return Action::Run;
      last_ = instructions;
      return Action::CheckAndExit;
    }
    last_ = instructions;
    if (instructions - start_ < ple_->window_instructions) return Action::Run;
    if (!snapshot_taken_) {
      snapshot_taken_ = true;
      return Action::Snapshot;
    }
    return Action::CheckAndExit;
  }
  // The registers equal the snapshot: the run stops at this PAUSE.
  void exited(uint64_t instructions) {
    state_ = State::Parked;
    exited_at_ = last_ = instructions;
    parked_changes_ = 0;
  }
  // The registers differed. Returns whether the engine takes a new snapshot
  // here (a parked loop that settles again); otherwise a new window starts.
  // A window or a park outlives a run; the configuration (ple_) is the machine's.
  template <class Archive>
  void serialize(Archive& ar) {
    ar(state_, snapshot_taken_, run_stayed_parked_, parked_changes_, time_outputs_, site_, start_, last_, exited_at_);
  }
  bool not_a_fixed_point(uint64_t instructions) {
    if (state_ == State::Parked && ++parked_changes_ <= kMaxParkedChanges) return true;
    restart(site_, instructions);
    return false;
  }

 private:
  enum class State : uint8_t { Idle, Window, Parked };
  void restart(uint64_t site, uint64_t instructions) {
    state_ = State::Window;
    run_stayed_parked_ = false;
    site_ = site;
    start_ = last_ = instructions;
    snapshot_taken_ = false;
    time_outputs_ = 0;
  }

  std::optional<PauseLoopExiting> ple_;
  State state_ = State::Idle;
  bool snapshot_taken_ = false;
  bool run_stayed_parked_ = false;
  unsigned parked_changes_ = 0;
  uint32_t time_outputs_ = 0;
  uint64_t site_ = 0;
  uint64_t start_ = 0;      // instructions at the window's first PAUSE
  uint64_t last_ = 0;       // at the last PAUSE
  uint64_t exited_at_ = 0;  // at the PAUSE of the last pause-loop exit
};

}  // namespace topolab
