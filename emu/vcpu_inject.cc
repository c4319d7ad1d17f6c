// SPDX-License-Identifier: GPL-2.0-or-later
// Interrupt and exception delivery. The rules are arch/event_delivery (pure,
// SDM Vol. 3A chapter 6: IDT gates, privilege changes through the TSS, IST,
// error codes, #DF and the triple fault); this part takes a snapshot of the
// engine for them, gives them the guest's memory through its own paging
// (arch/page_walker), and loads what they decide into the engine. Unicorn
// never vectors an event itself (docs/unicorn.md): it stops, or calls the
// interrupt hook, and leaves the rest to us.
#include "emu/vcpu_engine.h"

namespace topolab {

namespace {

// The descriptor cache of LDTR or TR as Unicorn reports it: base, limit in
// bytes, and QEMU's flags word, which holds bits 8-23 of the descriptor's
// high dword (type, S, DPL, P, AVL, L, D/B, G: SDM figure 3-8).
x86::Segment segment_from_cache(const uc_x86_mmr& m) {
  x86::SegmentDescriptor d = x86::decode_descriptor(uint64_t{m.flags} << 32);
  d.base = m.base;
  d.limit = m.limit;  // already in bytes: keep G clear so effective_limit() is the limit
  d.g = false;
  return {static_cast<uint16_t>(m.selector), d};
}

// A guest linear memory that remembers the last #PF it raised, so that CR2
// can be set for a page fault that delivery itself raised.
class RecordingMemory final : public x86::LinearMemory {
 public:
  explicit RecordingMemory(x86::LinearMemory& inner) : inner_(inner) {}
  std::optional<x86::Fault> read(uint64_t linear, void* out, size_t len, x86::Accessor who) override {
    return note(inner_.read(linear, out, len, who));
  }
  std::optional<x86::Fault> write(uint64_t linear, const void* in, size_t len, x86::Accessor who) override {
    return note(inner_.write(linear, in, len, who));
  }
  std::optional<uint64_t> page_fault_address;

 private:
  std::optional<x86::Fault> note(std::optional<x86::Fault> f) {
    if (f && f->vector == x86::kPageFault) page_fault_address = f->cr2;
    return f;
  }
  x86::LinearMemory& inner_;
};

}  // namespace

// What the delivery rules read of the CPU. CS and SS are not readable from
// Unicorn beyond their selectors, so their descriptors come from the
// guest's GDT/LDT (the CPU loaded them from there, unless the guest edited
// the entry since), or, for the Multiboot state, whose GDTR is empty, the
// flat segments the loader set up.
x86::CpuState UnicornVcpu::Engine::cpu_state() {
  x86::PagedMemory memory = linear_memory();
  return cpu_state(memory);
}

// One batch read of the registers (each uc_reg_read is a call into the
// engine), and the descriptors through `memory`, which the caller goes on
// using for the delivery.
x86::CpuState UnicornVcpu::Engine::cpu_state(x86::PagedMemory& memory) {
  x86::CpuState s;
  uint64_t cr0 = 0, cs_selector = 0, ss_selector = 0;
  uc_x86_mmr gdtr{}, idtr{}, ldtr{}, tr{};
  int regs[] = {UC_X86_REG_CR0, UC_X86_REG_RIP, UC_X86_REG_RSP, UC_X86_REG_RFLAGS, UC_X86_REG_CS, UC_X86_REG_SS,
                UC_X86_REG_GDTR, UC_X86_REG_IDTR, UC_X86_REG_LDTR, UC_X86_REG_TR};
  void* values[] = {&cr0, &s.rip, &s.rsp, &s.rflags, &cs_selector, &ss_selector, &gdtr, &idtr, &ldtr, &tr};
  check(uc_reg_read_batch(uc, regs, values, static_cast<int>(std::size(regs))), "uc_reg_read_batch (CPU state)");
  const bool long_mode = memory.state().efer & x86::kEferLma;
  s.gdtr = {gdtr.base, gdtr.limit};
  s.idtr = {idtr.base, idtr.limit};
  s.ldtr = segment_from_cache(ldtr);
  s.tr = segment_from_cache(tr);
  const auto cs = static_cast<uint16_t>(cs_selector);
  const auto ss = static_cast<uint16_t>(ss_selector);
  if (!(cr0 & x86::kCr0Pe)) {
    s.mode = x86::CpuMode::kReal;
    s.cs = {cs, x86::flat_data(0)};
    s.cs.desc.base = uint64_t{cs} << 4;
    s.ss = {ss, x86::flat_data(0)};
    s.ss.desc.base = uint64_t{ss} << 4;
    return s;
  }
  s.cpl = cs & x86::kSelectorRplMask;
  auto descriptor = [&](uint16_t selector, x86::SegmentDescriptor fallback) {
    x86::DescriptorLookup d = x86::read_descriptor(memory, s.gdtr, s.ldtr, selector);
    return d.status == x86::LookupStatus::kOk && d.desc.p ? d.desc : fallback;
  };
  s.cs = {cs, descriptor(cs, x86::flat_code(s.cpl, long_mode))};
  s.ss = {ss, (ss & x86::kSelectorIndexMask) || !long_mode ? descriptor(ss, x86::flat_data(s.cpl)) : x86::SegmentDescriptor{}};
  s.mode = !long_mode ? x86::CpuMode::kProtected : s.cs.desc.l ? x86::CpuMode::kLong64 : x86::CpuMode::kCompatibility;
  return s;
}

// Delivers `event` through the guest's IVT or IDT, with #DF and triple
// fault as the SDM combines faults raised on the way. `origin` says what
// raised the event, for the line a failure prints.
std::optional<VcpuExit> UnicornVcpu::Engine::deliver(const x86::Event& event, const std::string& origin) {
  pause_loop.forget();  // the delivery stores its frame
  loop_watch.saw_effect();
  x86::PagedMemory paged = linear_memory();
  const x86::CpuState before = cpu_state(paged);
  RecordingMemory memory(paged);
  if (event.vector == x86::kPageFault && event.kind == x86::EventKind::kHardwareException)
    memory.page_fault_address = event.cr2;
  const x86::DeliveryOutcome outcome = x86::deliver_with_combination(before, event, memory);
  const uint64_t linear = before.cs.desc.base + before.rip;
  if (const auto* triple = std::get_if<x86::TripleFault>(&outcome))
    return exit_at(VcpuExit::Reason::TripleFault, before.rip,
                   fmt::format("cpu {} {} (the first raised by {} at {:#x}: {})", index, triple->description, origin,
                               linear, describe(linear)));
  if (const auto* unsupported = std::get_if<x86::DeliveryUnsupported>(&outcome))
    return exit_at(VcpuExit::Reason::Unsupported, before.rip,
                   fmt::format("cpu {} cannot deliver {} (raised by {} at {:#x}): {}", index, x86::describe(event),
                               origin, linear, unsupported->reason));
  const auto& delivered = std::get<x86::Delivered>(outcome);
  if (memory.page_fault_address) write_reg(UC_X86_REG_CR2, *memory.page_fault_address);
  if (std::optional<std::string> why = load_delivered(before, delivered))
    return exit_at(VcpuExit::Reason::Unsupported, before.rip,
                   fmt::format("cpu {} cannot enter the handler of {} (raised by {} at {:#x}): {}", index,
                               x86::describe(event), origin, linear, *why));
  shadow = false;
  if (event.kind == x86::EventKind::kHardwareException) host.exception_taken(event.vector);
  return std::nullopt;
}

// Loads the handler's state. The frame is already in guest memory (the
// rules wrote it). A CS or SS that changes goes through a segment load the
// engine itself performs (ProtectedModeSegmentLoader), which also sets the
// new CPL; in real mode CS is loaded as real mode does.
std::optional<std::string> UnicornVcpu::Engine::load_delivered(const x86::CpuState& before, const x86::Delivered& d) {
  if (d.mode == x86::CpuMode::kReal) {
    RealModeSegmentLoader::for_this_thread().load(uc, {{UC_X86_REG_CS, d.cs.selector}});
    known_cs = {d.cs.selector, uint64_t{d.cs.selector} << 4};
  } else if (!(d.cs == before.cs && d.ss == before.ss)) {
    if (std::optional<std::string> why =
            ProtectedModeSegmentLoader::for_this_thread().load(uc, ram, d.cs.selector, d.ss.selector))
      return why;
    known_cs = {d.cs.selector, d.cs.desc.l ? 0 : d.cs.desc.base};
  }
  write_reg(UC_X86_REG_RSP, d.rsp);
  write_reg(UC_X86_REG_RFLAGS, d.rflags);
  write_reg(UC_X86_REG_RIP, d.rip);
  return std::nullopt;
}

// The machine's injections (SDM Vol. 3A 6.12 and 20.1.4), as the CPU takes
// them at an instruction boundary.
Injection UnicornVcpu::Engine::inject(const x86::Event& event) {
  if (waits_for_sipi) return {false, x86::describe(event) + ": the vCPU waits for SIPI"};
  if (std::optional<VcpuExit> failed = deliver(event, "the machine")) return {false, failed->detail};
  return {true, {}};
}

}  // namespace topolab
