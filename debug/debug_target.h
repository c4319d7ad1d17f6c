// SPDX-License-Identifier: GPL-2.0-or-later
// What topolab's gdb stub asks of the machine it debugs. The stub
// (debug/gdb_session, debug/gdb_server) speaks gdb's remote serial protocol
// and knows nothing of Unicorn or the machine loop; the machine side
// (emu/machine_debug) implements this interface; the stub's unit tests and
// its fuzz harness drive a fake.
//
// Threads are vCPUs: vCPU i is gdb thread i + 1 (gdb's thread ids are
// positive), as in QEMU's stub. The stub converts; this interface speaks
// vCPU indices only.
//
// All-stop: every call below but resume() is made while the whole machine
// stands still, each vCPU at a defined point of virtual time.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "arch/register_file.h"

namespace topolab::debug {

// Z0..Z4: the packet's type digit is the enumerator's value.
enum class BreakpointKind : uint8_t {
  kSoftware = 0,     // Z0: topolab never writes guest memory for one
  kHardware = 1,     // Z1
  kWriteWatch = 2,   // Z2
  kReadWatch = 3,    // Z3
  kAccessWatch = 4,  // Z4
};

enum class AddressSpace : uint8_t {
  kVirtual,   // through the vCPU's paging (its CR3), as the vCPU would see it
  kPhysical,  // guest-physical (the monitor's `xp`, Qqemu.PhyMemMode:1)
};

// Why the machine stopped, as a stop reply (`T`, `W`, `X`) says it.
struct StopEvent {
  enum class Kind : uint8_t {
    kStarted,         // -S: stopped before the first instruction (T05)
    kInterrupted,     // the client sent ^C (T02)
    kStepped,         // a step finished (T05)
    kSoftwareBreak,   // T05 swbreak:
    kHardwareBreak,   // T05 hwbreak:
    kWatch,           // T05 watch:/rwatch:/awatch:ADDR (watch_kind says which)
    kHistoryBegin,    // reverse execution reached the start of history: T05 replaylog:begin
    kHistoryEnd,      // forward execution in history reached its end: T05 replaylog:end
    kExited,          // the guest's run ended (W with exit_code); `detail` says how
  };
  Kind kind = Kind::kStarted;
  unsigned vcpu = 0;                 // the thread the reply names (all but kExited)
  uint64_t watch_address = 0;        // kWatch: the address the access hit
  BreakpointKind watch_kind = BreakpointKind::kWriteWatch;
  int exit_code = 0;                 // kExited
  std::string detail;                // kExited: the run's one-line outcome, for the stub's log
};

// What a resume packet asks for (c, s, vCont, bc, bs).
struct ResumeRequest {
  enum class Direction : uint8_t { kForward, kReverse };
  Direction direction = Direction::kForward;
  // Step this vCPU by one instruction (forward or backward); nullopt: continue.
  std::optional<unsigned> step_vcpu;
  // The other vCPUs run meanwhile, on the machine's own schedule (c, s,
  // vCont;s:N;c): only as far as the step takes. false (vCont;s:N alone):
  // only step_vcpu moves.
  bool others_run = true;
};

// A poll the target calls now and then while it runs: true when the client
// sent ^C (stop now, StopEvent::kInterrupted) or went away (the run goes on
// without it: the target drops every breakpoint and never stops again).
struct RunControl {
  enum class Poll : uint8_t { kNothing, kInterrupt, kClientGone };
  std::function<Poll()> poll;
};

class DebugTarget {
 public:
  virtual ~DebugTarget() = default;

  virtual unsigned vcpu_count() const = 0;
  // qThreadExtraInfo: "CPU 3 APIC 0x6 pkg 0 die 0 core 3 thread 0, halted (HLT), 12.4 ms".
  virtual std::string describe_vcpu(unsigned vcpu) const = 0;

  // The register's bytes, little-endian, register_bytes(id) of them; false
  // when the vCPU cannot say (the stub answers with x's, "unavailable").
  virtual bool read_register(unsigned vcpu, x86::RegisterId id, std::span<uint8_t> out) = 0;
  // false: the register cannot be written (the stub answers E..).
  virtual bool write_register(unsigned vcpu, x86::RegisterId id, std::span<const uint8_t> in) = 0;

  // Guest memory at `address` as `vcpu` sees it (kVirtual: its paging, with
  // no fault raised in the guest; kPhysical: guest-physical). The bytes
  // that could be read, from the start: fewer than out.size() when a page
  // is not mapped (none: the stub answers E..).
  virtual size_t read_memory(unsigned vcpu, AddressSpace space, uint64_t address, std::span<uint8_t> out) = 0;
  // false when any byte could not be written (nothing is then written).
  virtual bool write_memory(unsigned vcpu, AddressSpace space, uint64_t address, std::span<const uint8_t> in) = 0;

  // Breakpoints and watchpoints are the machine's, on every vCPU (Z packets
  // name no thread). false: not supported (the stub answers an empty reply
  // for an unsupported kind, E.. for a bad address or length).
  virtual bool insert_breakpoint(BreakpointKind kind, uint64_t address, unsigned length) = 0;
  virtual bool remove_breakpoint(BreakpointKind kind, uint64_t address, unsigned length) = 0;
  // Whether reverse execution is on (qSupported's ReverseStep+/ReverseContinue+).
  virtual bool can_reverse() const = 0;

  // Runs until the machine stops again and says why. Returns with every
  // vCPU stopped (all-stop), or with kExited when the guest's run ended.
  virtual StopEvent resume(const ResumeRequest& request, const RunControl& control) = 0;

  // `monitor LINE` (qRcmd): the command's output, as text; an unknown
  // command or a bad argument is a line of text too, never an exception.
  virtual std::string monitor(std::string_view line) = 0;

  // D: every breakpoint goes and the run goes on without a debugger.
  virtual void detach() = 0;
  // k: the run ends now.
  virtual void kill() = 0;
};

}  // namespace topolab::debug
