// SPDX-License-Identifier: GPL-2.0-or-later
#include "debug/gdb_session.h"

#include <algorithm>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "debug/fake_debug_target.h"
#include "debug/rsp_packet.h"
#include "debug/target_xml.h"

namespace topolab::debug {
namespace {

using x86::RegisterId;
using Kind = SessionAction::Kind;

class GdbSessionTest : public ::testing::Test {
 protected:
  std::string ask(std::string_view payload) {
    const SessionAction action = session.handle(payload);
    EXPECT_EQ(action.kind, Kind::kReply) << payload;
    return action.reply;
  }
  ResumeRequest resume(std::string_view payload) {
    const SessionAction action = session.handle(payload);
    EXPECT_EQ(action.kind, Kind::kResume) << payload << " answered " << action.reply;
    return action.resume;
  }

  FakeDebugTarget target{4};
  GdbSession session{target, stop_event(StopEvent::Kind::kStarted, 0)};
};

size_t g_packet_bytes() {
  size_t total = 0;
  for (const auto& reg : x86::debug_registers()) total += x86::register_bytes(reg.id);
  return total;
}

TEST_F(GdbSessionTest, SupportedWithoutReverse) {
  EXPECT_EQ(ask("qSupported:multiprocess+;swbreak+;hwbreak+;qRelocInsn+"),
            "PacketSize=4000;QStartNoAckMode+;qXfer:features:read+;vContSupported+;swbreak+;hwbreak+");
}

TEST(GdbSession, SupportedWithReverse) {
  FakeDebugTarget target(1, true);
  GdbSession session(target, {});
  EXPECT_TRUE(session.handle("qSupported").reply.ends_with(";ReverseStep+;ReverseContinue+"));
}

TEST_F(GdbSessionTest, NoAckModeIsOnlyAfterItsPacket) {
  EXPECT_FALSE(session.no_ack_mode());
  EXPECT_EQ(ask("QStartNoAckMode"), "OK");
  EXPECT_TRUE(session.no_ack_mode());
}

TEST_F(GdbSessionTest, UnknownPacketsGetTheEmptyReply) {
  for (const char* p : {"", "qTStatus", "vMustReplyEmpty", "!", "Qbogus", "vFile:open:", "bz", "vKill;1", "y"}) {
    EXPECT_EQ(ask(p), "") << p;
  }
}

TEST_F(GdbSessionTest, StopQueryRepeatsTheInitialStop) {
  EXPECT_EQ(ask("?"), "T05thread:1;");
  GdbSession interrupted(target, stop_event(StopEvent::Kind::kInterrupted, 2));
  EXPECT_EQ(interrupted.handle("?").reply, "T02thread:3;");
}

TEST_F(GdbSessionTest, ThreadListInHexThenEnd) {
  FakeDebugTarget many(300);
  GdbSession s(many, {});
  const std::string first = s.handle("qfThreadInfo").reply;
  EXPECT_TRUE(first.starts_with("m1,2,3,")) << first;
  EXPECT_TRUE(first.ends_with(",ff,100")) << first;  // 256 threads a reply
  EXPECT_EQ(s.handle("qsThreadInfo").reply, "m101,102" + [] {
    std::string rest;
    for (unsigned t = 0x103; t <= 300; ++t) rest += fmt::format(",{:x}", t);
    return rest;
  }());
  EXPECT_EQ(s.handle("qsThreadInfo").reply, "l");
  EXPECT_EQ(s.handle("qfThreadInfo").reply, first);  // starts again
  EXPECT_EQ(ask("qfThreadInfo"), "m1,2,3,4");
  EXPECT_EQ(ask("qsThreadInfo"), "l");
}

TEST_F(GdbSessionTest, CurrentThreadAliveAndExtraInfo) {
  EXPECT_EQ(ask("qC"), "QC1");
  EXPECT_EQ(ask("T4"), "OK");
  EXPECT_EQ(ask("T5"), "E01");
  EXPECT_EQ(ask("T0"), "E01");
  EXPECT_EQ(ask("Tzz"), "E01");
  EXPECT_EQ(ask("qThreadExtraInfo,3"), hex_encode(std::string_view("CPU 2 running")));
  EXPECT_EQ(ask("qThreadExtraInfo,9"), "E01");
  EXPECT_EQ(ask("qThreadExtraInfo,"), "E01");
}

TEST_F(GdbSessionTest, MiscQueries) {
  EXPECT_EQ(ask("qAttached"), "1");
  EXPECT_EQ(ask("qAttached:1"), "1");
  EXPECT_EQ(ask("qOffsets"), "Text=0;Data=0;Bss=0");
  EXPECT_EQ(ask("qSymbol::"), "OK");
  EXPECT_EQ(ask("qSymbol:6d61696e:"), "OK");
}

TEST_F(GdbSessionTest, SelectThreadForRegisters) {
  target.set_register(2, RegisterId::kRax, 0x1122334455667788);
  EXPECT_EQ(ask("p0"), "0000000000000000");
  EXPECT_EQ(ask("Hg3"), "OK");
  EXPECT_EQ(ask("p0"), "8877665544332211");
  EXPECT_EQ(ask("p10"), "0210000000000000");  // rip of vCPU 2 is 0x1002
  EXPECT_EQ(ask("Hg0"), "OK");                 // any: the stopped thread's
  EXPECT_EQ(ask("p10"), "0010000000000000");
  EXPECT_EQ(ask("Hg-1"), "OK");
  EXPECT_EQ(ask("Hc-1"), "OK");
  EXPECT_EQ(ask("Hc0"), "OK");
  EXPECT_EQ(ask("Hg5"), "E01");
  EXPECT_EQ(ask("Hx1"), "E01");
  EXPECT_EQ(ask("H"), "E01");
  EXPECT_EQ(ask("Hgp1.1"), "E01");
}

TEST_F(GdbSessionTest, ReadAllRegistersWithUnavailableAsX) {
  target.set_register(0, RegisterId::kRbx, 0xab);
  target.unavailable_ = RegisterId::kSt0;
  const std::string g = ask("g");
  ASSERT_EQ(g.size(), g_packet_bytes() * 2);
  EXPECT_EQ(g.substr(16, 16), "ab00000000000000");          // rbx is register 1
  EXPECT_EQ(g.substr(16 * 16, 16), "0010000000000000");     // rip
  // st0 follows 16 64-bit registers, rip, eflags and 6 segments (32-bit).
  const size_t st0 = (17 * 8 + 7 * 4) * 2;
  EXPECT_EQ(g.substr(st0, 20), std::string(20, 'x'));
  EXPECT_EQ(g.substr(st0 + 20, 20), std::string(20, '0'));
  EXPECT_EQ(ask("p18"), std::string(20, 'x'));  // st0 is number 0x18
  EXPECT_EQ(ask("gx"), "E01");
}

TEST_F(GdbSessionTest, WriteAllRegisters) {
  std::string g = ask("g");
  g.replace(0, 16, "0100000000000000");
  EXPECT_EQ(ask("G" + g), "OK");
  EXPECT_EQ(target.register_value(0, RegisterId::kRax)[0], 1);
  EXPECT_EQ(ask("G" + g.substr(2)), "E01");
  EXPECT_EQ(ask("G" + g + "00"), "E01");
  target.read_only_ = RegisterId::kCr0;
  EXPECT_EQ(ask("G" + g), "E22");
}

TEST_F(GdbSessionTest, ReadAndWriteOneRegister) {
  EXPECT_EQ(ask("P0=efbeadde00000000"), "OK");
  EXPECT_EQ(ask("p0"), "efbeadde00000000");
  EXPECT_EQ(target.register_value(0, RegisterId::kRax)[3], 0xde);
  EXPECT_EQ(ask("P11=46020000"), "OK");  // eflags, 4 bytes
  EXPECT_EQ(ask("P11=4602"), "E01");     // wrong size
  EXPECT_EQ(ask("P0=zz00000000000000"), "E01");
  EXPECT_EQ(ask("P0"), "E01");
  const auto count = static_cast<unsigned>(RegisterId::kCount);
  EXPECT_EQ(ask(fmt::format("p{:x}", count - 1)), "0000000000000000");  // efer
  EXPECT_EQ(ask(fmt::format("p{:x}", count)), "E01");
  EXPECT_EQ(ask("pffffffffffffffffff"), "E01");
  target.read_only_ = RegisterId::kRax;
  EXPECT_EQ(ask("P0=0000000000000000"), "E22");
}

TEST_F(GdbSessionTest, ReadMemory) {
  auto& virt = target.memory(AddressSpace::kVirtual);
  virt[0x100] = 0x12;
  virt[0x101] = 0x34;
  EXPECT_EQ(ask("m100,2"), "1234");
  EXPECT_EQ(ask("mfffe,4"), "0000");     // short read: what could be read
  EXPECT_EQ(ask("m10000,4"), "E14");     // nothing
  EXPECT_EQ(ask("m100"), "E01");
  EXPECT_EQ(ask("m100,zz"), "E01");
  EXPECT_EQ(ask("m0,100000").size(), kMaxPacketPayload);  // capped to PacketSize
}

TEST_F(GdbSessionTest, WriteMemoryHexAndBinary) {
  EXPECT_EQ(ask("M200,3:a1b2c3"), "OK");
  EXPECT_EQ(target.memory(AddressSpace::kVirtual)[0x202], 0xc3);
  EXPECT_EQ(ask("M200,3:a1b2"), "E01");
  EXPECT_EQ(ask("M200,1:zz"), "E01");
  EXPECT_EQ(ask("Mffff,2:0000"), "E14");
  EXPECT_EQ(ask(std::string("X300,4:#$}\0", 11)), "OK");
  EXPECT_EQ(target.memory(AddressSpace::kVirtual)[0x301], '$');
  EXPECT_EQ(target.memory(AddressSpace::kVirtual)[0x303], 0);
  EXPECT_EQ(ask("X300,0:"), "OK");  // gdb's probe for X
  EXPECT_EQ(ask("X300,2:a"), "E01");
  EXPECT_EQ(ask("X300,2"), "E01");
}

TEST_F(GdbSessionTest, MemoryGoesThroughTheSelectedThread) {
  EXPECT_EQ(ask("Hg2"), "OK");
  EXPECT_EQ(ask("M10,1:ff"), "OK");
  EXPECT_EQ(target.calls.back(), "write_memory 1 virt 0x10 1");
}

TEST_F(GdbSessionTest, PhysicalMemoryMode) {
  target.memory(AddressSpace::kPhysical)[0x40] = 0x99;
  EXPECT_EQ(ask("qqemu.PhyMemMode"), "0");
  EXPECT_EQ(ask("m40,1"), "00");
  EXPECT_EQ(ask("Qqemu.PhyMemMode:1"), "OK");
  EXPECT_EQ(ask("qqemu.PhyMemMode"), "1");
  EXPECT_EQ(ask("m40,1"), "99");
  EXPECT_EQ(ask("M41,1:01"), "OK");
  EXPECT_EQ(target.calls.back(), "write_memory 0 phys 0x41 1");
  EXPECT_EQ(ask("Qqemu.PhyMemMode:2"), "E22");
  EXPECT_EQ(ask("Qqemu.PhyMemMode:0"), "OK");
  EXPECT_EQ(ask("m40,1"), "00");
}

TEST_F(GdbSessionTest, BreakpointsAndWatchpoints) {
  EXPECT_EQ(ask("Z0,1000,1"), "OK");
  EXPECT_EQ(ask("Z1,ffffffff81000000,1"), "OK");
  EXPECT_EQ(ask("Z2,2000,8"), "OK");
  EXPECT_EQ(ask("Z3,2000,4"), "OK");
  EXPECT_EQ(ask("Z4,2000,1;X1,0"), "OK");  // conditions stay with gdb
  EXPECT_EQ(ask("z0,1000,1"), "OK");
  EXPECT_EQ((target.calls), (std::vector<std::string>{"insert 0 0x1000 1", "insert 1 0xffffffff81000000 1",
                                                      "insert 2 0x2000 8", "insert 3 0x2000 4", "insert 4 0x2000 1",
                                                      "remove 0 0x1000 1"}));
  EXPECT_EQ(ask("Z2,2000,3"), "E22");
  EXPECT_EQ(ask("Z0,1000"), "E01");
  EXPECT_EQ(ask("Z0"), "E01");
  EXPECT_EQ(ask("Z"), "E01");
  EXPECT_EQ(ask("Z9,1000,1"), "");
  target.max_breakpoint_kind = 1;
  EXPECT_EQ(ask("Z2,2000,8"), "");  // unsupported by the target: empty, gdb stops asking
  EXPECT_EQ(ask("z2,2000,8"), "E22");
}

TEST_F(GdbSessionTest, ContinueAndStep) {
  ResumeRequest r = resume("c");
  EXPECT_EQ(r.direction, ResumeRequest::Direction::kForward);
  EXPECT_FALSE(r.step_vcpu);
  r = resume("s");
  EXPECT_EQ(r.step_vcpu, 0u);
  EXPECT_TRUE(r.others_run);
  EXPECT_EQ(ask("Hc3"), "OK");
  EXPECT_EQ(resume("s").step_vcpu, 2u);
  EXPECT_EQ(resume("S05").step_vcpu, 2u);  // signals are ignored
  EXPECT_FALSE(resume("C0b").step_vcpu);
  EXPECT_TRUE(target.calls.empty());
}

TEST_F(GdbSessionTest, ContinueAtAnAddressSetsRip) {
  resume("c2000");
  EXPECT_EQ(target.register_value(0, RegisterId::kRip)[1], 0x20);
  resume("S05;3000");
  EXPECT_EQ(target.register_value(0, RegisterId::kRip)[1], 0x30);
  EXPECT_EQ(ask("cxyz"), "E01");
  EXPECT_EQ(ask("C;1"), "E01");
}

TEST_F(GdbSessionTest, VContSupportedActions) { EXPECT_EQ(ask("vCont?"), "vCont;c;C;s;S"); }

TEST_F(GdbSessionTest, VContMapping) {
  // all-stop `stepi`, scheduler-locking off: the others run meanwhile.
  ResumeRequest r = resume("vCont;s:3;c");
  EXPECT_EQ(r.step_vcpu, 2u);
  EXPECT_TRUE(r.others_run);
  // scheduler-locking on: only that vCPU moves.
  r = resume("vCont;s:3");
  EXPECT_EQ(r.step_vcpu, 2u);
  EXPECT_FALSE(r.others_run);
  r = resume("vCont;S05:2;C02");
  EXPECT_EQ(r.step_vcpu, 1u);
  EXPECT_TRUE(r.others_run);
  r = resume("vCont;c");
  EXPECT_FALSE(r.step_vcpu);
  r = resume("vCont;c:2");
  EXPECT_FALSE(r.step_vcpu);
  r = resume("vCont;s");  // every thread: the continue thread steps, the others run
  EXPECT_EQ(r.step_vcpu, 0u);
  EXPECT_TRUE(r.others_run);
  r = resume("vCont;s:-1");
  EXPECT_EQ(r.step_vcpu, 0u);
  r = resume("vCont;s:1;s:2");  // the leftmost step wins
  EXPECT_EQ(r.step_vcpu, 0u);
}

TEST_F(GdbSessionTest, VContRejectsWhatItCannotDo) {
  for (const char* p : {"vCont;", "vCont;t", "vCont;r1000,2000:1", "vCont;s:9", "vCont;s:0", "vCont;s:zz", "vCont;C",
                        "vCont;c05", "vCont;;c", "vCont;Szz"}) {
    EXPECT_EQ(ask(p), "E01") << p;
  }
  EXPECT_EQ(ask("vCont"), "");
  EXPECT_TRUE(target.resumes.empty());
}

TEST_F(GdbSessionTest, ReverseOnlyWhenTheTargetCan) {
  EXPECT_EQ(ask("bc"), "");
  EXPECT_EQ(ask("bs"), "");
  FakeDebugTarget reversible(2, true);
  GdbSession s(reversible, stop_event(StopEvent::Kind::kStepped, 1));
  SessionAction a = s.handle("bc");
  ASSERT_EQ(a.kind, Kind::kResume);
  EXPECT_EQ(a.resume.direction, ResumeRequest::Direction::kReverse);
  EXPECT_FALSE(a.resume.step_vcpu);
  a = s.handle("bs");
  ASSERT_EQ(a.kind, Kind::kResume);
  EXPECT_EQ(a.resume.direction, ResumeRequest::Direction::kReverse);
  EXPECT_EQ(a.resume.step_vcpu, 1u);
}

TEST_F(GdbSessionTest, StopRepliesName) {
  using K = StopEvent::Kind;
  EXPECT_EQ(GdbSession::stop_reply(stop_event(K::kStepped, 0)), "T05thread:1;");
  EXPECT_EQ(GdbSession::stop_reply(stop_event(K::kInterrupted, 15)), "T02thread:10;");
  EXPECT_EQ(GdbSession::stop_reply(stop_event(K::kSoftwareBreak, 1)), "T05thread:2;swbreak:;");
  EXPECT_EQ(GdbSession::stop_reply(stop_event(K::kHardwareBreak, 1)), "T05thread:2;hwbreak:;");
  EXPECT_EQ(GdbSession::stop_reply(watch_event(0xdead0, BreakpointKind::kWriteWatch)), "T05thread:1;watch:dead0;");
  EXPECT_EQ(GdbSession::stop_reply(watch_event(0x10, BreakpointKind::kReadWatch)), "T05thread:1;rwatch:10;");
  EXPECT_EQ(GdbSession::stop_reply(watch_event(0x10, BreakpointKind::kAccessWatch)), "T05thread:1;awatch:10;");
  EXPECT_EQ(GdbSession::stop_reply(stop_event(K::kHistoryBegin, 2)), "T05thread:3;replaylog:begin;");
  EXPECT_EQ(GdbSession::stop_reply(stop_event(K::kHistoryEnd, 2)), "T05thread:3;replaylog:end;");
  EXPECT_EQ(GdbSession::stop_reply(exit_event(3)), "W03");
  EXPECT_EQ(GdbSession::stop_reply(exit_event(-1)), "Wff");
  EXPECT_EQ(GdbSession::stop_reply(stop_event(K::kStarted, 0)), "T05thread:1;");
}

TEST_F(GdbSessionTest, AStopMakesItsThreadCurrent) {
  EXPECT_EQ(ask("Hg1"), "OK");
  EXPECT_EQ(session.stopped(stop_event(StopEvent::Kind::kSoftwareBreak, 3)), "T05thread:4;swbreak:;");
  EXPECT_EQ(ask("?"), "T05thread:4;swbreak:;");
  EXPECT_EQ(ask("qC"), "QC4");
  EXPECT_EQ(ask("p10"), "0310000000000000");  // rip of vCPU 3
  EXPECT_EQ(resume("s").step_vcpu, 3u);
}

TEST_F(GdbSessionTest, TargetXmlThroughQXfer) {
  const std::string& xml = target_xml();
  const std::string first = ask("qXfer:features:read:target.xml:0,100");
  EXPECT_EQ(first, "m" + xml.substr(0, 0x100));
  std::string whole;
  for (size_t offset = 0;; offset += 0x3fb) {
    const std::string chunk = ask(fmt::format("qXfer:features:read:target.xml:{:x},3fb", offset));
    whole += chunk.substr(1);
    if (chunk[0] == 'l') break;
    ASSERT_EQ(chunk[0], 'm');
  }
  EXPECT_EQ(whole, xml);
  EXPECT_EQ(ask("qXfer:features:read:target.xml:ffffffff,10"), "l");
  EXPECT_EQ(ask("qXfer:features:read:other.xml:0,10"), "E00");
  EXPECT_EQ(ask("qXfer:features:read:target.xml:0"), "E00");
  EXPECT_EQ(ask("qXfer:features:read:target.xml"), "E00");
  EXPECT_EQ(ask("qXfer:threads:read::0,100"), "");
  // A huge length is capped so that the reply fits PacketSize.
  EXPECT_LE(ask("qXfer:features:read:target.xml:0,ffffffffffffffff").size(), kMaxPacketPayload);
}

TEST_F(GdbSessionTest, MonitorRepliesHexOrOk) {
  target.monitor_output = "CPU 0 halted\n";
  EXPECT_EQ(ask("qRcmd," + hex_encode(std::string_view("info cpus"))), hex_encode(std::string_view("CPU 0 halted\n")));
  EXPECT_EQ(target.calls.back(), "monitor info cpus");
  target.monitor_output.clear();
  EXPECT_EQ(ask("qRcmd," + hex_encode(std::string_view("snapshot save a"))), "OK");
  EXPECT_EQ(ask("qRcmd,zz"), "E01");
  EXPECT_EQ(ask("qRcmd,123"), "E01");
}

// Found by reading the fuzz harness's cost: `xp /4000xb 0` printed 29 KB,
// a 58 KB reply, past what PacketSize promises gdb.
TEST_F(GdbSessionTest, MonitorOutputPastThePacketSizeIsCutAtAWholeLine) {
  for (int i = 0; i < 2000; ++i) target.monitor_output += fmt::format("line {:04}\n", i);  // 20,000 bytes
  const std::string reply = ask("qRcmd," + hex_encode(std::string_view("info cpus")));
  EXPECT_LE(reply.size(), kMaxPacketPayload);
  const auto decoded = hex_decode(reply);
  ASSERT_TRUE(decoded);
  const std::string text(decoded->begin(), decoded->end());
  EXPECT_TRUE(text.starts_with("line 0000\nline 0001\n")) << text.substr(0, 40);
  EXPECT_TRUE(text.ends_with("\n(output cut: 20000 bytes; ask for less)\n")) << text.substr(text.size() - 80);
  // Every line before the note is one of the output's, whole.
  const std::string kept = text.substr(0, text.rfind('(', text.size()));
  EXPECT_EQ(target.monitor_output.substr(0, kept.size()), kept);
  EXPECT_EQ(kept.size() % 10, 0u);
  EXPECT_GT(kept.size(), kMaxPacketPayload / 2 - 100);

  // One line longer than a packet: its start, then the note.
  target.monitor_output = std::string(20000, 'a');
  const auto one = hex_decode(ask("qRcmd," + hex_encode(std::string_view("info cpus"))));
  ASSERT_TRUE(one);
  const std::string one_text(one->begin(), one->end());
  EXPECT_LE(one_text.size(), kMaxPacketPayload / 2);
  EXPECT_TRUE(one_text.starts_with("aaaa"));
  EXPECT_TRUE(one_text.ends_with("a\n(output cut: 20000 bytes; ask for less)\n"));

  // Output that fits is sent as it is.
  target.monitor_output.assign(kMaxPacketPayload / 2, 'b');
  target.monitor_output.back() = '\n';
  EXPECT_EQ(ask("qRcmd," + hex_encode(std::string_view("info cpus"))), hex_encode(target.monitor_output));
}

TEST_F(GdbSessionTest, DetachAndKill) {
  SessionAction a = session.handle("D");
  EXPECT_EQ(a.kind, Kind::kDetach);
  EXPECT_EQ(a.reply, "OK");
  EXPECT_EQ(target.calls, std::vector<std::string>{"detach"});
  a = session.handle("k");
  EXPECT_EQ(a.kind, Kind::kKill);
  EXPECT_EQ(target.calls.back(), "kill");
}

// The fuzz harness reuses one fake for every input: reset must leave it as
// the constructor does.
TEST(FakeDebugTarget, ResetIsAsNew) {
  FakeDebugTarget used(2, false, 0x100);
  used.set_register(1, RegisterId::kRax, 0x1234);
  const std::vector<uint8_t> bytes = {1, 2, 3};
  ASSERT_TRUE(used.write_memory(0, AddressSpace::kPhysical, 0x10, bytes));
  ASSERT_TRUE(used.write_memory(0, AddressSpace::kVirtual, 0xfd, bytes));
  used.stops.push_back(stop_event(StopEvent::Kind::kStepped));
  used.resume({}, RunControl{[] { return RunControl::Poll::kNothing; }});
  used.monitor_output = "x\n";
  used.polls_per_resume = 3;
  used.max_breakpoint_kind = 1;
  used.unavailable_ = RegisterId::kRip;
  used.read_only_ = RegisterId::kRax;
  used.stops.push_back(stop_event(StopEvent::Kind::kStepped));

  used.reset(3, true);
  FakeDebugTarget fresh(3, true, 0x100);
  EXPECT_EQ(used.vcpu_count(), 3u);
  EXPECT_TRUE(used.can_reverse());
  for (const auto space : {AddressSpace::kPhysical, AddressSpace::kVirtual})
    EXPECT_EQ(used.memory(space), fresh.memory(space));
  for (unsigned v = 0; v < 3; ++v)
    for (const auto& reg : x86::debug_registers()) {
      const auto a = used.register_value(v, reg.id);
      const auto b = fresh.register_value(v, reg.id);
      EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << v << " " << reg.name;
    }
  EXPECT_TRUE(used.calls.empty());
  EXPECT_TRUE(used.resumes.empty());
  EXPECT_TRUE(used.stops.empty());
  EXPECT_EQ(used.monitor_output, "");
  EXPECT_EQ(used.polls_per_resume, 0u);
  EXPECT_EQ(used.max_breakpoint_kind, 4);
  EXPECT_FALSE(used.unavailable_);
  EXPECT_FALSE(used.read_only_);
  EXPECT_FALSE(used.poll_pause);
}

TEST(GdbSession, NoVcpusMeansErrorsNotCrashes) {
  FakeDebugTarget none(0);
  GdbSession s(none, {});
  for (const char* p : {"g", "p0", "m0,1", "M0,1:00", "s", "c", "vCont;s", "qfThreadInfo", "T1", "Hg1"}) {
    const SessionAction a = s.handle(p);
    EXPECT_TRUE(a.kind == Kind::kReply && (a.reply.starts_with("E") || a.reply == "l")) << p << " -> " << a.reply;
  }
}

class ThrowingTarget : public FakeDebugTarget {
 public:
  std::string monitor(std::string_view) override { throw std::runtime_error("boom"); }
};

TEST(GdbSession, AnExceptionFromTheTargetIsAnErrorReply) {
  ThrowingTarget target;
  GdbSession s(target, {});
  const SessionAction a = s.handle("qRcmd,6869");
  EXPECT_EQ(a.kind, Kind::kReply);
  EXPECT_EQ(a.reply, "E01");
}

}  // namespace
}  // namespace topolab::debug
