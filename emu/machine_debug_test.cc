// SPDX-License-Identifier: GPL-2.0-or-later
// The machine as gdb's stub sees it (emu/machine_debug.h), with scripted
// fake vCPUs and no stub: the machine runs on a thread of its own and the
// test plays the client. tests/gdb.sh drives the same with the real gdb.
#include <thread>

#include <gtest/gtest.h>

#include "emu/machine_debug.h"
#include "emu/machine_test_support.h"

namespace topolab {
namespace {

using namespace machine_test;
using debug::StopEvent;

// Retires `before`, stops for the debugger as a breakpoint would, retires `after`.
Action breakpoint_between(uint64_t before, uint64_t after) {
  return [=](FakeVcpu& v, uint64_t) {
    v.retire(before);
    v.host().debug_stop(DebugStop{.kind = DebugStop::Kind::kBreakpoint});
    v.retire(after);
    return stop();
  };
}

// gdb's W carries the guest's exit value.
MachineDebugger::Options exit_with_guest_value() {
  MachineDebugger::Options options;
  options.exit_status = [](const RunResult& r) { return static_cast<int>(r.guest_value.value_or(99)); };
  return options;
}

// The client's side of a debugged run of `rig`, on this thread.
struct DebuggedRig {
  explicit DebuggedRig(Rig& rig) : debugger(*rig.machine, exit_with_guest_value()) {
    rig.machine->attach_debugger(&debugger);
  }
  void start(Rig& rig) {
    runner = std::thread([&rig, this] { result = rig.machine->run(); });
  }
  ~DebuggedRig() {
    if (runner.joinable()) runner.join();
  }
  MachineDebugger debugger;
  std::thread runner;
  std::optional<RunResult> result;
};

debug::ResumeRequest go_on() { return {}; }

TEST(MachineDebugger, AStopInsideASliceParksTheMachineUntilTheClientGoesOn) {
  Rig rig("2", {{breakpoint_between(10, 5), guest_exit(3)}});
  DebuggedRig d(rig);
  d.start(rig);
  const std::optional<StopEvent> stop = d.debugger.wait_stopped();
  ASSERT_TRUE(stop);
  EXPECT_EQ(stop->kind, StopEvent::Kind::kSoftwareBreak);
  EXPECT_EQ(stop->vcpu, 0u);
  // The machine stands still where the vCPU stopped: 10 instructions in.
  EXPECT_EQ(d.debugger.describe_vcpu(0), "CPU 0 APIC 0x0 pkg 0 die 0 core 0 thread 0, running, 0.0 ms");
  EXPECT_NE(d.debugger.describe_vcpu(1).find("waiting for SIPI"), std::string::npos);
  EXPECT_EQ(rig.cpu(0).instructions(), 10u);
  const StopEvent end = d.debugger.resume(go_on(), {});
  EXPECT_EQ(end.kind, StopEvent::Kind::kExited);
  EXPECT_EQ(end.exit_code, 3);
  d.runner.join();
  ASSERT_TRUE(d.result);
  EXPECT_EQ(d.result->instructions, 15u);
}

TEST(MachineDebugger, AStopAskedForBeforeTheRunComesBeforeTheFirstInstruction) {
  Rig rig("1", {{run_for(50), guest_exit(0)}});
  DebuggedRig d(rig);
  d.debugger.ask_stop();  // -S
  d.start(rig);
  const std::optional<StopEvent> stop = d.debugger.wait_stopped();
  ASSERT_TRUE(stop);
  EXPECT_EQ(stop->kind, StopEvent::Kind::kStarted);
  EXPECT_EQ(rig.cpu(0).instructions(), 0u);
  EXPECT_EQ(d.debugger.resume(go_on(), {}).kind, StopEvent::Kind::kExited);
}

// A run the debugger stopped twice and let go ends as one it never touched.
TEST(MachineDebugger, StopsChangeNothingTheRunReports) {
  const auto script = [] {
    return std::vector<std::vector<Action>>{
        {breakpoint_between(7, 3), run_for(40), breakpoint_between(1, 1), guest_exit(0)}};
  };
  Rig plain("1", script());
  const RunResult alone = plain.machine->run();
  Rig rig("1", script());
  DebuggedRig d(rig);
  d.start(rig);
  ASSERT_TRUE(d.debugger.wait_stopped());
  ASSERT_EQ(d.debugger.resume(go_on(), {}).kind, StopEvent::Kind::kSoftwareBreak);
  EXPECT_EQ(d.debugger.resume(go_on(), {}).kind, StopEvent::Kind::kExited);
  d.runner.join();
  EXPECT_EQ(d.result->instructions, alone.instructions);
  EXPECT_EQ(d.result->virtual_ns, alone.virtual_ns);
}

TEST(MachineDebugger, DetachLetsTheRunGoOnWithoutStoppingAgain) {
  Rig rig("1", {{breakpoint_between(1, 1), breakpoint_between(1, 1), guest_exit(5)}});
  DebuggedRig d(rig);
  d.start(rig);
  ASSERT_TRUE(d.debugger.wait_stopped());
  d.debugger.detach();
  d.runner.join();
  EXPECT_EQ(d.result->guest_value, 5u);
}

TEST(MachineDebugger, KillEndsTheRunBetweenSlices) {
  Rig rig("1", {{breakpoint_between(1, 1), run_for(100), guest_exit(0)}});
  DebuggedRig d(rig);
  d.start(rig);
  ASSERT_TRUE(d.debugger.wait_stopped());
  d.debugger.kill();
  d.runner.join();
  EXPECT_EQ(d.result->outcome, RunResult::Outcome::Shutdown);
  EXPECT_EQ(d.result->diagnosis, "killed by the debugger (gdb's kill)");
}

// The client's questions are answered on the machine's thread; a vCPU with
// no engine yet (before its SIPI) has no registers to show.
TEST(MachineDebugger, RegistersOfAVcpuNotStartedAreUnavailable) {
  Rig rig("2", {{breakpoint_between(1, 1), guest_exit(0)}});
  DebuggedRig d(rig);
  d.start(rig);
  ASSERT_TRUE(d.debugger.wait_stopped());
  std::array<uint8_t, 8> rax{};
  EXPECT_FALSE(d.debugger.read_register(1, x86::RegisterId::kRax, rax));
  EXPECT_EQ(d.debugger.monitor("memory physical"), "gdb's addresses are guest-physical now\n");
  EXPECT_EQ(d.debugger.resume(go_on(), {}).kind, StopEvent::Kind::kExited);
}

}  // namespace
}  // namespace topolab

namespace topolab {
namespace {

using namespace machine_test;

// A 16 GiB machine (3 GiB from 0, 13 GiB from 4 GiB): the start of
// history hashes RAM (the base every checkpoint compares with; a fake vCPU
// cannot be saved, so no checkpoint is taken here: emu/ram_pages_test.cc
// and gdb.reverse_checkpoints cover that) and reads no page the host never
// backed. Such a read would map the zero page there, which
// GuestRam::backed_pages() would then list: the list does not grow.
TEST(MachineCheckpoints, ASixteenGiBGuestIsNotReadWhole) {
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  Rig rig("1", {{guest_exit(0)}}, "", true, [](MachineConfig& c) { c.ram_mib = 16 * 1024; });
  GuestRam& ram = rig.machine->ram();
  ASSERT_EQ(ram.top(), 17 * kGiB);
  ram.write<uint64_t>(2 * kGiB, 1);
  ram.write<uint64_t>(12 * kGiB + 8, 2);
  const std::vector<uint64_t> backed = ram.backed_pages();
  ASSERT_LT(backed.size(), 4096u) << "the loader and two writes backed 16 MiB or more";
  MachineCheckpoints checkpoints(1'000'000);
  checkpoints.between_slices(*rig.machine, 0);
  EXPECT_EQ(checkpoints.size(), 0u);
  EXPECT_EQ(ram.backed_pages(), backed);
}

}  // namespace
}  // namespace topolab
