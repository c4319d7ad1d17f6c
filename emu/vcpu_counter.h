// SPDX-License-Identifier: GPL-2.0-or-later
// The instruction count of one vCPU's engine: topolab's build of Unicorn
// counts in its generated code (emu/unicorn/0001-instruction-budget.patch).
// Each block pays its instruction count on entry from the budget this hands
// it, and a run stops, exactly, in front of a block the budget cannot pay
// for (except the first block of a run, which always runs). A stop inside a
// block (an exception, HLT, a trap site) gives back the block's
// instructions from RIP on; a callback in the middle of a block sees the
// count at its block's start plus its instruction's index, which the engine
// records. Part of the vCPU engine: only the vcpu_*.cc files include it.
#pragma once

#include <unicorn/unicorn.h>

#include <cstdint>
#include <limits>

namespace topolab::vcpu_internal {

class InstructionCounter {
 public:
  explicit InstructionCounter(uc_engine* uc) : uc_(uc) {}
  InstructionCounter(const InstructionCounter&) = delete;
  InstructionCounter& operator=(const InstructionCounter&) = delete;
  // Between two runs (where snapshots are taken) only the count means
  // anything: the rest is the running uc_emu_start's, and entries_ is the
  // host's (a fresh engine stops to hook the trap sites of code it
  // translates anew, which the guest never sees).
  template <class Archive>
  void serialize(Archive& ar) {
    ar(retired_);
  }

  // The block the engine last entered in this uc_emu_start, as it recorded
  // it (uc_topolab_block).
  struct EnteredBlock {
    bool any = false;
    uint64_t start = 0;
    uint32_t size = 0;
    uint32_t count = 0;
    bool shadowed = false;  // it began in an interrupt shadow
  };
  EnteredBlock entered() const {
    EnteredBlock b;
    b.any = uc_topolab_block(uc_, &b.start, &b.size, &b.count, &b.shadowed);
    return b;
  }

  // run(): `budget` more instructions, at most.
  void begin_run(uint64_t budget) {
    constexpr uint64_t kNoLimit = std::numeric_limits<uint64_t>::max();
    budget_end_ = budget > kNoLimit - retired_ ? kNoLimit : retired_ + budget;
    first_block_of_run_ = true;
  }
  // Around each uc_emu_start: the engine gets what is left of the run's
  // budget, and may overrun it with the run's first block.
  void enter_engine() {
    uc_topolab_set_budget(uc_, budget_end_ > retired_ ? budget_end_ - retired_ : 0, first_block_of_run_);
    settled_ = false;
    running_ = true;
    entry_began_run_ = first_block_of_run_;
    ++entries_;
  }
  void leave_engine() {
    running_ = false;
    if (entered().any) first_block_of_run_ = false;
  }
  // Once per uc_emu_start: adds what the engine charged, less `refund`, the
  // instructions of the block it stopped inside from RIP on.
  void settle(uint64_t refund) {
    settled_ = true;
    retired_ += uc_topolab_retired(uc_) - refund;
  }
  bool settled() const { return settled_; }
  bool stopped_at_block_start() const { return uc_topolab_stopped_at_block_start(uc_); }
  // An instruction the host ran for the guest (an emulated trap).
  void retire_one() { ++retired_; }
  // Instructions the host ran for the guest in this uc_emu_start (a counted
  // loop's skipped turns).
  void charge(uint64_t instructions) { uc_topolab_charge(uc_, instructions); }

  // Instructions retired before the one running now.
  uint64_t instructions() const { return running_ ? mid_block(in_flight_) : retired_; }
  // The same during a callback from the instruction at `index` in its
  // block: the engine charged the block whole when it entered it.
  uint64_t mid_block(uint32_t index) const { return retired_ + uc_topolab_retired(uc_) - entered().count + index; }
  // In a block hook: the count at the start of the block being entered
  // (everything the engine charged so far, this block not yet run).
  uint64_t at_block_hook() const { return retired_ + uc_topolab_retired(uc_); }
  // Up to the start of the current uc_emu_start, or all of them once settled.
  uint64_t retired() const { return retired_; }
  uint64_t budget_end() const { return budget_end_; }
  bool running() const { return running_; }
  bool first_block_of_run() const { return first_block_of_run_; }
  // A stop inside the run's first block (a debugger's, which must leave the
  // run as it would have been): the rest of that block may overrun the
  // budget when the run goes on, as the whole block could. Call after
  // leave_engine, before settle.
  void keep_first_block_if_inside_it() {
    const EnteredBlock b = entered();
    if (entry_began_run_ && b.any && uc_topolab_retired(uc_) == b.count) first_block_of_run_ = true;
  }
  uint64_t entries() const { return entries_; }

  // A host call from the middle of a block names its instruction's index
  // (uc_topolab_insn_index) for instructions() for its length.
  class MidBlockCall {
   public:
    explicit MidBlockCall(InstructionCounter& counter) : counter_(counter) {
      counter_.in_flight_ = uc_topolab_insn_index(counter_.uc_);
    }
    ~MidBlockCall() { counter_.in_flight_ = 0; }
    MidBlockCall(const MidBlockCall&) = delete;
    MidBlockCall& operator=(const MidBlockCall&) = delete;

   private:
    InstructionCounter& counter_;
  };
  uint32_t insn_index() const { return uc_topolab_insn_index(uc_); }

 private:
  uc_engine* const uc_;
  uint64_t retired_ = 0;     // up to the start of the current uc_emu_start
  bool settled_ = true;      // retired_ includes the last uc_emu_start
  bool running_ = false;     // inside uc_emu_start
  uint64_t entries_ = 0;     // uc_emu_start calls
  bool entry_began_run_ = false;  // this uc_emu_start could run the run's first block
  uint32_t in_flight_ = 0;   // during a mid-block host call: its index in the block
  uint64_t budget_end_ = 0;
  bool first_block_of_run_ = false;  // no block has run since run() began
};

}  // namespace topolab::vcpu_internal
