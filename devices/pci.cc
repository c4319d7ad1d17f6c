// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/pci.h"

#include <fmt/format.h>

namespace topolab {

using namespace pci;

namespace {

void put(std::array<uint8_t, 256>& bytes, unsigned offset, unsigned size, uint32_t value) {
  for (unsigned i = 0; i < size && offset + i < bytes.size(); ++i) bytes[offset + i] = static_cast<uint8_t>(value >> (8 * i));
}

}  // namespace

// --- PciFunction -------------------------------------------------------------------

PciFunction::PciFunction(uint16_t vendor, uint16_t device, uint8_t revision, uint32_t class_code) {
  put(config_, REG_VENDOR, 2, vendor);
  put(config_, REG_DEVICE, 2, device);
  put(config_, REG_REVISION, 1, revision);
  put(config_, REG_CLASS, 3, class_code);
  put(config_, REG_SUBSYSTEM_VENDOR, 2, kSubsystemVendorQemu);
  put(config_, REG_SUBSYSTEM, 2, kSubsystemQemu);
  put(writable_, REG_COMMAND, 2,
      COMMAND_IO | COMMAND_MEMORY | COMMAND_BUS_MASTER | COMMAND_PARITY | COMMAND_SERR | COMMAND_INTX_DISABLE);
  put(writable_, REG_LATENCY, 1, 0xff);
  put(writable_, REG_INTERRUPT_LINE, 1, 0xff);
}

void PciFunction::set_bar(unsigned n, bool io, uint32_t size, uint32_t address) {
  if (n >= 6 || size == 0 || (size & (size - 1))) return;
  const unsigned offset = REG_BAR0 + 4 * n;
  const uint32_t type_bits = io ? 0x3u : 0xfu;
  const uint32_t mask = ~(size - 1) & ~type_bits;
  put(writable_, offset, 4, mask);
  put(config_, offset, 4, (address & mask) | (io ? BAR_IO : 0));
}

void PciFunction::set_command(uint16_t command) { put(config_, REG_COMMAND, 2, command); }

uint32_t PciFunction::read(unsigned offset, unsigned size) const {
  uint32_t v = 0;
  for (unsigned i = 0; i < size && i < 4; ++i)
    v |= uint32_t{offset + i < config_.size() ? config_[offset + i] : uint8_t{0xff}} << (8 * i);
  return v;
}

void PciFunction::write(unsigned offset, unsigned size, uint32_t value) {
  for (unsigned i = 0; i < size && i < 4 && offset + i < config_.size(); ++i) {
    const uint8_t mask = writable_[offset + i];
    const uint8_t byte = static_cast<uint8_t>(value >> (8 * i));
    config_[offset + i] = static_cast<uint8_t>((config_[offset + i] & ~mask) | (byte & mask));
  }
}

uint32_t PciFunction::bar_address(unsigned n) const {
  if (n >= 6) return 0;
  const uint32_t bar = read(REG_BAR0 + 4 * n, 4);
  return bar & (bar & BAR_IO ? ~0x3u : ~0xfu);
}

PciFunction i440fx_host_bridge() { return PciFunction(0x8086, 0x1237, 0x02, 0x060000); }

// --- PciHost ------------------------------------------------------------------------

PciHost::PciHost(std::function<void()> on_reset) : on_reset_(std::move(on_reset)) {}

void PciHost::plug(unsigned device, PciFunction& function) {
  if (device < kDevices) devices_[device] = &function;
}

PciFunction* PciHost::selected() const {
  if (!(address_ & CONFIG_ENABLE)) return nullptr;
  const unsigned bus = (address_ >> 16) & 0xff, device = (address_ >> 11) & 0x1f, function = (address_ >> 8) & 7;
  return bus == 0 && function == 0 ? devices_[device] : nullptr;
}

// QEMU ORs the data port's byte lane into CONFIG_ADDRESS[7:0] without
// clearing bits 1:0 first (pci_host_data_read), and kvm-unit-tests relies on
// it: it reads the device ID as address | 2 and a word at 0xCFC.
unsigned PciHost::config_offset(uint16_t data_offset) const { return (address_ | (data_offset - 4u)) & 0xff; }

uint32_t PciHost::read(uint16_t offset, unsigned size) {
  const uint32_t none = size >= 4 ? 0xffffffffu : (1u << (8 * size)) - 1;
  if (offset == 0 && size == 4) return address_;
  if (offset == 1 && size == 1) return rcr_;
  if (offset < 4) return none;  // CONFIG_ADDRESS takes only 32-bit accesses
  const PciFunction* f = selected();
  if (!f) return none;
  return f->read(config_offset(offset), size);
}

void PciHost::write(uint16_t offset, unsigned size, uint32_t value) {
  if (offset == 0 && size == 4) {
    address_ = value;
    return;
  }
  if (offset == 1 && size == 1) {
    // PIIX3 RCR (QEMU's rcr_write): RST_CPU resets now; SYS_RST is kept.
    if (value & RCR_RST_CPU) {
      on_reset_();
      return;
    }
    rcr_ = value & RCR_SYS_RST;
    return;
  }
  if (offset < 4) return;
  if (PciFunction* f = selected()) f->write(config_offset(offset), size, value);
}

// --- PciTestdev -------------------------------------------------------------------------

namespace {

constexpr unsigned kTestsPerSpace = 3;
constexpr const char* kTestNames[kTestsPerSpace] = {"no-eventfd", "wildcard-eventfd", "datamatch-eventfd"};
constexpr const char* kSpaceNames[2] = {"mmio", "portio"};
constexpr uint8_t kDataMatch = 0xfa, kNoMatch = 0xce;
// The region each test's writes go to starts past the header, at IOTEST_MEMSIZE
// (2048) or IOTEST_IOSIZE (128), one byte per test.
constexpr uint32_t kTestArea[2] = {2048, 128};
constexpr uint32_t kHeaderSize = 16;

bool matches_data(int test) { return test % kTestsPerSpace != 1; }
uint32_t test_offset(int test) { return kTestArea[test / kTestsPerSpace] + static_cast<uint32_t>(test); }

}  // namespace

PciTestdev::PciTestdev(uint32_t mem_base, uint16_t io_base)
    : function_(0x1b36, 0x0005, 0x00, 0xff0000), mem_base_(mem_base), io_base_(io_base) {
  function_.set_bar(0, false, kMemBarSize, mem_base);
  function_.set_bar(1, true, kIoBarSize, io_base);
  // As SeaBIOS leaves it: I/O and memory decoding on.
  function_.set_command(COMMAND_IO | COMMAND_MEMORY);
}

bool PciTestdev::decodes(Space space) const {
  if (space == Space::Memory) return (function_.command() & COMMAND_MEMORY) && function_.bar_address(0) == mem_base_;
  return (function_.command() & COMMAND_IO) && function_.bar_address(1) == io_base_;
}

std::string PciTestdev::header() const {
  std::string h(kHeaderSize, '\0');
  const int t = current_;
  h[0] = static_cast<char>(t);
  h[1] = 1;  // width: byte accesses
  const uint32_t offset = test_offset(t);
  for (unsigned i = 0; i < 4; ++i) h[4 + i] = static_cast<char>(offset >> (8 * i));
  h[8] = static_cast<char>(matches_data(t) ? kDataMatch : kNoMatch);
  for (unsigned i = 0; i < 4; ++i) h[12 + i] = static_cast<char>(count_[t] >> (8 * i));
  h += fmt::format("{}-{}", kSpaceNames[t / kTestsPerSpace], kTestNames[t % kTestsPerSpace]);
  h += '\0';
  return h;
}

uint8_t PciTestdev::read_byte(uint64_t offset) const {
  if (current_ < 0) return 0;
  const std::string h = header();
  // QEMU's bound (addr + size >= bufsize reads 0) drops the final NUL too.
  return offset + 1 < h.size() ? static_cast<uint8_t>(h[offset]) : 0;
}

void PciTestdev::write_byte(Space space, uint64_t offset, uint8_t value) {
  if (offset == 0) {
    current_ = value < kTestsPerSpace ? static_cast<int>(space) * kTestsPerSpace + value : -1;
    if (current_ >= 0) count_[current_] = 0;
    return;
  }
  if (current_ < 0 || offset != test_offset(current_)) return;
  if (matches_data(current_) && value != kDataMatch) return;
  ++count_[current_];
}

// QEMU's regions take byte accesses only: wider ones arrive split, low byte first.
uint64_t PciTestdev::read_bytes(Space space, uint64_t offset, unsigned size) const {
  if (!decodes(space)) return size >= 8 ? ~0ull : (1ull << (8 * size)) - 1;
  uint64_t v = 0;
  for (unsigned i = 0; i < size && i < 8; ++i) v |= uint64_t{read_byte(offset + i)} << (8 * i);
  return v;
}

void PciTestdev::write_bytes(Space space, uint64_t offset, unsigned size, uint64_t value) {
  if (!decodes(space)) return;
  for (unsigned i = 0; i < size && i < 8; ++i) write_byte(space, offset + i, static_cast<uint8_t>(value >> (8 * i)));
}

uint32_t PciTestdev::read(uint16_t offset, unsigned size) {
  return static_cast<uint32_t>(read_bytes(Space::Io, offset, size));
}
void PciTestdev::write(uint16_t offset, unsigned size, uint32_t value) { write_bytes(Space::Io, offset, size, value); }
uint64_t PciTestdev::mem_read(uint64_t offset, unsigned size) { return read_bytes(Space::Memory, offset, size); }
void PciTestdev::mem_write(uint64_t offset, unsigned size, uint64_t value) {
  write_bytes(Space::Memory, offset, size, value);
}

}  // namespace topolab
