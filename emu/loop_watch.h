// SPDX-License-Identifier: GPL-2.0-or-later
// Proofs that a vCPU is stuck in a loop of any shape, from the blocks it
// enters: pure logic, no engine. The engine (emu/vcpu_loop_watch.cc) shows it
// every block a watched run enters, with what the decoder found in the block
// (WatchedBlock), and stops the run in front of the loop when it answers a
// proof; the machine then skips the vCPU (Machine::skip_spin) or diagnoses a
// hang.
//
// What may run in a watched turn: only "pure" blocks (WatchedBlock::pure):
// fully decoded, every instruction on vcpu_blocks.h's without_side_effects
// list (registers and loads: no store, no I/O, no MSR, no CPUID, no exit),
// no trap site (no PAUSE, IRET, MONITOR/MWAIT, MOV CR8), and no write of
// state outside the general registers and RFLAGS (a MOV to a segment,
// control or debug register), which the register comparison would not see.
// Any other block forgets everything seen. So does a read of a device
// register (the engine calls saw_effect()): its value may change with time.
//
// Two proofs, each about one turn: the blocks entered from one entry into
// the loop's head block to the next.
// - FixedPoint: no block of the turn reads the time (RDTSC, RDTSCP), and the
//   general registers and RFLAGS at the head's second entry equal those at
//   its first. The turn stored nothing and read nothing that changes by
//   itself, so it is a function of the registers and memory alone, and both
//   are as they were: every later turn is the same turn, until something
//   outside the vCPU (an interrupt, NMI, INIT, another vCPU's store) changes
//   one. The vCPU may be skipped, exactly, to the next such event.
// - NoWayOut: the registers moved, but the turn's blocks have no exit: the
//   static successors of every block (its direct jump target, and the next
//   block for a conditional jump or a block that ends without a jump) are
//   blocks of the turn, no block jumps indirectly, and no block touches
//   memory at an address that a register gives (only absolute or
//   RIP-relative operands, whose translation only another writer could
//   change): nothing in the loop can fault, and no branch leaves. Only an
//   interrupt, NMI or INIT can end it, or another vCPU rewriting its code.
//   Its registers are not those of a later turn, so it must not be skipped
//   to an earlier event (an interrupt handler would see them); it may only
//   end the run when nothing can end it before the time limit.
// A FixedPoint turn may also hold stack transfers (a CALL and its RET, a
// PUSH and a POP: WatchedBlock::stack_only) when nothing else in it writes
// the stack pointer: they store only within a window around the stack
// pointer, and the bytes of that window are compared too (memory_unchanged).
// Such a turn stores what the stack already held, which no vCPU or device
// can tell from no store (topolab's MONITOR compares the line's bytes, as
// docs/deviations.md says); the run is not called pure all the same.
// Neither proof is a guess: a loop that leaves after 2^32 turns has an exit
// edge (no NoWayOut) and moving registers (no FixedPoint); a counter stored
// to memory is impure; a loop on the TSC reads the time; a loop on a device
// register is forgotten at each read.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "emu/pause_loop.h"

namespace topolab {

// What the decoder found in one block, as the watch needs it.
struct WatchedBlock {
  uint64_t start = 0;
  uint32_t instructions = 0;
  bool pure = false;        // see the top; nothing else may be part of a proof
  // Pure but for stack transfers (PUSH, CALL, POP to a register, RET): its
  // pushes and pops in one pass, and whether another instruction of it
  // writes the stack pointer.
  bool stack_only = false;
  uint8_t stack_pushes = 0, stack_pops = 0;
  bool writes_stack_pointer = false;
  bool reads_time = false;  // RDTSC or RDTSCP
  // No memory operand whose address a register gives (LEA computes, it does
  // not touch memory): nothing in it can fault on a value the loop changes.
  bool cannot_fault = false;
  // Where it can go: its direct jump target, and for a conditional jump or a
  // block that ends without a jump, the address after it. False for an
  // indirect jump (its target is a register or memory).
  bool successors_known = false;
  std::array<uint64_t, 2> successors{};
  uint8_t successor_count = 0;
};

// What the watch compares at the head's entries: the general registers and
// RFLAGS, and the bytes around the stack pointer (kStackWindow below and
// above it), or nullopt where they are not mapped.
inline constexpr unsigned kStackWindow = 256;
struct LoopState {
  SpinRegisters registers;
  std::optional<std::array<uint8_t, 2 * kStackWindow>> stack;
};

class LoopWatch {
 public:
  enum class Verdict : uint8_t { Watching, FixedPoint, NoWayOut, GiveUp };
  struct Answer {
    Verdict verdict = Verdict::Watching;
    uint64_t head = 0;                 // the block the run stops in front of
    std::vector<uint64_t> blocks;      // the turn's blocks, head first, in order of first entry
    uint64_t turn_instructions = 0;    // instructions of the last turn
    bool stack_transfers = false;      // the turn pushed and popped (the same bytes)
  };
  // A watch that sees this many blocks without a proof gives up: a stuck
  // loop of pure blocks repeats within a few of them, and a watched block
  // costs the host a callback.
  static constexpr unsigned kMaxBlocks = 512;
  // Turns of one head whose registers moved before another block may be
  // the head (an inner loop inside the stuck one).
  static constexpr unsigned kMaxTurnsPerHead = 3;

  void start() {
    forget();
    last_instructions_ = last_start_ = 0;
    active_ = true;
    seen_blocks_ = 0;
    all_pure_since_start_ = true;
  }
  void stop() { active_ = false; }
  bool active() const { return active_; }
  // Something happened that the loop could see or that others could see of
  // it (an impure block, a device access, an exception delivered): nothing
  // before it counts, and the run is no longer pure.
  void saw_effect() {
    all_pure_since_start_ = false;
    forget();
  }
  // Every block since start() was pure: the run did nothing that another
  // vCPU or a device could see.
  bool pure_since_start() const { return all_pure_since_start_; }

  // A block about to run, with `instructions` retired before it;
  // `read_state` (giving a LoopState) is called only at the head's entries.
  template <typename ReadState>
  Answer on_block(const WatchedBlock& block, uint64_t instructions, ReadState&& read_state) {
    if (!active_) return {};
    // The same block again with nothing retired: it did not run in between
    // (the engine stopped in front of it to translate it anew).
    if (seen_blocks_ > 0 && instructions == last_instructions_ && block.start == last_start_) return {};
    last_instructions_ = instructions;
    last_start_ = block.start;
    if (++seen_blocks_ > kMaxBlocks) {
      active_ = false;
      Answer give_up;
      give_up.verdict = Verdict::GiveUp;
      return give_up;
    }
    if (!block.pure && !block.stack_only) {
      saw_effect();
      return {};
    }
    if (block.stack_only) all_pure_since_start_ = false;  // it stored, if only what was there
    if (head_ && head_->start == block.start) return at_head(block, instructions, read_state());
    if (!head_) {
      if (std::find(visited_.begin(), visited_.end(), block.start) != visited_.end()) {
        head_ = Head{.start = block.start, .instructions = instructions, .state = read_state(), .moved = 0};
        begin_turn(block);
        return {};
      }
      visited_.push_back(block.start);
      return {};
    }
    if (std::none_of(turn_.begin(), turn_.end(), [&](const WatchedBlock& b) { return b.start == block.start; }))
      turn_.push_back(block);
    count_pass(block);
    return {};
  }

  // The turn has no exit (NoWayOut's rule, above): pure logic, public for tests.
  static bool closed(const std::vector<WatchedBlock>& turn) {
    const auto inside = [&](uint64_t address) {
      return std::any_of(turn.begin(), turn.end(), [&](const WatchedBlock& b) { return b.start == address; });
    };
    for (const WatchedBlock& b : turn) {
      if (!b.cannot_fault || !b.successors_known) return false;
      for (uint8_t i = 0; i < b.successor_count; ++i)
        if (!inside(b.successors[i])) return false;
    }
    return true;
  }

 private:
  struct Head {
    uint64_t start = 0;
    uint64_t instructions = 0;
    LoopState state;
    unsigned moved = 0;
  };
  // What one turn did, pass by pass (a block may pass more than once).
  struct TurnFacts {
    bool reads_time = false;
    bool writes_stack_pointer = false;
    unsigned pushes = 0, pops = 0;
  };

  void begin_turn(const WatchedBlock& head) {
    turn_.assign(1, head);
    facts_ = {};
    count_pass(head);
  }
  void count_pass(const WatchedBlock& block) {
    facts_.reads_time |= block.reads_time;
    facts_.writes_stack_pointer |= block.writes_stack_pointer;
    facts_.pushes += block.stack_pushes;
    facts_.pops += block.stack_pops;
  }
  // The turn's stores left memory as it was. A turn without any stores
  // did. One with stack transfers stored only at the stack pointer, which
  // only they move (no other instruction of the turn writes it): each push
  // lands at most 8 bytes times the pushes before it below the head's
  // stack pointer, and a push after pops at most 8 bytes times the pops
  // above it, so every store is inside the window compared when the turn
  // moves it by no more than the window; the window holds the same bytes.
  bool memory_unchanged(const LoopState& before, const LoopState& now) const {
    if (facts_.pushes == 0 && facts_.pops == 0) return true;
    constexpr unsigned kMostBytesPerTransfer = 8;
    if (facts_.writes_stack_pointer || facts_.pushes * kMostBytesPerTransfer > kStackWindow ||
        facts_.pops * kMostBytesPerTransfer > kStackWindow)
      return false;
    return before.stack && now.stack && *before.stack == *now.stack;
  }

  Answer at_head(const WatchedBlock& block, uint64_t instructions, const LoopState& now) {
    Head& head = *head_;
    Answer answer;
    answer.head = head.start;
    answer.turn_instructions = instructions - head.instructions;
    for (const WatchedBlock& b : turn_) answer.blocks.push_back(b.start);
    if (!facts_.reads_time && now.registers.same_as(head.state.registers, 0) && memory_unchanged(head.state, now)) {
      answer.verdict = Verdict::FixedPoint;
      answer.stack_transfers = facts_.pushes || facts_.pops;
      return answer;
    }
    if (closed(turn_)) {
      answer.verdict = Verdict::NoWayOut;
      return answer;
    }
    // Not this head (yet): watch another turn from here, or let another
    // block become the head.
    if (++head.moved >= kMaxTurnsPerHead) {
      forget();
      visited_.push_back(block.start);
      return {};
    }
    head.state = now;
    head.instructions = instructions;
    begin_turn(block);
    return {};
  }

  void forget() {
    visited_.clear();
    head_.reset();
    turn_.clear();
    facts_ = {};
  }

  bool active_ = false;
  unsigned seen_blocks_ = 0;
  uint64_t last_instructions_ = 0, last_start_ = 0;
  bool all_pure_since_start_ = false;
  TurnFacts facts_;
  std::vector<uint64_t> visited_;  // since the last forget(), before a head
  std::optional<Head> head_;
  std::vector<WatchedBlock> turn_;  // since the head's last entry, head first
};

// Which runs of a vCPU are watched. A watched run pays a callback per block
// (until its watch gives up), so it is only done where a stuck loop is
// likely: after runs that each went on to the end of their budget without
// any other exit, and at once for a run that begins at the head of a loop
// proved a fixed point in front of which the last run stopped (it comes
// back to check that nothing changed: one turn). A watch that found no
// proof doubles the number of such runs before the next, up to kMaxGap, so
// a guest that computes for long pays one watch of at most
// LoopWatch::kMaxBlocks blocks per kMaxGap quanta; any other exit (a HLT,
// an MWAIT, a fault) starts again from kFirstGap.
class LoopWatchSchedule {
 public:
  static constexpr unsigned kFirstGap = 2, kMaxGap = 64;

  // A run begins at linear `rip`: whether to watch it.
  template <class Archive>
  void serialize(Archive& ar) {
    ar(quiet_runs_, gap_, recheck_head_);
  }
  bool watch_run(uint64_t rip) const { return rip == recheck_head_ || quiet_runs_ >= gap_; }
  // How a run ended: used its budget with no other exit (`quantum_end`),
  // and whether it was watched and what the watch proved.
  void run_ended(bool quantum_end, bool watched, const std::optional<LoopWatch::Answer>& proof) {
    recheck_head_ = kNone;
    if (proof && proof->verdict == LoopWatch::Verdict::FixedPoint) {
      recheck_head_ = proof->head;
      quiet_runs_ = 0;
      return;
    }
    if (proof && proof->verdict == LoopWatch::Verdict::NoWayOut) {
      // Its registers move: the machine skips it only to the end of the
      // run. If it did not, watching it again at once would stop the vCPU
      // every turn; it waits for its quiet runs like any other loop.
      quiet_runs_ = 0;
      return;
    }
    if (watched) {
      gap_ = std::min(gap_ * 2, kMaxGap);
      quiet_runs_ = 0;
      return;
    }
    if (quantum_end) {
      ++quiet_runs_;
      return;
    }
    quiet_runs_ = 0;
    gap_ = kFirstGap;
  }

 private:
  static constexpr uint64_t kNone = ~uint64_t{0};
  unsigned quiet_runs_ = 0;
  unsigned gap_ = kFirstGap;
  uint64_t recheck_head_ = kNone;
};

}  // namespace topolab
