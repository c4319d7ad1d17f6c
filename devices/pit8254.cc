// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/pit8254.h"

namespace topolab {

namespace {

constexpr uint16_t kControlOffset = 3;
constexpr uint8_t kReadBack = 3;               // control word SC = 11b
constexpr uint8_t kReadBackNoCount = 1u << 5;  // read-back: do not latch the count
constexpr uint8_t kReadBackNoStatus = 1u << 4;
constexpr uint64_t kRefreshPeriodNs = 15'085;  // port B bit 4 toggles (QEMU's pcspk)

}  // namespace

Pit8254::Pit8254(std::function<uint64_t()> now_ns, std::function<void()> written)
    : now_ns_(std::move(now_ns)), written_(std::move(written)), port_b_(*this) {
  // Channels 0 and 1 have their gates tied high; channel 2's is port B bit 0.
  channels_[0].gate = channels_[1].gate = true;
}

uint16_t Pit8254::counter(const Channel& ch, uint64_t tick) const {
  if (!ch.loaded) return static_cast<uint16_t>(ch.count);
  const uint64_t d = elapsed(ch, tick);
  switch (ch.mode) {
    case 2: return static_cast<uint16_t>(ch.count - d % ch.count);
    case 3: return static_cast<uint16_t>(ch.count - (2 * d) % ch.count);
    default: return static_cast<uint16_t>((ch.count - d) & 0xffff);
  }
}

bool Pit8254::out(const Channel& ch, uint64_t tick) const {
  if (!ch.loaded) return ch.mode != 0;  // after the control word: mode 0 low, the others high
  const uint64_t d = elapsed(ch, tick);
  switch (ch.mode) {
    case 0:
    case 1: return d >= ch.count;  // low until the terminal count
    case 2: return ch.count < 2 || d % ch.count != ch.count - 1;  // low for the tick before the reload
    case 3: return d % ch.count < (ch.count + 1) / 2;              // high for the first half
    default: return d != ch.count;                                // 4, 5: a one-tick strobe
  }
}

// From out(): the elapsed count at which OUT next differs, as a tick.
std::optional<uint64_t> Pit8254::next_out_change_tick(const Channel& ch, uint64_t tick) const {
  if (!ch.loaded) return std::nullopt;
  const uint64_t d = elapsed(ch, tick), n = ch.count;
  uint64_t next;  // the elapsed count at which OUT changes
  switch (ch.mode) {
    case 0:
    case 1:
      if (d >= n) return std::nullopt;
      next = n;
      break;
    case 2:
      if (n < 2) return std::nullopt;
      next = d % n == n - 1 ? d + 1 : d + (n - 1 - d % n);
      break;
    case 3: {
      if (n < 2) return std::nullopt;
      const uint64_t high = (n + 1) / 2;
      next = d % n < high ? d + (high - d % n) : d + (n - d % n);
      break;
    }
    default:
      if (d > n) return std::nullopt;
      next = d < n ? n : n + 1;
      break;
  }
  return ch.load_tick + next;
}

std::optional<uint64_t> Pit8254::next_out_change(unsigned c, uint64_t ns) const {
  if (c >= 3) return std::nullopt;
  const std::optional<uint64_t> tick = next_out_change_tick(channels_[c], ticks_at(ns));
  return tick ? std::optional<uint64_t>(ns_at(*tick)) : std::nullopt;
}

uint8_t Pit8254::status(const Channel& ch, uint64_t tick) const {
  return static_cast<uint8_t>((out(ch, tick) ? 0x80 : 0) | (ch.null_count ? 0x40 : 0) |
                              (static_cast<uint8_t>(ch.access) << 4) | (ch.mode << 1) | (ch.bcd ? 1 : 0));
}

uint16_t Pit8254::count_at(unsigned c, uint64_t ns) const { return c < 3 ? counter(channels_[c], ticks_at(ns)) : 0; }
bool Pit8254::out_at(unsigned c, uint64_t ns) const { return c < 3 && out(channels_[c], ticks_at(ns)); }

void Pit8254::control(uint8_t value, uint64_t tick) {
  const uint8_t select = value >> 6;
  if (select == kReadBack) {
    for (unsigned c = 0; c < 3; ++c) {
      if (!(value & (2u << c))) continue;
      Channel& ch = channels_[c];
      if (!(value & kReadBackNoCount) && !ch.count_latched) {
        ch.latched_count = counter(ch, tick);
        ch.count_latched = true;
      }
      if (!(value & kReadBackNoStatus) && !ch.status_latched) {
        ch.latched_status = status(ch, tick);
        ch.status_latched = true;
      }
    }
    return;
  }
  Channel& ch = channels_[select];
  const auto access = static_cast<Access>((value >> 4) & 3);
  if (access == Access::Latch) {
    if (!ch.count_latched) {
      ch.latched_count = counter(ch, tick);
      ch.count_latched = true;
    }
    return;
  }
  ch.access = access;
  ch.mode = (value >> 1) & 7;
  if (ch.mode >= 6) ch.mode -= 4;  // 110b and 111b are modes 2 and 3
  ch.bcd = value & 1;
  ch.loaded = false;
  ch.null_count = true;
  ch.write_msb_next = ch.read_msb_next = false;
  ch.count_latched = ch.status_latched = false;
}

void Pit8254::write_count(Channel& ch, uint8_t value, uint64_t tick) {
  uint32_t v;
  switch (ch.access) {
    case Access::Lsb: v = value; break;
    case Access::Msb: v = uint32_t{value} << 8; break;
    default:
      if (!ch.write_msb_next) {
        ch.pending_lsb = value;
        ch.write_msb_next = true;
        return;
      }
      ch.write_msb_next = false;
      v = ch.pending_lsb | (uint32_t{value} << 8);
      break;
  }
  ch.count = v ? v : 0x10000;
  ch.load_tick = tick;
  ch.loaded = true;
  ch.null_count = false;
}

uint8_t Pit8254::read_count(Channel& ch, uint64_t tick) {
  if (ch.status_latched) {
    ch.status_latched = false;
    return ch.latched_status;
  }
  const uint16_t value = ch.count_latched ? ch.latched_count : counter(ch, tick);
  uint8_t byte;
  bool done = true;
  switch (ch.access) {
    case Access::Msb: byte = static_cast<uint8_t>(value >> 8); break;
    case Access::Both:
      byte = static_cast<uint8_t>(ch.read_msb_next ? value >> 8 : value);
      done = ch.read_msb_next;
      ch.read_msb_next = !ch.read_msb_next;
      break;
    default: byte = static_cast<uint8_t>(value); break;
  }
  if (done) ch.count_latched = false;
  return byte;
}

void Pit8254::set_gate(Channel& ch, bool gate, uint64_t tick) {
  // QEMU's pit_set_gate: a rising edge restarts modes 1, 2, 3 and 5.
  if (gate && !ch.gate && ch.mode != 0 && ch.mode != 4) ch.load_tick = tick;
  ch.gate = gate;
}

uint32_t Pit8254::read(uint16_t offset, unsigned size) {
  if (size != 1 || offset == kControlOffset) return 0xff;  // the control word is write only
  return read_count(channels_[offset], ticks_at(now_ns_()));
}

void Pit8254::write(uint16_t offset, unsigned size, uint32_t value) {
  if (size != 1) return;
  const uint64_t tick = ticks_at(now_ns_());
  if (offset == kControlOffset) {
    control(static_cast<uint8_t>(value), tick);
  } else {
    write_count(channels_[offset], static_cast<uint8_t>(value), tick);
  }
  if (written_) written_();
}

uint32_t Pit8254::PortB::read(uint16_t, unsigned) {
  const uint64_t ns = pit_.now_ns_();
  const Channel& ch2 = pit_.channels_[2];
  return (ch2.gate ? 1u : 0u) | (pit_.speaker_data_ ? 2u : 0u) | (((ns / kRefreshPeriodNs) & 1) << 4) |
         (pit_.out(ch2, ticks_at(ns)) ? 1u << 5 : 0u);
}

void Pit8254::PortB::write(uint16_t, unsigned, uint32_t value) {
  pit_.speaker_data_ = value & 2;
  pit_.set_gate(pit_.channels_[2], value & 1, ticks_at(pit_.now_ns_()));
}

}  // namespace topolab
