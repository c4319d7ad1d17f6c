// SPDX-License-Identifier: GPL-2.0-or-later
// The debugger's hooks on one vCPU: breakpoints, single steps and
// watchpoints, and the registers as gdb sees them (arch/register_file.h).
//
// A breakpoint is a one-address UC_HOOK_CODE, never a byte written into
// guest memory; a step and a watch hit use one code hook on every
// instruction, which exists only while a step or a watch is set; a watch
// is a hook on every load and store (Unicorn 2.1.3 calls memory hooks with
// the physical address, so a watch catches every alias of the bytes it
// watches). A hook stops the run in front of its instruction (exact exits,
// docs/unicorn.md); run() settles the count there, calls
// VcpuHost::debug_stop and goes on with the rest of its budget, so a run
// that stopped for its debugger retires what it would have retired without
// one: the debugger does not move the schedule.
//
// Not supported:
// - stores topolab makes for the guest (an interrupt frame, an emulated
//   instruction's) reach no watch: only the engine's own loads and stores do;
// - a REP string instruction stops for a watch after the turn that made the
//   access, with RIP still at the instruction (each turn is a block of its own).
#include "emu/vcpu_engine.h"

namespace topolab {

namespace {

using x86::RegisterId;

// The general registers and RIP, in RegisterId order from kRax.
constexpr std::array<int, 17> kGeneralRegisters = {
    UC_X86_REG_RAX, UC_X86_REG_RBX, UC_X86_REG_RCX, UC_X86_REG_RDX, UC_X86_REG_RSI, UC_X86_REG_RDI,
    UC_X86_REG_RBP, UC_X86_REG_RSP, UC_X86_REG_R8,  UC_X86_REG_R9,  UC_X86_REG_R10, UC_X86_REG_R11,
    UC_X86_REG_R12, UC_X86_REG_R13, UC_X86_REG_R14, UC_X86_REG_R15, UC_X86_REG_RIP};
constexpr std::array<int, 6> kSegmentRegisters = {UC_X86_REG_CS, UC_X86_REG_SS, UC_X86_REG_DS,
                                                  UC_X86_REG_ES, UC_X86_REG_FS, UC_X86_REG_GS};
// fctrl .. fop, as gdb's i387 set names them.
constexpr std::array<int, 8> kFpuControlRegisters = {UC_X86_REG_FPCW, UC_X86_REG_FPSW, UC_X86_REG_FPTAG,
                                                     UC_X86_REG_FCS,  UC_X86_REG_FIP,  UC_X86_REG_FDS,
                                                     UC_X86_REG_FDP,  UC_X86_REG_FOP};

unsigned offset_from(RegisterId id, RegisterId first) { return static_cast<unsigned>(id) - static_cast<unsigned>(first); }
bool in_range(RegisterId id, RegisterId first, RegisterId last) { return id >= first && id <= last; }

void put_le(std::span<uint8_t> out, uint64_t value) {
  for (size_t i = 0; i < out.size(); ++i) out[i] = i < 8 ? static_cast<uint8_t>(value >> (8 * i)) : 0;
}
uint64_t get_le(std::span<const uint8_t> in) {
  uint64_t value = 0;
  for (size_t i = 0; i < in.size() && i < 8; ++i) value |= uint64_t{in[i]} << (8 * i);
  return value;
}

}  // namespace

// ---------------------------------------------------------------------------
// Breakpoints, steps and watches.

void UnicornVcpu::Engine::set_debug_points(const DebugPoints& points) {
  for (auto it = debug.breakpoints.begin(); it != debug.breakpoints.end();) {
    if (points.breakpoints.contains(it->first)) {
      ++it;
      continue;
    }
    check(uc_hook_del(uc, it->second), "uc_hook_del (breakpoint)");
    remove_cache(it->first, it->first + 1);
    it = debug.breakpoints.erase(it);
  }
  for (uint64_t address : points.breakpoints) {
    if (debug.breakpoints.contains(address)) continue;
    uc_hook hook;
    check(uc_hook_add(uc, &hook, UC_HOOK_CODE, reinterpret_cast<void*>(on_debug_break), this, address, address),
          "breakpoint hook");
    debug.breakpoints.emplace(address, hook);
    // The translation that holds it was made without the hook.
    remove_cache(address, address + 1);
  }
  const bool watched_before = !debug.watches.empty();
  debug.watches = points.watches;
  debug.watch_hit.reset();
  const bool watched = !debug.watches.empty();
  if (watched && !debug.access_hook) {
    check(uc_hook_add(uc, &debug.access_hook, UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE,
                      reinterpret_cast<void*>(on_debug_access), this, 1, 0),
          "watchpoint hook");
  } else if (!watched && debug.access_hook) {
    check(uc_hook_del(uc, debug.access_hook), "uc_hook_del (watchpoint)");
    debug.access_hook = 0;
  }
  if (watched != watched_before) update_step_hook();  // the step hook serves watches too
  // Loads and stores take the engine's slow path, where memory hooks are
  // called, only in code translated while a memory hook existed.
  if (watched != watched_before) invalidate_translated_code();
}

void UnicornVcpu::Engine::set_debug_step(bool on) {
  debug.stepping = on;
  if (on) debug.step_from = {linear_rip(), counter->instructions()};
  update_step_hook();
}

void UnicornVcpu::Engine::set_debug_stop_at(std::optional<uint64_t> count) {
  debug.stop_at = count;
  update_step_hook();
}

void UnicornVcpu::Engine::update_step_hook() {
  const bool needed = debug.stepping || debug.stop_at || !debug.watches.empty();
  if (needed == (debug.step_hook != 0)) return;
  if (needed) {
    check(uc_hook_add(uc, &debug.step_hook, UC_HOOK_CODE, reinterpret_cast<void*>(on_debug_step), this, 1, 0),
          "step hook");
  } else {
    check(uc_hook_del(uc, debug.step_hook), "uc_hook_del (step)");
    debug.step_hook = 0;
  }
  invalidate_translated_code();  // translated code calls the hooks that existed then
}

// A trap site's own hook checks first (on_trap_site), whichever order the
// engine calls the two hooks of one address in.
void UnicornVcpu::Engine::on_debug_break(uc_engine*, uint64_t address, uint32_t, void* user) {
  auto& e = *static_cast<Engine*>(user);
  if (e.sites->at(address)) return;
  e.guarded([&] { e.debug_check(address); });
}

void UnicornVcpu::Engine::on_debug_step(uc_engine*, uint64_t address, uint32_t, void* user) {
  auto& e = *static_cast<Engine*>(user);
  if (e.sites->at(address)) return;
  e.guarded([&] { e.debug_check(address); });
}

void UnicornVcpu::Engine::on_debug_access(uc_engine*, uc_mem_type type, uint64_t address, int size, int64_t,
                                          void* user) {
  auto& e = *static_cast<Engine*>(user);
  if (e.debug.watch_hit) return;
  const bool write = type == UC_MEM_WRITE;
  for (const DebugWatch& watch : e.debug.watches) {
    if (!(write ? watch.writes : watch.reads)) continue;
    if (address + static_cast<uint64_t>(size) <= watch.physical || address >= watch.physical + watch.length) continue;
    e.debug.watch_hit = DebugStop{.kind = DebugStop::Kind::kWatch, .address = watch.address, .write = write};
    return;
  }
}

bool UnicornVcpu::Engine::debug_watches_block(const DecodedBlock& block) const {
  if (debug.stepping || debug.stop_at || !debug.watches.empty()) return true;
  for (const auto& [address, hook] : debug.breakpoints)
    if (address >= block.start && address < block.end()) return true;
  return false;
}

bool UnicornVcpu::Engine::debug_check(uint64_t address) {
  if (stop_cause != StopCause::None) return false;
  const DebugPosition here{address, counter->mid_block(counter->insn_index())};
  std::optional<DebugStop> why;
  if (debug.watch_hit) {
    why = *std::exchange(debug.watch_hit, std::nullopt);
  } else if (here == debug.resumed_at) {
    return false;
  } else if (debug.breakpoints.contains(address)) {
    why = DebugStop{.kind = DebugStop::Kind::kBreakpoint};
  } else if (debug.stepping && here != debug.step_from) {
    why = DebugStop{.kind = DebugStop::Kind::kStep};
  } else if (debug.stop_at == here.instructions) {
    why = DebugStop{.kind = DebugStop::Kind::kStep};
  }
  if (!why) return false;
  debug.stop = why;
  debug.stop_address = address;
  stop_cause = StopCause::Debug;
  uc_emu_stop(uc);
  return true;
}

std::optional<VcpuExit> UnicornVcpu::Engine::serve_debug_stop() {
  const uint64_t address = debug.stop_address;
  counter->keep_first_block_if_inside_it();
  settle_at(address);
  set_rip_to_linear(address);  // the code hook left the linear address there
  // A stop at the first instruction of a block that began in an STI or MOV
  // SS shadow stands in that shadow.
  const EnteredBlock block = entered();
  shadow = block.any && block.start == address && block.shadowed;
  debug.resumed_at = {address, counter->instructions()};
  const DebugStop stop = *std::exchange(debug.stop, std::nullopt);
  host.debug_stop(stop);
  if (stop_requested) return exit_at(VcpuExit::Reason::StopRequested, read_reg(UC_X86_REG_RIP));
  return std::nullopt;
}

// ---------------------------------------------------------------------------
// Registers.

bool UnicornVcpu::Engine::read_register(RegisterId id, std::span<uint8_t> out) {
  if (out.size() != x86::register_bytes(id)) return false;
  if (in_range(id, RegisterId::kRax, RegisterId::kRip)) {
    put_le(out, read_reg(kGeneralRegisters[offset_from(id, RegisterId::kRax)]));
  } else if (id == RegisterId::kEflags) {
    put_le(out, read_reg(UC_X86_REG_RFLAGS));
  } else if (in_range(id, RegisterId::kCs, RegisterId::kGs)) {
    put_le(out, read_reg(kSegmentRegisters[offset_from(id, RegisterId::kCs)]));
  } else if (in_range(id, RegisterId::kSt0, RegisterId::kSt7)) {
    // Unicorn gives the 80-bit format as gdb's i387_ext has it: the 64-bit
    // significand, then sign and exponent.
    std::array<uint8_t, 10> value{};
    check(uc_reg_read(uc, UC_X86_REG_FP0 + static_cast<int>(offset_from(id, RegisterId::kSt0)), value.data()),
          "uc_reg_read (x87)");
    std::copy(value.begin(), value.end(), out.begin());
  } else if (in_range(id, RegisterId::kFctrl, RegisterId::kFop)) {
    put_le(out, read_reg(kFpuControlRegisters[offset_from(id, RegisterId::kFctrl)]));
  } else if (in_range(id, RegisterId::kXmm0, RegisterId::kXmm15)) {
    std::array<uint64_t, 2> value{};
    check(uc_reg_read(uc, UC_X86_REG_XMM0 + static_cast<int>(offset_from(id, RegisterId::kXmm0)), value.data()),
          "uc_reg_read (XMM)");
    put_le(out.first(8), value[0]);
    put_le(out.subspan(8, 8), value[1]);
  } else {
    switch (id) {
      case RegisterId::kMxcsr: put_le(out, read_reg(UC_X86_REG_MXCSR)); break;
      case RegisterId::kFsBase: put_le(out, read_reg(UC_X86_REG_FS_BASE)); break;
      case RegisterId::kGsBase: put_le(out, read_reg(UC_X86_REG_GS_BASE)); break;
      case RegisterId::kKernelGsBase: put_le(out, read_cpu_msr(x86::kMsrKernelGsBase)); break;
      case RegisterId::kCr0: put_le(out, read_reg(UC_X86_REG_CR0)); break;
      case RegisterId::kCr2: put_le(out, read_reg(UC_X86_REG_CR2)); break;
      case RegisterId::kCr3: put_le(out, read_reg(UC_X86_REG_CR3)); break;
      case RegisterId::kCr4: put_le(out, read_reg(UC_X86_REG_CR4)); break;
      case RegisterId::kCr8: put_le(out, host.read_cr8()); break;  // the APIC's TPR: the engine has none
      case RegisterId::kEfer: put_le(out, read_cpu_msr(x86::kMsrEfer)); break;
      default: return false;
    }
  }
  return true;
}

// The general registers, RIP, RFLAGS and the SSE registers. Segment,
// control and mode registers are refused: the engine keeps state derived
// from them (descriptor caches, the CPU mode, CS.base) that a bare write
// would leave behind.
bool UnicornVcpu::Engine::write_register(RegisterId id, std::span<const uint8_t> in) {
  if (in.size() != x86::register_bytes(id)) return false;
  if (in_range(id, RegisterId::kRax, RegisterId::kRip)) {
    write_reg(kGeneralRegisters[offset_from(id, RegisterId::kRax)], get_le(in));
  } else if (id == RegisterId::kEflags) {
    write_reg(UC_X86_REG_RFLAGS, get_le(in) | 0x2);  // bit 1 is always 1
  } else if (in_range(id, RegisterId::kXmm0, RegisterId::kXmm15)) {
    std::array<uint64_t, 2> value = {get_le(in.first(8)), get_le(in.subspan(8, 8))};
    check(uc_reg_write(uc, UC_X86_REG_XMM0 + static_cast<int>(offset_from(id, RegisterId::kXmm0)), value.data()),
          "uc_reg_write (XMM)");
  } else if (id == RegisterId::kMxcsr) {
    write_reg(UC_X86_REG_MXCSR, get_le(in));
  } else {
    return false;
  }
  return true;
}

std::optional<uint64_t> UnicornVcpu::Engine::translate_linear(uint64_t linear) {
  x86::PagingState state = paging_state();
  state.cr4 &= ~(x86::kCr4Smap | x86::kCr4Pke);  // the host's look checks no rights (peek_linear_into)
  const x86::WalkResult walk =
      x86::translate(physical, state, linear, x86::Access::kRead, x86::Accessor{.cpl = 0, .implicit_supervisor = true});
  if (!walk.ok()) return std::nullopt;
  return walk.translation.physical;
}

// ---------------------------------------------------------------------------
// The public face.

void UnicornVcpu::set_debug_points(const DebugPoints& points) { engine_->set_debug_points(points); }
void UnicornVcpu::set_debug_step(bool on) { engine_->set_debug_step(on); }
void UnicornVcpu::set_debug_stop_at(std::optional<uint64_t> count) { engine_->set_debug_stop_at(count); }
bool UnicornVcpu::read_register(x86::RegisterId id, std::span<uint8_t> out) { return engine_->read_register(id, out); }
bool UnicornVcpu::write_register(x86::RegisterId id, std::span<const uint8_t> in) {
  return engine_->write_register(id, in);
}
std::optional<uint64_t> UnicornVcpu::translate_linear(uint64_t linear) { return engine_->translate_linear(linear); }
uint64_t UnicornVcpu::linear_rip() { return engine_->linear_rip(); }

}  // namespace topolab
