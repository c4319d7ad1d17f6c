// SPDX-License-Identifier: GPL-2.0-or-later
// Registers and MSRs, segments, the Multiboot state, INIT and SIPI.
#include "emu/vcpu_engine.h"
#include "model/cpu_state_msrs.h"

namespace topolab {

// ---------------------------------------------------------------------------
// Registers and MSRs.

uint64_t UnicornVcpu::Engine::read_reg(int reg) const {
  uint64_t value = 0;
  check(uc_reg_read(uc, reg, &value), "uc_reg_read");
  return value;
}

namespace {

constexpr std::pair<x86_reg, int> kCapstoneToUnicorn[] = {
      {X86_REG_RAX, UC_X86_REG_RAX}, {X86_REG_RBX, UC_X86_REG_RBX}, {X86_REG_RCX, UC_X86_REG_RCX},
      {X86_REG_RDX, UC_X86_REG_RDX}, {X86_REG_RSI, UC_X86_REG_RSI}, {X86_REG_RDI, UC_X86_REG_RDI},
      {X86_REG_RBP, UC_X86_REG_RBP}, {X86_REG_RSP, UC_X86_REG_RSP}, {X86_REG_R8, UC_X86_REG_R8},
      {X86_REG_R9, UC_X86_REG_R9},   {X86_REG_R10, UC_X86_REG_R10}, {X86_REG_R11, UC_X86_REG_R11},
      {X86_REG_R12, UC_X86_REG_R12}, {X86_REG_R13, UC_X86_REG_R13}, {X86_REG_R14, UC_X86_REG_R14},
      {X86_REG_R15, UC_X86_REG_R15}, {X86_REG_RIP, UC_X86_REG_RIP}};

}  // namespace

uint64_t UnicornVcpu::Engine::read_capstone_reg(x86_reg reg) const {
  for (const auto& [capstone, unicorn] : kCapstoneToUnicorn)
    if (capstone == reg) return read_reg(unicorn);
  return 0;
}

void UnicornVcpu::Engine::write_capstone_reg(x86_reg reg, uint64_t value) {
  for (const auto& [capstone, unicorn] : kCapstoneToUnicorn)
    if (capstone == reg) return write_reg(unicorn, value);
  throw std::logic_error("write_capstone_reg: not a general register");
}

void UnicornVcpu::Engine::write_reg(int reg, uint64_t value) { check(uc_reg_write(uc, reg, &value), "uc_reg_write"); }

uint64_t UnicornVcpu::Engine::read_cpu_msr(uint32_t msr) const {
  uc_x86_msr value{.rid = msr, .value = 0};
  check(uc_reg_read(uc, UC_X86_REG_MSR, &value), "uc_reg_read (MSR)");
  return value.value;
}

void UnicornVcpu::Engine::write_cpu_msr(uint32_t msr, uint64_t value) {
  uc_x86_msr reg{.rid = msr, .value = value};
  check(uc_reg_write(uc, UC_X86_REG_MSR, &reg), "uc_reg_write (MSR)");
}

std::optional<uint64_t> UnicornVcpu::Engine::read_msr(uint32_t msr) {
  if (is_cpu_state_msr(msr)) {
    if (!host.msr_announced(msr)) return std::nullopt;
    return read_cpu_msr(msr);
  }
  return host.read_msr(msr);
}

// Unicorn's own WRMSR drops what it does not like without a fault; the
// model's rule raises #GP(0) where hardware does (reserved EFER bits, LME
// under paging, non-canonical bases and targets, reserved PAT types).
bool UnicornVcpu::Engine::write_msr(uint32_t msr, uint64_t value) {
  if (!is_cpu_state_msr(msr)) return host.write_msr(msr, value);
  if (!host.msr_announced(msr)) return false;
  const CpuidQuery cpuid = [this](uint32_t leaf, uint32_t subleaf) { return host.describe_cpuid(leaf, subleaf); };
  const std::optional<uint64_t> accepted = check_cpu_state_msr_write(
      cpuid, msr, value, {.efer = read_cpu_msr(x86::kMsrEfer), .cr0 = read_reg(UC_X86_REG_CR0)});
  if (!accepted) return false;
  write_cpu_msr(msr, *accepted);
  return true;
}

// RDMSR, RDTSC and RDTSCP clear the upper halves of RAX and RDX in 64-bit mode.
void UnicornVcpu::Engine::write_edx_eax(uint64_t value) {
  write_reg(UC_X86_REG_RAX, static_cast<uint32_t>(value));
  write_reg(UC_X86_REG_RDX, value >> 32);
}

// Unicorn 2.0.1 loads a segment descriptor on a CS/DS/ES/SS write only in
// an engine opened in 16- or 32-bit mode; in a UC_MODE_64 engine the write
// sets the selector alone and the hidden base, limit and D bit stay. So a
// scratch UC_MODE_32 engine loads flat descriptors from a GDT in its own
// memory, and its CPU context (registers, descriptor caches, CR0, EFER) is
// copied into ours, as INIT/SIPI do (docs/unicorn.md, "Every behaviour relied on").
void UnicornVcpu::Engine::load_flat_protected_mode(uint16_t code, uint16_t data) {
  UcHandle scratch(UC_MODE_32);
  uc_engine* s = scratch.get();
  // A table holding just the two descriptors, at the selectors asked for.
  std::array<uint64_t, 4> gdt{};
  gdt.at(code >> 3) = x86::encode_descriptor(x86::flat_code(0, false));
  gdt.at(data >> 3) = x86::encode_descriptor(x86::flat_data(0));
  check(uc_mem_map(s, 0, kPageSize, UC_PROT_ALL), "uc_mem_map (scratch)");
  check(uc_mem_write(s, 0, gdt.data(), sizeof gdt), "uc_mem_write (scratch GDT)");
  uc_x86_mmr gdtr{.selector = 0, .base = 0, .limit = sizeof gdt - 1, .flags = 0};
  check(uc_reg_write(s, UC_X86_REG_GDTR, &gdtr), "uc_reg_write (scratch GDTR)");
  check(uc_reg_write(s, UC_X86_REG_CS, &code), "uc_reg_write (scratch CS)");
  for (int reg : {UC_X86_REG_DS, UC_X86_REG_ES, UC_X86_REG_SS, UC_X86_REG_FS, UC_X86_REG_GS})
    check(uc_reg_write(s, reg, &data), "uc_reg_write (scratch data segment)");

  UcContext(s).restore_into(uc);
}

void UnicornVcpu::Engine::enter_flat_protected_mode(uint32_t entry, uint16_t code, uint16_t data,
                                                    const uc_x86_mmr& gdtr) {
  // Leaving protected mode makes Unicorn flush its TLB (cpu_x86_update_cr0),
  // which copying in a context does not: no stale paging entry survives.
  write_reg(UC_X86_REG_CR0, 0);
  load_flat_protected_mode(code, data);
  check(uc_reg_write(uc, UC_X86_REG_GDTR, &gdtr), "uc_reg_write (GDTR)");
  write_reg(UC_X86_REG_CR4, 0);  // as after reset, and as QEMU's loaders leave it
  write_reg(UC_X86_REG_RFLAGS, kRflagsInterruptsOff);
  write_reg(UC_X86_REG_RIP, entry);
  known_cs = {code, 0};
  shadow = false;
  waits_for_sipi = false;
  flush_translations();
}

void UnicornVcpu::Engine::enter_multiboot(uint32_t entry, uint32_t eax, uint32_t ebx) {
  enter_flat_protected_mode(entry, kMultibootCodeSelector, kMultibootDataSelector, uc_x86_mmr{});
  write_reg(UC_X86_REG_RAX, eax);
  write_reg(UC_X86_REG_RBX, ebx);
}

void UnicornVcpu::Engine::enter_linux32(uint32_t entry, uint32_t boot_params, uint32_t gdt, uint16_t gdt_limit) {
  enter_flat_protected_mode(entry, kLinuxBootCodeSelector, kLinuxBootDataSelector,
                            uc_x86_mmr{.selector = 0, .base = gdt, .limit = gdt_limit, .flags = 0});
  write_reg(UC_X86_REG_RSI, boot_params);
  for (int reg : {UC_X86_REG_RBP, UC_X86_REG_RDI, UC_X86_REG_RBX}) write_reg(reg, 0);
}

// ---------------------------------------------------------------------------
// Segments, INIT and SIPI.

uc_x86_mmr UnicornVcpu::Engine::read_mmr(int reg) const {
  uc_x86_mmr value{};
  check(uc_reg_read(uc, reg, &value), "uc_reg_read (descriptor table register)");
  return value;
}

// The GDT or LDT entry of `selector`, read through the guest's paging (the
// table base is linear). nullopt for the null selector and for an entry
// beyond the table limit or on an unmapped page.
std::optional<x86::SegmentDescriptor> UnicornVcpu::Engine::read_descriptor(uint16_t selector) {
  if ((selector & ~3u) == 0) return std::nullopt;
  const uc_x86_mmr table = read_mmr(selector & 4 ? UC_X86_REG_LDTR : UC_X86_REG_GDTR);
  const uint64_t index = selector & ~7u;
  if (index + 7 > table.limit) return std::nullopt;
  std::array<uint8_t, 8> bytes;
  if (!peek_linear_into(table.base + index, bytes)) return std::nullopt;
  uint64_t raw = 0;
  std::memcpy(&raw, bytes.data(), 8);
  return x86::decode_descriptor(raw);
}

// ---------------------------------------------------------------------------
// Guest memory through the guest's paging.

x86::PagingState UnicornVcpu::Engine::paging_state() {
  if (maxphyaddr == 0) {
    // CPUID.80000008H:EAX[7:0] when the model has the leaf, else 36 (SDM 4.1.4).
    const CpuidRegs max = host.describe_cpuid(0x8000'0000, 0);
    maxphyaddr = max.eax >= 0x8000'0008 ? host.describe_cpuid(0x8000'0008, 0).eax & 0xFF : 36;
    if (maxphyaddr < 32 || maxphyaddr > 52) maxphyaddr = 36;
  }
  // Unicorn 2.1.3 has no register for PKRU, so the host's own walks see
  // every protection key allowed (docs/deviations.md); the engine's own
  // accesses check PKRU themselves.
  const uint64_t pkru = 0;
  uint64_t cr0 = 0, cr3 = 0, cr4 = 0, rflags = 0;
  int regs[] = {UC_X86_REG_CR0, UC_X86_REG_CR3, UC_X86_REG_CR4, UC_X86_REG_RFLAGS};
  void* values[] = {&cr0, &cr3, &cr4, &rflags};
  check(uc_reg_read_batch(uc, regs, values, 4), "uc_reg_read_batch (paging state)");
  return {.cr0 = cr0,
          .cr3 = cr3,
          .cr4 = cr4,
          .efer = read_cpu_msr(x86::kMsrEfer),
          .rflags = rflags,
          .pkru = static_cast<uint32_t>(pkru),
          .maxphyaddr = maxphyaddr};
}

std::optional<std::vector<uint8_t>> UnicornVcpu::Engine::peek_linear(uint64_t linear, size_t len) {
  std::vector<uint8_t> bytes(len);
  if (!peek_linear_into(linear, bytes)) return std::nullopt;
  return bytes;
}

bool UnicornVcpu::Engine::peek_linear_into(uint64_t linear, std::span<uint8_t> out) {
  // The host's look checks no rights: without SMAP and protection keys a
  // supervisor read reaches every present page (a user page the guest is
  // executing from, with SMAP on, was refused here).
  x86::PagingState state = paging_state();
  state.cr4 &= ~(x86::kCr4Smap | x86::kCr4Pke);
  const size_t len = out.size();
  size_t done = 0;
  while (done < len) {
    const uint64_t at = linear + done;
    const x86::WalkResult walk =
        x86::translate(physical, state, at, x86::Access::kRead, x86::Accessor{.cpl = 0, .implicit_supervisor = true});
    if (!walk.ok()) return false;
    const size_t chunk = std::min<uint64_t>(len - done, kPageSize - (at % kPageSize));
    physical.read(walk.translation.physical, out.data() + done, chunk);
    done += chunk;
  }
  return true;
}

std::optional<uint8_t> UnicornVcpu::Engine::peek_byte(uint64_t linear) {
  uint8_t byte = 0;
  if (!peek_linear_into(linear, std::span(&byte, 1))) return std::nullopt;
  return byte;
}

// CS.RPL is the CPL after every architectural CS load; real mode is ring 0.
unsigned UnicornVcpu::Engine::current_cpl() {
  if (!(read_reg(UC_X86_REG_CR0) & x86::kCr0Pe)) return 0;
  return read_reg(UC_X86_REG_CS) & 3;
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
uint64_t UnicornVcpu::Engine::code_base() {
  const auto selector = static_cast<uint16_t>(read_reg(UC_X86_REG_CS));
  uint64_t base = uint64_t{selector} << 4;
  if (read_reg(UC_X86_REG_CR0) & x86::kCr0Pe) {
    if (const std::optional<x86::SegmentDescriptor> cs = read_descriptor(selector); cs && cs->p && cs->is_code()) {
      const bool long_mode = read_cpu_msr(x86::kMsrEfer) & x86::kEferLma;
      base = long_mode && cs->l ? 0 : cs->base;
    } else if (selector == known_cs.selector) {
      base = known_cs.base;
    }
  }
  known_cs = {selector, base};
  return base;
}

void UnicornVcpu::Engine::reset_for_init() {
  pause_loop.forget();
  loop_watch.saw_effect();
  nmi_blocked = false;  // INIT clears NMI blocking (SDM table 9-1)
  // The context brings real mode with it; the writes below set values whose
  // hidden effects that context already has.
  RealModeSegmentLoader::for_this_thread().enter_real_mode(uc);
  write_reg(UC_X86_REG_CR0, kCr0AfterInit);
  write_cpu_msr(x86::kMsrEfer, 0);
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

void UnicornVcpu::Engine::start_in_real_mode(uint16_t selector, uint16_t ip) {
  if (!waits_for_sipi)
    throw std::logic_error(fmt::format("cpu{}: SIPI without INIT (the machine ignores a SIPI to a running CPU)", index));
  RealModeSegmentLoader::for_this_thread().load(uc, {{UC_X86_REG_CS, selector}});
  write_reg(UC_X86_REG_RIP, ip);
  known_cs = {selector, uint64_t{selector} << 4};
  waits_for_sipi = false;
  // The trampoline was written by another vCPU: drop whatever this engine
  // translated (docs/unicorn.md: a store into code another engine translated is not seen).
  flush_translations();
}


}  // namespace topolab
