// SPDX-License-Identifier: GPL-2.0-or-later
#include "debug/gdb_session.h"

#include <algorithm>
#include <exception>
#include <vector>

#include <fmt/format.h>

#include "arch/register_file.h"
#include "debug/packet_args.h"
#include "debug/rsp_packet.h"
#include "debug/target_xml.h"

namespace topolab::debug {
namespace {

// qfThreadInfo/qsThreadInfo: threads a reply, so that 4,096 vCPUs fit
// packets well below PacketSize.
constexpr unsigned kThreadsPerReply = 256;

// qRcmd: the most output one reply carries (hex doubles it).
constexpr size_t kMaxMonitorOutput = kMaxPacketPayload / 2;

SessionAction reply(std::string_view text) { return {SessionAction::Kind::kReply, std::string(text), {}}; }

std::string_view watch_prefix(BreakpointKind kind) {
  switch (kind) {
    case BreakpointKind::kReadWatch: return "rwatch";
    case BreakpointKind::kAccessWatch: return "awatch";
    default: return "watch";
  }
}

}  // namespace

GdbSession::GdbSession(DebugTarget& target, StopEvent initial) : target_(target), last_stop_(std::move(initial)) {}

std::string GdbSession::stop_reply(const StopEvent& event) {
  using Kind = StopEvent::Kind;
  // "W AA": the process exited with status AA.
  if (event.kind == Kind::kExited) return fmt::format("W{:02x}", static_cast<unsigned>(event.exit_code) & 0xff);
  // SIGINT (2) for ^C, SIGTRAP (5) for everything else, as gdb expects.
  const unsigned signal = event.kind == Kind::kInterrupted ? 2 : 5;
  std::string out = fmt::format("T{:02x}thread:{:x};", signal, event.vcpu + 1);
  switch (event.kind) {
    case Kind::kSoftwareBreak: out += "swbreak:;"; break;
    case Kind::kHardwareBreak: out += "hwbreak:;"; break;
    case Kind::kWatch: out += fmt::format("{}:{:x};", watch_prefix(event.watch_kind), event.watch_address); break;
    case Kind::kHistoryBegin: out += "replaylog:begin;"; break;
    case Kind::kHistoryEnd: out += "replaylog:end;"; break;
    default: break;
  }
  return out;
}

std::string GdbSession::stopped(const StopEvent& event) {
  last_stop_ = event;
  // gdb takes the thread a stop reply names as its current thread (for g,
  // m, ...) without sending Hg: so does the stub.
  general_vcpu_.reset();
  return stop_reply(event);
}

SessionAction GdbSession::handle(std::string_view payload) {
  try {
    return dispatch(payload);
  } catch (...) {
    // The target's own failure (an allocation, a bug): the client gets an
    // error for this packet and the session goes on.
    return reply(kBadPacket);
  }
}

SessionAction GdbSession::dispatch(std::string_view payload) {
  if (payload.empty()) return reply("");
  const std::string_view args = payload.substr(1);
  switch (payload[0]) {
    case '?': return reply(stop_reply(last_stop_));
    case 'q': return reply(query(payload));
    case 'Q': return reply(set_query(payload));
    case 'v': return v_packet(payload);
    case 'H': return reply(set_thread(args));
    case 'T': return reply(thread_alive(args));
    case 'g': return reply(args.empty() ? read_registers() : std::string(kBadPacket));
    case 'G': return reply(write_registers(args));
    case 'p': return reply(read_register(args));
    case 'P': return reply(write_register(args));
    case 'm': return reply(read_memory(args));
    case 'M': return reply(write_memory(args, false));
    case 'X': return reply(write_memory(args, true));
    case 'Z': return reply(breakpoint(args, true));
    case 'z': return reply(breakpoint(args, false));
    case 'c': case 's': case 'C': case 'S': return resume_legacy(payload);
    case 'b':
      if (payload == "bc") return reverse(false);
      if (payload == "bs") return reverse(true);
      return reply("");
    case 'D':
      target_.detach();
      return {SessionAction::Kind::kDetach, "OK", {}};
    case 'k':
      target_.kill();
      return {SessionAction::Kind::kKill, "", {}};
    default: return reply("");
  }
}

std::string GdbSession::supported() const {
  std::string out = fmt::format("PacketSize={:x};QStartNoAckMode+;qXfer:features:read+;vContSupported+;swbreak+;hwbreak+",
                                kMaxPacketPayload);
  if (target_.can_reverse()) out += ";ReverseStep+;ReverseContinue+";
  return out;
}

std::string GdbSession::query(std::string_view payload) {
  if (payload.starts_with("qSupported")) return supported();
  if (payload.starts_with("qXfer:")) return xfer(payload.substr(6));
  if (payload == "qfThreadInfo") return thread_list(true);
  if (payload == "qsThreadInfo") return thread_list(false);
  if (payload == "qC") return fmt::format("QC{:x}", last_stop_.vcpu + 1);
  if (payload.starts_with("qAttached")) return "1";  // attached to a running machine: detach, not kill, on quit
  // Bare metal: the image runs where it was linked.
  if (payload == "qOffsets") return "Text=0;Data=0;Bss=0";
  // The stub needs no symbol values from gdb.
  if (payload.starts_with("qSymbol:")) return "OK";
  if (payload.starts_with("qThreadExtraInfo,")) return thread_extra_info(payload.substr(17));
  if (payload.starts_with("qRcmd,")) return monitor_command(payload.substr(6));
  if (payload == "qqemu.PhyMemMode") return physical_memory_ ? "1" : "0";
  return "";
}

std::string GdbSession::set_query(std::string_view payload) {
  if (payload == "QStartNoAckMode") {
    no_ack_mode_ = true;
    return "OK";
  }
  if (payload.starts_with("Qqemu.PhyMemMode:")) {
    const std::string_view value = payload.substr(17);
    if (value != "0" && value != "1") return std::string(kRefused);
    physical_memory_ = value == "1";
    return "OK";
  }
  return "";
}

SessionAction GdbSession::v_packet(std::string_view payload) {
  if (payload == "vCont?") return reply("vCont;c;C;s;S");
  if (payload.starts_with("vCont;")) return vcont(payload.substr(6));
  return reply("");
}

// qXfer:features:read:ANNEX:OFFSET,LENGTH (the "qXfer:" is gone).
std::string GdbSession::xfer(std::string_view args) {
  constexpr std::string_view kFeaturesRead = "features:read:";
  if (!args.starts_with(kFeaturesRead)) return "";  // no other object is offered
  args.remove_prefix(kFeaturesRead.size());
  const size_t colon = args.find(':');
  if (colon == std::string_view::npos) return "E00";
  // "E00: the request was malformed, or annex was invalid."
  if (args.substr(0, colon) != "target.xml") return "E00";
  const auto range = parse_address_length(args.substr(colon + 1));
  if (!range) return "E00";
  // Leave room for the `m`/`l` and any escapes within PacketSize.
  const uint64_t length = std::min<uint64_t>(range->length, kMaxPacketPayload / 2);
  return xfer_chunk(target_xml(), range->address, length);
}

std::string GdbSession::thread_list(bool first) {
  if (first) next_thread_listed_ = 0;
  const unsigned count = target_.vcpu_count();
  if (next_thread_listed_ >= count) return "l";
  std::string out = "m";
  const unsigned end = std::min(count, next_thread_listed_ + kThreadsPerReply);
  for (unsigned vcpu = next_thread_listed_; vcpu < end; ++vcpu) {
    if (vcpu != next_thread_listed_) out += ',';
    out += fmt::format("{:x}", vcpu + 1);
  }
  next_thread_listed_ = end;
  return out;
}

std::string GdbSession::thread_extra_info(std::string_view args) {
  const auto thread = parse_thread(args);
  if (!thread || thread->kind != ThreadRef::Kind::kOne || !valid_vcpu(thread->vcpu)) return std::string(kBadPacket);
  return hex_encode(target_.describe_vcpu(static_cast<unsigned>(thread->vcpu)));
}

// qRcmd: the reply is the output in hex, or OK when there is none. QEMU
// answers the same way for its monitor; gdb prints the hex decoded. The
// reply is one packet, two hex digits a byte: output longer than half of
// PacketSize (an `xp` of a few KiB, `info cpus` of thousands of vCPUs) is
// cut after its last whole line that fits, and a line saying so ends it.
std::string GdbSession::monitor_command(std::string_view hex) {
  const auto line = hex_decode(hex);
  if (!line) return std::string(kBadPacket);
  std::string output = target_.monitor(std::string_view(reinterpret_cast<const char*>(line->data()), line->size()));
  if (output.empty()) return "OK";
  if (output.size() > kMaxMonitorOutput) {
    const std::string note = fmt::format("(output cut: {} bytes; ask for less)\n", output.size());
    const size_t room = kMaxMonitorOutput - note.size();
    // Whole lines that fit, or the start of one line too long alone.
    const size_t newline = output.rfind('\n', room - 1);
    output.resize(newline == std::string::npos ? room - 1 : newline + 1);
    if (output.back() != '\n') output += '\n';
    output += note;
  }
  return hex_encode(output);
}

std::string GdbSession::set_thread(std::string_view args) {
  if (args.empty()) return std::string(kBadPacket);
  const char op = args[0];
  const auto thread = parse_thread(args.substr(1));
  if ((op != 'g' && op != 'c') || !thread) return std::string(kBadPacket);
  std::optional<unsigned> vcpu;
  if (thread->kind == ThreadRef::Kind::kOne) {
    if (!valid_vcpu(thread->vcpu)) return std::string(kBadPacket);
    vcpu = static_cast<unsigned>(thread->vcpu);
  }
  (op == 'g' ? general_vcpu_ : continue_vcpu_) = vcpu;
  return "OK";
}

std::string GdbSession::thread_alive(std::string_view args) {
  const auto thread = parse_thread(args);
  if (!thread || thread->kind != ThreadRef::Kind::kOne || !valid_vcpu(thread->vcpu)) return std::string(kBadPacket);
  return "OK";
}

}  // namespace topolab::debug
