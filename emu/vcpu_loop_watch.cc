// SPDX-License-Identifier: GPL-2.0-or-later
// Stuck loops of any shape: which runs are watched (LoopWatchSchedule), the
// blocks a watched run enters shown to the proofs of emu/loop_watch.h, and
// the stop in front of a loop they prove. The single-block loops (`jmp .`,
// a loop on itself that only reads memory) have their own cheaper hooks in
// vcpu_decode.cc, which prove them on their first or second turn.
#include "emu/vcpu_engine.h"

namespace topolab {

namespace {

constexpr size_t kSpinRsp = 4;  // SpinRegisters' order: RAX, RCX, RDX, RBX, RSP

// A decoded block as the watch sees it. Pure (loop_watch.h): fully decoded,
// no side effect and no trap site, no write of state outside the general
// registers and RFLAGS.
WatchedBlock watched(const DecodedBlock& b) {
  WatchedBlock w;
  w.start = b.start;
  w.instructions = b.count;
  const bool clean = b.fully_decoded && b.traps.empty() && !b.writes_system_state && !b.rep_string_tail_set();
  w.pure = clean && !b.has_side_effects;
  // Stack transfers are compared through the bytes around the stack
  // pointer, which a 16-bit stack (SP wrapping at 64 KiB) would not keep
  // in one window.
  w.stack_only = clean && b.has_side_effects && b.stack_effects_only && b.code_size != CodeSize::Bits16;
  w.stack_pushes = b.stack_pushes;
  w.stack_pops = b.stack_pops;
  w.writes_stack_pointer = b.writes_stack_pointer;
  w.reads_time = b.reads_time;
  w.cannot_fault = b.cannot_fault;
  w.successors_known = b.successors_known;
  w.successors = b.successors;
  w.successor_count = b.successor_count;
  return w;
}

std::string describe_loop(const LoopWatch::Answer& proof) {
  const bool moves = proof.verdict == LoopWatch::Verdict::NoWayOut;
  std::string blocks;
  constexpr size_t kNamed = 4;
  for (size_t i = 0; i < proof.blocks.size() && i < kNamed; ++i)
    blocks += fmt::format("{}{:#x}", i ? ", " : "", proof.blocks[i]);
  if (proof.blocks.size() > kNamed) blocks += ", ...";
  return fmt::format("a loop of {} block{} ({}; {} instructions a turn) that {}", proof.blocks.size(),
                     proof.blocks.size() == 1 ? "" : "s", blocks, proof.turn_instructions,
                     moves ? "has no way out (its registers move, but no branch leaves it and nothing in it can fault)"
                     : proof.stack_transfers
                         ? "stores only what its stack already holds and comes back to the same registers every turn"
                         : "stores nothing and comes back to the same registers every turn");
}

}  // namespace

// At the start of run(): watch this run if the schedule says so. Not under
// --trace, which shows every instruction (the single-block hooks stand
// down there too).
void UnicornVcpu::Engine::begin_loop_watch() {
  run_start_instructions = counter->retired();
  idle_loop_moves = idle_loop_recheck = false;
  loop_watch.stop();
  last_loop_proof.reset();
  run_watched = !trace_out && loop_watch_schedule.watch_run(linear_rip());
  if (run_watched) loop_watch.start();
}

// From on_block, for every block while the watch is on. A proof stops the
// run in front of the head block, where the next run resumes.
void UnicornVcpu::Engine::watch_block(const DecodedBlock* block) {
  if (!block) return loop_watch.saw_effect();  // not decoded: nothing is known of it
  const LoopWatch::Answer answer =
      loop_watch.on_block(watched(*block), counter->at_block_hook(), [&] { return read_loop_state(); });
  switch (answer.verdict) {
    case LoopWatch::Verdict::Watching: return;
    case LoopWatch::Verdict::GiveUp: return;  // the block hook goes with update_block_hook
    case LoopWatch::Verdict::FixedPoint:
    case LoopWatch::Verdict::NoWayOut:
      break;
  }
  idle_loop_what = describe_loop(answer);
  idle_loop_moves = answer.verdict == LoopWatch::Verdict::NoWayOut;
  idle_loop_recheck = loop_watch.pure_since_start();
  last_loop_proof = answer;
  loop_watch.stop();
  stop_at_block(StopCause::IdleLoop);
}

// The registers, and the bytes around SS:RSP when the stack is flat enough
// to find them: in 64-bit mode (base 0), or a present 32-bit stack segment
// (its base from the GDT).
LoopState UnicornVcpu::Engine::read_loop_state() {
  LoopState state;
  state.registers = read_spin_registers();
  const uint64_t rsp = state.registers.values[kSpinRsp];
  std::optional<uint64_t> base;
  if (code_size_from_registers() == CodeSize::Bits64) {
    base = 0;
  } else if (read_reg(UC_X86_REG_CR0) & x86::kCr0Pe) {
    const auto ss = read_descriptor(static_cast<uint16_t>(read_reg(UC_X86_REG_SS)));
    if (ss && ss->p && ss->db) base = ss->base;
  }
  std::array<uint8_t, 2 * kStackWindow> bytes;
  if (base && rsp >= kStackWindow && peek_linear_into(*base + rsp - kStackWindow, bytes)) state.stack = bytes;
  return state;
}

// At the end of run(): the schedule learns how it ended.
void UnicornVcpu::Engine::end_loop_watch(const VcpuExit& exit) {
  loop_watch_schedule.run_ended(exit.reason == VcpuExit::Reason::QuantumEnd, run_watched, last_loop_proof);
  last_loop_proof.reset();
  loop_watch.stop();
}

}  // namespace topolab
