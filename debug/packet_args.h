// SPDX-License-Identifier: GPL-2.0-or-later
// The pieces packets share, spelled once for GdbSession's two files: the
// error replies, "ADDR,LENGTH", and thread ids (gdb manual, "Packets" and
// "thread-id syntax", without the multiprocess form, which the stub does
// not advertise).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "debug/rsp_packet.h"

namespace topolab::debug {

// A packet that does not parse, or names a thread or register that does not exist.
inline constexpr std::string_view kBadPacket = "E01";
// Guest memory that cannot be read or written (EFAULT, as gdbserver and QEMU answer).
inline constexpr std::string_view kMemoryFault = "E14";
// A value the target refuses (EINVAL).
inline constexpr std::string_view kRefused = "E22";

// "ADDR,LENGTH" as m, M, X, Z and qXfer carry them (hex, no prefix).
struct AddressLength {
  uint64_t address;
  uint64_t length;
};
inline std::optional<AddressLength> parse_address_length(std::string_view text) {
  const size_t comma = text.find(',');
  if (comma == std::string_view::npos) return std::nullopt;
  const auto address = parse_hex_number(text.substr(0, comma));
  const auto length = parse_hex_number(text.substr(comma + 1));
  if (!address || !length) return std::nullopt;
  return AddressLength{*address, *length};
}

// A thread id as H, T, vCont and qThreadExtraInfo give one: -1 all, 0 any,
// otherwise the hex thread number (vCPU + 1).
struct ThreadRef {
  enum class Kind : uint8_t { kAll, kAny, kOne } kind;
  uint64_t vcpu = 0;
};
inline std::optional<ThreadRef> parse_thread(std::string_view text) {
  if (text == "-1") return ThreadRef{ThreadRef::Kind::kAll};
  const auto id = parse_hex_number(text);
  if (!id) return std::nullopt;
  if (*id == 0) return ThreadRef{ThreadRef::Kind::kAny};
  return ThreadRef{ThreadRef::Kind::kOne, *id - 1};
}

}  // namespace topolab::debug
