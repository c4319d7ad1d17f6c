// Interrupt and exception delivery through the guest's IVT or IDT.
#include "emu/vcpu_engine.h"

namespace topolab {

// ---------------------------------------------------------------------------
// Interrupt and exception delivery (SDM Vol. 3A 6.12 and 20.1.4). Unicorn has
// no inject API (the notes): the frame is written into guest RAM by the host
// (linear = physical), then RSP, RFLAGS, CS and RIP are set and the next
// uc_emu_start begins at the handler. Nothing is written before every check
// has passed, so a failed delivery leaves the vCPU as it was.

Injection Vcpu::Engine::inject(uint8_t vector, std::optional<uint32_t> error_code, bool exception) {
  const std::string what = fmt::format(
      "vector {} ({})", vector,
      exception ? exception_name(vector) : vector == kNmiVector ? "NMI" : "external interrupt");
  if (waits_for_sipi) return {false, what + ": the vCPU waits for SIPI"};
  Injection result;
  if (!(read_reg(UC_X86_REG_CR0) & kCr0ProtectionEnable))
    result = inject_real_mode(vector, what);
  else if (read_cpu_msr(kMsrEfer) & kEferLongModeActive)
    result = inject_long_mode(vector, error_code, what);
  else
    result = inject_protected_mode(vector, error_code, what);
  if (result) shadow = false;
  return result;
}

// Pushes `values` in order, each `width` bytes, below stack_base + sp (sp
// wraps at sp_mask). Returns the new stack pointer, or nullopt when the
// frame is not all in RAM (nothing is written then).
std::optional<uint64_t> Vcpu::Engine::push_frame(uint64_t stack_base, uint64_t sp, uint64_t sp_mask, unsigned width,
                                                 std::initializer_list<uint64_t> values) {
  std::vector<uint64_t> addresses;
  for (size_t i = 0; i < values.size(); ++i) {
    sp = (sp - width) & sp_mask;
    if (!ram.contains(stack_base + sp, width)) return std::nullopt;
    addresses.push_back(stack_base + sp);
  }
  auto address = addresses.begin();
  for (uint64_t value : values) std::memcpy(ram.bytes(*address++, width).data(), &value, width);  // little endian
  return sp;
}

// Same privilege only: the handler's code segment may not be more
// privileged than the interrupted code (no stack switch through the TSS),
// and its descriptor must be the one CS holds, because a CS write to a
// UC_MODE_64 engine sets the selector alone (docs/unicorn.md).
std::optional<std::string> Vcpu::Engine::check_handler_segment(uint16_t selector, bool need_64_bit) {
  const auto current = static_cast<uint16_t>(read_reg(UC_X86_REG_CS));
  const std::optional<SegmentDescriptor> target = read_descriptor(selector);
  if (!target || !target->is_code())
    return fmt::format("gate selector {:#x} is not a present code segment", selector);
  if (need_64_bit && !target->long_mode())
    return fmt::format("gate selector {:#x} is not a 64-bit code segment", selector);
  const unsigned cpl = current & 3;
  if (target->dpl() < cpl)
    return fmt::format("the handler runs in ring {} and the interrupted code in ring {}: privilege changes are "
                       "not supported",
                       target->dpl(), cpl);
  if ((selector & ~3u) != (current & ~3u)) {
    const std::optional<SegmentDescriptor> now = read_descriptor(current);
    if (!now || !now->same_segment_as(*target))
      return fmt::format("gate selector {:#x} differs from CS {:#x} and so does its descriptor: the vCPU cannot "
                         "load a code segment descriptor",
                         selector, current);
  }
  return std::nullopt;
}

void Vcpu::Engine::enter_handler(uint16_t selector, uint64_t offset, uint64_t rflags) {
  write_reg(UC_X86_REG_RFLAGS, rflags);
  const auto current = static_cast<uint16_t>(read_reg(UC_X86_REG_CS));
  const auto cs = static_cast<uint16_t>((selector & ~3u) | (current & 3u));  // RPL = CPL
  if (cs != current) write_reg(UC_X86_REG_CS, cs);  // same descriptor: see check_handler_segment
  write_reg(UC_X86_REG_RIP, offset);
}

// SDM Vol. 3A 20.1.4: the IVT holds IP:CS pairs; FLAGS, CS and IP are
// pushed; IF, TF and AC are cleared. Real mode pushes no error code.
Injection Vcpu::Engine::inject_real_mode(uint8_t vector, const std::string& what) {
  const uc_x86_mmr ivt = read_mmr(UC_X86_REG_IDTR);
  const uint64_t entry = uint64_t{vector} * 4;
  const std::string where = fmt::format("{} in real mode: IVT entry at {:#x}", what, ivt.base + entry);
  if (entry + 3 > ivt.limit) return {false, fmt::format("{} is beyond the IVT limit {:#x}", where, ivt.limit)};
  if (!ram.contains(ivt.base + entry, 4)) return {false, where + " is outside RAM"};
  const auto ip = ram.read<uint16_t>(ivt.base + entry);
  const auto cs = ram.read<uint16_t>(ivt.base + entry + 2);
  const uint64_t rflags = read_reg(UC_X86_REG_RFLAGS);
  const uint64_t rsp = read_reg(UC_X86_REG_RSP);
  const uint64_t ss_base = (read_reg(UC_X86_REG_SS) & 0xFFFF) << 4;
  const std::optional<uint64_t> sp =
      push_frame(ss_base, rsp & 0xFFFF, 0xFFFF, 2,
                 {rflags & 0xFFFF, read_reg(UC_X86_REG_CS) & 0xFFFF, read_reg(UC_X86_REG_RIP) & 0xFFFF});
  if (!sp) return {false, fmt::format("{}: the frame at SS:SP {:#x}:{:#x} is outside RAM", where, ss_base >> 4, rsp & 0xFFFF)};
  write_reg(UC_X86_REG_RSP, (rsp & ~uint64_t{0xFFFF}) | *sp);
  write_reg(UC_X86_REG_RFLAGS, rflags & ~(kRflagsInterrupt | kRflagsTrap | kRflagsAlignmentCheck));
  RealModeSegmentLoader::for_this_thread().load(uc, {{UC_X86_REG_CS, cs}});
  write_reg(UC_X86_REG_RIP, ip);
  known_cs = {cs, uint64_t{cs} << 4};
  return {true, {}};
}

// SDM Vol. 3A 6.11, 6.12.1: 8-byte gates; EFLAGS, CS, EIP and the error
// code are pushed on the current stack; TF, NT, RF and VM are cleared, and
// IF for an interrupt gate.
Injection Vcpu::Engine::inject_protected_mode(uint8_t vector, std::optional<uint32_t> error_code,
                                              const std::string& what) {
  const uc_x86_mmr idt = read_mmr(UC_X86_REG_IDTR);
  const uint64_t entry = uint64_t{vector} * 8;
  const std::string where = fmt::format("{} in 32-bit protected mode: IDT gate at {:#x}", what, idt.base + entry);
  if (entry + 7 > idt.limit) return {false, fmt::format("{} is beyond the IDT limit {:#x}", where, idt.limit)};
  if (!ram.contains(idt.base + entry, 8)) return {false, where + " is outside RAM"};
  const auto gate = ram.read<uint64_t>(idt.base + entry);
  const SegmentDescriptor as_descriptor{gate};  // same P, DPL and type fields
  const auto selector = static_cast<uint16_t>(gate >> 16);
  const uint64_t offset = (gate & 0xFFFF) | ((gate >> 48) << 16);
  const uint8_t type = as_descriptor.type();
  if (!as_descriptor.present()) return {false, where + " is not present"};
  if (as_descriptor.code_or_data() || (type != kInterruptGate && type != kTrapGate)) {
    const char* kind = type == kTaskGate                                    ? "a task gate"
                       : type == kInterruptGate16 || type == kTrapGate16 ? "a 16-bit gate"
                                                                            : "not an interrupt or trap gate";
    return {false, fmt::format("{} is {} (type {:#x}): not supported", where, kind, type)};
  }
  if (std::optional<std::string> why = check_handler_segment(selector, false)) return {false, where + ": " + *why};

  const auto ss = static_cast<uint16_t>(read_reg(UC_X86_REG_SS));
  const std::optional<SegmentDescriptor> stack = read_descriptor(ss);
  // A stack segment the GDT does not describe is the flat one a loader set.
  const uint64_t stack_base = stack ? stack->base() : 0;
  const uint64_t sp_mask = !stack || stack->big() ? 0xFFFF'FFFF : 0xFFFF;
  const uint64_t rsp = read_reg(UC_X86_REG_RSP);
  const uint64_t rflags = read_reg(UC_X86_REG_RFLAGS);
  const uint64_t cs = read_reg(UC_X86_REG_CS) & 0xFFFF;
  const uint64_t eip = read_reg(UC_X86_REG_RIP) & 0xFFFF'FFFF;
  const std::optional<uint64_t> sp =
      error_code ? push_frame(stack_base, rsp & sp_mask, sp_mask, 4, {rflags & 0xFFFF'FFFF, cs, eip, *error_code})
                 : push_frame(stack_base, rsp & sp_mask, sp_mask, 4, {rflags & 0xFFFF'FFFF, cs, eip});
  if (!sp) return {false, fmt::format("{}: the frame below ESP {:#x} is outside RAM", where, rsp & sp_mask)};
  write_reg(UC_X86_REG_RSP, (rsp & ~sp_mask) | *sp);
  uint64_t cleared = kRflagsTrap | kRflagsNestedTask | kRflagsResume | kRflagsVirtual8086;
  if (type == kInterruptGate) cleared |= kRflagsInterrupt;
  enter_handler(selector, offset, rflags & ~cleared);
  return {true, {}};
}

// SDM Vol. 3A 6.14: 16-byte gates; RSP aligned down to 16 (or the IST
// stack); SS, RSP, RFLAGS, CS, RIP and the error code pushed as 8 bytes each.
// SS is not changed: there is no privilege change.
Injection Vcpu::Engine::inject_long_mode(uint8_t vector, std::optional<uint32_t> error_code, const std::string& what) {
  const uc_x86_mmr idt = read_mmr(UC_X86_REG_IDTR);
  const uint64_t entry = uint64_t{vector} * 16;
  const std::string where = fmt::format("{} in long mode: IDT gate at {:#x}", what, idt.base + entry);
  if (entry + 15 > idt.limit) return {false, fmt::format("{} is beyond the IDT limit {:#x}", where, idt.limit)};
  if (!ram.contains(idt.base + entry, 16)) return {false, where + " is outside RAM"};
  const auto low = ram.read<uint64_t>(idt.base + entry);
  const auto high = ram.read<uint64_t>(idt.base + entry + 8);
  const SegmentDescriptor as_descriptor{low};
  const auto selector = static_cast<uint16_t>(low >> 16);
  const uint64_t offset = (low & 0xFFFF) | (((low >> 48) & 0xFFFF) << 16) | (high << 32);
  const unsigned ist = (low >> 32) & 7;
  const uint8_t type = as_descriptor.type();
  if (!as_descriptor.present()) return {false, where + " is not present"};
  if (as_descriptor.code_or_data() || (type != kInterruptGate && type != kTrapGate))
    return {false, fmt::format("{} is not a 64-bit interrupt or trap gate (type {:#x})", where, type)};
  if (std::optional<std::string> why = check_handler_segment(selector, true)) return {false, where + ": " + *why};

  const uint64_t rsp = read_reg(UC_X86_REG_RSP);
  uint64_t stack = rsp;
  if (ist != 0) {
    const uint64_t slot = read_mmr(UC_X86_REG_TR).base + kTssIst1Offset + 8 * (ist - 1);
    if (!ram.contains(slot, 8)) return {false, fmt::format("{}: IST{} slot at {:#x} is outside RAM", where, ist, slot)};
    stack = ram.read<uint64_t>(slot);
  }
  stack &= ~uint64_t{0xF};
  const uint64_t rflags = read_reg(UC_X86_REG_RFLAGS);
  const uint64_t ss = read_reg(UC_X86_REG_SS) & 0xFFFF;
  const uint64_t cs = read_reg(UC_X86_REG_CS) & 0xFFFF;
  const uint64_t rip = read_reg(UC_X86_REG_RIP);
  constexpr uint64_t kAll = ~uint64_t{0};
  const std::optional<uint64_t> sp = error_code
                                         ? push_frame(0, stack, kAll, 8, {ss, rsp, rflags, cs, rip, *error_code})
                                         : push_frame(0, stack, kAll, 8, {ss, rsp, rflags, cs, rip});
  if (!sp) return {false, fmt::format("{}: the frame below RSP {:#x} is outside RAM", where, stack)};
  write_reg(UC_X86_REG_RSP, *sp);
  uint64_t cleared = kRflagsTrap | kRflagsNestedTask | kRflagsResume | kRflagsVirtual8086;
  if (type == kInterruptGate) cleared |= kRflagsInterrupt;
  enter_handler(selector, offset, rflags & ~cleared);
  return {true, {}};
}


}  // namespace topolab
