// SPDX-License-Identifier: GPL-2.0-or-later
#include "emu/vcpu_contexts.h"

#include "arch/descriptors.h"
#include "arch/x86_arch.h"
#include "emu/vcpu_memory_map.h"

#include <cstring>
#include <vector>

namespace topolab::vcpu_internal {

// ---------------------------------------------------------------------------
// Segment loads with a privilege change (see ProtectedModeSegmentLoader).

void ProtectedModeSegmentLoader::map(GuestRam& ram) {
  if (engine_ && mapped_data_ == ram.data() && mapped_regions_ == ram.regions()) return;
  context_.reset();
  engine_ = std::make_unique<UcHandle>(UC_MODE_32);
  context_ = std::make_unique<UcContext>(engine_->get());
  mapped_regions_.clear();
  map_guest_ram(engine_->get(), ram, "uc_mem_map_ptr (segment loader)");
  mapped_data_ = ram.data();
  mapped_regions_ = ram.regions();
}

std::optional<std::string> ProtectedModeSegmentLoader::load(uc_engine* uc, GuestRam& ram, uint16_t cs, uint16_t ss) {
  map(ram);
  uc_engine* s = engine_->get();
  context_->save_from(uc);
  context_->restore_into(s);
  uint64_t cr0 = 0;
  check(uc_reg_read(s, UC_X86_REG_CR0, &cr0), "uc_reg_read (CR0)");
  // Toggling CR0.PE also flushes the scratch engine's TLB, so the GDT is
  // read through the guest's page tables as they are now.
  const uint64_t real = cr0 & ~x86::kCr0Pe;
  check(uc_reg_write(s, UC_X86_REG_CR0, &real), "uc_reg_write (CR0)");
  const uint16_t null = 0;
  check(uc_reg_write(s, UC_X86_REG_SS, &null), "uc_reg_write (SS, real mode)");  // CPL 0
  check(uc_reg_write(s, UC_X86_REG_CR0, &cr0), "uc_reg_write (CR0)");
  if (uc_reg_write(s, UC_X86_REG_CS, &cs) != UC_ERR_OK)
    return fmt::format("the engine cannot load CS {:#x} (an execute-only or otherwise unloadable code segment)", cs);
  if (uc_reg_write(s, UC_X86_REG_SS, &ss) != UC_ERR_OK)
    return fmt::format("the engine cannot load SS {:#x} with CS {:#x}", ss, cs);
  context_->save_from(s);
  context_->restore_into(uc);
  return std::nullopt;
}

// ---------------------------------------------------------------------------
// The engine's error code (see engine_error_code_offset).

namespace {

// Raises #GP(selector) in a scratch 32-bit engine with `mov ds, ax` for a
// selector beyond the GDT limit, and returns the context it stops in.
std::vector<uint8_t> context_after_gp(uint16_t selector) {
  UcHandle scratch(UC_MODE_32);
  uc_engine* s = scratch.get();
  constexpr uint64_t kGdt = 0x1000, kCode = 0x2000;
  check(uc_mem_map(s, 0, 0x4000, UC_PROT_ALL), "uc_mem_map (probe)");
  const uint64_t gdt[3] = {0, x86::encode_descriptor(x86::flat_code(0, false)), x86::encode_descriptor(x86::flat_data(0))};
  check(uc_mem_write(s, kGdt, gdt, sizeof gdt), "uc_mem_write (probe GDT)");
  const uint8_t code[] = {0x66, 0xB8, static_cast<uint8_t>(selector), static_cast<uint8_t>(selector >> 8),  // mov ax, sel
                          0x8E, 0xD8,                                                                      // mov ds, ax
                          0xF4};                                                                          // hlt
  check(uc_mem_write(s, kCode, code, sizeof code), "uc_mem_write (probe code)");
  const uc_x86_mmr gdtr{.selector = 0, .base = kGdt, .limit = sizeof gdt - 1, .flags = 0};
  check(uc_reg_write(s, UC_X86_REG_GDTR, &gdtr), "uc_reg_write (probe GDTR)");
  const uint64_t cr0 = x86::kCr0Pe;
  check(uc_reg_write(s, UC_X86_REG_CR0, &cr0), "uc_reg_write (probe CR0)");
  const uint16_t cs = 0x08, ds = 0x10;  // the GDT's entries 1 and 2
  check(uc_reg_write(s, UC_X86_REG_CS, &cs), "uc_reg_write (probe CS)");
  check(uc_reg_write(s, UC_X86_REG_SS, &ds), "uc_reg_write (probe SS)");
  std::vector<uint8_t> context;
  struct Probe {
    std::vector<uint8_t>* context;
  } probe{&context};
  uc_hook hook;
  auto on_interrupt = +[](uc_engine* uc, uint32_t, void* user) {
    auto& p = *static_cast<Probe*>(user);
    try {  // nothing may unwind through the engine's C frames
      const UcContext saved(uc);
      p.context->assign(saved.bytes(), saved.bytes() + uc_context_size(uc));
    } catch (...) {
      p.context->clear();  // the probe then fails, and says so
    }
    uc_emu_stop(uc);
  };
  check(uc_hook_add(s, &hook, UC_HOOK_INTR, reinterpret_cast<void*>(on_interrupt), &probe, 1, 0), "probe hook");
  uc_emu_start(s, kCode, kCode + sizeof code, 0, 100);
  return context;
}

}  // namespace

std::optional<EngineStateOffsets> engine_state_offsets() {
  static const std::optional<EngineStateOffsets> offsets = []() -> std::optional<EngineStateOffsets> {
    constexpr uint16_t kFirst = 0x1238, kSecond = 0x2470;  // beyond the 3-entry GDT; RPL 0
    constexpr size_t kOldExceptionAfterErrorCode = 112;    // QEMU 5.0's CPUX86State layout
    constexpr int32_t kGeneralProtection = 13, kNone = -1;
    const std::vector<uint8_t> a = context_after_gp(kFirst), b = context_after_gp(kSecond);
    if (a.empty() || a.size() != b.size()) return std::nullopt;
    auto at = [](const std::vector<uint8_t>& c, size_t offset) {
      int32_t v = 0;
      if (offset + 4 <= c.size()) std::memcpy(&v, c.data() + offset, 4);
      return v;
    };
    // RAX holds the selector too, so the field is the one whose neighbour
    // 112 bytes on holds the #GP in flight.
    std::optional<EngineStateOffsets> found;
    for (size_t offset = 0; offset + kOldExceptionAfterErrorCode + 4 <= a.size(); offset += 4) {
      if (at(a, offset) != kFirst || at(b, offset) != kSecond) continue;
      if (at(a, offset + kOldExceptionAfterErrorCode) != kGeneralProtection) continue;
      if (found) return std::nullopt;  // ambiguous
      found = EngineStateOffsets{offset, offset + kOldExceptionAfterErrorCode};
    }
    if (!found) return std::nullopt;
    // A fresh engine has no exception in flight.
    UcHandle fresh(UC_MODE_32);
    const UcContext saved(fresh.get());
    const std::vector<uint8_t> c(saved.bytes(), saved.bytes() + uc_context_size(fresh.get()));
    if (at(c, found->old_exception) != kNone) return std::nullopt;
    return found;
  }();
  return offsets;
}

}  // namespace topolab::vcpu_internal
