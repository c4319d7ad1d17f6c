// SPDX-License-Identifier: GPL-2.0-or-later
// The block hook (the hot path), Capstone decoding, the block cache, trap
// sites and the translations they go with.
#include "emu/vcpu_engine.h"

#include <xxhash.h>

namespace topolab {

// ---------------------------------------------------------------------------
// New blocks and the block hook.

// Each block the engine translates, before it runs: decoded once, and its
// trap sites hooked. A hook added now would not be in this translation, so
// the run stops in front of the block, which run_until_stop translates anew.
void UnicornVcpu::Engine::on_translate(uc_engine*, uint64_t pc, uint32_t size, uint32_t count, void* user) {
  auto& e = *static_cast<Engine*>(user);
  e.guarded([&] {
    if (const DecodedBlock* known = e.blocks.find(pc, size); known && e.same_code(*known)) return;
    const DecodedBlock& block = e.decode_new_block(pc, size, count);
    // Each of the three adds its own hooks, so all three run (no ||).
    const bool trap_sites = e.hook_trap_sites(block);
    const bool counted_loop = e.hook_counted_loop(block);
    const bool idle_loop = e.hook_idle_loop(block);
    if (trap_sites || counted_loop || idle_loop) {
      e.retranslate = {block.start, block.end()};
      e.stop_at_block(StopCause::Retranslate);
    }
  });
}

const DecodedBlock* UnicornVcpu::Engine::decoded(const EnteredBlock& b) {
  if (!b.any) return nullptr;
  if (const DecodedBlock* block = blocks.find(b.start, b.size)) return block;
  return &decode_new_block(b.start, b.size, b.count);
}

// Called only while switched on (needs_block_hook): the engine counts, and
// this sees every block for what the budget cannot know. A stop from here
// is exact: the block is not entered, and PC is its start.
void UnicornVcpu::Engine::on_block(uc_engine*, uint64_t address, uint32_t size, void* user) {
  auto& e = *static_cast<Engine*>(user);
  // A counted loop's block calls this hook too, switched on or not.
  if (!e.needs_block_hook()) return;
  e.guarded([&] {
    if (e.stop_requested) return e.stop_at_block(StopCause::StopRequested);
    // The block that ran before this one, in this uc_emu_start; without one,
    // the shadow is what the last stop left.
    const EnteredBlock before = e.entered();
    const DecodedBlock* previous = e.decoded(before);
    const bool shadowed = previous ? previous->ends_with_interrupt_shadow : e.shadow;
    const bool first = e.counter->first_block_of_run() && !before.any;
    if (e.watch_interrupt_window && !first && e.interrupt_window_opened(shadowed))
      return e.stop_at_block(StopCause::QuantumEnd);
    const DecodedBlock* block = e.blocks.find(address, size);
    if (!block || block->has_side_effects) e.pause_loop.forget();
    if (e.loop_watch.active()) e.watch_block(block);
    e.update_block_hook();
  });
}

// A counted loop's own block hook (hook_counted_loop), after on_block.
void UnicornVcpu::Engine::on_counted_loop(uc_engine*, uint64_t address, uint32_t size, void* user) {
  auto& e = *static_cast<Engine*>(user);
  if (e.stop_cause != StopCause::None || e.trace_out || e.watch_interrupt_window) return;
  e.guarded([&] {
    const DecodedBlock* block = e.blocks.find(address, size);
    // Nor where a debugger looks: a skipped turn would run past its stop.
    if (block && block->counted_loop && !e.debug_watches_block(*block)) e.skip_counted_turns(*block);
  });
}

// A counted loop (vcpu_blocks.h CountedLoop) about to run: runs all the
// turns this run's budget holds but the last by arithmetic, exactly as
// many as would run and no more, so the run stops where it would have (a
// turn that would overrun the budget does not start, except the first
// block of a run, which is this turn if any). The trace shows every turn,
// and a held interrupt must be able to stop the run at any turn's block
// boundary (watch_interrupt_window): then no skip. A 32-bit counter is
// written back zero-extended, as the turns' DEC/SUB would have left it.
void UnicornVcpu::Engine::skip_counted_turns(const DecodedBlock& block) {
  const CountedLoop& loop = *block.counted_loop;
  const uint64_t value = read_capstone_reg(loop.counter);
  const uint64_t now = counter->at_block_hook();
  const uint64_t end = counter->budget_end();
  const uint64_t room = end > now ? (end - now) / block.count : 0;
  const uint64_t turns = std::min(loop.turns(value), std::max<uint64_t>(room, 1));
  if (turns < 2) return;
  const uint64_t skipped = turns - 1;
  const uint64_t mask = loop.width == 8 ? ~uint64_t{0} : 0xFFFF'FFFF;
  write_capstone_reg(loop.counter, (value - skipped) & mask);
  counter->charge(skipped * block.count);
  pauses_retired += skipped * loop.pauses;
}

void UnicornVcpu::Engine::stop_at_block(StopCause cause) {
  stop_cause = cause;
  uc_emu_stop(uc);
}

// The engine charged each block it entered in full; a stop inside one gives
// back the instructions from `rip` on (Unicorn's code hooks, exceptions and
// HLT stop there, with RIP exact).
void UnicornVcpu::Engine::settle_at(uint64_t rip) {
  if (counter->settled()) return;
  current = counter->stopped_at_block_start() ? nullptr : decoded(entered());
  counter->settle(current ? current->count - current->instructions_before(rip) : 0);
}

// Capstone must decode in the mode the block was translated in. CR0 and EFER
// give it, except during a mode switch (16-bit protected mode right after
// CR0.PE is set, compatibility mode right after CR0.PG): then the
// instruction count of Unicorn's own translation picks the right mode.
const DecodedBlock& UnicornVcpu::Engine::decode_new_block(uint64_t address, uint32_t size, uint32_t count) {
  // The engine has just translated the block, so its pages are mapped.
  const std::optional<std::vector<uint8_t>> bytes = peek_linear(address, size);
  if (!bytes) throw std::runtime_error(fmt::format("cpu{}: the block at {:#x} is on an unmapped page", index, address));
  const std::span<const uint8_t> code = *bytes;
  const CodeSize guess = code_size_from_registers();
  DecodedBlock block = disassembler.decode_block(code, address, guess);
  const auto matches = [&](const DecodedBlock& b) { return b.fully_decoded && b.count == count; };
  if (!matches(block)) {
    for (CodeSize other : kCodeSizes) {
      if (other == guess) continue;
      DecodedBlock retry = disassembler.decode_block(code, address, other);
      if (matches(retry)) {
        block = std::move(retry);
        break;
      }
    }
  }
  block.code_hash = XXH3_64bits(code.data(), code.size());
  return blocks.insert(std::move(block));
}

bool UnicornVcpu::Engine::same_code(const DecodedBlock& block) {
  const std::optional<std::vector<uint8_t>> bytes = peek_linear(block.start, block.size);
  return bytes && XXH3_64bits(bytes->data(), bytes->size()) == block.code_hash;
}

CodeSize UnicornVcpu::Engine::code_size_from_registers() {
  if (!(read_reg(UC_X86_REG_CR0) & x86::kCr0Pe)) return CodeSize::Bits16;
  if (read_cpu_msr(x86::kMsrEfer) & x86::kEferLma) return CodeSize::Bits64;
  return CodeSize::Bits32;
}

// uc_ctl_remove_cache looks its range up through the guest's paging, and a
// page the guest has not mapped raises a #PF inside the engine that nobody
// sees, except QEMU's double-fault check: the exception stays "in flight"
// (engine_state_offsets) until run_until_stop clears it.
void UnicornVcpu::Engine::remove_cache(uint64_t begin, uint64_t end) {
  check(uc_ctl_remove_cache(uc, begin, end), "uc_ctl_remove_cache");
  exception_in_flight = true;
}

// MONITOR, MWAIT, SYSCALL, SYSENTER, RDPMC, an RDTSCP without IA32_TSC_AUX
// and MOV CR4/CR8 have no instruction hook, so each site gets a
// one-instruction UC_HOOK_CODE. Returns whether any hook was added,
// in which case the block's translation must be dropped (by the caller,
// once the engine has returned) so that the next one calls the hook: a hook
// added after translation is not seen otherwise.
bool UnicornVcpu::Engine::hook_trap_sites(const DecodedBlock& block) {
  bool added = false;
  for (const TrapSite& site : block.traps) {
    if (sites->at(site.address)) continue;
    if (site.kind == TrapKind::Rdtscp && rdtscp_hooked()) continue;  // the instruction hook answers it
    sites->add(site, reinterpret_cast<void*>(on_trap_site));
    added = true;
  }
  return added;
}

// A counted loop's block gets a block hook of its own, which the engine
// calls whether the block hook is switched on or not (its turns are skipped
// by arithmetic, as the old per-block hook did for every block). Returns
// whether one was added: then the block must be translated anew.
bool UnicornVcpu::Engine::hook_counted_loop(const DecodedBlock& block) {
  if (!block.counted_loop || sites->has_block_hook(block.start)) return false;
  sites->add_block_hook(block.start, reinterpret_cast<void*>(on_counted_loop), "counted loop hook");
  return true;
}

// `jmp .` (EB FE; E9 with the displacement back to itself): one
// instruction that reads and writes nothing but RIP, which it leaves where
// it was. Every turn is the same turn, so the loop is at a fixed point by
// construction: no register snapshot is needed to prove it.
bool UnicornVcpu::Engine::is_jump_to_itself(const DecodedBlock& block) {
  if (block.count != 1 || !block.fully_decoded) return false;
  std::array<uint8_t, 5> code{};
  const std::span<uint8_t> bytes = std::span(code).first(std::min<size_t>(block.size, code.size()));
  if (!peek_linear_into(block.start, bytes)) return false;
  if (block.size == 2) return code[0] == 0xEB && code[1] == 0xFE;
  if (block.size == 3 && block.code_size == CodeSize::Bits16) return code[0] == 0xE9 && code[1] == 0xFD && code[2] == 0xFF;
  if (block.size == 5 && block.code_size != CodeSize::Bits16)
    return code[0] == 0xE9 && code[1] == 0xFB && code[2] == 0xFF && code[3] == 0xFF && code[4] == 0xFF;
  return false;
}

// An idle-loop candidate (a jump to itself is one) gets a block hook of its
// own, like a counted loop's.
bool UnicornVcpu::Engine::hook_idle_loop(const DecodedBlock& block) {
  if (trace_out || !block.loops_without_effects || sites->has_block_hook(block.start) ||
      moving_loops.contains(block.start))
    return false;
  sites->add_block_hook(block.start, reinterpret_cast<void*>(on_idle_loop), "idle-loop hook");
  return true;
}

// The run stops in front of an idle loop, and the machine skips the vCPU to
// the next event that could end it (Machine::skip_spin), or diagnoses a hang
// when none can. A `jmp .` needs no proof but its bytes: it stops at once
// unless it is the first block of the run (a run always retires something).
void UnicornVcpu::Engine::on_idle_loop(uc_engine*, uint64_t address, uint32_t size, void* user) {
  auto& e = *static_cast<Engine*>(user);
  if (e.stop_cause != StopCause::None || e.trace_out) return;
  e.guarded([&] {
    const DecodedBlock* block = e.blocks.find(address, size);
    if (!block || !block->loops_without_effects) return;
    if (!e.is_jump_to_itself(*block)) return e.watch_self_loop(*block);
    if (e.counter->first_block_of_run() && !e.entered().any) return;
    e.idle_loop_what = "a jump to itself";
    // The run did nothing but this turn: it came back to check its loop.
    e.idle_loop_recheck = e.counter->at_block_hook() - e.run_start_instructions == block->count;
    e.stop_at_block(StopCause::IdleLoop);
  });
}

// Idle, proved: one turn of the loop, and nothing else, ran since its last
// entry (the engine charges every block it enters), and left every register
// as it found it. The turn writes nothing, so the next turn reads the same
// memory and does the same, for ever, until something outside this run
// writes what it reads: the run stops in front of it, and the machine skips
// the vCPU to the next event that could (Machine::skip_spin), or diagnoses a
// hang when none can. A loop whose registers move on two turns in a row is
// no idle loop now: its hook goes, and its block is translated without it.
void UnicornVcpu::Engine::watch_self_loop(const DecodedBlock& loop) {
  constexpr unsigned kMovingTurns = 2;
  const uint64_t address = loop.start;
  if (moving_loops.contains(address)) return;
  const uint64_t instructions = counter->at_block_hook();
  const SpinRegisters now = read_spin_registers();
  const bool one_turn = self_loop.start == address && instructions - self_loop.instructions == loop.count;
  if (one_turn && now.same_as(self_loop.registers, 0)) {
    idle_loop_what = fmt::format("a loop that only reads memory ({} instructions at {:#x})", loop.count, address);
    idle_loop_recheck = instructions - run_start_instructions == loop.count;
    return stop_at_block(StopCause::IdleLoop);
  }
  const unsigned moved = one_turn ? self_loop.moved + 1 : 0;
  if (moved >= kMovingTurns) {
    moving_loops.insert(address);
    sites->remove_block_hook(address);
    self_loop.forget();
    retranslate = {loop.start, loop.end()};
    return stop_at_block(StopCause::Retranslate);
  }
  self_loop = {address, instructions, now, moved};
}

void UnicornVcpu::Engine::set_trace(std::FILE* out) {
  if (out && !trace_hook) {
    check(uc_hook_add(uc, &trace_hook, UC_HOOK_CODE, reinterpret_cast<void*>(on_trace), this, 1, 0),
          "trace hook");
  } else if (!out && trace_hook) {
    check(uc_hook_del(uc, trace_hook), "uc_hook_del (trace)");
    trace_hook = 0;
  }
  trace_out = out;
  // Translated code calls the hooks that existed when it was translated.
  invalidate_translated_code();
}

// The decoded blocks and their trap hooks go with the translations: they
// are rebuilt as code runs again.
void UnicornVcpu::Engine::flush_translations() {
  invalidate_translated_code();
  sites->remove_all();
  current = nullptr;
  blocks.clear();
  moving_loops.clear();
  self_loop.forget();
}

// Drops Unicorn's translations of every page where a decoded block starts,
// which is all translated code: every block that ran went through on_block.
// Not uc_ctl_flush_tlb (on 2.0.1 it zero-filled the whole 1 GiB translation
// buffer, 2.4 s and 1 GiB more RSS the first time). uc_ctl_remove_cache
// finds each page through the guest's own page tables; a page they do not
// map (any more) it skips, silently, with a #PF inside the engine that
// remove_cache marks as in flight and that sets CR2. So it runs twice: with
// the guest's paging, for code mapped anywhere (a higher-half kernel), and
// with paging off, for code the guest identity-mapped and then unmapped
// (FlushTranslationsReachesCodeOnAPageTheGuestUnmapped); the CPU context is
// put back after.
void UnicornVcpu::Engine::invalidate_translated_code() {
  const UcContext saved(uc);
  const std::vector<uint64_t> pages = blocks.code_pages();
  for (uint64_t page : pages) remove_cache(page, page + kPageSize);
  write_reg(UC_X86_REG_CR0, read_reg(UC_X86_REG_CR0) & ~x86::kCr0Pg);
  for (uint64_t page : pages)
    if (ram.is_ram(page, kPageSize)) remove_cache(page, page + kPageSize);
  saved.restore_into(uc);
  // The context brings paging back but not the TLB, which now holds entries
  // made with paging off; reloading CR3 flushes it (cpu_x86_update_cr3).
  write_reg(UC_X86_REG_CR3, read_reg(UC_X86_REG_CR3));
}



}  // namespace topolab
