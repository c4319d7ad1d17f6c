// SPDX-License-Identifier: GPL-2.0-or-later
// The 8254 PIT and port 0x61's timer bits (devices/pit8254.h), driven by a
// program of control words (mode, access, latch, read-back), count writes
// and reads, port B reads and writes, and steps of virtual time.
// Invariants (Intel 8254 data sheet, as the header scopes the model):
// - the control port and any access wider than a byte read 0xFF;
// - after a control word, read-back status says the access mode, the mode
//   (110b and 111b are modes 2 and 3) and BCD as written, NULL COUNT = 1,
//   and OUT low in mode 0 and high in the others; after the count is
//   written, NULL COUNT = 0;
// - the count as each mode runs it: modes 0, 1, 4 and 5 count down from N
//   by one per tick of 1.193182 MHz and wrap; modes 2 and 3 stay in 1..N
//   (0 written is 65536), repeat every N ticks, and mode 3 with an even N
//   only shows even counts; mode 0's OUT goes high at the terminal count
//   and stays; mode 2's is low exactly when the count is 1;
// - reads through the LSB/MSB flip-flop give the count of the moment, or
//   the latched count, which time does not change until it is read whole;
//   the status latch, when set, is read first;
// - port B: bit 0 the gate and bit 1 the speaker data as written, bit 4
//   toggling every 15.085 us, bit 5 channel 2's OUT.
#include <cstddef>
#include <cstdint>

#include "devices/pit8254.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/fuzz_input.h"

using namespace topolab;

namespace {

struct Shadow {
  unsigned access = 3, mode = 0;
  bool bcd = false;
  bool loaded = false;
  uint32_t n = 0x10000;
  uint64_t load_tick = 0;
  bool write_msb_next = false;
  uint8_t pending_lsb = 0;
  bool read_msb_next = false;
  bool count_latched = false;
  uint16_t latched = 0;
  bool status_latched = false;
  uint8_t status = 0;
};

class Harness {
 public:
  uint64_t now_ = 0;
  Pit8254 pit_{[this] { return now_; }};
  Shadow ch_[3];
  bool gate2_ = false, speaker_ = false;

  uint64_t tick() const { return Pit8254::ticks_at(now_); }
  // The first ns at which tick `t` has begun.
  static uint64_t ns_of_tick(uint64_t t) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(t) * 1'000'000'000u + Pit8254::kHz - 1) / Pit8254::kHz);
  }

  // The data sheet's count for `c` now, as the 16-bit register shows it.
  void check_count(unsigned c) {
    const Shadow& s = ch_[c];
    if (!s.loaded) return;
    const uint16_t v = pit_.count_at(c, now_);
    const uint32_t v17 = v == 0 ? 0x10000 : v;
    // Channel 2's gate restarts modes 1, 2, 3 and 5 on a rising edge, so
    // its count is checked against the ranges only.
    const uint64_t d = tick() - s.load_tick;
    switch (s.mode) {
      case 2:
      case 3:
        FUZZ_CHECK(v17 >= 1 && v17 <= s.n, "ch{} mode {} N {}: count {}", c, s.mode, s.n, v17);
        if (s.mode == 3 && s.n % 2 == 0) FUZZ_CHECK(v17 % 2 == 0, "ch{} mode 3 N {}: odd count {}", c, s.n, v17);
        FUZZ_CHECK(pit_.count_at(c, ns_of_tick(tick() + s.n)) == v, "ch{} mode {} N {}: not periodic", c, s.mode, s.n);
        if (s.mode == 2 && s.n >= 2) FUZZ_CHECK(pit_.out_at(c, now_) == (v17 != 1), "ch{} mode 2 count {} OUT", c, v17);
        break;
      case 0:
        FUZZ_CHECK(v == static_cast<uint16_t>(s.n - d), "ch{} mode 0 N {}: {} ticks on, count {}", c, s.n, d, v);
        FUZZ_CHECK(pit_.out_at(c, now_) == (d >= s.n), "ch{} mode 0 OUT after {} of {} ticks", c, d, s.n);
        break;
      case 4:
        FUZZ_CHECK(v == static_cast<uint16_t>(s.n - d), "ch{} mode 4 N {}: {} ticks on, count {}", c, s.n, d, v);
        break;
      default:  // 1 and 5 count from their trigger, which the gate gives
        if (c != 2) FUZZ_CHECK(v == static_cast<uint16_t>(s.n - d), "ch{} mode {}: count {}", c, s.mode, v);
        break;
    }
  }

  void control(uint8_t v) {
    const unsigned select = v >> 6;
    pit_.write(3, 1, v);
    if (select == 3) {  // read-back
      for (unsigned c = 0; c < 3; ++c) {
        if (!(v & (2u << c))) continue;
        Shadow& s = ch_[c];
        if (!(v & 0x20) && !s.count_latched) {
          s.count_latched = true;
          s.latched = pit_.count_at(c, now_);
        }
        if (!(v & 0x10) && !s.status_latched) {
          s.status_latched = true;
          s.status = static_cast<uint8_t>((pit_.out_at(c, now_) ? 0x80 : 0) | (s.loaded ? 0 : 0x40) | (s.access << 4) |
                                          (s.mode << 1) | (s.bcd ? 1 : 0));
        }
      }
      return;
    }
    Shadow& s = ch_[select];
    const unsigned access = (v >> 4) & 3;
    if (access == 0) {  // counter latch
      if (!s.count_latched) {
        s.count_latched = true;
        s.latched = pit_.count_at(select, now_);
      }
      return;
    }
    s.access = access;
    s.mode = (v >> 1) & 7;
    if (s.mode >= 6) s.mode -= 4;
    s.bcd = v & 1;
    s.loaded = false;
    s.write_msb_next = s.read_msb_next = s.count_latched = s.status_latched = false;
    // The data sheet: after the control word OUT is low in mode 0, high in the others.
    FUZZ_CHECK(pit_.out_at(select, now_) == (s.mode != 0), "ch{} OUT after a mode {} control word", select, s.mode);
    // Read-back of the status right away: NULL COUNT and the control word.
    pit_.write(3, 1, 0xc0 | 0x20 | (2u << select));
    const uint8_t status = static_cast<uint8_t>(pit_.read(select, 1));
    const uint8_t want = static_cast<uint8_t>(0x40 | (s.mode != 0 ? 0x80 : 0) | (access << 4) | (s.mode << 1) | (v & 1));
    FUZZ_CHECK(status == want, "ch{} status {:#x} after control word {:#x}, expected {:#x}", select, status, v, want);
  }

  void write_count(unsigned c, uint8_t v) {
    Shadow& s = ch_[c];
    pit_.write(static_cast<uint16_t>(c), 1, v);
    uint32_t n;
    if (s.access == 1) n = v;
    else if (s.access == 2) n = uint32_t{v} << 8;
    else if (!s.write_msb_next) {
      s.pending_lsb = v;
      s.write_msb_next = true;
      return;
    } else {
      s.write_msb_next = false;
      n = s.pending_lsb | uint32_t{v} << 8;
    }
    s.n = n ? n : 0x10000;
    s.loaded = true;
    s.load_tick = tick();
  }

  void read_count(unsigned c) {
    Shadow& s = ch_[c];
    const uint8_t got = static_cast<uint8_t>(pit_.read(static_cast<uint16_t>(c), 1));
    if (s.status_latched) {
      s.status_latched = false;
      FUZZ_CHECK(got == s.status, "ch{} latched status {:#x}, expected {:#x}", c, got, s.status);
      return;
    }
    const uint16_t value = s.count_latched ? s.latched : pit_.count_at(c, now_);
    uint8_t want;
    bool done = true;
    if (s.access == 2) want = static_cast<uint8_t>(value >> 8);
    else if (s.access == 3) {
      want = static_cast<uint8_t>(s.read_msb_next ? value >> 8 : value);
      done = s.read_msb_next;
      s.read_msb_next = !s.read_msb_next;
    } else want = static_cast<uint8_t>(value);
    if (done) s.count_latched = false;
    FUZZ_CHECK(got == want, "ch{} read {:#x}, expected {:#x} ({} count {:#x})", c, got, want,
               s.count_latched || !done ? "latched" : "the", value);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  Harness h;
  for (int ops = 0; !in.done() && ops < 2048; ++ops) {
    const uint8_t op = in.take<uint8_t>();
    const unsigned c = ((op >> 3) & 3) % 3;
    switch (op & 7) {
      case 0:
        h.control(in.take<uint8_t>());
        break;
      case 1:
        h.write_count(c, in.take<uint8_t>());
        break;
      case 2:
        h.read_count(c);
        break;
      case 3: {  // port B
        if (op & 0x80) {
          const uint8_t v = in.take<uint8_t>();
          const bool rising = (v & 1) && !h.gate2_;
          h.pit_.port_b().write(0, 1, v);
          h.gate2_ = v & 1;
          h.speaker_ = v & 2;
          // A rising gate restarts modes 1, 2, 3 and 5 (QEMU's pit_set_gate).
          if (rising && h.ch_[2].mode != 0 && h.ch_[2].mode != 4) h.ch_[2].load_tick = h.tick();
        } else {
          const uint32_t got = h.pit_.port_b().read(0, 1);
          const uint32_t want = (h.gate2_ ? 1u : 0u) | (h.speaker_ ? 2u : 0u) | (((h.now_ / 15'085) & 1) << 4) |
                                (h.pit_.out_at(2, h.now_) ? 0x20u : 0u);
          FUZZ_CHECK(got == want, "port B reads {:#x}, expected {:#x}", got, want);
        }
        break;
      }
      case 4:
        h.now_ += in.take<uint16_t>();
        break;
      case 5:
        h.now_ += uint64_t{in.take<uint32_t>()} << (op >> 5);
        break;
      case 6: {  // what no 8254 has: reads of the control port, accesses wider than a byte
        const uint16_t port = (op >> 3) & 3;
        FUZZ_CHECK(h.pit_.read(3, 1) == 0xff, "the control port is readable");
        FUZZ_CHECK(h.pit_.read(port, 2) == 0xff && h.pit_.read(port, 4) == 0xff, "a wide read of port {}", port);
        h.pit_.write(port, 2, in.take<uint16_t>());  // ignored
        break;
      }
      case 7:
        break;
    }
    for (unsigned i = 0; i < 3; ++i) h.check_count(i);
  }
  return 0;
}
