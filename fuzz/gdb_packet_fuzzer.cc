// SPDX-License-Identifier: GPL-2.0-or-later
// The gdb stub's input side: arbitrary bytes, as a client would send them,
// through PacketReader in pieces of input-chosen sizes, and every packet to
// a GdbSession over the fake target (debug/fake_debug_target.h), whose
// monitor runs run_monitor_command. Resumes are answered with stop events
// the input picks. The invariants:
// - the reader never yields a payload longer than the packet limit, and a
//   payload framed by frame() reads back as the same one packet;
// - every reply frames within twice the limit (escapes at worst double a
//   byte) and reads back unchanged: the stub never sends what gdb cannot read;
// - a resume steps a vCPU that exists, a stop reply is T or W;
// - an error reply is E and two hex digits; the monitor's output is empty or
//   whole lines;
// - the same input gives the same transcript twice (no hidden state).
//
// The cost of an input is bounded (each used to build a target and could
// ask for any number of 16 KB replies; about 230 inputs a second at -O1):
// one target for the process, reset before each session; at most
// kMaxPackets packets an input; the monitor sees 1 KiB of physical memory.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/errors.h"
#include "debug/fake_debug_target.h"
#include "debug/gdb_session.h"
#include "debug/monitor.h"
#include "debug/rsp_packet.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/fuzz_input.h"

using namespace topolab;
using namespace topolab::debug;

namespace {

// Packets an input may send: enough for a whole gdb start-up and some, and
// a bound on the work of one input whatever its length.
constexpr unsigned kMaxPackets = 32;
// The monitor's view of physical memory: enough for an `xp` whose output
// is cut to fit a reply (`xp /1024cb 0` prints about 9.5 KB), and a bound
// on the formatting one packet asks for (`xp` takes up to 64 KiB).
constexpr uint64_t kMonitorMemory = 0x400;
// The reader's small limit, which half the setups use: oversized packets
// with short inputs.
constexpr size_t kSmallPacketLimit = 0x100;

// The machine's monitor answers through run_monitor_command over the
// fake's physical memory.
class FuzzTarget final : public FakeDebugTarget, private MonitorQueries {
 public:
  // 8 KiB of memory: room for the largest `m` reply (PacketSize / 2
  // bytes) and a short one past the end. Built once; reset per session.
  FuzzTarget() : FakeDebugTarget(1, false, 0x2000) {}
  std::string monitor(std::string_view line) override {
    std::string out = run_monitor_command(*this, line);
    FUZZ_CHECK(out.empty() || out.back() == '\n', "monitor output not whole lines for '{}'", one_line(line));
    return out;
  }

 private:
  std::string info_cpus() override { return "cpus\n"; }
  std::string info_lapic(std::optional<unsigned>) override { return "lapic\n"; }
  std::string info_ioapic() override { return "ioapic\n"; }
  std::string info_topology() override { return "topology\n"; }
  std::string info_ipis() override { return "ipis\n"; }
  std::string info_time() override { return "time\n"; }
  std::string snapshot_save(std::string_view) override { return "saved\n"; }
  std::string snapshot_load(std::string_view) override { return "loaded\n"; }
  std::string snapshot_list() override { return "none\n"; }
  size_t read_physical(uint64_t address, std::span<uint8_t> out) override {
    if (address >= kMonitorMemory) return 0;
    const auto n = static_cast<size_t>(std::min<uint64_t>(out.size(), kMonitorMemory - address));
    return read_memory(0, AddressSpace::kPhysical, address, out.first(n));
  }
};

void check_reply(const std::string& payload, const std::string& reply) {
  const std::string framed = frame(reply);
  FUZZ_CHECK(framed.size() <= 2 * kMaxPacketPayload + 4, "reply to '{}' frames to {} bytes", one_line(payload.substr(0, 40)),
             framed.size());
  PacketReader reader(2 * kMaxPacketPayload);
  std::vector<PacketEvent> events;
  reader.feed(framed, events);
  FUZZ_CHECK(events.size() == 1 && events[0].kind == PacketEvent::Kind::kPacket && events[0].payload == reply,
             "reply to '{}' does not read back", one_line(payload.substr(0, 40)));
  if (reply.size() == 3 && reply[0] == 'E') FUZZ_CHECK(parse_hex_number(reply.substr(1)), "bad error reply {}", reply);
}

// One session over the input; returns the transcript of replies.
std::string run_session(FuzzTarget& target, const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  const uint8_t setup = in.take<uint8_t>();
  target.reset(1 + (setup & 3), setup & 4);
  GdbSession session(target, stop_event(StopEvent::Kind::kStarted));
  const size_t limit = setup & 8 ? kSmallPacketLimit : kMaxPacketPayload;
  PacketReader reader(limit);
  std::string transcript;
  unsigned resumes = 0, packets = 0;
  std::vector<PacketEvent> events;
  while (!in.done()) {
    // A piece of 1 to 64 bytes, as TCP might deliver it.
    // (The size byte is taken before what remains is counted.)
    const size_t wanted = 1 + (in.take<uint8_t>() & 63);
    const size_t piece = std::min(in.remaining(), wanted);
    events.clear();
    reader.feed(std::span(in.rest(), piece), events);
    in.skip(piece);
    for (const PacketEvent& event : events) {
      FUZZ_CHECK(event.payload.size() <= limit, "payload of {} bytes", event.payload.size());
      transcript += static_cast<char>('0' + static_cast<int>(event.kind));
      if (event.kind != PacketEvent::Kind::kPacket) continue;
      if (++packets > kMaxPackets) return transcript;
      std::vector<PacketEvent> again;
      // frame() escapes '*', which a client may send bare: the payload can
      // grow on the way back, at worst to twice its size.
      PacketReader(2 * limit).feed(frame(event.payload), again);
      FUZZ_CHECK(again.size() == 1 && again[0].payload == event.payload, "payload does not frame back");
      SessionAction action = session.handle(event.payload);
      if (action.kind == SessionAction::Kind::kResume) {
        FUZZ_CHECK(!action.resume.step_vcpu || *action.resume.step_vcpu < target.vcpu_count(), "step of vCPU {}",
                   *action.resume.step_vcpu);
        FUZZ_CHECK(action.resume.direction == ResumeRequest::Direction::kForward || target.can_reverse(),
                   "reverse without history");
        // The stop the input picks: any kind, on vCPU `resumes` modulo the count.
        const auto kind = static_cast<StopEvent::Kind>(1 + (resumes + setup) % 8);
        StopEvent stop = kind == StopEvent::Kind::kExited ? exit_event(static_cast<int>(resumes))
                                                          : stop_event(kind, resumes % target.vcpu_count());
        if (kind == StopEvent::Kind::kWatch) stop = watch_event(resumes * 0x1000, BreakpointKind(2 + resumes % 3));
        target.stops.push_back(stop);
        const StopEvent got = target.resume(action.resume, RunControl{[] { return RunControl::Poll::kNothing; }});
        action.reply = session.stopped(got);
        FUZZ_CHECK(action.reply[0] == 'T' || action.reply[0] == 'W', "stop reply {}", action.reply);
        ++resumes;
        if (got.kind == StopEvent::Kind::kExited) return transcript + action.reply;
      }
      check_reply(event.payload, action.reply);
      transcript += action.reply;
      transcript += '\n';
      if (action.kind == SessionAction::Kind::kDetach || action.kind == SessionAction::Kind::kKill) return transcript;
    }
  }
  return transcript;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // One target for the process (its 16 KiB of memory allocated once);
  // run_session resets it, so that no input sees what an earlier one did.
  static FuzzTarget target;
  const std::string first = run_session(target, data, size);
  FUZZ_CHECK(run_session(target, data, size) == first, "the same input gave another transcript");
  // Free the logs the input filled, so that its allocations balance (else
  // libFuzzer reruns the input to look for a leak).
  target.reset(1, false);
  return 0;
}
