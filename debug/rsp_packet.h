// SPDX-License-Identifier: GPL-2.0-or-later
// gdb's remote serial protocol on the wire (gdb manual, "Overview" of
// "Remote Protocol"): `$payload#cs` packets with a two-digit checksum, the
// `+`/`-` acknowledgments, ^C (0x03) outside a packet as an interrupt, and
// the `}` escape of binary data ("Binary data" in the same section).
// Nothing here knows what a packet means: debug/gdb_session does.
//
// The reader never throws and never holds more than the packet limit: a
// packet longer than that is dropped as it arrives and reported once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace topolab::debug {

// The largest payload (as sent, escapes counted) the stub accepts: what
// qSupported's PacketSize says (0x4000).
inline constexpr size_t kMaxPacketPayload = 0x4000;

struct PacketEvent {
  enum class Kind : uint8_t {
    kPacket,       // `payload` holds the packet's data, escapes undone
    kAck,          // `+`
    kNak,          // `-`: resend the last packet
    kInterrupt,    // 0x03 between packets
    kBadChecksum,  // the checksum did not match (or was not hex): answer `-`
    kOversized,    // longer than the limit: dropped unread
  };
  Kind kind = Kind::kPacket;
  std::string payload;

  friend bool operator==(const PacketEvent&, const PacketEvent&) = default;
};

// Bytes in, events out, in any split: a packet may arrive a byte at a time.
class PacketReader {
 public:
  explicit PacketReader(size_t max_payload = kMaxPacketPayload) : max_payload_(max_payload) {}

  // Appends to `out` the events the bytes complete.
  void feed(std::span<const uint8_t> bytes, std::vector<PacketEvent>& out);
  void feed(std::string_view bytes, std::vector<PacketEvent>& out);

 private:
  enum class State : uint8_t { kIdle, kPayload, kEscape, kChecksumHigh, kChecksumLow };
  void feed_byte(uint8_t byte, std::vector<PacketEvent>& out);
  void payload_byte(uint8_t byte);
  void finish(std::vector<PacketEvent>& out);

  size_t max_payload_;
  State state_ = State::kIdle;
  std::string payload_;
  size_t raw_length_ = 0;  // bytes between `$` and `#`, escapes included
  uint8_t sum_ = 0;        // modulo-256 sum of those bytes
  int sent_sum_ = 0;       // the checksum as the packet gives it (-1: not hex)
  bool oversized_ = false;
};

// The packet on the wire for `payload`: `#`, `$`, `}` and `*` escaped (the
// stub never uses run-length encoding, and gdb reads `*` as one).
std::string frame(std::string_view payload);
uint8_t checksum(std::string_view bytes);

// Hex as the protocol writes it: two lowercase digits a byte, in order.
std::string hex_encode(std::span<const uint8_t> bytes);
std::string hex_encode(std::string_view text);
// nullopt unless `hex` is an even number of hex digits.
std::optional<std::vector<uint8_t>> hex_decode(std::string_view hex);
// A number in hex (1 to 16 digits, no prefix): addresses, lengths, thread
// ids, register numbers.
std::optional<uint64_t> parse_hex_number(std::string_view hex);
// `value` as `bytes` little-endian bytes in hex (a register's contents).
std::string hex_le(uint64_t value, unsigned bytes);

}  // namespace topolab::debug
