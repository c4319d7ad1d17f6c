// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/local_apic.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>

namespace topolab {

using namespace apic;

namespace {

using enum ApicAccess;

constexpr uint32_t LVT_DELIVERY_MODE = 7u << 8;
constexpr uint32_t LVT_INPUT_POLARITY = 1u << 13;
constexpr uint32_t LVT_TRIGGER_LEVEL = 1u << 15;
constexpr uint32_t LVT_WRITE_MASK = LVT_VECTOR | LVT_DELIVERY_MODE | LVT_MASKED;
constexpr uint32_t LINT_WRITE_MASK = LVT_WRITE_MASK | LVT_INPUT_POLARITY | LVT_TRIGGER_LEVEL;
constexpr uint32_t ICR_LOW_WRITE_MASK = 0x000ccfff;  // all but delivery status and reserved bits
constexpr uint32_t DFR_RESERVED_ONES = 0x0fffffff;   // DFR[27:0] read as 1s
constexpr uint64_t NS_PER_SECOND = 1'000'000'000;

// SDM table 10-1 (xAPIC) and table 10-6 (x2APIC) side by side. The write
// mask holds the bits software can change; read-only bits (delivery status,
// remote IRR) and reserved bits are outside it, so xAPIC drops them and
// x2APIC raises #GP for them (RsvdZ, SDM 10.12.1.3).
constexpr ApicRegisterInfo kRegisters[] = {
    {REG_ID, 1, "ID", ReadWrite, Read, 0, 0xff000000},
    {REG_VERSION, 1, "VERSION", Read, Read, APIC_VERSION, 0},
    {REG_TPR, 1, "TPR", ReadWrite, ReadWrite, 0, 0xff},
    // Not in x2APIC (KVM agrees): APR, RRD, DFR and ICR high.
    {REG_APR, 1, "APR", Read, None, 0, 0},
    {REG_PPR, 1, "PPR", Read, Read, 0, 0},
    // Any xAPIC write is an EOI; x2APIC requires 0 (empty mask => #GP).
    {REG_EOI, 1, "EOI", Write, Write, 0, 0},
    {REG_RRD, 1, "RRD", Read, None, 0, 0},
    // x2APIC derives the LDR from the ID (SDM 10.12.10.2), read-only.
    {REG_LDR, 1, "LDR", ReadWrite, Read, 0, 0xff000000},
    {REG_DFR, 1, "DFR", ReadWrite, None, 0xffffffff, 0xf0000000},
    {REG_SVR, 1, "SVR", ReadWrite, ReadWrite, 0xff, SVR_VECTOR | SVR_APIC_ENABLED | SVR_FOCUS_DISABLED},
    {REG_ISR, 8, "ISR", Read, Read, 0, 0},
    {REG_TMR, 8, "TMR", Read, Read, 0, 0},
    {REG_IRR, 8, "IRR", Read, Read, 0, 0},
    // The written value is ignored; x2APIC requires 0 (SDM 10.5.3).
    {REG_ESR, 1, "ESR", ReadWrite, ReadWrite, 0, 0},
    {REG_LVT_CMCI, 1, "LVT_CMCI", ReadWrite, ReadWrite, LVT_MASKED, LVT_WRITE_MASK},
    // In x2APIC this row is MSR 0x830, 64 bits wide; wrmsr/rdmsr special-case it.
    {REG_ICR_LOW, 1, "ICR", ReadWrite, ReadWrite, 0, ICR_LOW_WRITE_MASK},
    {REG_ICR_HIGH, 1, "ICR_HIGH", ReadWrite, None, 0, 0xff000000},
    {REG_LVT_TIMER, 1, "LVT_TIMER", ReadWrite, ReadWrite, LVT_MASKED, LVT_VECTOR | LVT_MASKED | LVT_TIMER_MODE},
    {REG_LVT_THERMAL, 1, "LVT_THERMAL", ReadWrite, ReadWrite, LVT_MASKED, LVT_WRITE_MASK},
    {REG_LVT_PERF, 1, "LVT_PERF", ReadWrite, ReadWrite, LVT_MASKED, LVT_WRITE_MASK},
    {REG_LVT_LINT0, 1, "LVT_LINT0", ReadWrite, ReadWrite, LVT_MASKED, LINT_WRITE_MASK},
    {REG_LVT_LINT1, 1, "LVT_LINT1", ReadWrite, ReadWrite, LVT_MASKED, LINT_WRITE_MASK},
    {REG_LVT_ERROR, 1, "LVT_ERROR", ReadWrite, ReadWrite, LVT_MASKED, LVT_VECTOR | LVT_MASKED},
    {REG_TIMER_INITIAL_COUNT, 1, "TIMER_INITIAL_COUNT", ReadWrite, ReadWrite, 0, 0xffffffff},
    {REG_TIMER_CURRENT_COUNT, 1, "TIMER_CURRENT_COUNT", Read, Read, 0, 0},
    {REG_TIMER_DIVIDE_CONFIG, 1, "TIMER_DIVIDE_CONFIG", ReadWrite, ReadWrite, 0, 0xb},
    {REG_SELF_IPI, 1, "SELF_IPI", None, Write, 0, 0xff},
};

constexpr uint32_t kLvtOffsets[] = {REG_LVT_CMCI,  REG_LVT_TIMER, REG_LVT_THERMAL, REG_LVT_PERF,
                                    REG_LVT_LINT0, REG_LVT_LINT1, REG_LVT_ERROR};

// Slot (offset / 16) -> row, built once.
constexpr auto kSlotToRow = [] {
  std::array<int8_t, 64> rows{};
  rows.fill(-1);
  for (size_t i = 0; i < std::size(kRegisters); ++i) {
    for (unsigned k = 0; k < kRegisters[i].count; ++k) rows[(kRegisters[i].offset >> 4) + k] = static_cast<int8_t>(i);
  }
  return rows;
}();

const ApicRegisterInfo* lookup(uint32_t offset) {
  if (offset >= 0x400) return nullptr;
  int8_t row = kSlotToRow[offset >> 4];
  return row < 0 ? nullptr : &kRegisters[row];
}

bool can(ApicAccess have, ApicAccess want) {
  return (static_cast<uint8_t>(have) & static_cast<uint8_t>(want)) != 0;
}

bool is_lvt(uint32_t offset) {
  return std::find(std::begin(kLvtOffsets), std::end(kLvtOffsets), offset) != std::end(kLvtOffsets);
}

// SDM figure 10-10: DCR bits 3,1,0 encode 2, 4, ..., 128, then 1 for 111b.
uint32_t divisor_of(uint32_t dcr) {
  uint32_t code = ((dcr & 8) >> 1) | (dcr & 3);
  return 1u << ((code + 1) & 7);
}

uint32_t x2apic_ldr(uint32_t id) { return ((id >> 4) << 16) | (1u << (id & 0xf)); }

// A time past 2^64 ns never comes: it saturates to the last representable
// instant rather than wrapping to an early one (which fired nothing and, with
// every vCPU halted, left the scheduler at one instant for ever).
uint64_t saturate_ns(unsigned __int128 ns) {
  return ns > std::numeric_limits<uint64_t>::max() ? std::numeric_limits<uint64_t>::max()
                                                   : static_cast<uint64_t>(ns);
}

}  // namespace

std::span<const ApicRegisterInfo> apic_registers() { return kRegisters; }

LocalApic::LocalApic(const LocalApicConfig& config) : config_(config) {
  apic_base_ = kDefaultBase | APIC_BASE_EN | (config_.bsp ? APIC_BASE_BSP : 0);
  power_on_registers();
}

void LocalApic::power_on_registers() {
  std::fill(std::begin(regs_), std::end(regs_), 0u);
  for (const auto& reg : kRegisters) {
    for (unsigned k = 0; k < reg.count; ++k) regs_[(reg.offset >> 4) + k] = reg.reset;
  }
  slot(REG_ID) = (config_.apic_id & 0xff) << 24;
  if (mode() == ApicMode::X2Apic) slot(REG_LDR) = x2apic_ldr(config_.apic_id);
  esr_pending_ = 0;
  timer_ = {};
  tsc_deadline_ = 0;
}

void LocalApic::reset() {
  // SDM 10.4.7.3: INIT leaves the APIC ID alone (even a guest-written one).
  uint32_t id_register = slot(REG_ID);
  power_on_registers();
  slot(REG_ID) = id_register;
}

// --- IA32_APIC_BASE -----------------------------------------------------

ApicMode LocalApic::mode() const {
  if (!(apic_base_ & APIC_BASE_EN)) return ApicMode::Disabled;
  return (apic_base_ & APIC_BASE_EXTD) ? ApicMode::X2Apic : ApicMode::XApic;
}

uint64_t LocalApic::base_address() const { return apic_base_ & APIC_BASE_ADDRESS; }

uint32_t LocalApic::id() const { return mode() == ApicMode::X2Apic ? config_.apic_id : slot(REG_ID) >> 24; }

// SDM 10.12.5.1, figure 10-27: reset -> xAPIC; xAPIC <-> disabled;
// xAPIC -> x2APIC; x2APIC -> disabled. Everything else, EN=0 with EXTD=1,
// and reserved bits raise #GP. The BSP bit is read-only: writes ignore it.
bool LocalApic::set_apic_base(uint64_t value) {
  uint64_t reserved = ~(APIC_BASE_ADDRESS | APIC_BASE_EN | APIC_BASE_EXTD | APIC_BASE_BSP);
  if (!config_.x2apic_supported) reserved |= APIC_BASE_EXTD;
  if (value & reserved) return false;
  bool en = value & APIC_BASE_EN;
  bool extd = value & APIC_BASE_EXTD;
  if (extd && !en) return false;
  ApicMode from = mode();
  ApicMode to = !en ? ApicMode::Disabled : extd ? ApicMode::X2Apic : ApicMode::XApic;
  if (from == ApicMode::X2Apic && to == ApicMode::XApic) return false;
  if (from == ApicMode::Disabled && to == ApicMode::X2Apic) return false;

  apic_base_ = (value & ~APIC_BASE_BSP) | (config_.bsp ? APIC_BASE_BSP : 0);
  // Disabling resets the APIC to its power-on state (SDM 10.4.3: re-enabling
  // finds it as after power-up, software-disabled), including the xAPIC ID.
  if (to == ApicMode::Disabled && from != ApicMode::Disabled) power_on_registers();
  if (to == ApicMode::X2Apic && from == ApicMode::XApic) slot(REG_LDR) = x2apic_ldr(config_.apic_id);
  return true;
}

// --- Register access (shared by MMIO and MSRs) ----------------------------

uint32_t LocalApic::read_register(const ApicRegisterInfo& reg, uint32_t offset, uint64_t now) const {
  switch (reg.offset) {
    case REG_ID:
      return mode() == ApicMode::X2Apic ? config_.apic_id : slot(REG_ID);
    case REG_APR:
      return arbitration_priority();
    case REG_PPR:
      return processor_priority();
    case REG_EOI:
    case REG_RRD:
    case REG_SELF_IPI:
      return 0;
    case REG_TIMER_CURRENT_COUNT:
      return current_count(now);
    default:
      return slot(offset);
  }
}

std::optional<ApicMessage> LocalApic::write_register(const ApicRegisterInfo& reg, uint32_t offset, uint32_t value,
                                                      uint64_t now) {
  uint32_t v = value & reg.write_mask;
  if (is_lvt(reg.offset)) {
    // SDM 10.4.7.2: while software-disabled, LVT mask bits cannot be cleared.
    if (!software_enabled()) v |= LVT_MASKED;
    if (reg.offset == REG_LVT_TIMER) {
      write_lvt_timer(v, now);
    } else {
      slot(offset) = v;
    }
    return std::nullopt;
  }
  switch (reg.offset) {
    case REG_ID:
    case REG_TPR:
    case REG_LDR:
    case REG_ICR_HIGH:
    case REG_TIMER_DIVIDE_CONFIG:
      slot(offset) = v;
      break;
    case REG_DFR:
      slot(offset) = v | DFR_RESERVED_ONES;
      break;
    case REG_SVR:
      slot(offset) = v;
      if (!(v & SVR_APIC_ENABLED)) {
        for (uint32_t lvt : kLvtOffsets) slot(lvt) |= LVT_MASKED;
      }
      break;
    case REG_EOI:
      eoi();
      break;
    case REG_ESR:
      // Write-before-read (SDM 10.5.3): latch what accumulated, start afresh.
      slot(REG_ESR) = esr_pending_;
      esr_pending_ = 0;
      break;
    case REG_ICR_LOW:
      slot(offset) = v;
      return send((static_cast<uint64_t>(slot(REG_ICR_HIGH)) << 32) | v);
    case REG_TIMER_INITIAL_COUNT:
      // SDM 10.5.4.1: ignored in TSC-deadline mode.
      if (timer_mode() == TIMER_MODE_TSC_DEADLINE) break;
      slot(offset) = v;
      arm_count(now);
      break;
    case REG_SELF_IPI: {
      ApicMessage msg{.vector = static_cast<uint8_t>(v),
                      .shorthand = ApicShorthand::Self,
                      .destination = id(),
                      .source_id = id(),
                      .x2apic = true};
      if (msg.vector < 16) {
        raise_error(ESR_SEND_ILLEGAL_VECTOR);
        return std::nullopt;
      }
      return msg;
    }
    default:
      break;  // read-only in this mode: the write is dropped
  }
  return std::nullopt;
}

// --- xAPIC MMIO -------------------------------------------------------------

uint32_t LocalApic::mmio_read(uint32_t offset, unsigned size, uint64_t now) {
  if (!mmio_enabled()) return 0;
  offset &= kMmioSize - 1;
  const ApicRegisterInfo* reg = lookup(offset);
  if (!reg || reg->xapic == None) {
    raise_error(ESR_ILLEGAL_REGISTER_ADDRESS);
    return 0;
  }
  unsigned within = offset & 0xf;
  if ((size != 1 && size != 2 && size != 4) || within + size > 4 || !can(reg->xapic, Read)) return 0;
  uint32_t value = read_register(*reg, offset & ~0xfu, now) >> (8 * within);
  return size == 4 ? value : value & ((1u << (8 * size)) - 1);
}

// Both paths: the write's kind comes from the register alone (a rejected
// write to the ICR still exited), what it caused from the APIC before and
// after.
template <typename Write>
ApicWrite LocalApic::observe_write(ApicWriteKind kind, Write&& write) {
  const std::optional<uint64_t> timer_before = next_timer_event();
  const uint32_t id_before = id();
  eoi_broadcast_.reset();
  ApicWrite result = write();
  result.kind = kind;
  result.eoi_broadcast = eoi_broadcast_;
  eoi_broadcast_.reset();
  result.timer_changed = next_timer_event() != timer_before;
  result.interrupt_pending = pending_vector().has_value();
  result.id_changed = id() != id_before;
  return result;
}

ApicWrite LocalApic::mmio_write(uint32_t offset, unsigned size, uint32_t value, uint64_t now) {
  const uint32_t reg = offset & (kMmioSize - 1) & ~0xfu;
  const ApicWriteKind kind = reg == REG_ICR_LOW                       ? ApicWriteKind::Icr
                             : reg == REG_EOI || reg == REG_TPR ? ApicWriteKind::Virtualized
                                                                     : ApicWriteKind::Trapped;
  return observe_write(kind, [&] { return ApicWrite{.message = write_mmio_register(offset, size, value, now)}; });
}

std::optional<ApicMessage> LocalApic::write_mmio_register(uint32_t offset, unsigned size, uint32_t value, uint64_t now) {
  if (!mmio_enabled()) return std::nullopt;
  offset &= kMmioSize - 1;
  const ApicRegisterInfo* reg = lookup(offset);
  if (!reg || reg->xapic == None) {
    raise_error(ESR_ILLEGAL_REGISTER_ADDRESS);
    return std::nullopt;
  }
  if (size != 4 || (offset & 0xf) != 0 || !can(reg->xapic, Write)) return std::nullopt;
  return write_register(*reg, offset, value, now);
}

ApicWrite LocalApic::write_cr8(uint64_t value, uint64_t now) {
  return observe_write(ApicWriteKind::Virtualized, [&] {
    return ApicWrite{.message = write_register(*lookup(REG_TPR), REG_TPR, static_cast<uint32_t>(value & 0xf) << 4, now)};
  });
}

// --- MSRs -------------------------------------------------------------------

bool LocalApic::is_apic_msr(uint32_t msr) {
  return msr == MSR_IA32_APIC_BASE || msr == MSR_IA32_TSC_DEADLINE ||
         (msr >= MSR_X2APIC_FIRST && msr <= MSR_X2APIC_LAST);
}

std::optional<uint64_t> LocalApic::rdmsr(uint32_t msr, uint64_t now) const {
  if (msr == MSR_IA32_APIC_BASE) return apic_base_;
  // SDM 10.5.4.1: reads 0 outside TSC-deadline mode.
  if (msr == MSR_IA32_TSC_DEADLINE) return timer_mode() == TIMER_MODE_TSC_DEADLINE ? tsc_deadline_ : 0;
  if (msr < MSR_X2APIC_FIRST || msr > MSR_X2APIC_LAST || mode() != ApicMode::X2Apic) return std::nullopt;
  uint32_t offset = (msr - MSR_X2APIC_FIRST) << 4;
  const ApicRegisterInfo* reg = lookup(offset);
  if (!reg || !can(reg->x2apic, Read)) return std::nullopt;
  if (msr == MSR_X2APIC_ICR) return (static_cast<uint64_t>(slot(REG_ICR_HIGH)) << 32) | slot(REG_ICR_LOW);
  return read_register(*reg, offset, now);
}

ApicWrite LocalApic::wrmsr(uint32_t msr, uint64_t value, uint64_t now) {
  const uint32_t reg = (msr - MSR_X2APIC_FIRST) << 4;
  const ApicWriteKind kind = msr == MSR_X2APIC_ICR ? ApicWriteKind::Icr
                             : msr >= MSR_X2APIC_FIRST && msr <= MSR_X2APIC_LAST &&
                                     (reg == REG_EOI || reg == REG_TPR || reg == REG_SELF_IPI)
                                 ? ApicWriteKind::Virtualized
                                 : ApicWriteKind::Trapped;
  return observe_write(kind, [&] { return write_msr_register(msr, value, now); });
}

ApicWrite LocalApic::write_msr_register(uint32_t msr, uint64_t value, uint64_t now) {
  const ApicWrite kFault{.gp = true, .message = std::nullopt};
  if (msr == MSR_IA32_APIC_BASE) {
    const bool ok = set_apic_base(value);
    return {.gp = !ok, .message = std::nullopt, .base_written = ok};
  }
  if (msr == MSR_IA32_TSC_DEADLINE) {
    // Writing 0 disarms; a deadline already past fires at the next on_time().
    if (timer_mode() == TIMER_MODE_TSC_DEADLINE && mode() != ApicMode::Disabled) tsc_deadline_ = value;
    return {};
  }
  if (msr < MSR_X2APIC_FIRST || msr > MSR_X2APIC_LAST || mode() != ApicMode::X2Apic) return kFault;
  uint32_t offset = (msr - MSR_X2APIC_FIRST) << 4;
  const ApicRegisterInfo* reg = lookup(offset);
  if (!reg || !can(reg->x2apic, Write)) return kFault;
  if (msr == MSR_X2APIC_ICR) {
    // One 64-bit register, destination in bits 63:32 (SDM 10.12.9).
    uint32_t low = static_cast<uint32_t>(value);
    if (low & ~reg->write_mask) return kFault;
    slot(REG_ICR_LOW) = low;
    slot(REG_ICR_HIGH) = static_cast<uint32_t>(value >> 32);
    return {.message = send(value)};
  }
  // An LVT's delivery status and remote IRR are read-only, not reserved:
  // writing them changes nothing, as KVM and QEMU take it. Linux's
  // disconnect_bsp_APIC sets both in LINT0 on the way to power-off.
  if (is_lvt(offset)) value &= ~uint64_t{LVT_DELIVERY_STATUS | LVT_REMOTE_IRR};
  if ((value >> 32) != 0 || (value & ~static_cast<uint64_t>(reg->write_mask)) != 0) return kFault;
  return {.message = write_register(*reg, offset, static_cast<uint32_t>(value), now)};
}

// --- Sending ----------------------------------------------------------------

std::optional<ApicMessage> LocalApic::send(uint64_t icr) {
  bool x2apic = mode() == ApicMode::X2Apic;
  ApicMessage msg{
      .delivery_mode = static_cast<ApicDeliveryMode>((icr >> ICR_DELIVERY_MODE_SHIFT) & 7),
      .vector = static_cast<uint8_t>(icr & ICR_VECTOR),
      .destination_mode = (icr & ICR_DESTINATION_LOGICAL) ? ApicDestinationMode::Logical : ApicDestinationMode::Physical,
      .level_assert = (icr & ICR_LEVEL_ASSERT) != 0,
      .trigger_mode = (icr & ICR_TRIGGER_LEVEL) ? ApicTriggerMode::Level : ApicTriggerMode::Edge,
      .shorthand = static_cast<ApicShorthand>((icr >> ICR_SHORTHAND_SHIFT) & 3),
      .destination = x2apic ? static_cast<uint32_t>(icr >> 32) : static_cast<uint32_t>(icr >> 56),
      .source_id = id(),
      .x2apic = x2apic,
  };
  // SDM 10.5.3 sets "send illegal vector" but does not say whether the
  // message still leaves. We do not send it: every receiver would drop it
  // anyway, and the sender's ESR is what the guest can observe.
  bool fixed = msg.delivery_mode == ApicDeliveryMode::Fixed || msg.delivery_mode == ApicDeliveryMode::LowestPriority;
  if (fixed && msg.vector < 16) {
    raise_error(ESR_SEND_ILLEGAL_VECTOR);
    return std::nullopt;
  }
  return msg;
}

// An APIC error interrupt is raised each time an error is detected (SDM
// 10.5.3), whatever ESR already holds. An illegal vector in the error LVT
// itself only records "receive illegal vector", so errors cannot recurse.
void LocalApic::raise_error(uint32_t esr_bits) {
  esr_pending_ |= esr_bits;
  uint32_t lvt = slot(REG_LVT_ERROR);
  if (lvt & LVT_MASKED) return;
  uint8_t vector = lvt & LVT_VECTOR;
  if (vector < 16) {
    esr_pending_ |= ESR_RECEIVE_ILLEGAL_VECTOR;
    return;
  }
  set_bit(REG_IRR, vector, true);
  set_bit(REG_TMR, vector, false);
}

void LocalApic::deliver_local(uint32_t lvt_offset) {
  uint32_t lvt = slot(lvt_offset);
  if (lvt & LVT_MASKED) return;
  uint8_t vector = lvt & LVT_VECTOR;
  if (vector < 16) {
    raise_error(ESR_RECEIVE_ILLEGAL_VECTOR);
    return;
  }
  set_bit(REG_IRR, vector, true);
  set_bit(REG_TMR, vector, false);
}

// --- Receiving --------------------------------------------------------------

bool LocalApic::matches(const ApicMessage& msg) const {
  if (mode() == ApicMode::Disabled) return false;
  uint32_t me = id();
  switch (msg.shorthand) {
    case ApicShorthand::Self:
      return me == msg.source_id;
    case ApicShorthand::AllIncludingSelf:
      return true;
    case ApicShorthand::AllExcludingSelf:
      return me != msg.source_id;
    case ApicShorthand::None:
      break;
  }
  // Broadcast: FFFF_FFFFH from an x2APIC sender in either destination mode
  // (SDM 10.12.9); FFH from an xAPIC sender in physical mode only. In
  // logical mode FFH is an ordinary MDA (QEMU matches it the same way): a
  // flat APIC whose logical ID is 0 does not take it.
  if (msg.x2apic ? msg.destination == X2APIC_BROADCAST
                 : msg.destination == XAPIC_BROADCAST && msg.destination_mode == ApicDestinationMode::Physical)
    return true;
  // An x2APIC sender's 32-bit destination names the full x2APIC ID, even of
  // an APIC still in xAPIC mode (whose ID register holds only 8 bits):
  // APIC 0x101 must not answer to destination 0x01.
  if (msg.destination_mode == ApicDestinationMode::Physical)
    return msg.destination == (msg.x2apic && mode() == ApicMode::XApic ? initial_id() : me);

  if (mode() == ApicMode::X2Apic) {
    // SDM 10.12.10.2: bits 31:16 select the cluster, 15:0 a bitmap in it.
    uint32_t ldr = slot(REG_LDR);
    return (msg.destination >> 16) == (ldr >> 16) && (msg.destination & ldr & 0xffff) != 0;
  }
  if (msg.destination > 0xff) return false;
  uint32_t mda = msg.destination;
  uint32_t logical_id = slot(REG_LDR) >> 24;
  // SDM 10.6.2.2. DFR models other than flat (1111b) are treated as cluster.
  if ((slot(REG_DFR) >> 28) == DFR_MODEL_FLAT) return (mda & logical_id) != 0;
  // Cluster model: cluster 0xF addresses every cluster (SDM 10.6.2.2).
  return ((mda >> 4) == 0xf || (mda >> 4) == (logical_id >> 4)) && (mda & logical_id & 0xf) != 0;
}

ApicAcceptResult LocalApic::accept(const ApicMessage& msg) {
  if (mode() == ApicMode::Disabled) return {};
  switch (msg.delivery_mode) {
    case ApicDeliveryMode::Fixed:
    case ApicDeliveryMode::LowestPriority:
      // SDM 10.4.7.2: a software-disabled APIC still answers NMI, INIT and
      // SIPI; we read that as dropping fixed interrupts.
      if (!software_enabled()) return {};
      if (msg.vector < 16) {
        raise_error(ESR_RECEIVE_ILLEGAL_VECTOR);
        return {};
      }
      set_bit(REG_IRR, msg.vector, true);
      set_bit(REG_TMR, msg.vector, msg.trigger_mode == ApicTriggerMode::Level);
      return {ApicAccept::Interrupt, msg.vector};
    case ApicDeliveryMode::Nmi:
      return {ApicAccept::Nmi, 0};
    case ApicDeliveryMode::Init:
      if (msg.is_init_level_deassert()) return {};
      reset();
      return {ApicAccept::Init, 0};
    case ApicDeliveryMode::StartUp:
      return {ApicAccept::StartUp, msg.vector};
    case ApicDeliveryMode::Smi:
    case ApicDeliveryMode::ExtInt:
    case ApicDeliveryMode::Reserved:
      break;
  }
  return {ApicAccept::Refused, 0};
}

// --- Priorities, acknowledge, EOI -------------------------------------------

void LocalApic::set_bit(uint32_t base, uint8_t vector, bool value) {
  uint32_t& word = slot(base + (vector / 32) * 16);
  uint32_t bit = 1u << (vector % 32);
  word = value ? (word | bit) : (word & ~bit);
}

bool LocalApic::get_bit(uint32_t base, uint8_t vector) const {
  return (slot(base + (vector / 32) * 16) >> (vector % 32)) & 1;
}

std::optional<uint8_t> LocalApic::highest(uint32_t base) const {
  for (int word = 7; word >= 0; --word) {
    uint32_t bits = slot(base + word * 16);
    if (bits) return static_cast<uint8_t>(word * 32 + 31 - __builtin_clz(bits));
  }
  return std::nullopt;
}

bool LocalApic::irr(uint8_t vector) const { return get_bit(REG_IRR, vector); }
bool LocalApic::isr(uint8_t vector) const { return get_bit(REG_ISR, vector); }
bool LocalApic::tmr(uint8_t vector) const { return get_bit(REG_TMR, vector); }
bool LocalApic::software_enabled() const { return slot(REG_SVR) & SVR_APIC_ENABLED; }

bool LocalApic::accepts_pic_intr() const {
  if (mode() == ApicMode::Disabled) return true;
  const uint32_t lint0 = slot(REG_LVT_LINT0);
  return !(lint0 & LVT_MASKED) &&
         static_cast<ApicDeliveryMode>((lint0 >> LVT_DELIVERY_MODE_SHIFT) & 7) == ApicDeliveryMode::ExtInt;
}
uint8_t LocalApic::task_priority() const { return slot(REG_TPR) & 0xff; }

uint8_t LocalApic::processor_priority() const {
  uint8_t tpr = task_priority();
  uint8_t isrv = highest(REG_ISR).value_or(0);
  return (tpr >> 4) >= (isrv >> 4) ? tpr : (isrv & 0xf0);
}

// SDM 10.6.2.4 (figure 10-15 in older editions): APR = TPR if TPR's class is
// at least IRRV's and above ISRV's, else the highest of the three classes.
uint8_t LocalApic::arbitration_priority() const {
  uint8_t tpr = task_priority();
  uint8_t isrv = highest(REG_ISR).value_or(0);
  uint8_t irrv = highest(REG_IRR).value_or(0);
  if ((tpr >> 4) >= (irrv >> 4) && (tpr >> 4) > (isrv >> 4)) return tpr;
  return std::max({tpr, isrv, irrv}) & 0xf0;
}

std::optional<uint8_t> LocalApic::pending_vector() const {
  if (mode() == ApicMode::Disabled) return std::nullopt;
  auto vector = highest(REG_IRR);
  if (!vector || (*vector >> 4) <= (processor_priority() >> 4)) return std::nullopt;
  return vector;
}

uint8_t LocalApic::acknowledge() {
  auto vector = pending_vector();
  if (!vector) return slot(REG_SVR) & SVR_VECTOR;
  set_bit(REG_IRR, *vector, false);
  set_bit(REG_ISR, *vector, true);
  return *vector;
}

void LocalApic::eoi() {
  auto vector = highest(REG_ISR);
  if (!vector) return;
  set_bit(REG_ISR, *vector, false);
  // SDM 10.8.5: for a level-triggered interrupt (TMR set) the EOI is also
  // broadcast to the I/O APICs.
  if (get_bit(REG_TMR, *vector)) eoi_broadcast_ = *vector;
}

// --- Timer ------------------------------------------------------------------

uint32_t LocalApic::timer_mode() const { return slot(REG_LVT_TIMER) & LVT_TIMER_MODE; }

uint64_t LocalApic::tsc(uint64_t now) const {
  return static_cast<uint64_t>(static_cast<unsigned __int128>(now) * config_.tsc_hz / NS_PER_SECOND);
}

// The first ns at which `ticks` ticks have elapsed (rounded up), so that
// ns_to_ticks(ticks_to_ns(t)) >= t: an event never fires early.
uint64_t LocalApic::ticks_to_ns(uint64_t ticks, uint32_t divisor) const {
  unsigned __int128 num = static_cast<unsigned __int128>(ticks) * divisor * NS_PER_SECOND;
  return saturate_ns((num + config_.timer_hz - 1) / config_.timer_hz);
}

uint64_t LocalApic::ns_to_ticks(uint64_t ns, uint32_t divisor) const {
  return static_cast<uint64_t>(static_cast<unsigned __int128>(ns) * config_.timer_hz /
                               (static_cast<unsigned __int128>(divisor) * NS_PER_SECOND));
}

// SDM 10.5.4.1: a write that moves the timer into or out of TSC-deadline
// mode disarms it. We also clear the initial count then, so "disarmed"
// reads back as 0 everywhere, as KVM does (apic_update_lvtt). Between
// one-shot and periodic the count runs on, as on hardware and KVM
// (kvm-unit-tests' apic "change mode" cases): periodic to one-shot counts
// the current period down to 0 and stops; one-shot to periodic reloads at 0.
void LocalApic::write_lvt_timer(uint32_t value, uint64_t now) {
  const uint32_t old_mode = timer_mode();
  slot(REG_LVT_TIMER) = value;
  const uint32_t new_mode = value & LVT_TIMER_MODE;
  if (new_mode == old_mode) return;
  if (old_mode == TIMER_MODE_TSC_DEADLINE || new_mode == TIMER_MODE_TSC_DEADLINE) {
    timer_ = {};
    slot(REG_TIMER_INITIAL_COUNT) = 0;
    tsc_deadline_ = 0;
    return;
  }
  if (!timer_.armed) return;
  if (new_mode != TIMER_MODE_ONE_SHOT && new_mode != TIMER_MODE_PERIODIC) {
    timer_ = {};  // reserved mode 11b: no timer runs
    return;
  }
  const uint64_t initial = slot(REG_TIMER_INITIAL_COUNT);
  if (old_mode == TIMER_MODE_PERIODIC && new_mode == TIMER_MODE_ONE_SHOT && initial != 0 && now > timer_.start) {
    // The one-shot count is the current period's: start it where that began.
    const uint64_t periods = ns_to_ticks(now - timer_.start, timer_.divisor) / initial;
    timer_.start += ticks_to_ns(periods * initial, timer_.divisor);
  }
  timer_.expired = 0;
}

void LocalApic::arm_count(uint64_t now) {
  uint32_t mode = timer_mode();
  bool counting = mode == TIMER_MODE_ONE_SHOT || mode == TIMER_MODE_PERIODIC;
  // Initial count 0 stops the timer (SDM 10.5.4); reserved mode 11b never runs.
  if (slot(REG_TIMER_INITIAL_COUNT) == 0 || !counting) {
    timer_ = {};
    return;
  }
  timer_ = {.armed = true, .start = now, .divisor = divisor_of(slot(REG_TIMER_DIVIDE_CONFIG)), .expired = 0};
}

uint32_t LocalApic::current_count(uint64_t now) const {
  if (!timer_.armed) return 0;
  uint64_t initial = slot(REG_TIMER_INITIAL_COUNT);
  uint64_t elapsed = ns_to_ticks(now > timer_.start ? now - timer_.start : 0, timer_.divisor);
  if (timer_mode() == TIMER_MODE_PERIODIC) return static_cast<uint32_t>(initial - elapsed % initial);
  return elapsed >= initial ? 0 : static_cast<uint32_t>(initial - elapsed);
}

std::optional<uint64_t> LocalApic::next_timer_event() const {
  if (timer_mode() == TIMER_MODE_TSC_DEADLINE) {
    if (tsc_deadline_ == 0) return std::nullopt;
    // A deadline at or above 2^64 * tsc_hz / 1e9 lies past 2^64 ns (F1 of
    // issue 14: with tsc_hz below 1 GHz a guest can write one).
    unsigned __int128 num = static_cast<unsigned __int128>(tsc_deadline_) * NS_PER_SECOND;
    return saturate_ns((num + config_.tsc_hz - 1) / config_.tsc_hz);
  }
  if (!timer_.armed) return std::nullopt;
  uint64_t initial = slot(REG_TIMER_INITIAL_COUNT);
  uint64_t periods = timer_mode() == TIMER_MODE_PERIODIC ? timer_.expired + 1 : 1;
  unsigned __int128 ticks = static_cast<unsigned __int128>(periods) * initial;
  if (ticks > std::numeric_limits<uint64_t>::max()) return std::numeric_limits<uint64_t>::max();
  return saturate_ns(static_cast<unsigned __int128>(timer_.start) +
                     ticks_to_ns(static_cast<uint64_t>(ticks), timer_.divisor));
}

void LocalApic::on_time(uint64_t now) {
  if (timer_mode() == TIMER_MODE_TSC_DEADLINE) {
    // SDM 10.5.4.1: firing disarms the timer and clears IA32_TSC_DEADLINE.
    if (tsc_deadline_ != 0 && tsc(now) >= tsc_deadline_) {
      tsc_deadline_ = 0;
      deliver_local(REG_LVT_TIMER);
    }
    return;
  }
  if (!timer_.armed || now < timer_.start) return;
  uint64_t initial = slot(REG_TIMER_INITIAL_COUNT);
  uint64_t elapsed = ns_to_ticks(now - timer_.start, timer_.divisor);
  if (timer_mode() == TIMER_MODE_PERIODIC) {
    uint64_t periods = elapsed / initial;
    if (periods > timer_.expired) {
      timer_.expired = periods;
      deliver_local(REG_LVT_TIMER);
    }
  } else if (elapsed >= initial) {
    timer_.armed = false;
    deliver_local(REG_LVT_TIMER);
  }
}

// --- Inspection -------------------------------------------------------------

bool LocalApic::timer_interrupts() const {
  return software_enabled() && !(slot(REG_LVT_TIMER) & LVT_MASKED);
}

std::string LocalApic::describe(uint64_t now) const {
  static constexpr const char* kModes[] = {"disabled", "xAPIC", "x2APIC"};
  static_assert(std::size(kModes) == static_cast<size_t>(ApicMode::X2Apic) + 1);
  std::string out = fmt::format("apic id {:#x} ({}), base {:#x}{}, {}software-enabled\n", id(),
                                kModes[static_cast<int>(mode())], base_address(), is_bsp() ? ", BSP" : "",
                                software_enabled() ? "" : "not ");
  for (const auto& reg : kRegisters) {
    ApicAccess access = mode() == ApicMode::X2Apic ? reg.x2apic : reg.xapic;
    if (!can(access, Read)) continue;
    if (reg.count == 1) {
      out += fmt::format("  {:<20} {:08x}\n", reg.name, read_register(reg, reg.offset, now));
      continue;
    }
    std::string vectors;
    for (unsigned v = 0; v < 256; ++v) {
      if (get_bit(reg.offset, static_cast<uint8_t>(v))) vectors += fmt::format(" {}", v);
    }
    out += fmt::format("  {:<20}{}\n", reg.name, vectors.empty() ? " (none)" : vectors);
  }
  if (auto next = next_timer_event()) out += fmt::format("  timer next fires at {} ns\n", *next);
  if (timer_mode() == TIMER_MODE_TSC_DEADLINE) out += fmt::format("  IA32_TSC_DEADLINE    {:#x}\n", tsc_deadline_);
  return out;
}

}  // namespace topolab
