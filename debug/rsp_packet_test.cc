// SPDX-License-Identifier: GPL-2.0-or-later
#include "debug/rsp_packet.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace topolab::debug {
namespace {

using Kind = PacketEvent::Kind;

std::vector<PacketEvent> read_all(std::string_view bytes, size_t limit = kMaxPacketPayload) {
  PacketReader reader(limit);
  std::vector<PacketEvent> events;
  reader.feed(bytes, events);
  return events;
}

PacketEvent packet(std::string payload) { return {Kind::kPacket, std::move(payload)}; }

TEST(RspFrame, ChecksumIsTheByteSumModulo256InLowercaseHex) {
  // The gdb manual's own example: $g#67 (0x67 = 'g').
  EXPECT_EQ(frame("g"), "$g#67");
  EXPECT_EQ(frame(""), "$#00");
  EXPECT_EQ(frame("OK"), "$OK#9a");
  EXPECT_EQ(checksum("OK"), 0x9a);
}

TEST(RspFrame, ChecksumOfEveryLengthAndByte) {
  std::string bytes;
  for (int i = 0; i < 600; ++i) bytes.push_back(static_cast<char>(255 - i * 7));
  for (size_t start = 0; start < 9; ++start) {
    for (size_t length = 0; start + length <= bytes.size(); length += 1 + length / 8) {
      unsigned sum = 0;
      for (size_t i = start; i < start + length; ++i) sum += static_cast<uint8_t>(bytes[i]);
      EXPECT_EQ(checksum(std::string_view(bytes).substr(start, length)), sum % 256) << start << " " << length;
    }
  }
}

TEST(RspFrame, EscapesHashDollarBraceAndStar) {
  // Each escaped as '}' then the byte XOR 0x20; the checksum covers the
  // bytes as sent.
  const std::string framed = frame(std::string("a#b$c}d*e"));
  const std::string body = "a}\x03" "b}\x04" "c}]d}\x0a" "e";
  EXPECT_EQ(framed, "$" + body + "#" + fmt::format("{:02x}", checksum(body)));
}

TEST(RspReader, FramedPacketsReadBackWhateverTheirBytes) {
  std::string all_bytes;
  for (int b = 0; b < 256; ++b) all_bytes.push_back(static_cast<char>(b));
  EXPECT_EQ(read_all(frame(all_bytes)), std::vector{packet(all_bytes)});
  // Escapes first, last, next to each other.
  for (const std::string p : {"#", "$$", "}a*", "a}}", "**#a$", "ab}"})
    EXPECT_EQ(read_all(frame(p)), std::vector{packet(p)}) << p;
}

TEST(RspReader, AcksNaksAndInterruptOutsidePackets) {
  EXPECT_EQ(read_all("+-\x03"), (std::vector<PacketEvent>{{Kind::kAck, {}}, {Kind::kNak, {}}, {Kind::kInterrupt, {}}}));
}

TEST(RspReader, InterruptByteInsideAPacketIsData) {
  EXPECT_EQ(read_all(frame("a\x03+-b")), std::vector{packet("a\x03+-b")});
}

TEST(RspReader, AnySplitGivesTheSameEvents) {
  // X's data as gdb sends it: '#' and '}' escaped.
  const std::string x_packet = "X1000,3:}\x03}]x";
  const std::string x_wire = "$" + x_packet + "#" + fmt::format("{:02x}", checksum(x_packet));
  const std::string stream = "+" + frame("qSupported:multiprocess+;swbreak+") + "\x03" + x_wire + "-";
  const auto whole = read_all(stream);
  ASSERT_EQ(whole.size(), 5u);
  EXPECT_EQ(whole[3], packet("X1000,3:#}x"));
  for (size_t split = 0; split <= stream.size(); ++split) {
    PacketReader reader;
    std::vector<PacketEvent> events;
    reader.feed(std::string_view(stream).substr(0, split), events);
    reader.feed(std::string_view(stream).substr(split), events);
    EXPECT_EQ(events, whole) << "split at " << split;
  }
  PacketReader reader;
  std::vector<PacketEvent> bytewise;
  for (const char c : stream) reader.feed(std::string_view(&c, 1), bytewise);
  EXPECT_EQ(bytewise, whole);
}

TEST(RspReader, BadChecksumIsReportedAndTheNextPacketStillReads) {
  EXPECT_EQ(read_all("$g#00$g#67"), (std::vector<PacketEvent>{{Kind::kBadChecksum, {}}, packet("g")}));
  EXPECT_EQ(read_all("$g#zz"), (std::vector<PacketEvent>{{Kind::kBadChecksum, {}}}));
}

TEST(RspReader, ChecksumDigitsInEitherCase) {
  EXPECT_EQ(read_all("$OK#9A"), std::vector{packet("OK")});
}

TEST(RspReader, NoiseBetweenPacketsIsIgnored) {
  EXPECT_EQ(read_all("junk\r\n$g#67"), std::vector{packet("g")});
  EXPECT_EQ(read_all(std::string("\0x#}", 4) + "+" + std::string(300, 'z') + "\x03-$g#67zz"),
            (std::vector<PacketEvent>{{Kind::kAck, {}}, {Kind::kInterrupt, {}}, {Kind::kNak, {}}, packet("g")}));
}

TEST(RspReader, DollarInsidePacketRestarts) {
  EXPECT_EQ(read_all("$abc$g#67"), std::vector{packet("g")});
}

TEST(RspReader, OversizedPacketIsDroppedOnceAndReadingGoesOn) {
  const std::string big(kMaxPacketPayload + 1, 'a');
  EXPECT_EQ(read_all(frame(big) + frame("g")), (std::vector<PacketEvent>{{Kind::kOversized, {}}, packet("g")}));
  // Exactly at the limit is accepted.
  const std::string limit(kMaxPacketPayload, 'a');
  EXPECT_EQ(read_all(frame(limit)), std::vector{packet(limit)});
  // Escapes count as sent: a payload that doubles on the wire.
  EXPECT_EQ(read_all(frame(std::string(kMaxPacketPayload / 2 + 1, '#'))),
            (std::vector<PacketEvent>{{Kind::kOversized, {}}}));
}

TEST(RspReader, EndlessPacketHoldsNoMoreThanTheLimit) {
  PacketReader reader(16);
  std::vector<PacketEvent> events;
  reader.feed("$", events);
  for (int i = 0; i < 1000; ++i) reader.feed("0123456789", events);
  EXPECT_TRUE(events.empty());
  reader.feed("#00", events);
  EXPECT_EQ(events, (std::vector<PacketEvent>{{Kind::kOversized, {}}}));
}

// feed() takes plain payload bytes a run at a time: around the limit, an
// escape or a '$' at every place, fed whole, byte by byte and in two parts,
// gives the same events.
TEST(RspReader, RunsAroundTheLimitReadAsByteByByte) {
  constexpr size_t kLimit = 8;
  for (size_t length = kLimit - 2; length <= kLimit + 2; ++length) {
    for (size_t at = 0; at <= length; ++at) {
      for (const char special : {'}', '$', '#', 'x'}) {
        std::string body(length, 'a');
        if (at < length) body[at] = special;
        const std::string stream = "$" + body + "#" + fmt::format("{:02x}", checksum(body)) + frame("g");
        const auto whole = read_all(stream, kLimit);
        PacketReader reader(kLimit);
        std::vector<PacketEvent> bytewise;
        for (const char c : stream) reader.feed(std::string_view(&c, 1), bytewise);
        EXPECT_EQ(bytewise, whole) << stream;
        for (size_t split = 0; split <= stream.size(); ++split) {
          PacketReader two(kLimit);
          std::vector<PacketEvent> events;
          two.feed(std::string_view(stream).substr(0, split), events);
          two.feed(std::string_view(stream).substr(split), events);
          EXPECT_EQ(events, whole) << stream << " split at " << split;
        }
      }
    }
  }
  EXPECT_EQ(read_all("$aaaaaaaa#08", kLimit), std::vector{packet("aaaaaaaa")});  // 8 * 0x61 = 0x308
  EXPECT_EQ(read_all("$aaaaaaaaa#69", kLimit), (std::vector<PacketEvent>{{Kind::kOversized, {}}}));
}

TEST(RspHex, EncodeDecodeRoundTrip) {
  const std::vector<uint8_t> bytes = {0x00, 0x7f, 0x80, 0xff, 0x12};
  EXPECT_EQ(hex_encode(bytes), "007f80ff12");
  EXPECT_EQ(hex_decode("007F80ff12"), bytes);
  EXPECT_EQ(hex_encode(std::string_view("OK")), "4f4b");
}

TEST(RspHex, DecodeRejectsOddLengthAndNonHex) {
  EXPECT_FALSE(hex_decode("abc"));
  EXPECT_FALSE(hex_decode("zz"));
  EXPECT_EQ(hex_decode(""), std::vector<uint8_t>{});
}

TEST(RspHex, Numbers) {
  EXPECT_EQ(parse_hex_number("ffffffffffffffff"), UINT64_MAX);
  EXPECT_EQ(parse_hex_number("1A"), 0x1au);
  EXPECT_FALSE(parse_hex_number("10000000000000000"));
  EXPECT_FALSE(parse_hex_number(""));
  EXPECT_FALSE(parse_hex_number("-1"));
  EXPECT_FALSE(parse_hex_number("0x10"));
}

TEST(RspHex, LittleEndianRegisterBytes) {
  EXPECT_EQ(hex_le(0x1122334455667788, 8), "8877665544332211");
  EXPECT_EQ(hex_le(0x1234, 4), "34120000");
  EXPECT_EQ(hex_le(0x1, 10), "01000000000000000000");
}

}  // namespace
}  // namespace topolab::debug
