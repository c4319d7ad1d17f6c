// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/io_apic.h"

namespace topolab {

using namespace ioapic;

IoApic::IoApic(bool extended_destination) : extended_destination_(extended_destination) { table_.fill(RTE_MASKED); }

uint32_t IoApic::mmio_read(uint32_t offset, unsigned size) const {
  // QEMU decodes the low byte of the offset only; so do we.
  switch (offset & 0xff) {
    case MMIO_IOREGSEL: return select_;
    case MMIO_IOWIN: return size == 4 ? read_register(select_) : 0;
    default: return 0;
  }
}

IoApicMessages IoApic::mmio_write(uint32_t offset, unsigned size, uint32_t value) {
  switch (offset & 0xff) {
    case MMIO_IOREGSEL:
      // IOREGSEL[7:0] is the register address; the rest is reserved.
      select_ = value & 0xff;
      return {};
    case MMIO_IOWIN:
      if (size != 4) return {};
      return write_register(select_, value);
    case MMIO_EOI:
      if (size != 4) return {};
      return eoi(static_cast<uint8_t>(value));
    default:
      return {};
  }
}

uint32_t IoApic::read_register(uint32_t index) const {
  switch (index) {
    case REG_ID:
    case REG_ARBITRATION:
      // The arbitration ID is loaded from the ID (datasheet 3.2.3); there is
      // no bus arbitration to change it afterwards.
      return uint32_t{id_} << 24;
    case REG_VERSION: return VERSION_VALUE;
    default: break;
  }
  if (index < REG_REDIRECTION_BASE || index >= REG_REDIRECTION_BASE + 2 * kPins) return 0;
  const uint64_t entry = table_[(index - REG_REDIRECTION_BASE) / 2];
  return static_cast<uint32_t>(index & 1 ? entry >> 32 : entry);
}

IoApicMessages IoApic::write_register(uint32_t index, uint32_t value) {
  if (index == REG_ID) {
    id_ = static_cast<uint8_t>((value & ID_MASK) >> 24);
    return {};
  }
  if (index < REG_REDIRECTION_BASE || index >= REG_REDIRECTION_BASE + 2 * kPins) return {};
  uint64_t& entry = table_[(index - REG_REDIRECTION_BASE) / 2];
  const uint64_t read_only = entry & RTE_READ_ONLY;
  if (index & 1) {
    entry = (entry & 0xffffffffull) | (uint64_t{value} << 32);
  } else {
    entry = (entry & ~0xffffffffull) | value;
  }
  entry = (entry & ~RTE_READ_ONLY) | read_only;
  // An edge-triggered entry has no remote IRR: Linux's __eoi_ioapic_pin
  // clears a stuck one by switching the entry to edge and back (QEMU's
  // ioapic_fix_edge_remote_irr).
  if (!(entry & RTE_TRIGGER_LEVEL)) entry &= ~RTE_REMOTE_IRR;
  return service();
}

IoApicMessages IoApic::set_pin(unsigned pin, bool asserted) {
  if (pin >= kPins) return {};
  const uint32_t bit = 1u << pin;
  const bool rising = asserted && !(lines_ & bit);
  lines_ = asserted ? lines_ | bit : lines_ & ~bit;
  const uint64_t entry = table_[pin];
  if (entry & RTE_TRIGGER_LEVEL) {
    // A level pin is serviced from lines_ itself.
    return asserted && !(entry & RTE_REMOTE_IRR) ? service() : IoApicMessages{};
  }
  // 82093AA: edge requests on a masked pin are ignored.
  if (!rising || (entry & RTE_MASKED)) return {};
  pending_ |= bit;
  return service();
}

IoApicMessages IoApic::eoi(uint8_t vector) {
  bool resend = false;
  for (unsigned pin = 0; pin < kPins; ++pin) {
    uint64_t& entry = table_[pin];
    if ((entry & RTE_VECTOR) != vector || !(entry & RTE_TRIGGER_LEVEL) || !(entry & RTE_REMOTE_IRR)) continue;
    entry &= ~RTE_REMOTE_IRR;
    if (!(entry & RTE_MASKED) && (lines_ >> pin & 1)) resend = true;
  }
  return resend ? service() : IoApicMessages{};
}

IoApicMessages IoApic::service() {
  IoApicMessages sent;
  for (unsigned pin = 0; pin < kPins; ++pin) {
    uint64_t& entry = table_[pin];
    if (entry & RTE_MASKED) continue;
    const uint32_t bit = 1u << pin;
    if (entry & RTE_TRIGGER_LEVEL) {
      if (!(lines_ & bit) || (entry & RTE_REMOTE_IRR)) continue;
      entry |= RTE_REMOTE_IRR;
    } else {
      if (!(pending_ & bit)) continue;
      pending_ &= ~bit;
    }
    if (auto message = message_for(entry)) sent.push_back(*message);
  }
  return sent;
}

std::optional<ApicMessage> IoApic::message_for(uint64_t entry) const {
  const auto mode = static_cast<ApicDeliveryMode>((entry >> RTE_DELIVERY_MODE_SHIFT) & 7);
  if (mode == ApicDeliveryMode::Reserved || mode == ApicDeliveryMode::StartUp) return std::nullopt;
  const bool logical = entry & RTE_DEST_LOGICAL;
  const uint32_t extension =
      extended_destination_ && !logical ? (entry >> RTE_EXT_DESTINATION_SHIFT) & RTE_EXT_DESTINATION_MASK : 0;
  // An 8-bit destination, as an xAPIC sender's: with no interrupt
  // remapping, 0xFF is the broadcast also to APICs in x2APIC mode (SDM
  // 10.12.9 leaves that to the platform; KVM and QEMU broadcast it). With
  // extension bits it is a 15-bit physical APIC ID, never a broadcast.
  ApicMessage message{
      .delivery_mode = mode,
      .vector = static_cast<uint8_t>(entry & RTE_VECTOR),
      .destination_mode = logical ? ApicDestinationMode::Logical : ApicDestinationMode::Physical,
      .level_assert = true,
      .trigger_mode = (entry & RTE_TRIGGER_LEVEL) ? ApicTriggerMode::Level : ApicTriggerMode::Edge,
      .shorthand = ApicShorthand::None,
      .destination = static_cast<uint32_t>(entry >> RTE_DESTINATION_SHIFT),
      .source_id = 0,
      .x2apic = false,
  };
  if (extension) {
    message.destination |= extension << 8;
    message.x2apic = true;
  }
  return message;
}

}  // namespace topolab
