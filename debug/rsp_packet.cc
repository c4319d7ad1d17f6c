// SPDX-License-Identifier: GPL-2.0-or-later
#include "debug/rsp_packet.h"

#include <algorithm>
#include <array>
#include <cstdint>

namespace topolab::debug {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";
constexpr uint8_t kInterruptByte = 0x03;
constexpr uint8_t kEscapeByte = '}';
// "Binary data": the escaped byte is the original XOR 0x20.
constexpr uint8_t kEscapeXor = 0x20;

int hex_value(uint8_t c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Bytes that end a run of plain payload bytes in the reader ('#', '$',
// '}'), and bytes frame() escapes (those and '*'): one look-up a byte,
// not a comparison for each.
constexpr std::array<bool, 256> byte_table(std::string_view bytes) {
  std::array<bool, 256> table{};
  for (const char c : bytes) table[static_cast<uint8_t>(c)] = true;
  return table;
}
constexpr std::array<bool, 256> kEndsPlainRun = byte_table("#$}");
constexpr std::array<bool, 256> kEscaped = byte_table("#$}*");

}  // namespace

// Plain payload bytes (most of a packet) are taken a run at a time: what
// feed_byte would do to each, without the state machine around each byte.
void PacketReader::feed(std::span<const uint8_t> bytes, std::vector<PacketEvent>& out) {
  const uint8_t* p = bytes.data();
  const uint8_t* const end = p + bytes.size();
  while (p != end) {
    if (state_ == State::kPayload) {
      // No further than the limit: the byte past it goes through feed_byte.
      // Past it (oversized), bytes are only counted.
      const size_t room = oversized_ ? SIZE_MAX : max_payload_ - raw_length_;
      const uint8_t* const stop = p + std::min<size_t>(room, static_cast<size_t>(end - p));
      const uint8_t* q = p;
      uint8_t sum = sum_;
      while (q != stop && !kEndsPlainRun[*q]) sum = static_cast<uint8_t>(sum + *q++);
      if (!oversized_) payload_.append(reinterpret_cast<const char*>(p), static_cast<size_t>(q - p));
      raw_length_ += static_cast<size_t>(q - p);
      sum_ = sum;
      p = q;
      if (p == end) break;
    }
    feed_byte(*p++, out);
  }
}

void PacketReader::feed(std::string_view bytes, std::vector<PacketEvent>& out) {
  feed(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), out);
}

void PacketReader::payload_byte(uint8_t byte) {
  sum_ = static_cast<uint8_t>(sum_ + byte);
  if (++raw_length_ > max_payload_) {
    // Stop storing at once: the rest is only counted toward the checksum.
    oversized_ = true;
    payload_.clear();
    payload_.shrink_to_fit();
  }
}

void PacketReader::feed_byte(uint8_t byte, std::vector<PacketEvent>& out) {
  switch (state_) {
    case State::kIdle:
      if (byte == '$') {
        state_ = State::kPayload;
        payload_.clear();
        raw_length_ = 0;
        sum_ = 0;
        oversized_ = false;
      } else if (byte == '+') {
        out.push_back({PacketEvent::Kind::kAck, {}});
      } else if (byte == '-') {
        out.push_back({PacketEvent::Kind::kNak, {}});
      } else if (byte == kInterruptByte) {
        out.push_back({PacketEvent::Kind::kInterrupt, {}});
      }
      // Anything else between packets is line noise: ignored, as gdb does.
      return;
    case State::kPayload:
      if (byte == '#') {
        state_ = State::kChecksumHigh;
        return;
      }
      if (byte == '$') {
        // A new packet start inside one: the first was cut short; the
        // sender retransmits it after our silence, so begin again.
        state_ = State::kIdle;
        feed_byte(byte, out);
        return;
      }
      payload_byte(byte);
      if (byte == kEscapeByte) state_ = State::kEscape;
      else if (!oversized_) payload_.push_back(static_cast<char>(byte));
      return;
    case State::kEscape:
      payload_byte(byte);
      if (!oversized_) payload_.push_back(static_cast<char>(byte ^ kEscapeXor));
      state_ = State::kPayload;
      return;
    case State::kChecksumHigh: {
      const int v = hex_value(byte);
      sent_sum_ = v < 0 ? -1 : v << 4;
      state_ = State::kChecksumLow;
      return;
    }
    case State::kChecksumLow: {
      const int v = hex_value(byte);
      if (v < 0 || sent_sum_ < 0) sent_sum_ = -1;
      else sent_sum_ |= v;
      finish(out);
      return;
    }
  }
}

void PacketReader::finish(std::vector<PacketEvent>& out) {
  state_ = State::kIdle;
  if (oversized_) {
    out.push_back({PacketEvent::Kind::kOversized, {}});
  } else if (sent_sum_ != sum_) {
    out.push_back({PacketEvent::Kind::kBadChecksum, {}});
  } else {
    out.push_back({PacketEvent::Kind::kPacket, std::move(payload_)});
  }
  payload_.clear();
}

uint8_t checksum(std::string_view bytes) {
  uint8_t sum = 0;
  for (const char c : bytes) sum = static_cast<uint8_t>(sum + static_cast<uint8_t>(c));
  return sum;
}

std::string frame(std::string_view payload) {
  // '$', the payload with escapes (at most two bytes each), '#', two digits.
  std::string out(payload.size() * 2 + 4, '\0');
  char* p = out.data();
  *p++ = '$';
  uint8_t sum = 0;
  for (const char c : payload) {
    if (kEscaped[static_cast<uint8_t>(c)]) {
      *p++ = static_cast<char>(kEscapeByte);
      *p++ = static_cast<char>(c ^ kEscapeXor);
      sum = static_cast<uint8_t>(sum + kEscapeByte + (static_cast<uint8_t>(c) ^ kEscapeXor));
    } else {
      *p++ = c;
      sum = static_cast<uint8_t>(sum + static_cast<uint8_t>(c));
    }
  }
  *p++ = '#';
  *p++ = kHexDigits[sum >> 4];
  *p++ = kHexDigits[sum & 0xf];
  out.resize(static_cast<size_t>(p - out.data()));
  return out;
}

std::string hex_encode(std::span<const uint8_t> bytes) {
  std::string out(bytes.size() * 2, '\0');
  char* p = out.data();
  for (const uint8_t b : bytes) {
    *p++ = kHexDigits[b >> 4];
    *p++ = kHexDigits[b & 0xf];
  }
  return out;
}

std::string hex_encode(std::string_view text) {
  return hex_encode(std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

std::optional<std::vector<uint8_t>> hex_decode(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::vector<uint8_t> out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    const int high = hex_value(static_cast<uint8_t>(hex[2 * i]));
    const int low = hex_value(static_cast<uint8_t>(hex[2 * i + 1]));
    if (high < 0 || low < 0) return std::nullopt;
    out[i] = static_cast<uint8_t>(high << 4 | low);
  }
  return out;
}

std::optional<uint64_t> parse_hex_number(std::string_view hex) {
  if (hex.empty() || hex.size() > 16) return std::nullopt;
  uint64_t value = 0;
  for (const char c : hex) {
    const int v = hex_value(static_cast<uint8_t>(c));
    if (v < 0) return std::nullopt;
    value = value << 4 | static_cast<uint64_t>(v);
  }
  return value;
}

std::string hex_le(uint64_t value, unsigned bytes) {
  std::string out;
  for (unsigned i = 0; i < bytes; ++i) {
    const auto b = static_cast<uint8_t>(i < 8 ? value >> (8 * i) : 0);
    out += kHexDigits[b >> 4];
    out += kHexDigits[b & 0xf];
  }
  return out;
}

}  // namespace topolab::debug
