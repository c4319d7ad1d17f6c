// SPDX-License-Identifier: GPL-2.0-or-later
#include "arch/event_delivery.h"

#include <array>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

namespace topolab::x86 {
namespace {

constexpr uint64_t kMask16 = 0xffff;
constexpr uint64_t kMask32 = 0xffffffff;
constexpr uint64_t kMask64 = ~uint64_t{0};

// SDM Vol. 2A INT n: TF, NT, RF and VM are cleared by every protected-mode
// and IA-32e delivery; an interrupt gate (not a trap gate) also clears IF.
constexpr uint64_t kFlagsClearedByGate = kFlagTf | kFlagNt | kFlagRf | kFlagVm;
// SDM Vol. 2A INT n, REAL-ADDRESS-MODE: IF, TF and AC are cleared.
constexpr uint64_t kFlagsClearedInRealMode = kFlagIf | kFlagTf | kFlagAc;

// SDM 6.13: EXT is set when the fault happens while delivering an event
// external to the program (an interrupt, NMI, an earlier exception, INT1)
// and clear for INT n, INT3 and INTO.
uint32_t ext_bit(const Event& e) {
  return (e.kind == EventKind::kSoftwareInterrupt || e.kind == EventKind::kSoftwareException) ? 0 : kErrorCodeExt;
}

bool is_software(const Event& e) {
  return e.kind == EventKind::kSoftwareInterrupt || e.kind == EventKind::kSoftwareException;
}

// An error code naming IDT gate `vector` (SDM 6.13: index = vector, IDT = 1).
uint32_t idt_error(uint8_t vector, uint32_t ext) { return (uint32_t{vector} << 3) | kErrorCodeIdt | ext; }
// An error code naming a GDT/LDT selector (index and TI kept, RPL replaced).
uint32_t selector_error(uint16_t selector, uint32_t ext) { return (selector & ~kSelectorRplMask) | ext; }

Fault gp(uint32_t ec) { return Fault{.vector = kGeneralProtection, .error_code = ec}; }
Fault np(uint32_t ec) { return Fault{.vector = kSegmentNotPresent, .error_code = ec}; }
Fault ts(uint32_t ec) { return Fault{.vector = kInvalidTss, .error_code = ec}; }
Fault ss_fault(uint32_t ec) { return Fault{.vector = kStackFault, .error_code = ec}; }

// A fault the memory returned during delivery: a non-canonical #GP(0) or
// #SS(0) takes the EXT bit of the event being delivered (SDM 6.13); a #PF
// error code has no EXT bit.
Fault memory_fault(Fault f, uint32_t ext) {
  if ((f.vector == kGeneralProtection || f.vector == kStackFault) && f.error_code == 0u) f.error_code = ext;
  return f;
}

// Whether `size` bytes at `offset` lie within a data segment's limit
// (SDM 5.3: expand-down segments hold the offsets above the limit, up to
// FFFFH or FFFFFFFFH by the B flag).
bool within_limit(const SegmentDescriptor& d, uint64_t offset, uint64_t size) {
  const uint64_t last = offset + size - 1;
  if (d.is_expand_down_data()) {
    const uint64_t upper = d.db ? kMask32 : kMask16;
    return offset > d.effective_limit() && last <= upper;
  }
  return last <= d.effective_limit();
}

// Where the frame goes: SS base (0 in IA-32e mode), the stack pointer before
// the pushes, the stack-address size, and the segment to check limits on.
struct Stack {
  uint64_t base = 0;
  uint64_t sp = 0;
  uint64_t sp_mask = kMask32;
  uint64_t linear_mask = kMask32;        // legacy linear addresses wrap at 4 GiB
  const SegmentDescriptor* limits = nullptr;  // none in IA-32e mode
  Accessor who;
};

// What a delivery pushes, in push order: at most SS, (E/R)SP, (E/R)FLAGS,
// CS, (E/R)IP and an error code. A fixed array, not a vector: deliveries are
// on the path of every interrupt.
class FrameValues {
 public:
  static constexpr size_t kMax = 6;
  FrameValues(std::initializer_list<uint64_t> values) {
    for (uint64_t v : values) push_back(v);
  }
  void push_back(uint64_t v) {
    if (count_ == values_.size()) throw std::logic_error("an interrupt frame of more than 6 values");
    values_[count_++] = v;
  }
  size_t size() const { return count_; }
  uint64_t operator[](size_t i) const { return values_[i]; }
  const uint64_t* data() const { return values_.data(); }

 private:
  std::array<uint64_t, kMax> values_{};
  size_t count_ = 0;
};

// Pushes `values` (in push order) as `slot`-byte items. Every slot is
// checked against the segment limit first (the SDM's "room for N bytes" test
// gives `limit_fault`); then the slots are written in push order, highest
// address first as hardware does, so a #PF names the address hardware would.
// If a write faults, the slots already written get their old bytes back:
// the delivery either happens whole or leaves memory as it found it.
std::optional<Fault> push_frame(LinearMemory& mem, const Stack& st, const FrameValues& values, unsigned slot,
                                const Fault& limit_fault, uint32_t ext, Delivered& out) {
  const size_t n = values.size();
  std::array<uint64_t, FrameValues::kMax> linear{};
  for (size_t i = 0; i < n; ++i) {
    const uint64_t offset = (st.sp - (i + 1) * slot) & st.sp_mask;
    if (st.limits && !within_limit(*st.limits, offset, slot)) return limit_fault;
    linear[i] = (st.base + offset) & st.linear_mask;
  }
  struct Saved {
    uint64_t linear;
    std::array<uint8_t, 8> bytes;
  };
  std::array<Saved, FrameValues::kMax> saved{};
  size_t saved_count = 0;
  auto roll_back = [&] {
    for (size_t i = saved_count; i-- > 0;) mem.write(saved[i].linear, saved[i].bytes.data(), slot, st.who);
  };
  for (size_t i = 0; i < n; ++i) {
    Saved s{.linear = linear[i], .bytes = {}};
    // A page that cannot be read cannot be written either (x86 has no
    // write-only pages), so a failed read goes on to the write, whose fault
    // (with its W/R bit) is the one to report.
    const bool have_old = !mem.read(linear[i], s.bytes.data(), slot, st.who).has_value();
    if (auto f = mem.write(linear[i], values.data() + i, slot, st.who)) {
      roll_back();
      return memory_fault(*f, ext);
    }
    if (have_old) saved[saved_count++] = s;
  }
  out.frame.clear();
  out.frame.reserve(n * slot);
  for (size_t i = n; i-- > 0;) {
    uint8_t bytes[8];
    std::memcpy(bytes, values.data() + i, sizeof bytes);  // little-endian host, as the guest
    out.frame.insert(out.frame.end(), bytes, bytes + slot);
  }
  out.frame_linear = linear[n - 1];
  out.rsp = (st.sp & ~st.sp_mask) | ((st.sp - n * slot) & st.sp_mask);
  return std::nullopt;
}

uint64_t return_address(const CpuState& cpu, const Event& e, uint64_t ip_mask) {
  const uint64_t length = (is_software(e) || e.kind == EventKind::kPrivilegedSoftwareException) ? e.instruction_length : 0;
  return (cpu.rip + length) & ip_mask;
}

// SDM Vol. 3A 18.3.1.1: for a fault-class exception other than #DB the
// processor sets RF in the EFLAGS image it pushes, so that the IRET back to
// the faulting instruction takes no instruction breakpoint there again
// (KVM's exception_type likewise). Traps (#BP, #OF, #DB), aborts (#DF,
// #MC), interrupts and INT n push RFLAGS as it is. QEMU 7.2's TCG pushes
// it as it is for every event (docs/deviations.md). A real-mode frame has
// 16 bits of FLAGS: no RF.
uint64_t pushed_rflags(const CpuState& cpu, const Event& e) {
  if (e.kind != EventKind::kHardwareException || e.vector >= 32) return cpu.rflags;
  switch (e.vector) {
    case kDebug:
    case kBreakpoint:
    case kOverflow:
    case kDoubleFault:
    case kMachineCheck:
      return cpu.rflags;
    default:
      return cpu.rflags | kFlagRf;
  }
}

// SDM Vol. 2A INT n, REAL-ADDRESS-MODE; Vol. 3A 20.1.4: 4-byte IVT entries
// (offset, segment), a 3-word frame (FLAGS, CS, IP), no error codes.
DeliveryResult deliver_real(const CpuState& cpu, const Event& e, LinearMemory& mem) {
  if (uint64_t{e.vector} * 4 + 3 > cpu.idtr.limit) return gp(0);
  uint16_t entry[2] = {0, 0};
  if (auto f = mem.read(cpu.idtr.base + uint64_t{e.vector} * 4, entry, sizeof entry, system_table_access())) {
    return *f;
  }
  Delivered out;
  const Stack st{.base = cpu.ss.desc.base,
                 .sp = cpu.rsp,
                 .sp_mask = kMask16,
                 .linear_mask = kMask32,
                 .limits = &cpu.ss.desc,
                 .who = Accessor{.cpl = 0, .implicit_supervisor = false, .stack = true}};
  const FrameValues frame = {cpu.rflags & kMask16, cpu.cs.selector, return_address(cpu, e, kMask16)};
  if (auto f = push_frame(mem, st, frame, 2, ss_fault(0), 0, out)) return *f;
  out.mode = CpuMode::kReal;
  out.cpl = 0;
  out.cs = cpu.cs;
  out.cs.selector = entry[1];
  out.cs.desc.base = uint64_t{entry[1]} << 4;
  out.ss = cpu.ss;
  out.rip = entry[0];
  out.rflags = cpu.rflags & ~kFlagsClearedInRealMode;
  return out;
}

// The gate of `e` in the IDT, checked (SDM 6.12.1.1, 6.14.1): a result
// when delivery ends there.
std::optional<DeliveryResult> read_gate(const CpuState& cpu, const Event& e, LinearMemory& mem, GateDescriptor& gate) {
  const bool ia32e = is_ia32e(cpu.mode);
  const uint32_t ext = ext_bit(e);
  // Within the IDT limit, an interrupt/trap (or, legacy, task) gate.
  const uint64_t entry_size = ia32e ? 16 : 8;
  if (uint64_t{e.vector} * entry_size + entry_size - 1 > cpu.idtr.limit) return gp(idt_error(e.vector, ext));
  uint64_t raw[2] = {0, 0};
  if (auto f = mem.read(cpu.idtr.base + uint64_t{e.vector} * entry_size, raw, entry_size, system_table_access())) {
    return memory_fault(*f, ext);
  }
  gate = ia32e ? decode_gate16(raw[0], raw[1]) : decode_gate(raw[0]);
  const bool interrupt_gate = gate.type == kType32BitInterruptGate;
  const bool legacy_gate_type = gate.type == kTypeTaskGate || gate.type == kType16BitInterruptGate ||
                                gate.type == kType16BitTrapGate;
  if (!(interrupt_gate || gate.type == kType32BitTrapGate) && (ia32e || !legacy_gate_type)) {
    return gp(idt_error(e.vector, ext));
  }
  // SDM 6.12.1.1: only software interrupts check the gate DPL (INT1 does not).
  if (is_software(e) && gate.dpl < cpu.cpl) return gp(idt_error(e.vector, 0));
  if (!gate.p) return np(idt_error(e.vector, ext));
  if (gate.type == kTypeTaskGate) {
    return DeliveryUnsupported{fmt::format("vector {:#x}: task gate (hardware task switching)", e.vector)};
  }
  if (legacy_gate_type) {
    return DeliveryUnsupported{fmt::format("vector {:#x}: 16-bit interrupt or trap gate", e.vector)};
  }
  return std::nullopt;
}

// The handler's code segment, named by the gate, checked: a result when
// delivery ends there.
std::optional<DeliveryResult> read_handler_code(const CpuState& cpu, const Event& e, LinearMemory& mem,
                                                uint16_t cs_sel, SegmentDescriptor& cs) {
  const uint32_t ext = ext_bit(e);
  if ((cs_sel & ~kSelectorRplMask) == 0) return gp(ext);
  const DescriptorLookup cs_lookup = read_descriptor(mem, cpu.gdtr, cpu.ldtr, cs_sel);
  if (cs_lookup.status == LookupStatus::kBeyondLimit) return gp(selector_error(cs_sel, ext));
  if (cs_lookup.status == LookupStatus::kMemoryFault) return memory_fault(cs_lookup.fault, ext);
  cs = cs_lookup.desc;
  if (!cs.is_code() || cs.dpl > cpu.cpl) return gp(selector_error(cs_sel, ext));
  if (!cs.p) return np(selector_error(cs_sel, ext));
  if (is_ia32e(cpu.mode) && !(cs.l && !cs.db)) return gp(selector_error(cs_sel, ext));  // SDM 6.14.1: 64-bit code only
  return std::nullopt;
}

// What the frame push needs to know of the handler.
struct HandlerEntry {
  GateDescriptor gate;
  SegmentDescriptor cs;
  unsigned new_cpl = 0;
  bool privilege_change = false;
  bool push_error = false;
  Accessor who;
};

// IA-32e: SDM 6.14.4/6.14.5: the stack comes from the IST whenever the gate
// names one, else from RSPn on a privilege change; RSP is aligned to 16
// and SS:RSP is pushed unconditionally.
DeliveryResult push_ia32e_frame(const CpuState& cpu, const Event& e, LinearMemory& mem, const HandlerEntry& h,
                                Delivered out) {
  const uint32_t ext = ext_bit(e);
  uint64_t new_rsp = cpu.rsp;
  if (h.gate.ist != 0 || h.privilege_change) {
    const TssRead<uint64_t> r =
        h.gate.ist != 0 ? read_tss64_ist(mem, cpu.tr, h.gate.ist) : read_tss64_rsp(mem, cpu.tr, h.new_cpl);
    if (r.status == LookupStatus::kBeyondLimit) return ts(selector_error(cpu.tr.selector, ext));
    if (r.status == LookupStatus::kMemoryFault) return memory_fault(r.fault, ext);
    new_rsp = r.value;
  }
  // SDM 6.14.1: the entry point must be canonical (48-bit; LA57 not modelled).
  const uint64_t top = h.gate.offset >> 47;
  if (top != 0 && top != 0x1ffff) return gp(ext);
  out.ss = h.privilege_change ? Segment{.selector = static_cast<uint16_t>(h.new_cpl),
                                        .desc = SegmentDescriptor{.dpl = static_cast<uint8_t>(h.new_cpl)}}
                              : cpu.ss;
  const uint64_t ip_mask = cpu.mode == CpuMode::kLong64 ? kMask64 : kMask32;
  FrameValues frame = {cpu.ss.selector, cpu.rsp, pushed_rflags(cpu, e), cpu.cs.selector,
                       return_address(cpu, e, ip_mask)};
  if (h.push_error) frame.push_back(e.error_code);
  const Stack st{.base = 0, .sp = new_rsp & ~uint64_t{0xf}, .sp_mask = kMask64, .linear_mask = kMask64,
                 .limits = nullptr, .who = h.who};
  if (auto f = push_frame(mem, st, frame, 8, ss_fault(ext), ext, out)) return *f;
  out.rip = h.gate.offset;
  return out;
}

// Legacy protected mode, 32-bit gate; on a privilege change SSn:ESPn come
// from the TSS (SDM 6.12.1, INT n INTER-PRIVILEGE-LEVEL-INTERRUPT).
DeliveryResult push_legacy_frame(const CpuState& cpu, const Event& e, LinearMemory& mem, const HandlerEntry& h,
                                 Delivered out) {
  const uint32_t ext = ext_bit(e);
  Stack st{.base = cpu.ss.desc.base,
           .sp = cpu.rsp,
           .sp_mask = cpu.ss.desc.db ? kMask32 : kMask16,
           .linear_mask = kMask32,
           .limits = &cpu.ss.desc,
           .who = h.who};
  FrameValues frame = {};
  Fault limit_fault = ss_fault(ext);
  out.ss = cpu.ss;
  if (h.privilege_change) {
    if (cpu.tr.desc.type == kType16BitTssAvailable || cpu.tr.desc.type == kType16BitTssBusy) {
      return DeliveryUnsupported{fmt::format("vector {:#x}: stack switch through a 16-bit TSS", e.vector)};
    }
    const TssRead<StackPointer32> r = read_tss32_stack(mem, cpu.tr, h.new_cpl);
    if (r.status == LookupStatus::kBeyondLimit) return ts(selector_error(cpu.tr.selector, ext));
    if (r.status == LookupStatus::kMemoryFault) return memory_fault(r.fault, ext);
    const uint16_t ss_sel = r.value.ss;
    if ((ss_sel & ~kSelectorRplMask) == 0) return ts(ext);
    const DescriptorLookup ss_lookup = read_descriptor(mem, cpu.gdtr, cpu.ldtr, ss_sel);
    if (ss_lookup.status == LookupStatus::kBeyondLimit || (ss_sel & kSelectorRplMask) != h.new_cpl) {
      return ts(selector_error(ss_sel, ext));
    }
    if (ss_lookup.status == LookupStatus::kMemoryFault) return memory_fault(ss_lookup.fault, ext);
    if (ss_lookup.desc.dpl != h.new_cpl || !ss_lookup.desc.is_writable_data()) return ts(selector_error(ss_sel, ext));
    if (!ss_lookup.desc.p) return ss_fault(selector_error(ss_sel, ext));
    out.ss = Segment{.selector = ss_sel, .desc = ss_lookup.desc};
    st.base = out.ss.desc.base;
    st.sp = r.value.esp;
    st.sp_mask = out.ss.desc.db ? kMask32 : kMask16;
    st.limits = &out.ss.desc;
    limit_fault = ss_fault(selector_error(ss_sel, ext));
    frame = {cpu.ss.selector, cpu.rsp & kMask32};
  }
  for (uint64_t v : {pushed_rflags(cpu, e) & kMask32, uint64_t{cpu.cs.selector}, return_address(cpu, e, kMask32)})
    frame.push_back(v);
  if (h.push_error) frame.push_back(e.error_code);
  // SDM INT n: the room on the stack is checked before the entry point.
  for (size_t i = 0; i < frame.size(); ++i) {
    if (!within_limit(*st.limits, (st.sp - (i + 1) * 4) & st.sp_mask, 4)) return limit_fault;
  }
  if (h.gate.offset > h.cs.effective_limit()) return gp(ext);
  if (auto f = push_frame(mem, st, frame, 4, limit_fault, ext, out)) return *f;
  out.rip = h.gate.offset;
  return out;
}

// SDM Vol. 2A INT n, PROTECTED-MODE and IA-32e mode; Vol. 3A 6.12, 6.14.
DeliveryResult deliver_protected(const CpuState& cpu, const Event& e, LinearMemory& mem) {
  const bool ia32e = is_ia32e(cpu.mode);
  if (!ia32e && (cpu.rflags & kFlagVm)) {
    return DeliveryUnsupported{fmt::format("vector {:#x}: delivery from virtual-8086 mode", e.vector)};
  }
  HandlerEntry h;
  if (auto end = read_gate(cpu, e, mem, h.gate)) return *end;
  const uint16_t cs_sel = h.gate.selector;
  if (auto end = read_handler_code(cpu, e, mem, cs_sel, h.cs)) return *end;

  // SDM 6.12.1: a conforming segment runs at the current CPL; a
  // non-conforming one at its DPL, switching stacks when that is lower.
  const bool conforming = h.cs.is_conforming_code();
  h.new_cpl = conforming ? cpu.cpl : h.cs.dpl;
  h.privilege_change = !conforming && h.cs.dpl < cpu.cpl;
  h.push_error = e.kind == EventKind::kHardwareException && pushes_error_code(e.vector);
  h.who = Accessor{.cpl = h.new_cpl, .implicit_supervisor = h.new_cpl == 0, .stack = true};

  Delivered out;
  out.mode = ia32e ? CpuMode::kLong64 : CpuMode::kProtected;
  out.cpl = h.new_cpl;
  out.cs = Segment{.selector = static_cast<uint16_t>((cs_sel & ~kSelectorRplMask) | h.new_cpl), .desc = h.cs};
  const bool interrupt_gate = h.gate.type == kType32BitInterruptGate;
  out.rflags = cpu.rflags & ~(kFlagsClearedByGate | (interrupt_gate ? kFlagIf : 0));
  return ia32e ? push_ia32e_frame(cpu, e, mem, h, out) : push_legacy_frame(cpu, e, mem, h, out);
}

}  // namespace

bool pushes_error_code(uint8_t vector) {
  switch (vector) {
    case kDoubleFault:
    case kInvalidTss:
    case kSegmentNotPresent:
    case kStackFault:
    case kGeneralProtection:
    case kPageFault:
    case kAlignmentCheck:
    case kControlProtection:
      return true;
    default:
      return false;
  }
}

Event Event::from_fault(const Fault& f) {
  return Event{.kind = EventKind::kHardwareException,
               .vector = f.vector,
               .error_code = f.error_code.value_or(0),
               .instruction_length = 0,
               .cr2 = f.cr2};
}

std::string describe(const Event& e) {
  switch (e.kind) {
    case EventKind::kExternalInterrupt:
      return fmt::format("INTR {:#x}", e.vector);
    case EventKind::kNmi:
      return "NMI";
    case EventKind::kSoftwareInterrupt:
      return fmt::format("INT {:#x}", e.vector);
    case EventKind::kSoftwareException:
      return e.vector == kBreakpoint ? "INT3" : e.vector == kOverflow ? "INTO" : fmt::format("INT {:#x}", e.vector);
    case EventKind::kPrivilegedSoftwareException:
      return "INT1";
    case EventKind::kHardwareException:
      break;
  }
  std::string s = exception_mnemonic(e.vector);
  if (e.vector == kPageFault) return s + fmt::format("({:#x}, cr2={:#x})", e.error_code, e.cr2);
  if (pushes_error_code(e.vector)) return s + fmt::format("({:#x})", e.error_code);
  return s;
}

std::string exception_mnemonic(uint32_t vector) {
  // SDM Vol. 3A table 6-1; 9 (coprocessor segment overrun) and 15 are reserved.
  static constexpr const char* kNames[] = {"#DE", "#DB", "NMI", "#BP", "#OF", "#BR", "#UD", "#NM", "#DF", nullptr, "#TS",
                                           "#NP", "#SS", "#GP", "#PF", nullptr, "#MF", "#AC", "#MC", "#XM", "#VE", "#CP"};
  const char* name = vector < std::size(kNames) ? kNames[vector] : nullptr;
  return name ? name : fmt::format("exception {:#x}", vector);
}

DeliveryResult deliver_event(const CpuState& cpu, const Event& event, LinearMemory& mem) {
  return cpu.mode == CpuMode::kReal ? deliver_real(cpu, event, mem) : deliver_protected(cpu, event, mem);
}

// SDM Vol. 3A 6.15, table 6-4.
ExceptionClass classify_vector(uint8_t vector) {
  switch (vector) {
    case kDivideError:
    case kInvalidTss:
    case kSegmentNotPresent:
    case kStackFault:
    case kGeneralProtection:
      return ExceptionClass::kContributory;
    case kPageFault:
      return ExceptionClass::kPageFault;
    case kDoubleFault:
      return ExceptionClass::kDoubleFault;
    default:
      return ExceptionClass::kBenign;
  }
}

ExceptionClass classify(const Event& e) {
  return e.kind == EventKind::kHardwareException ? classify_vector(e.vector) : ExceptionClass::kBenign;
}

// SDM Vol. 3A 6.15, table 6-5; a fault while delivering #DF is a shutdown
// (Interrupt 8, "Exception Class: Abort").
Combination combine(ExceptionClass first, ExceptionClass second) {
  switch (first) {
    case ExceptionClass::kDoubleFault:
      return Combination::kTripleFault;
    case ExceptionClass::kBenign:
      return Combination::kSerial;
    case ExceptionClass::kContributory:
      return second == ExceptionClass::kContributory ? Combination::kDoubleFault : Combination::kSerial;
    case ExceptionClass::kPageFault:
      return second == ExceptionClass::kBenign ? Combination::kSerial : Combination::kDoubleFault;
  }
  return Combination::kSerial;
}

DeliveryOutcome deliver_with_combination(const CpuState& cpu, const Event& event, LinearMemory& mem) {
  std::vector<Event> chain = {event};
  auto shutdown = [&](std::string why) {
    std::string line = "triple fault: ";
    for (size_t i = chain.size(); i-- > 0;) {
      line += describe(chain[i]);
      if (i > 0) line += " while delivering ";
    }
    return TripleFault{.chain = chain, .description = line + why};
  };
  // Faults raised by delivery are contributory or #PF, so every chain
  // reaches #DF and then shutdown within a few steps; the bound only guards
  // against a LinearMemory that returns benign faults forever.
  constexpr int kMaxSteps = 8;
  for (int step = 0; step < kMaxSteps; ++step) {
    DeliveryResult r = deliver_event(cpu, chain.back(), mem);
    if (auto* d = std::get_if<Delivered>(&r)) return std::move(*d);
    if (auto* u = std::get_if<DeliveryUnsupported>(&r)) return std::move(*u);
    const Event second = Event::from_fault(std::get<Fault>(r));
    const Combination c = combine(classify(chain.back()), classify(second));
    if (c == Combination::kTripleFault) {
      chain.push_back(second);
      return shutdown("");
    }
    chain.push_back(c == Combination::kSerial
                        ? second
                        : Event{.kind = EventKind::kHardwareException, .vector = kDoubleFault, .error_code = 0});
  }
  return shutdown(" (no progress)");
}

}  // namespace topolab::x86
