// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/pic8259.h"

namespace topolab {

namespace {
constexpr uint16_t kCommandPort = 0, kDataPort = 1;
// ICW1 (command port, bit 4 set).
constexpr uint8_t kIcw1 = 1u << 4;
constexpr uint8_t kIcw1Ic4 = 1u << 0;   // ICW4 follows
constexpr uint8_t kIcw1Sngl = 1u << 1;  // single PIC: no ICW3
constexpr uint8_t kIcw2VectorMask = 0xf8;
// ICW4.
constexpr uint8_t kIcw4Aeoi = 1u << 1;
constexpr uint8_t kIcw4Sfnm = 1u << 4;
// OCW3 (command port, bits 4:3 = 01).
constexpr uint8_t kOcw3 = 1u << 3;
constexpr uint8_t kOcw3Poll = 1u << 2;
constexpr uint8_t kOcw3ReadRegister = 1u << 1;  // RR: bit 0 (RIS) picks ISR
constexpr uint8_t kOcw3ReadIsr = 1u << 0;
constexpr uint8_t kOcw3SpecialMaskEnable = 1u << 6;  // ESMM: bit 5 (SMM) sets it
constexpr uint8_t kOcw3SpecialMask = 1u << 5;
// OCW2's R, SL, EOI bits 7:5.
enum Ocw2 : uint8_t {
  kRotateInAeoiClear = 0,
  kNonSpecificEoi = 1,
  kSpecificEoi = 3,
  kRotateInAeoiSet = 4,
  kRotateOnNonSpecificEoi = 5,
  kSetPriority = 6,
  kRotateOnSpecificEoi = 7,
};
constexpr unsigned kNoPriority = 8;
constexpr unsigned kSpuriousInput = 7;
}  // namespace

Pic8259::Pic8259(std::function<void(bool)> output_changed) : output_changed_(std::move(output_changed)) {}

// --- One chip ------------------------------------------------------------------

unsigned Pic8259::Chip::priority_of(uint8_t mask) const {
  if (!mask) return kNoPriority;
  unsigned priority = 0;
  while (!(mask & (1u << ((priority + priority_add) & 7)))) ++priority;
  return priority;
}

int Pic8259::Chip::requested_input() const {
  const unsigned priority = priority_of(irr & ~imr);
  if (priority == kNoPriority) return -1;
  // What is in service blocks equal and lower priorities. Special mask mode
  // leaves masked levels out; in special fully nested mode the master
  // lets the slave's IR2 in again while one of its requests is in service.
  uint8_t in_service = isr;
  if (special_mask) in_service &= ~imr;
  if (special_fully_nested && !is_slave) in_service &= ~(1u << kCascadeInput);
  if (priority < priority_of(in_service)) return static_cast<int>((priority + priority_add) & 7);
  return -1;
}

void Pic8259::Chip::set_input(unsigned ir, bool level) {
  const uint8_t bit = 1u << ir;
  if (elcr & bit) {
    irr = level ? irr | bit : irr & ~bit;
  } else if (level && !(last_irr & bit)) {
    irr |= bit;
  }
  last_irr = level ? last_irr | bit : last_irr & ~bit;
}

void Pic8259::Chip::take(unsigned ir) {
  const uint8_t bit = 1u << ir;
  if (!auto_eoi) {
    isr |= bit;
  } else if (rotate_on_auto_eoi) {
    priority_add = (ir + 1) & 7;
  }
  if (!(elcr & bit)) irr &= ~bit;  // a level request stays while its line is high
}

void Pic8259::Chip::init_reset() {
  // ICW1 (8259A data sheet; QEMU's pic_init_reset): the IMR and ISR clear,
  // edge requests are forgotten, IR7 gets the lowest priority. The ELCR is
  // another chip's register and stays. "The edge sense circuit is reset":
  // an input must go from low to high again to request, so an input held
  // high is no new edge (QEMU clears last_irr instead, which takes a line
  // a device sets high again as one).
  irr &= elcr;
  imr = isr = 0;
  priority_add = irq_base = 0;
  read_isr = poll = special_mask = auto_eoi = rotate_on_auto_eoi = special_fully_nested = false;
  needs_icw4 = single = false;
  init = Init::None;
}

uint32_t Pic8259::Chip::read(uint16_t offset, unsigned) {
  if (poll) {
    // A poll is an INTA without the vector: the IR with bit 7 set, or 0.
    poll = false;
    const int ir = requested_input();
    if (ir < 0) return 0;
    take(static_cast<unsigned>(ir));
    pair.update();
    return 0x80u | static_cast<unsigned>(ir);
  }
  if (offset == kDataPort) return imr;
  return read_isr ? isr : irr;
}

void Pic8259::Chip::write(uint16_t offset, unsigned, uint32_t value) {
  const uint8_t byte = value & 0xff;
  if (offset == kCommandPort) {
    if (byte & kIcw1) {
      init_reset();
      init = Init::Icw2;
      needs_icw4 = byte & kIcw1Ic4;
      single = byte & kIcw1Sngl;
    } else if (byte & kOcw3) {
      if (byte & kOcw3Poll) poll = true;
      if (byte & kOcw3ReadRegister) read_isr = byte & kOcw3ReadIsr;
      if (byte & kOcw3SpecialMaskEnable) special_mask = byte & kOcw3SpecialMask;
    } else {
      const unsigned level = byte & 7;
      switch (byte >> 5) {
        case kRotateInAeoiClear:
        case kRotateInAeoiSet: rotate_on_auto_eoi = (byte >> 5) == kRotateInAeoiSet; break;
        case kNonSpecificEoi:
        case kRotateOnNonSpecificEoi:
          if (const unsigned priority = priority_of(isr); priority != kNoPriority) {
            const unsigned ir = (priority + priority_add) & 7;
            isr &= ~(1u << ir);
            if ((byte >> 5) == kRotateOnNonSpecificEoi) priority_add = (ir + 1) & 7;
          }
          break;
        case kSpecificEoi: isr &= ~(1u << level); break;
        case kSetPriority: priority_add = (level + 1) & 7; break;
        case kRotateOnSpecificEoi:
          isr &= ~(1u << level);
          priority_add = (level + 1) & 7;
          break;
        default: break;  // 010b: no operation
      }
    }
    pair.update();
    return;
  }
  switch (init) {
    case Init::None:
      imr = byte;  // OCW1
      break;
    case Init::Icw2:
      irq_base = byte & kIcw2VectorMask;
      init = !single ? Init::Icw3 : needs_icw4 ? Init::Icw4 : Init::None;
      break;
    case Init::Icw3:  // the cascade wiring: the slave on IR2 either way
      init = needs_icw4 ? Init::Icw4 : Init::None;
      break;
    case Init::Icw4:  // 8086 mode and buffering need nothing; AEOI and SFNM do
      auto_eoi = byte & kIcw4Aeoi;
      special_fully_nested = byte & kIcw4Sfnm;
      init = Init::None;
      break;
  }
  pair.update();  // OCW1, and ICW4's special fully nested mode, move INT
}

// --- The pair ------------------------------------------------------------------

void Pic8259::update() {
  master_.set_input(kCascadeInput, slave_.requested_input() >= 0);
  const bool level = master_.requested_input() >= 0;
  if (level == output_) return;
  output_ = level;
  if (output_changed_) output_changed_(level);
}

void Pic8259::set_irq(unsigned line, bool level) {
  if (line >= kLines || line == kCascadeInput) return;
  if (line < 8) {
    master_.set_input(line, level);
  } else {
    slave_.set_input(line - 8, level);
  }
  update();
}

bool Pic8259::line_unmasked(unsigned line) const {
  if (line >= kLines) return false;
  if (line < 8) return !(master_.imr & (1u << line));
  return !(slave_.imr & (1u << (line - 8))) && !(master_.imr & (1u << kCascadeInput));
}

uint8_t Pic8259::acknowledge() {
  // QEMU's pic_read_irq.
  uint8_t vector = 0;
  const int ir = master_.requested_input();
  if (ir < 0) {
    vector = master_.irq_base + kSpuriousInput;
  } else if (static_cast<unsigned>(ir) == kCascadeInput) {
    const int slave_ir = slave_.requested_input();
    if (slave_ir >= 0) slave_.take(static_cast<unsigned>(slave_ir));
    vector = slave_.irq_base + (slave_ir >= 0 ? static_cast<unsigned>(slave_ir) : kSpuriousInput);
    master_.take(kCascadeInput);
  } else {
    vector = master_.irq_base + static_cast<unsigned>(ir);
    master_.take(static_cast<unsigned>(ir));
  }
  update();
  return vector;
}

// --- ELCR --------------------------------------------------------------------------

uint32_t Pic8259::ElcrPorts::read(uint16_t offset, unsigned size) {
  const uint8_t bytes[kElcrPortCount] = {pair.master_.elcr, pair.slave_.elcr};
  uint32_t value = 0;
  for (unsigned i = 0; i < size && i < 4; ++i)
    value |= uint32_t{offset + i < kElcrPortCount ? bytes[offset + i] : uint8_t{0xff}} << (8 * i);
  return value;
}

void Pic8259::ElcrPorts::write(uint16_t offset, unsigned size, uint32_t value) {
  Chip* chips[kElcrPortCount] = {&pair.master_, &pair.slave_};
  static constexpr uint8_t kMasks[kElcrPortCount] = {kElcrMasterMask, kElcrSlaveMask};
  for (unsigned i = 0; i < size && i < 4; ++i)
    if (offset + i < kElcrPortCount) chips[offset + i]->elcr = (value >> (8 * i)) & kMasks[offset + i];
}

}  // namespace topolab
