// SPDX-License-Identifier: GPL-2.0-or-later
#include "debug/rsp_packet.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

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

// The end of the run of bytes from `p` to `end` that holds none of
// `specials`: memchr is the C library's, so a fuzzing build's coverage
// hooks do not run on every byte of a long payload.
const uint8_t* run_end(const uint8_t* p, const uint8_t* end, std::string_view specials) {
  for (const char c : specials) {
    if (const void* at = std::memchr(p, c, static_cast<size_t>(end - p))) end = static_cast<const uint8_t*>(at);
  }
  return end;
}

// The modulo-256 sum of `n` bytes, eight at a time: each half of a word's
// bytes summed in 16-bit lanes (at most 4 * 255 each, so no lane carries).
uint8_t byte_sum(const uint8_t* p, size_t n) {
  constexpr uint64_t kEvenBytes = 0x00ff00ff00ff00ff;
  constexpr uint64_t kLanes = 0x0001000100010001;
  uint64_t sum = 0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t word;
    std::memcpy(&word, p + i, 8);
    sum += ((word & kEvenBytes) * kLanes) >> 48;
    sum += (((word >> 8) & kEvenBytes) * kLanes) >> 48;
  }
  for (; i < n; ++i) sum += p[i];
  return static_cast<uint8_t>(sum);
}

}  // namespace

// Plain payload bytes (most of a packet), and noise between packets, are
// taken a run at a time: what feed_byte would do to each, without the
// state machine around each byte.
void PacketReader::feed(std::span<const uint8_t> bytes, std::vector<PacketEvent>& out) {
  const uint8_t* p = bytes.data();
  const uint8_t* const end = p + bytes.size();
  while (p != end) {
    if (state_ == State::kIdle) {
      // Line noise between packets, skipped a run at a time.
      p = run_end(p, end, "$+-\x03");
      if (p == end) break;
    } else if (state_ == State::kPayload) {
      // No further than the limit: the byte past it goes through feed_byte.
      // Past it (oversized), bytes are only counted.
      const size_t room = oversized_ ? SIZE_MAX : max_payload_ - raw_length_;
      const uint8_t* const q = run_end(p, p + std::min<size_t>(room, static_cast<size_t>(end - p)), "#$}");
      const auto n = static_cast<size_t>(q - p);
      if (!oversized_) payload_.append(reinterpret_cast<const char*>(p), n);
      raw_length_ += n;
      sum_ = static_cast<uint8_t>(sum_ + byte_sum(p, n));
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
  return byte_sum(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

std::string frame(std::string_view payload) {
  // '$', the payload with escapes (at most two bytes each), '#', two digits.
  std::string out(payload.size() * 2 + 4, '\0');
  char* o = out.data();
  *o++ = '$';
  const auto* p = reinterpret_cast<const uint8_t*>(payload.data());
  const uint8_t* const end = p + payload.size();
  while (p != end) {
    // A run of bytes as they are, then one escaped.
    const uint8_t* const q = run_end(p, end, "#$}*");
    std::memcpy(o, p, static_cast<size_t>(q - p));
    o += q - p;
    p = q;
    if (p == end) break;
    *o++ = static_cast<char>(kEscapeByte);
    *o++ = static_cast<char>(*p++ ^ kEscapeXor);
  }
  const uint8_t sum = checksum(std::string_view(out.data() + 1, static_cast<size_t>(o - out.data() - 1)));
  *o++ = '#';
  *o++ = kHexDigits[sum >> 4];
  *o++ = kHexDigits[sum & 0xf];
  out.resize(static_cast<size_t>(o - out.data()));
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
