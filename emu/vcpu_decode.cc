// The block hook (the hot path), Capstone decoding, the block cache, trap
// sites and the translations they go with.
#include "emu/vcpu_engine.h"

namespace topolab {

// ---------------------------------------------------------------------------
// The block hook: the hot path, once per executed block.

// The fast path (a known block, within budget) only adds, compares and
// stores; everything that can throw or stop is behind it.
void UnicornVcpu::Engine::on_block(uc_engine*, uint64_t address, uint32_t size, void* user) {
  auto& e = *static_cast<Engine*>(user);
  e.retire_previous_block(address);
  // The previous block ran to its end; without one (the first block of this
  // uc_emu_start) the shadow is what the last stop left.
  e.entering_shadowed = e.current ? e.current->ends_with_interrupt_shadow : e.shadow;
  const DecodedBlock* guess = e.current ? e.current->next : nullptr;
  const DecodedBlock* block =
      guess && guess->start == address && guess->size == size ? guess : e.blocks.find(address, size);
  if (e.current && block) e.current->next = block;
  if (block && !e.must_stop_before(*block)) [[likely]]
    return e.begin_block(*block);
  const bool shadowed = e.entering_shadowed;
  e.forget_current_block();
  e.enter_block_slowly(address, size, block, shadowed);
}

void UnicornVcpu::Engine::enter_block_slowly(uint64_t address, uint32_t size, const DecodedBlock* block, bool shadowed) {
  guarded([&] {
    if (!block) {
      block = &decode_new_block(address, size);
      // This block was translated before its trap sites were hooked.
      if (hook_trap_sites(*block)) return stop_at_block(StopCause::Retranslate, address, shadowed);
    }
    if (stop_requested) return stop_at_block(StopCause::StopRequested, address, shadowed);
    if (must_stop_before(*block)) return stop_at_block(StopCause::QuantumEnd, address, shadowed);
    begin_block(*block);
  });
}

// The trace shows every turn, and a held interrupt must be able to stop the
// run at any turn's block boundary (watch_interrupt_window): then no skip.
// A 32-bit counter is written back zero-extended, as the turns' DEC/SUB
// would have left it.
void UnicornVcpu::Engine::skip_counted_turns(const DecodedBlock& block) {
  if (trace_out || watch_interrupt_window) return;
  guarded([&] {
    const CountedLoop& loop = *block.counted_loop;
    const uint64_t value = read_capstone_reg(loop.counter);
    const uint64_t room = budget_end > retired ? (budget_end - retired) / block.count : 0;
    const uint64_t turns = std::min(loop.turns(value), std::max<uint64_t>(room, 1));
    if (turns < 2) return;
    const uint64_t skipped = turns - 1;
    const uint64_t mask = loop.width == 8 ? ~uint64_t{0} : 0xFFFF'FFFF;
    write_capstone_reg(loop.counter, (value - skipped) & mask);
    retired += skipped * block.count;
    pauses_retired += skipped * loop.pauses;
  });
}

// A stop requested from the block hook is exact: the block does not run
// (the notes, "the stop trap"). RIP is its start, except after code hooks
// (the trace) ran in the block before: Unicorn then leaves RIP at the last
// instruction a code hook saw. So run() puts RIP back to the block start
// (writing RIP here, in the hook, would cancel the stop).
void UnicornVcpu::Engine::stop_at_block(StopCause cause, uint64_t address, bool shadowed) {
  stop_cause = cause;
  stopped_block = address;
  stopped_block_shadowed = shadowed;
  uc_emu_stop(uc);
}

// Ends the accounting of the current block at `rip`, after a stop inside it.
void UnicornVcpu::Engine::settle_at(uint64_t rip) {
  if (current) retired += current->instructions_before(rip);
  forget_current_block();
}

// Capstone must decode in the mode the block was translated in. CR0 and EFER
// give it, except during a mode switch (16-bit protected mode right after
// CR0.PE is set, compatibility mode right after CR0.PG): then the
// instruction count of Unicorn's own translation picks the right mode.
const DecodedBlock& UnicornVcpu::Engine::decode_new_block(uint64_t address, uint32_t size) {
  // The engine has just translated the block, so its pages are mapped.
  const std::optional<std::vector<uint8_t>> bytes = peek_linear(address, size);
  if (!bytes) throw std::runtime_error(fmt::format("cpu{}: the block at {:#x} is on an unmapped page", index, address));
  const std::span<const uint8_t> code = *bytes;
  const CodeSize guess = code_size_from_registers();
  DecodedBlock block = disassembler.decode_block(code, address, guess);
  const std::optional<uint16_t> translated = translated_instruction_count(address, size);
  const auto matches = [&](const DecodedBlock& b) { return b.fully_decoded && b.count == *translated; };
  if (translated && !matches(block)) {
    for (CodeSize other : kCodeSizes) {
      if (other == guess) continue;
      DecodedBlock retry = disassembler.decode_block(code, address, other);
      if (matches(retry)) {
        block = std::move(retry);
        break;
      }
    }
  }
  return blocks.insert(std::move(block));
}

// The block being executed is in Unicorn's translation cache under the
// current CPU state, so this finds it rather than translating anew.
std::optional<uint16_t> UnicornVcpu::Engine::translated_instruction_count(uint64_t address, uint32_t size) {
  uc_tb tb{};
  if (uc_ctl_request_cache(uc, address, &tb) != UC_ERR_OK || tb.pc != address || tb.size != size)
    return std::nullopt;
  return tb.icount;
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

// UC_HOOK_INSN refuses RDMSR, WRMSR and RDTSC(P) (the notes), so each site
// gets a one-instruction UC_HOOK_CODE. Returns whether any hook was added,
// in which case the block's old translation is dropped so the next one
// calls the hook (a hook added after translation is not seen otherwise).
bool UnicornVcpu::Engine::hook_trap_sites(const DecodedBlock& block) {
  bool added = false;
  for (const TrapSite& site : block.traps) {
    if (trap_hooks.contains(site.address)) continue;
    if (site.kind == TrapKind::Rdtscp && rdtscp_hooked()) continue;  // the instruction hook answers it
    uc_hook hook;
    check(uc_hook_add(uc, &hook, UC_HOOK_CODE, reinterpret_cast<void*>(on_trap_site), this, site.address,
                      site.address),
          "trap site hook");
    trap_hooks.emplace(site.address, HookedTrap{site.kind, site.length, hook, site.gpr});
    added = true;
  }
  if (added) remove_cache(block.start, block.end());
  return added;
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
  remove_trap_hooks();
  forget_current_block();
  blocks.clear();
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
    if (page < ram.size()) remove_cache(page, page + kPageSize);
  saved.restore_into(uc);
  // The context brings paging back but not the TLB, which now holds entries
  // made with paging off; reloading CR3 flushes it (cpu_x86_update_cr3).
  write_reg(UC_X86_REG_CR3, read_reg(UC_X86_REG_CR3));
}

void UnicornVcpu::Engine::remove_trap_hooks() {
  for (const auto& [address, trap] : trap_hooks) check(uc_hook_del(uc, trap.hook), "uc_hook_del (trap site)");
  trap_hooks.clear();
}


}  // namespace topolab
