// Registers and MSRs, segments, the Multiboot state, INIT and SIPI.
#include "emu/vcpu_engine.h"

namespace topolab {

// ---------------------------------------------------------------------------
// Registers and MSRs.

uint64_t Vcpu::Engine::read_reg(int reg) const {
  uint64_t value = 0;
  check(uc_reg_read(uc, reg, &value), "uc_reg_read");
  return value;
}

void Vcpu::Engine::write_reg(int reg, uint64_t value) { check(uc_reg_write(uc, reg, &value), "uc_reg_write"); }

uint64_t Vcpu::Engine::read_cpu_msr(uint32_t msr) const {
  uc_x86_msr value{.rid = msr, .value = 0};
  check(uc_reg_read(uc, UC_X86_REG_MSR, &value), "uc_reg_read (MSR)");
  return value.value;
}

void Vcpu::Engine::write_cpu_msr(uint32_t msr, uint64_t value) {
  uc_x86_msr reg{.rid = msr, .value = value};
  check(uc_reg_write(uc, UC_X86_REG_MSR, &reg), "uc_reg_write (MSR)");
}

std::optional<uint64_t> Vcpu::Engine::read_msr(uint32_t msr) {
  if (is_cpu_state_msr(msr)) return read_cpu_msr(msr);
  return host.read_msr(msr);
}

bool Vcpu::Engine::write_msr(uint32_t msr, uint64_t value) {
  if (!is_cpu_state_msr(msr)) return host.write_msr(msr, value);
  write_cpu_msr(msr, value);
  return true;
}

// RDMSR, RDTSC and RDTSCP clear the upper halves of RAX and RDX in 64-bit mode.
void Vcpu::Engine::write_edx_eax(uint64_t value) {
  write_reg(UC_X86_REG_RAX, static_cast<uint32_t>(value));
  write_reg(UC_X86_REG_RDX, value >> 32);
}

// Unicorn 2.0.1 loads a segment descriptor on a CS/DS/ES/SS write only in
// an engine opened in 16- or 32-bit mode; in a UC_MODE_64 engine the write
// sets the selector alone and the hidden base, limit and D bit stay. So a
// scratch UC_MODE_32 engine loads flat descriptors from a GDT in its own
// memory, and its CPU context (registers, descriptor caches, CR0, EFER) is
// copied into ours, as the notes do for INIT/SIPI.
void Vcpu::Engine::load_flat_protected_mode() {
  UcHandle scratch(UC_MODE_32);
  uc_engine* s = scratch.get();
  const std::array<uint64_t, 3> gdt = {0, kFlatCode32Descriptor, kFlatDataDescriptor};
  check(uc_mem_map(s, 0, kPageSize, UC_PROT_ALL), "uc_mem_map (scratch)");
  check(uc_mem_write(s, 0, gdt.data(), sizeof gdt), "uc_mem_write (scratch GDT)");
  uc_x86_mmr gdtr{.selector = 0, .base = 0, .limit = sizeof gdt - 1, .flags = 0};
  check(uc_reg_write(s, UC_X86_REG_GDTR, &gdtr), "uc_reg_write (scratch GDTR)");
  const uint16_t code = kMultibootCodeSelector, data = kMultibootDataSelector;
  check(uc_reg_write(s, UC_X86_REG_CS, &code), "uc_reg_write (scratch CS)");
  for (int reg : {UC_X86_REG_DS, UC_X86_REG_ES, UC_X86_REG_SS, UC_X86_REG_FS, UC_X86_REG_GS})
    check(uc_reg_write(s, reg, &data), "uc_reg_write (scratch data segment)");

  UcContext(s).restore_into(uc);
}

void Vcpu::Engine::enter_multiboot(uint32_t entry, uint32_t eax, uint32_t ebx) {
  // Leaving protected mode makes Unicorn flush its TLB (cpu_x86_update_cr0),
  // which copying in a context does not: no stale paging entry survives.
  write_reg(UC_X86_REG_CR0, 0);
  load_flat_protected_mode();
  uc_x86_mmr no_gdt{};
  check(uc_reg_write(uc, UC_X86_REG_GDTR, &no_gdt), "uc_reg_write (GDTR)");
  write_reg(UC_X86_REG_CR4, 0);  // as after reset, and as QEMU's loader leaves it
  write_reg(UC_X86_REG_RFLAGS, kRflagsInterruptsOff);
  write_reg(UC_X86_REG_RAX, eax);
  write_reg(UC_X86_REG_RBX, ebx);
  write_reg(UC_X86_REG_RIP, entry);
  known_cs = {kMultibootCodeSelector, 0};
  shadow = false;
  waits_for_sipi = false;
  flush_translations();
}

// ---------------------------------------------------------------------------
// Segments, INIT and SIPI.

uc_x86_mmr Vcpu::Engine::read_mmr(int reg) const {
  uc_x86_mmr value{};
  check(uc_reg_read(uc, reg, &value), "uc_reg_read (descriptor table register)");
  return value;
}

// The GDT or LDT entry of `selector`, read from RAM (the table base is
// linear, and linear = physical: the notes). nullopt for the null selector
// and for an entry beyond the table limit or outside RAM.
std::optional<SegmentDescriptor> Vcpu::Engine::read_descriptor(uint16_t selector) const {
  if ((selector & ~3u) == 0) return std::nullopt;
  const uc_x86_mmr table = read_mmr(selector & 4 ? UC_X86_REG_LDTR : UC_X86_REG_GDTR);
  const uint64_t index = selector & ~7u;
  if (index + 7 > table.limit || !ram.contains(table.base + index, 8)) return std::nullopt;
  return SegmentDescriptor{ram.read<uint64_t>(table.base + index)};
}

// CS.base, which Unicorn 2.0.1 does not expose (UC_X86_REG_CS reads the
// selector alone), from the architectural state:
// - real mode: selector << 4, which every CS load in real mode sets
//   (SDM Vol. 3A 20.1.1);
// - protected and long mode: the base in the GDT/LDT entry (0 for a 64-bit
//   segment), which is what the CPU loaded unless the guest changed the
//   entry since;
// - a CS the tables do not describe: the last one seen under the same
//   selector (the Multiboot state: flat CS and no GDT), else a CS loaded in
//   real mode just before CR0.PE was set (until the far jump), selector << 4.
uint64_t Vcpu::Engine::code_base() {
  const auto selector = static_cast<uint16_t>(read_reg(UC_X86_REG_CS));
  uint64_t base = uint64_t{selector} << 4;
  if (read_reg(UC_X86_REG_CR0) & kCr0ProtectionEnable) {
    if (const std::optional<SegmentDescriptor> cs = read_descriptor(selector); cs && cs->is_code()) {
      const bool long_mode = read_cpu_msr(kMsrEfer) & kEferLongModeActive;
      base = long_mode && cs->long_mode() ? 0 : cs->base();
    } else if (selector == known_cs.selector) {
      base = known_cs.base;
    }
  }
  known_cs = {selector, base};
  return base;
}

void Vcpu::Engine::reset_for_init() {
  nmi_blocked = false;  // INIT clears NMI blocking (SDM table 9-1)
  // The context brings real mode with it; the writes below set values whose
  // hidden effects that context already has.
  RealModeSegmentLoader::for_this_thread().enter_real_mode(uc);
  write_reg(UC_X86_REG_CR0, kCr0AfterInit);
  write_cpu_msr(kMsrEfer, 0);
  for (int reg : {UC_X86_REG_CR2, UC_X86_REG_CR3, UC_X86_REG_CR4}) write_reg(reg, 0);
  for (int reg : {UC_X86_REG_RAX, UC_X86_REG_RBX, UC_X86_REG_RCX, UC_X86_REG_RDX, UC_X86_REG_RSI, UC_X86_REG_RDI,
                  UC_X86_REG_RBP, UC_X86_REG_RSP, UC_X86_REG_R8, UC_X86_REG_R9, UC_X86_REG_R10, UC_X86_REG_R11,
                  UC_X86_REG_R12, UC_X86_REG_R13, UC_X86_REG_R14, UC_X86_REG_R15})
    write_reg(reg, 0);
  write_reg(UC_X86_REG_RFLAGS, kRflagsInterruptsOff);
  write_reg(UC_X86_REG_DR6, kDr6AfterInit);
  write_reg(UC_X86_REG_DR7, kDr7AfterInit);
  const uc_x86_mmr table{.selector = 0, .base = 0, .limit = kDescriptorTableLimitAfterInit, .flags = 0};
  for (int reg : {UC_X86_REG_GDTR, UC_X86_REG_IDTR, UC_X86_REG_LDTR, UC_X86_REG_TR})
    check(uc_reg_write(uc, reg, &table), "uc_reg_write (descriptor table register)");
  RealModeSegmentLoader::for_this_thread().load(
      uc, {{UC_X86_REG_CS, kResetCodeSelector}, {UC_X86_REG_DS, 0}, {UC_X86_REG_ES, 0}, {UC_X86_REG_SS, 0},
           {UC_X86_REG_FS, 0}, {UC_X86_REG_GS, 0}});
  write_reg(UC_X86_REG_RIP, kResetIp);
  known_cs = {kResetCodeSelector, uint64_t{kResetCodeSelector} << 4};
  shadow = false;
  stop_requested = false;
  waits_for_sipi = true;
}

void Vcpu::Engine::start_at_sipi(uint8_t vector) {
  if (!waits_for_sipi)
    throw std::logic_error(fmt::format("cpu{}: SIPI without INIT (the machine ignores a SIPI to a running CPU)", index));
  const auto selector = static_cast<uint16_t>(vector << 8);
  RealModeSegmentLoader::for_this_thread().load(uc, {{UC_X86_REG_CS, selector}});
  write_reg(UC_X86_REG_RIP, 0);
  known_cs = {selector, uint64_t{selector} << 4};
  waits_for_sipi = false;
  // The trampoline was written by another vCPU: drop whatever this engine
  // translated (the notes, "code written by others").
  flush_translations();
}


}  // namespace topolab
