// SPDX-License-Identifier: GPL-2.0-or-later
// The 8254 programmable interval timer (Intel 8254 data sheet, order
// 231164) at ports 0x40-0x43, and port 0x61's timer bits (channel 2's gate,
// its output, the refresh toggle), as QEMU's i8254 and pcspk have them.
// Time is virtual: every access takes the accessing vCPU's clock in ns and
// the counters run at 1.193182 MHz of it. Removed by MachineConfig::pit =
// false (QEMU's -machine pit=off).
//
// Modelled: the control word (channel, read/write mode LSB/MSB/both, mode
// 0-5), counter latch and read-back commands (count and status), reads and
// writes through the LSB/MSB flip-flops, the count as each mode runs it
// (modes 2 and 3 reload; 0, 1, 4 and 5 wrap), each channel's OUT, channel
// 2's gate through port 0x61 bit 0 (a rising edge restarts modes 1, 2, 3
// and 5, as in QEMU), the speaker-data bit 1 as storage, OUT2 in bit 5 and
// the refresh toggle in bit 4 (every 15.085 us).
//
// Channel 0's OUT is IRQ 0: the board (emu/pc_board.cc) drives the I/O
// APIC's pin 2 with it at the times next_out_change gives. Linux 6.1's
// quick_pit_calibrate, which polls the counter, succeeds while an I/O exit
// costs under about 3 us of virtual time (154 MSB steps at the default
// 2 us); above, it falls back to pit_calibrate_tsc, which works at any
// cost up to ~10 us (pit8254_test replays both).
//
// Not modelled (deliberately):
// - BCD counting (the bit is kept and read back; counts are binary).
// - A low gate does not stop the count (QEMU does not stop it either).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "devices/port_bus.h"

namespace topolab {

class Pit8254 : public PortDevice {
 public:
  static constexpr uint16_t kBase = 0x40;
  static constexpr uint32_t kPortCount = 4;
  static constexpr uint16_t kPortB = 0x61;  // port_b() answers there
  static constexpr uint64_t kHz = 1'193'182;

  // `now_ns`: the accessing vCPU's virtual time. `written`: called after
  // each write to ports 0x40-0x43, when OUT and its next change may have
  // moved (the board drives IRQ 0 from channel 0's).
  explicit Pit8254(std::function<uint64_t()> now_ns, std::function<void()> written = {});

  std::string name() const override { return "pit-8254"; }
  uint32_t read(uint16_t offset, unsigned size) override;
  void write(uint16_t offset, unsigned size, uint32_t value) override;

  // Port 0x61 (the timer bits of the keyboard controller's port B).
  PortDevice& port_b() { return port_b_; }

  // For tests and the machine: channel `c`'s count and OUT at `ns`.
  uint16_t count_at(unsigned c, uint64_t ns) const;
  bool out_at(unsigned c, uint64_t ns) const;
  static uint64_t ticks_at(uint64_t ns) {
    return static_cast<uint64_t>(static_cast<unsigned __int128>(ns) * kHz / 1'000'000'000u);
  }
  // The first time (ns) at which `tick` has begun: ticks_at(ns_at(t)) == t.
  static uint64_t ns_at(uint64_t tick) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(tick) * 1'000'000'000u + kHz - 1) / kHz);
  }
  // The first time after `ns` at which channel `c`'s OUT differs from
  // out_at(c, ns); nullopt if it never changes again as programmed (no
  // count loaded, a one-shot mode past its terminal count, mode 2 or 3
  // with a count of 1).
  std::optional<uint64_t> next_out_change(unsigned c, uint64_t ns) const;

  // Snapshots (base/state_archive.h). Counts are kept as the tick they were
  // loaded at, so they resume right when the machine's virtual time does.
  template <class Archive>
  void serialize(Archive& ar) {
    ar(channels_, speaker_data_);
  }

 private:
  enum class Access : uint8_t { Latch = 0, Lsb = 1, Msb = 2, Both = 3 };
  struct Channel {
    Access access = Access::Both;
    uint8_t mode = 0;
    bool bcd = false;
    uint32_t count = 0x10000;  // the loaded count; 0 written means 65536
    bool loaded = false;       // a count was written since the control word
    bool null_count = true;    // status bit 6: written but not yet loaded
    uint64_t load_tick = 0;
    bool gate = false;
    uint16_t pending_lsb = 0;  // LSB-then-MSB writes: the LSB seen
    bool write_msb_next = false;
    bool read_msb_next = false;
    bool count_latched = false;
    uint16_t latched_count = 0;
    bool status_latched = false;
    uint8_t latched_status = 0;

    template <class Archive>
    void serialize(Archive& ar) {
      ar(access, mode, bcd, count, loaded, null_count, load_tick, gate, pending_lsb, write_msb_next, read_msb_next,
         count_latched, latched_count, status_latched, latched_status);
    }
  };
  class PortB : public PortDevice {
   public:
    explicit PortB(Pit8254& pit) : pit_(pit) {}
    std::string name() const override { return "port-b (pit)"; }
    uint32_t read(uint16_t, unsigned) override;
    void write(uint16_t, unsigned, uint32_t value) override;

   private:
    Pit8254& pit_;
  };

  uint64_t elapsed(const Channel& ch, uint64_t tick) const { return tick > ch.load_tick ? tick - ch.load_tick : 0; }
  uint16_t counter(const Channel& ch, uint64_t tick) const;
  bool out(const Channel& ch, uint64_t tick) const;
  std::optional<uint64_t> next_out_change_tick(const Channel& ch, uint64_t tick) const;
  uint8_t status(const Channel& ch, uint64_t tick) const;
  void control(uint8_t value, uint64_t tick);
  void write_count(Channel& ch, uint8_t value, uint64_t tick);
  uint8_t read_count(Channel& ch, uint64_t tick);
  void set_gate(Channel& ch, bool gate, uint64_t tick);

  std::function<uint64_t()> now_ns_;
  std::function<void()> written_;
  std::array<Channel, 3> channels_{};
  PortB port_b_;
  bool speaker_data_ = false;
};

}  // namespace topolab
