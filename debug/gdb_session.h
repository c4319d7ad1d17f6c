// SPDX-License-Identifier: GPL-2.0-or-later
// One gdb client's protocol state over a DebugTarget: a packet's payload
// in, what to do out (a reply to send, or a resume to run). Pure: no
// sockets, no framing (debug/gdb_server and debug/rsp_packet do those), so
// the unit tests and the fuzz harness drive it directly.
//
// The packets are those of gdb's manual, "Packets", "General Query
// Packets", "Stop Reply Packets" and "Host I/O"-free "Remote Protocol":
//   ?  g G p P  m M X  Z0-4 z0-4  c s C S  vCont? vCont  bc bs  D k  T H
//   qSupported qXfer:features:read qfThreadInfo qsThreadInfo qC qAttached
//   qOffsets qSymbol qThreadExtraInfo qRcmd qqemu.PhyMemMode
//   QStartNoAckMode Qqemu.PhyMemMode
// Anything else gets the empty reply ("not supported"). Malformed packets
// get an `E` reply: E01 a packet that does not parse or names a thread or
// register that does not exist, E14 (EFAULT) guest memory that cannot be
// read or written, E22 (EINVAL) a value the target refuses.
//
// Threads: vCPU i is thread i + 1, in hex. Hg selects the thread whose
// registers and memory g/G/p/P/m/M/X use; Hc the thread c/s and a bare
// vCont;s step. 0 ("any") and -1 ("all") mean the thread of the last stop.
//
// Not supported: multiprocess thread ids (p1.2: not advertised), range
// stepping (vCont;r), vCont;t, extended-remote (!, vRun, vAttach), tracepoints,
// non-stop mode. A vCont continue of one thread alone (scheduler-locking on
// with `continue`) runs every vCPU: ResumeRequest has no such continue.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "debug/debug_target.h"

namespace topolab::debug {

// What the server does with one packet.
struct SessionAction {
  enum class Kind : uint8_t {
    kReply,   // send `reply` (possibly empty: "not supported")
    kResume,  // run target.resume(resume, ...), then send stopped(event)
    kDetach,  // send `reply` ("OK"); the target has been detached: close the connection
    kKill,    // the target has been killed: close the connection, nothing to send
  };
  Kind kind = Kind::kReply;
  std::string reply;
  ResumeRequest resume;
};

class GdbSession {
 public:
  // `initial`: why the machine stands still as the client attaches (the `?` reply).
  GdbSession(DebugTarget& target, StopEvent initial);

  // One packet's payload (escapes undone). Never throws: an unexpected
  // failure inside is answered E01.
  SessionAction handle(std::string_view payload);

  // The target stopped after a kResume: remembers it (for `?`, and the
  // stopped thread becomes the one g/m use, as gdb then assumes) and
  // returns the stop reply to send.
  std::string stopped(const StopEvent& event);

  // True once QStartNoAckMode was answered: from the next packet on,
  // neither side sends `+`/`-`.
  bool no_ack_mode() const { return no_ack_mode_; }
  // Qqemu.PhyMemMode:1: m/M/X address guest-physical memory.
  AddressSpace memory_space() const { return physical_memory_ ? AddressSpace::kPhysical : AddressSpace::kVirtual; }

  // gdb manual, "Stop Reply Packets": T05thread:N; with the stop's reason
  // (swbreak, hwbreak, watch/rwatch/awatch, replaylog), T02 for ^C,
  // W for the end of the run.
  static std::string stop_reply(const StopEvent& event);

 private:
  SessionAction dispatch(std::string_view payload);
  std::string query(std::string_view payload);
  std::string set_query(std::string_view payload);
  SessionAction v_packet(std::string_view payload);
  std::string supported() const;
  std::string xfer(std::string_view args);
  std::string thread_list(bool first);
  std::string thread_extra_info(std::string_view args);
  std::string monitor_command(std::string_view hex);
  std::string set_thread(std::string_view args);
  std::string thread_alive(std::string_view args);
  std::string read_registers();
  std::string write_registers(std::string_view hex);
  std::string read_register(std::string_view args);
  std::string write_register(std::string_view args);
  std::string read_memory(std::string_view args);
  std::string write_memory(std::string_view args, bool binary);
  std::string breakpoint(std::string_view args, bool insert);
  SessionAction resume_legacy(std::string_view payload);
  SessionAction vcont(std::string_view actions);
  SessionAction reverse(bool step);

  bool valid_vcpu(uint64_t vcpu) const { return vcpu < target_.vcpu_count(); }
  unsigned general_vcpu() const { return general_vcpu_.value_or(last_stop_.vcpu); }
  unsigned continue_vcpu() const { return continue_vcpu_.value_or(last_stop_.vcpu); }

  DebugTarget& target_;
  StopEvent last_stop_;
  std::optional<unsigned> general_vcpu_;   // Hg; nullopt: the last stop's
  std::optional<unsigned> continue_vcpu_;  // Hc; nullopt: the last stop's
  unsigned next_thread_listed_ = 0;        // qsThreadInfo's place
  bool no_ack_mode_ = false;
  bool physical_memory_ = false;
};

}  // namespace topolab::debug
