// SPDX-License-Identifier: GPL-2.0-or-later
// GdbSession's packets that read and change the machine: registers,
// memory, breakpoints, and the resume packets (gdb manual, "Packets").
#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "arch/register_file.h"
#include "debug/gdb_session.h"
#include "debug/packet_args.h"
#include "debug/rsp_packet.h"

namespace topolab::debug {
namespace {

constexpr uint64_t kMaxMemoryRead = kMaxPacketPayload / 2;
constexpr unsigned kMaxRegisterBytes = 16;

SessionAction reply(std::string_view text) { return {SessionAction::Kind::kReply, std::string(text), {}}; }

SessionAction resume(ResumeRequest request) { return {SessionAction::Kind::kResume, "", request}; }

// One register's value in hex, or "xx" a byte when the vCPU cannot say
// ("Packets", g: "the characters ‘xx’ ... indicate that the register's
// value is unavailable").
std::string register_hex(DebugTarget& target, unsigned vcpu, x86::RegisterId id) {
  std::array<uint8_t, kMaxRegisterBytes> bytes{};
  const unsigned size = x86::register_bytes(id);
  if (!target.read_register(vcpu, id, std::span(bytes.data(), size))) return std::string(size * 2, 'x');
  return hex_encode(std::span<const uint8_t>(bytes.data(), size));
}

}  // namespace

// Every register's bytes read into one buffer and encoded once (a string
// for each register was most of what `g` cost under the sanitizers).
std::string GdbSession::read_registers() {
  if (!valid_vcpu(general_vcpu())) return std::string(kBadPacket);
  size_t total = 0;
  for (const auto& reg : x86::debug_registers()) total += x86::register_bytes(reg.id);
  std::vector<uint8_t> bytes(total);
  std::vector<std::pair<size_t, unsigned>> unavailable;  // offset, size
  size_t offset = 0;
  for (const auto& reg : x86::debug_registers()) {
    const unsigned size = x86::register_bytes(reg.id);
    if (!target_.read_register(general_vcpu(), reg.id, std::span(bytes.data() + offset, size)))
      unavailable.emplace_back(offset, size);
    offset += size;
  }
  std::string out = hex_encode(bytes);
  for (const auto& [at, size] : unavailable) out.replace(2 * at, 2 * size, 2 * size, 'x');
  return out;
}

std::string GdbSession::write_registers(std::string_view hex) {
  if (!valid_vcpu(general_vcpu())) return std::string(kBadPacket);
  const auto bytes = hex_decode(hex);
  size_t total = 0;
  for (const auto& reg : x86::debug_registers()) total += x86::register_bytes(reg.id);
  if (!bytes || bytes->size() != total) return std::string(kBadPacket);
  bool all_written = true;
  size_t offset = 0;
  for (const auto& reg : x86::debug_registers()) {
    const unsigned size = x86::register_bytes(reg.id);
    all_written &= target_.write_register(general_vcpu(), reg.id, std::span(bytes->data() + offset, size));
    offset += size;
  }
  return all_written ? "OK" : std::string(kRefused);
}

std::string GdbSession::read_register(std::string_view args) {
  const auto number = parse_hex_number(args);
  if (!number || *number >= static_cast<unsigned>(x86::RegisterId::kCount) || !valid_vcpu(general_vcpu()))
    return std::string(kBadPacket);
  return register_hex(target_, general_vcpu(), static_cast<x86::RegisterId>(*number));
}

std::string GdbSession::write_register(std::string_view args) {
  const size_t equals = args.find('=');
  if (equals == std::string_view::npos) return std::string(kBadPacket);
  const auto number = parse_hex_number(args.substr(0, equals));
  const auto bytes = hex_decode(args.substr(equals + 1));
  if (!number || *number >= static_cast<unsigned>(x86::RegisterId::kCount) || !bytes || !valid_vcpu(general_vcpu()))
    return std::string(kBadPacket);
  const auto id = static_cast<x86::RegisterId>(*number);
  if (bytes->size() != x86::register_bytes(id)) return std::string(kBadPacket);
  return target_.write_register(general_vcpu(), id, *bytes) ? "OK" : std::string(kRefused);
}

// m ADDR,LENGTH: as many bytes as could be read from the start (the
// manual allows a short reply); none at all is E14.
std::string GdbSession::read_memory(std::string_view args) {
  const auto range = parse_address_length(args);
  if (!range || !valid_vcpu(general_vcpu())) return std::string(kBadPacket);
  std::vector<uint8_t> bytes(std::min(range->length, kMaxMemoryRead));
  if (bytes.empty()) return "";
  const size_t got = std::min(bytes.size(), target_.read_memory(general_vcpu(), memory_space(), range->address, bytes));
  if (got == 0) return std::string(kMemoryFault);
  return hex_encode(std::span<const uint8_t>(bytes.data(), got));
}

// M ADDR,LENGTH:HEX and X ADDR,LENGTH:BINARY (escapes already undone). An X
// of length 0 is gdb's probe for X: OK.
std::string GdbSession::write_memory(std::string_view args, bool binary) {
  const size_t colon = args.find(':');
  if (colon == std::string_view::npos) return std::string(kBadPacket);
  const auto range = parse_address_length(args.substr(0, colon));
  if (!range || !valid_vcpu(general_vcpu())) return std::string(kBadPacket);
  const std::string_view data = args.substr(colon + 1);
  std::vector<uint8_t> bytes;
  if (binary) {
    bytes.assign(data.begin(), data.end());
  } else {
    auto decoded = hex_decode(data);
    if (!decoded) return std::string(kBadPacket);
    bytes = std::move(*decoded);
  }
  if (bytes.size() != range->length) return std::string(kBadPacket);
  if (bytes.empty()) return "OK";
  return target_.write_memory(general_vcpu(), memory_space(), range->address, bytes) ? "OK" : std::string(kMemoryFault);
}

// Z TYPE,ADDR,KIND[;cond...] / z TYPE,ADDR,KIND ("Packets", z and Z). The
// target does them on every vCPU. A type it does not support is the empty
// reply, so that gdb stops asking for it.
std::string GdbSession::breakpoint(std::string_view args, bool insert) {
  args = args.substr(0, args.find(';'));  // conditions and commands are gdb's to evaluate
  if (args.empty()) return std::string(kBadPacket);
  if (args[0] < '0' || args[0] > '4') return "";  // a type the protocol may add later
  if (args.size() < 3 || args[1] != ',') return std::string(kBadPacket);
  const auto kind = static_cast<BreakpointKind>(args[0] - '0');
  const auto range = parse_address_length(args.substr(2));
  if (!range) return std::string(kBadPacket);
  const uint64_t length = range->length;
  const bool watch = kind >= BreakpointKind::kWriteWatch;
  // x86 debug registers watch 1, 2, 4 or 8 bytes (SDM 17.2.5).
  if (watch && length != 1 && length != 2 && length != 4 && length != 8) return std::string(kRefused);
  if (!watch && length > 16) return std::string(kRefused);  // an instruction is at most 15 bytes
  if (insert) return target_.insert_breakpoint(kind, range->address, static_cast<unsigned>(length)) ? "OK" : "";
  return target_.remove_breakpoint(kind, range->address, static_cast<unsigned>(length)) ? "OK" : std::string(kRefused);
}

// c [ADDR], s [ADDR], C SIG[;ADDR], S SIG[;ADDR]: the signal is ignored (a
// machine has no signals to deliver; QEMU ignores it too); an address sets
// the continue thread's rip first.
SessionAction GdbSession::resume_legacy(std::string_view payload) {
  const bool step = payload[0] == 's' || payload[0] == 'S';
  std::string_view address_text = payload.substr(1);
  if (payload[0] == 'C' || payload[0] == 'S') {
    const size_t semicolon = address_text.find(';');
    if (!parse_hex_number(address_text.substr(0, semicolon))) return reply(kBadPacket);
    address_text = semicolon == std::string_view::npos ? std::string_view() : address_text.substr(semicolon + 1);
  }
  if (!valid_vcpu(continue_vcpu())) return reply(kBadPacket);
  if (!address_text.empty()) {
    const auto address = parse_hex_number(address_text);
    if (!address) return reply(kBadPacket);
    const std::string rip = hex_le(*address, 8);
    const auto bytes = hex_decode(rip);
    if (!target_.write_register(continue_vcpu(), x86::RegisterId::kRip, *bytes)) return reply(kRefused);
  }
  ResumeRequest request;
  if (step) request.step_vcpu = continue_vcpu();
  return resume(request);
}

// vCont;ACTION[:THREAD]...: "the leftmost action with a matching thread-id
// is applied" ("Packets", vCont). topolab's resume can step one vCPU with
// or without the others running, or continue them all:
//   s:N;c -> step N, the others run;  s:N -> step N alone;
//   s (every thread) -> step the continue thread, the others run;
//   c, c:N -> continue.
SessionAction GdbSession::vcont(std::string_view actions) {
  if (actions.empty()) return reply(kBadPacket);
  std::optional<unsigned> step_vcpu;
  bool continue_others = false, step_all = false;
  while (!actions.empty()) {
    const size_t semicolon = actions.find(';');
    std::string_view action = actions.substr(0, semicolon);
    actions = semicolon == std::string_view::npos ? std::string_view() : actions.substr(semicolon + 1);
    if (action.empty()) return reply(kBadPacket);
    const char verb = action[0];
    if (verb != 'c' && verb != 'C' && verb != 's' && verb != 'S') return reply(kBadPacket);
    const size_t colon = action.find(':');
    const std::string_view signal = action.substr(1, colon == std::string_view::npos ? std::string_view::npos : colon - 1);
    if ((verb == 'C' || verb == 'S') != !signal.empty() || (!signal.empty() && !parse_hex_number(signal)))
      return reply(kBadPacket);
    std::optional<uint64_t> thread_vcpu;  // nullopt: every thread
    if (colon != std::string_view::npos) {
      const auto thread = parse_thread(action.substr(colon + 1));
      if (!thread || thread->kind == ThreadRef::Kind::kAny) return reply(kBadPacket);
      if (thread->kind == ThreadRef::Kind::kOne) {
        if (!valid_vcpu(thread->vcpu)) return reply(kBadPacket);
        thread_vcpu = thread->vcpu;
      }
    }
    const bool step = verb == 's' || verb == 'S';
    if (step && !step_vcpu && !step_all) {
      if (thread_vcpu) step_vcpu = static_cast<unsigned>(*thread_vcpu);
      else step_all = true;
    } else if (!step) {
      continue_others = true;
    }
  }
  ResumeRequest request;
  if (step_all) {
    if (!valid_vcpu(continue_vcpu())) return reply(kBadPacket);
    request.step_vcpu = continue_vcpu();
  } else if (step_vcpu) {
    request.step_vcpu = step_vcpu;
    request.others_run = continue_others;
  }
  return resume(request);
}

// bc / bs ("Packets"): only when the target records history; otherwise
// the empty reply, as for any packet not supported.
SessionAction GdbSession::reverse(bool step) {
  if (!target_.can_reverse()) return reply("");
  ResumeRequest request;
  request.direction = ResumeRequest::Direction::kReverse;
  if (step) {
    if (!valid_vcpu(continue_vcpu())) return reply(kBadPacket);
    request.step_vcpu = continue_vcpu();
  }
  return resume(request);
}

}  // namespace topolab::debug
