// SPDX-License-Identifier: GPL-2.0-or-later
// The machine's loop, routing, wake rules, measuring window and diagnoses,
// driven through scripted fake vCPUs (emu/machine_test_support.h): nothing
// boots, no Unicorn links.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "emu/machine_test_support.h"

namespace topolab {
namespace {

using namespace machine_test;

TEST(Machine, EndsAtTheGuestsExitWithItsValueAndClock) {
  Rig rig("1", {{run_for(250), guest_exit(0x31)}});
  RunResult r = rig.machine->run();
  EXPECT_EQ(r.outcome, RunResult::Outcome::GuestExit);
  EXPECT_EQ(r.guest_value, 0x31u);
  EXPECT_EQ(r.instructions, 250u);
  EXPECT_EQ(r.virtual_ns, 250u);
}

// kvm-unit-tests' ioapic test in small: a level-triggered pin raised
// through pc-testdev reaches the vCPU that raised it before its next slice,
// comes back after an EOI while the pin is still asserted, and leaves remote
// IRR clear once the pin is lowered and the vector EOIed. None of it counts
// as an IPI.
TEST(MachineIoApic, LevelPinRaisedThroughPcTestdevIsDeliveredAndReassertedAfterEoi) {
  constexpr unsigned kPin = 14;
  constexpr uint32_t kLow = ioapic::REG_REDIRECTION_BASE + 2 * kPin;
  std::vector<uint8_t> seen_after_raise, seen_after_first_eoi;
  uint32_t entry_at_end = 0;
  Rig rig("1",
          {{[](FakeVcpu& v, uint64_t) {
              v.write_apic(REG_SVR, SVR_APIC_ENABLED | 0xff);
              v.write_ioapic(kLow + 1, 0);  // destination APIC 0
              v.write_ioapic(kLow, 0x76 | ioapic::RTE_TRIGGER_LEVEL);
              v.host().port_out(PcTestdev::kIrqLineBase + kPin, 1, 1);
              v.retire(10);
              return stop();
            },
            [&](FakeVcpu& v, uint64_t) {
              seen_after_raise = v.injected;
              v.write_apic(REG_EOI, 0);  // still asserted: sent again
              v.retire(10);
              return stop();
            },
            [&](FakeVcpu& v, uint64_t) {
              seen_after_first_eoi = v.injected;
              v.host().port_out(PcTestdev::kIrqLineBase + kPin, 1, 0);
              v.write_apic(REG_EOI, 0);
              entry_at_end = v.read_ioapic(kLow);
              v.retire(10);
              return stop();
            },
            guest_exit(0)}},
          "", true, [](MachineConfig& c) { c.devices.add(PlatformDevice::PcTestdev); });
  RunResult r = rig.machine->run();
  ASSERT_EQ(r.outcome, RunResult::Outcome::GuestExit) << r.diagnosis;
  EXPECT_EQ(seen_after_raise, (std::vector<uint8_t>{0x76}));
  EXPECT_EQ(seen_after_first_eoi, (std::vector<uint8_t>{0x76, 0x76}));
  EXPECT_EQ(rig.cpu(0).injected, (std::vector<uint8_t>{0x76, 0x76}));
  EXPECT_EQ(entry_at_end & ioapic::RTE_REMOTE_IRR, 0u);
  EXPECT_EQ(rig.stats(0).ipis_received, (std::array<uint64_t, kApicDeliveryModes>{}));
  EXPECT_EQ(rig.stats(0).ipis_sent, (std::array<uint64_t, kApicDeliveryModes>{}));
}

TEST(MachineIoApic, IrqLinePortsExistOnlyWithPcTestdev) {
  std::vector<uint8_t> injected;
  Rig rig("1",
          {{[](FakeVcpu& v, uint64_t) {
              v.write_apic(REG_SVR, SVR_APIC_ENABLED | 0xff);
              v.write_ioapic(ioapic::REG_REDIRECTION_BASE + 2 * 14, 0x76);
              v.host().port_out(PcTestdev::kIrqLineBase + 14, 1, 1);
              v.retire(10);
              return stop();
            },
            run_for(10), guest_exit(0)}});
  RunResult r = rig.machine->run();
  ASSERT_EQ(r.outcome, RunResult::Outcome::GuestExit) << r.diagnosis;
  EXPECT_TRUE(rig.cpu(0).injected.empty());
}

TEST(MachinePlatform, KeyboardControllerResetEndsTheRunAsAShutdown) {
  Rig rig("1", {{run_for(100),
                 [](FakeVcpu& v, uint64_t) {
                   EXPECT_EQ(v.host().port_in(I8042::kCommandPort, 1) & 2, 0u);
                   v.host().port_out(I8042::kCommandPort, 1, 0xfe);
                   v.retire(1);
                   return stop();
                 },
                 guest_exit(7)}});
  RunResult r = rig.machine->run();
  EXPECT_EQ(r.outcome, RunResult::Outcome::Shutdown);
  EXPECT_NE(r.diagnosis.find("keyboard controller"), std::string::npos) << r.diagnosis;
  EXPECT_EQ(r.instructions, 101u);
}

TEST(MachinePlatform, PmTimerReadsTheReadingVcpusVirtualClock) {
  uint32_t ticks = 0;
  Rig rig("1", {{run_for(1'000'000),  // 1 ms at 1 GHz
                 [&](FakeVcpu& v, uint64_t) {
                   ticks = v.host().port_in(AcpiPm::kBase + AcpiPm::kPmTmr, 4);
                   return stop();
                 },
                 guest_exit(0)}});
  RunResult r = rig.machine->run();
  ASSERT_EQ(r.outcome, RunResult::Outcome::GuestExit) << r.diagnosis;
  EXPECT_EQ(ticks, 3579u);  // 3.579545 MHz x 1 ms, rounded down
}

TEST(MachinePlatform, PitCountsOnVirtualTimeAndPitOffRemovesIt) {
  for (bool pit : {true, false}) {
    uint32_t low = 0, high = 0;
    Rig rig("1",
            {{[](FakeVcpu& v, uint64_t) {
                v.host().port_out(Pit8254::kBase + 3, 1, 0x34);  // channel 0, LSB then MSB, mode 2
                v.host().port_out(Pit8254::kBase, 1, 0x00);
                v.host().port_out(Pit8254::kBase, 1, 0x10);  // 4096 ticks
                return stop();
              },
              run_for(838'100),  // 1,000 ticks at 1 GHz, CPI 1
              [&](FakeVcpu& v, uint64_t) {
                low = v.host().port_in(Pit8254::kBase, 1);
                high = v.host().port_in(Pit8254::kBase, 1);
                return stop();
              },
              guest_exit(0)}},
            "", true, [pit](MachineConfig& c) { c.devices.set(PlatformDevice::Pit, pit); });
    RunResult r = rig.machine->run();
    ASSERT_EQ(r.outcome, RunResult::Outcome::GuestExit) << r.diagnosis;
    if (pit) {
      EXPECT_EQ(low | (high << 8), 4096u - 1000u);
    } else {
      EXPECT_EQ(low, 0xffu);  // nobody there
    }
  }
}

TEST(Machine, InitSipiStartsEveryApAndAFixedIpiReachesOnlyItsDestination) {
  Rig rig("4", {{start_aps(0x12), run_for(100), send_fixed(2, 0x40), run_for(1000), guest_exit(1)},
                {enable_apic_and_halt()}, {enable_apic_and_halt()}, {enable_apic_and_halt()}});
  RunResult r = rig.machine->run();
  ASSERT_EQ(r.outcome, RunResult::Outcome::GuestExit) << r.diagnosis;
  for (unsigned ap = 1; ap < 4; ++ap) {
    EXPECT_EQ(rig.cpu(ap).sipi_vector, 0x12) << "cpu " << ap;
    EXPECT_EQ(rig.wakes(ap, WakeCause::Sipi), 1u) << "cpu " << ap;
  }
  EXPECT_EQ(rig.cpu(2).injected, (std::vector<uint8_t>{0x40}));
  EXPECT_TRUE(rig.cpu(1).injected.empty());
  EXPECT_TRUE(rig.cpu(3).injected.empty());
  EXPECT_EQ(rig.stats(2).received_while_halted, 1u);
  EXPECT_EQ(rig.wakes(2, WakeCause::Interrupt), 1u);
  // INIT and SIPI to three APs each, then the fixed IPI to one.
  EXPECT_EQ(rig.machine->stats().ipi_matrix().at({0, 2}), 3u);
  EXPECT_EQ(rig.machine->stats().ipi_matrix().at({0, 1}), 2u);
}

TEST(Machine, AnIpiToNobodyIsCountedAndGoesNowhere) {
  Rig rig("2", {{start_aps(), run_for(10), send_fixed(9, 0x40), run_for(10), guest_exit(1)}, {enable_apic_and_halt()}});
  ASSERT_EQ(rig.machine->run().outcome, RunResult::Outcome::GuestExit);
  EXPECT_EQ(rig.stats(0).ipis_to_nobody, 1u);
  EXPECT_TRUE(rig.cpu(1).injected.empty());
}

// The wake rules (model/cost_rules.h) as the loop applies them: the
// IPI's send, the target's halt, the host's latency or its halt-poll hit.
// cpu 1 halts at once; cpu 0 sends it an IPI at 20,000 ns.
struct WakeAfterIpi {
  uint64_t sent_at = 0;  // the guest's TSC at the ICR write (1 GHz: ns)
  std::unique_ptr<Rig> rig;
  // How long after the send cpu 1 took the interrupt.
  uint64_t resumed_after() const {
    const std::vector<uint64_t>& at = rig->cpu(1).injected_at;
    return at.empty() ? 0 : at[0] - sent_at;
  }
};

std::unique_ptr<WakeAfterIpi> wake_after_ipi(const std::string& cost) {
  auto w = std::make_unique<WakeAfterIpi>();
  w->rig = std::make_unique<Rig>(
      "2", std::vector<std::vector<Action>>{{start_aps(), run_for(20'000), send_fixed(1, 0x40, &w->sent_at),
                                             run_for(50'000), guest_exit(1)},
                                            {enable_apic_and_halt(), run_for(10)}},
      cost);
  EXPECT_EQ(w->rig->machine->run().outcome, RunResult::Outcome::GuestExit);
  EXPECT_EQ(w->rig->cpu(1).injected_at.size(), 1u);
  return w;
}

TEST(Machine, AHaltedTargetResumesAfterTheHostsWakeLatency) {
  EXPECT_EQ(wake_after_ipi("halt_wake_ns=5000")->resumed_after(), 5000u);
  EXPECT_EQ(wake_after_ipi("halt_wake_ns=5000,icr_send_ns=300")->resumed_after(), 5300u);  // sent inside the ICR exit
}

TEST(Machine, AHaltPollHitResumesSoonerAndIsCounted) {
  const auto hit = wake_after_ipi("halt_wake_ns=5000,halt_poll_ns=50000,poll_wake_ns=300");
  EXPECT_EQ(hit->resumed_after(), 300u);
  EXPECT_EQ(hit->rig->stats(1).halt_poll_hits, 1u);
  EXPECT_EQ(hit->rig->stats(1).halt_poll_misses, 0u);
  // The halt began about 20 us before the IPI: a 1 us window missed it.
  const auto miss = wake_after_ipi("halt_wake_ns=5000,halt_poll_ns=1000,poll_wake_ns=300");
  EXPECT_EQ(miss->resumed_after(), 5000u);
  EXPECT_EQ(miss->rig->stats(1).halt_poll_misses, 1u);
}

TEST(Machine, ARunningTargetSeesTheIpiAPostedInterruptLater) {
  uint64_t sent_at = 0;
  Rig rig("2",
          {{start_aps(), run_for(5000), send_fixed(1, 0x40, &sent_at), run_for(20'000), guest_exit(1)},
           {[](FakeVcpu& v, uint64_t) {
              v.write_apic(REG_SVR, SVR_APIC_ENABLED | 0xff);
              return stop();
            },
            // Behind the IPI's arrival: the machine ends its slice there.
            run_for(1000), run_for(1000), run_for(1000), run_for(1000), run_for(1000), run_budget(), run_for(10)}},
          "ipi_running_ns=700");
  ASSERT_EQ(rig.machine->run().outcome, RunResult::Outcome::GuestExit);
  ASSERT_EQ(rig.cpu(1).injected_at.size(), 1u);
  EXPECT_EQ(rig.cpu(1).injected_at[0], sent_at + 700);
  EXPECT_EQ(rig.stats(1).received_by_vector.at(0x40), 1u);
  EXPECT_EQ(rig.stats(1).received_while_halted, 0u);
}

// Scheduling into the past: an IPI from a vCPU behind in time reaches one
// already past its arrival at the target's next slice, not back in time.
TEST(Machine, AnIpiFromBehindArrivesAtTheTargetsOwnTime) {
  uint64_t sent_at = 0;
  Rig rig("2",
          {{start_aps(), run_for(100), send_fixed(1, 0x40, &sent_at), run_for(100'000), guest_exit(1)},
           {[](FakeVcpu& v, uint64_t) {
              v.write_apic(REG_SVR, SVR_APIC_ENABLED | 0xff);
              v.retire(50'000);  // far ahead of cpu 0
              return stop();
            },
            run_for(10), run_for(10)}},
          "ipi_running_ns=700");
  ASSERT_EQ(rig.machine->run().outcome, RunResult::Outcome::GuestExit);
  ASSERT_EQ(rig.cpu(1).injected_at.size(), 1u);
  EXPECT_EQ(sent_at, 100u);
  EXPECT_EQ(rig.cpu(1).injected_at[0], 50'000u);  // its own clock at its next slice
}

// pick_next: the earliest clock runs, ties go to the lower index.
TEST(Machine, TheEarliestClockRunsNextAndTiesGoToTheLowerIndex) {
  std::string order;
  auto logged = [&order](char who, uint64_t n) {
    return [&order, who, n](FakeVcpu& v, uint64_t) {
      order += who;
      v.retire(n);
      return stop();
    };
  };
  std::vector<Action> cpu0{start_aps()}, cpu1;
  for (int i = 0; i < 3; ++i) cpu0.push_back(logged('a', 300));
  cpu0.push_back(guest_exit(1));
  for (int i = 0; i < 8; ++i) cpu1.push_back(logged('b', 100));
  Rig rig("2", {cpu0, cpu1});
  ASSERT_EQ(rig.machine->run().outcome, RunResult::Outcome::GuestExit);
  // Both at 0: a; then b at 0, 100, 200; at 300 both: a; ...
  EXPECT_EQ(order.substr(0, 9), "abbbabbba");
}

TEST(Machine, TheWindowCountsWhatHappenedBetweenTheGuestsMarks) {
  Rig rig("1", {{run_for(100), measure(MeasurePort::Mark::Begin), run_for(1234), measure(MeasurePort::Mark::End),
                 run_for(500), guest_exit(1)}});
  ASSERT_EQ(rig.machine->run().outcome, RunResult::Outcome::GuestExit);
  const auto& window = rig.machine->window();
  ASSERT_TRUE(window);
  EXPECT_TRUE(window->ended_by_guest);
  EXPECT_EQ(window->begin_ns, 100u);
  EXPECT_EQ(window->end_ns, 1334u);
  EXPECT_EQ(window->stats.vcpu(0).instructions, 1234u);
  EXPECT_EQ(window->stats.vcpu(0).exits[static_cast<size_t>(ExitKind::Io)], 1u);  // the End write
}

TEST(Machine, AWindowTheGuestDoesNotEndEndsWithTheRun) {
  Rig rig("1", {{measure(MeasurePort::Mark::Begin), run_for(777), guest_exit(1)}});
  ASSERT_EQ(rig.machine->run().outcome, RunResult::Outcome::GuestExit);
  ASSERT_TRUE(rig.machine->window());
  EXPECT_FALSE(rig.machine->window()->ended_by_guest);
  EXPECT_EQ(rig.machine->window()->end_ns, 777u);
}

TEST(Machine, OneVcpuHaltedWithInterruptsOffIsDiagnosed) {
  Rig rig("1", {{run_for(5), enable_apic_and_halt(false)}});
  RunResult r = rig.machine->run();
  EXPECT_EQ(r.outcome, RunResult::Outcome::Hung);
  EXPECT_EQ(r.diagnosis.rfind("the guest halted with interrupts disabled at cpu 0 RIP 0x100006", 0), 0u) << r.diagnosis;
}

TEST(Machine, ADeadlockNamesEveryStuckVcpu) {
  Rig rig("3", {{start_aps(), enable_apic_and_halt(false)}, {enable_apic_and_halt(true)}, {enable_apic_and_halt(false)}});
  RunResult r = rig.machine->run();
  EXPECT_EQ(r.outcome, RunResult::Outcome::Hung);
  EXPECT_NE(r.diagnosis.find("guest deadlock: no vCPU can run and nothing can wake one:"), std::string::npos);
  EXPECT_NE(r.diagnosis.find("cpu 1 halted with interrupts enabled"), std::string::npos) << r.diagnosis;
  EXPECT_NE(r.diagnosis.find("cpu 2 halted with interrupts disabled"), std::string::npos) << r.diagnosis;
  EXPECT_NE(r.diagnosis.find("(3 of 3 vCPUs started)"), std::string::npos) << r.diagnosis;
}

TEST(Machine, AnApWaitingForASipiNobodySendsIsADeadlock) {
  Rig rig("2", {{enable_apic_and_halt(false)}});
  RunResult r = rig.machine->run();
  EXPECT_EQ(r.outcome, RunResult::Outcome::Hung);
  EXPECT_NE(r.diagnosis.find("cpu 1 waits for SIPI"), std::string::npos) << r.diagnosis;
  EXPECT_NE(r.diagnosis.find("(1 of 2 vCPUs started)"), std::string::npos) << r.diagnosis;
}

TEST(Machine, AReservedDeliveryModeStopsTheRun) {
  Rig rig("1", {{[](FakeVcpu& v, uint64_t) {
    v.write_apic(REG_SVR, SVR_APIC_ENABLED | 0xff);
    v.send_ipi(0, 0x4300 | 0x40);  // delivery mode 011b
    return stop();
  }}});
  RunResult r = rig.machine->run();
  EXPECT_EQ(r.outcome, RunResult::Outcome::Crashed);
  EXPECT_EQ(r.diagnosis, "cpu 0 wrote an ICR with the reserved delivery mode 011b");
}

TEST(Machine, TheActivityLogFollowsHaltsAndWakes) {
  const auto w = wake_after_ipi("halt_wake_ns=5000");
  const Rig* rig = w->rig.get();
  const std::vector<ActivitySpan>& spans = rig->machine->activity().spans(1);
  // Started at 0 (no time waiting for SIPI), ran 1 ns, halted until the
  // IPI (sent at 20,000) plus the host's 5,000, then ran again.
  ASSERT_GE(spans.size(), 3u);
  EXPECT_EQ(spans[0], (ActivitySpan{0, 1, VcpuActivity::Running}));
  EXPECT_EQ(spans[1], (ActivitySpan{1, 25'000, VcpuActivity::Halted}));
  EXPECT_EQ(spans[2].activity, VcpuActivity::Running);
  EXPECT_EQ(rig->machine->activity().spans(0)[0].activity, VcpuActivity::Running);
}


// --- Spin skipping (emu/pause_loop.h) ---------------------------------------------

// The engine's pause-loop exit after `instructions` of spinning at a fixed point.
Action spin(uint64_t instructions, bool reads_time = false) {
  return [=](FakeVcpu& v, uint64_t) {
    v.retire(instructions);
    VcpuExit exit = exit_for(VcpuExit::Reason::PauseLoop);
    exit.loop_reads_time = reads_time;
    return exit;
  };
}
Action note_tsc(uint64_t* at) {
  return [=](FakeVcpu& v, uint64_t) {
    *at = v.host().read_tsc();
    v.retire(1);
    return stop();
  };
}
Action enable_apic() {
  return [](FakeVcpu& v, uint64_t) {
    v.write_apic(REG_SVR, SVR_APIC_ENABLED | 0xff);
    return stop();
  };
}

TEST(MachineSpinSkip, TheMachineAsksForPleOnlyWithSpinSkippingOn) {
  Rig on("1", {{guest_exit(1)}});
  ASSERT_TRUE(on.cpu(0).pause_loop_exiting);
  // KVM's ple_gap and ple_window in cycles; at CPI 1 as many instructions.
  EXPECT_EQ(on.cpu(0).pause_loop_exiting->gap_instructions, 128u);
  EXPECT_EQ(on.cpu(0).pause_loop_exiting->window_instructions, 4096u);
  Rig off("1", {{guest_exit(1)}}, "", false);
  EXPECT_FALSE(off.cpu(0).pause_loop_exiting);
  Rig no_window("1", {{guest_exit(1)}}, "ple_window=0");
  EXPECT_FALSE(no_window.cpu(0).pause_loop_exiting);
}

// Released by another vCPU's store: nothing it stores can reach the
// spinner before that vCPU runs, so the spinner's clock moves to its clock.
TEST(MachineSpinSkip, ASpinSkipsToTheClockOfTheNextVcpuThatCanStore) {
  uint64_t resumed_at = 0;
  Rig rig("2", {{start_aps(), run_for(10'000), run_for(5'000), guest_exit(1)},
                {enable_apic(), spin(100), note_tsc(&resumed_at)}});
  ASSERT_EQ(rig.machine->run().outcome, RunResult::Outcome::GuestExit);
  EXPECT_EQ(resumed_at, 10'000u) << "cpu 0's clock when cpu 1 spun";
  EXPECT_EQ(rig.stats(1).ple_exits, 1u);
  EXPECT_EQ(rig.stats(1).skipped_ns, 10'000u - 100);
  EXPECT_EQ(rig.stats(1).exits[static_cast<size_t>(ExitKind::PauseLoop)], 1u);
  EXPECT_EQ(rig.stats(1).host_busy_ns(), 10'001u) << "a skipped spin still burns its host CPU";
}

// Released by its timer: alone, it skips exactly to the expiry, and the
// interrupt comes then, not a quantum late.
TEST(MachineSpinSkip, ASpinSkipsToItsOwnTimer) {
  Rig rig("1", {{[](FakeVcpu& v, uint64_t) {
                   v.write_apic(REG_SVR, SVR_APIC_ENABLED | 0xff);
                   v.write_apic(REG_TIMER_DIVIDE_CONFIG, 0xb);  // divide by 1: 1 GHz, one tick a ns
                   v.write_apic(REG_LVT_TIMER, 0x30);          // one-shot, vector 0x30
                   v.write_apic(REG_TIMER_INITIAL_COUNT, 50'000);
                   v.retire(10);
                   return stop();
                 },
                 spin(100), guest_exit(1)}});
  ASSERT_EQ(rig.machine->run().outcome, RunResult::Outcome::GuestExit);
  EXPECT_EQ(rig.cpu(0).injected, (std::vector<uint8_t>{0x30}));
  EXPECT_EQ(rig.cpu(0).injected_at, (std::vector<uint64_t>{50'000}));
  EXPECT_EQ(rig.stats(0).skipped_ns, 50'000u - 110);
}

// Released by an IPI: the skip ends at the IPI's arrival, which the
// spinner takes at that time exactly.
TEST(MachineSpinSkip, ASpinSkipsNoFurtherThanAnIpiOnItsWay) {
  uint64_t sent_at = 0;
  Rig rig("2",
          {{start_aps(), run_for(30'000), send_fixed(1, 0x40, &sent_at), run_for(50'000), guest_exit(1)},
           {enable_apic(), spin(100), spin(100), spin(100), run_for(10)}},
          "ipi_running_ns=700");
  ASSERT_EQ(rig.machine->run().outcome, RunResult::Outcome::GuestExit);
  ASSERT_EQ(sent_at, 30'000u);
  EXPECT_EQ(rig.cpu(1).injected_at, (std::vector<uint64_t>{30'700}));
}

// A loop that reads the TSC is skipped by at most one quantum of time; one
// that does not, alone, skips to the end of the run's time.
TEST(MachineSpinSkip, ASpinThatReadsTimeSkipsAtMostAQuantum) {
  uint64_t resumed_at = 0;
  Rig timed("1", {{spin(100, true), note_tsc(&resumed_at), guest_exit(1)}});
  ASSERT_EQ(timed.machine->run().outcome, RunResult::Outcome::GuestExit);
  EXPECT_EQ(resumed_at, 100u + 100'000) << "the default quantum, 100,000 instructions of 1 ns";

  // Alone, and reading no time: nothing could ever release it, so it is a
  // hang at once (issue 27; it used to run to the time limit as 124).
  Rig untimed("1", {{spin(100), note_tsc(&resumed_at), guest_exit(1)}});
  const RunResult r = untimed.machine->run();
  EXPECT_EQ(r.outcome, RunResult::Outcome::Hung) << "nothing could ever release it";
  EXPECT_NE(r.diagnosis.find("loops forever in a PAUSE loop that stores nothing and comes back to the same registers "
                             "every turn"),
            std::string::npos)
      << r.diagnosis;
  EXPECT_EQ(r.virtual_ns, 10'000'000u);
}

// A loop at 0x1234 of `instructions` a turn with interrupts off, as the
// engine stops on one it proved idle, named as the engine names it.
Action idle_loop(uint64_t instructions, std::string detail) {
  return [instructions, detail](FakeVcpu& v, uint64_t) {
    v.interrupts_enabled = false;
    v.retire(instructions);
    VcpuExit exit = exit_for(VcpuExit::Reason::PauseLoop);
    exit.idle_loop = true;
    exit.rip = 0x1234;
    exit.detail = detail;
    return exit;
  };
}

const Action jump_to_itself = idle_loop(1, "a jump to itself");

// A jump to itself (idle_loop) that nothing can end before the time limit
// is a hang, diagnosed at once with its address; it charges no PLE exit.
TEST(MachineSpinSkip, AJumpToItselfNothingCanEndIsAHang) {
  Rig rig("1", {{jump_to_itself, guest_exit(1)}});
  const RunResult r = rig.machine->run();
  EXPECT_EQ(r.outcome, RunResult::Outcome::Hung);
  EXPECT_NE(r.diagnosis.find("loops forever in a jump to itself at RIP 0x1234 with interrupts off"), std::string::npos)
      << r.diagnosis;
  EXPECT_EQ(rig.machine->stats().vcpu(0).ple_exits, 0u);
}

// The same hang on the boot CPU of an SMP machine whose APs were never
// started: they have no engine yet, so the diagnosis says they wait for a
// SIPI without reading their registers (it read them once, and crashed:
// F11 in docs/reliability.md).
TEST(MachineSpinSkip, AHangBesideApsNeverStartedNamesThemWaitingForSipi) {
  Rig rig("3", {{jump_to_itself, guest_exit(1)}, {}, {}});
  const RunResult r = rig.machine->run();
  EXPECT_EQ(r.outcome, RunResult::Outcome::Hung);
  EXPECT_NE(r.diagnosis.find("every other vCPU is halted or stuck too (cpu 1 waits for SIPI, cpu 2 waits for SIPI)"),
            std::string::npos)
      << r.diagnosis;
}

// A loop that only reads memory, proved idle by the engine (idle_loop, with
// its words for the loop), is skipped no further than another vCPU that
// still runs and could write what it reads; once that one has halted with
// interrupts off for good, nothing can end the loop: a hang, named as the
// engine named the loop.
TEST(MachineSpinSkip, ALoopOnMemoryWaitsForTheVcpuThatCouldWriteIt) {
  const Action read_only_loop = idle_loop(3, "a loop that only reads memory (3 instructions at 0x1234)");
  Rig rig("2", {{start_aps(), read_only_loop, read_only_loop, read_only_loop, read_only_loop, guest_exit(1)},
                {run_for(50'000), enable_apic_and_halt(false)}});
  const RunResult r = rig.machine->run();
  EXPECT_EQ(r.outcome, RunResult::Outcome::Hung) << r.diagnosis;
  EXPECT_NE(r.diagnosis.find("cpu 0 loops forever in a loop that only reads memory (3 instructions at 0x1234) at RIP "
                             "0x1234 with interrupts off"),
            std::string::npos)
      << r.diagnosis;
  EXPECT_EQ(rig.cpu(1).instructions(), 50'001u) << "the other vCPU ran to its halt first";
  EXPECT_EQ(rig.machine->stats().vcpu(0).ple_exits, 0u);
}

// With interrupts off a loop of pure instructions cannot turn them on (STI
// and POPF are side effects), so an interrupt waiting in the APIC cannot
// end the spin: alone, it skips to the end of the run's time.
TEST(MachineSpinSkip, AnInterruptTheSpinCannotTakeDoesNotEndTheSkip) {
  Rig rig("1", {{enable_apic(),
                 [](FakeVcpu& v, uint64_t) {
                   v.interrupts_enabled = false;
                   v.send_ipi(0, 0x44000 | 0x50);  // a fixed self-IPI (shorthand self)
                   return stop();
                 },
                 spin(100), guest_exit(1)}});
  const RunResult r = rig.machine->run();
  EXPECT_EQ(r.outcome, RunResult::Outcome::Hung) << "the interrupt it cannot take does not end it";
  EXPECT_NE(r.diagnosis.find("with interrupts off: interrupts are off and nothing in the loop can turn them on; it is "
                             "the only vCPU; nothing can end it before the time limit (0.01 s of virtual time)"),
            std::string::npos)
      << r.diagnosis;
  EXPECT_TRUE(rig.cpu(0).injected.empty());
}

// An idle loop whose registers move but that has no way out
// (loop_state_moves): with another vCPU still running (which could send it
// an interrupt or store), it is not skipped at all; once that one has
// halted with interrupts off, nothing can end it: a hang, naming both.
// The engine's idle-loop exit after `instructions` of turns of the loop at `rip`.
struct IdleLoop {
  bool interrupts = false;
  uint64_t instructions = 3;
  uint64_t rip = 0x1234;
  bool moves = false;    // loop_state_moves: no way out, registers moving
  bool recheck = false;  // the run did nothing but turn the loop
  std::string detail = "a loop that only reads memory (3 instructions at 0x1234)";
};
Action idle_loop_exit(IdleLoop loop) {
  return [=](FakeVcpu& v, uint64_t) {
    v.interrupts_enabled = loop.interrupts;
    v.retire(loop.instructions);
    VcpuExit exit = exit_for(VcpuExit::Reason::PauseLoop);
    exit.idle_loop = true;
    exit.loop_state_moves = loop.moves;
    exit.spin_recheck = loop.recheck;
    exit.rip = loop.rip;
    exit.detail = loop.detail;
    return exit;
  };
}

TEST(MachineSpinSkip, ALoopWithNoWayOutIsStuckOnlyWhenNothingCanEndItBeforeTheLimit) {
  const Action no_way_out = idle_loop_exit(
      {.interrupts = true, .instructions = 4, .rip = 0x2000, .moves = true, .recheck = false,
       .detail = "a loop of 2 blocks (0x2000, 0x2010; 4 instructions a turn) that has no way out"});
  Rig rig("2", {{start_aps(), no_way_out, run_for(60'000), no_way_out, guest_exit(1)},
                {run_for(50'000), enable_apic_and_halt(false)}});
  const RunResult r = rig.machine->run();
  EXPECT_EQ(r.outcome, RunResult::Outcome::Hung) << r.diagnosis;
  EXPECT_NE(r.diagnosis.find("cpu 0 loops forever in a loop of 2 blocks (0x2000, 0x2010; 4 instructions a turn) that "
                             "has no way out at RIP 0x2000 with interrupts on: interrupts are on, but no interrupt "
                             "source is armed: its APIC timer is not running, nothing is pending in its APIC, and no "
                             "device or other vCPU is left to raise one; every other vCPU is halted or stuck too (cpu 1 "
                             "halted with interrupts off); nothing can end it before the time limit (0.01 s of virtual "
                             "time)"),
            std::string::npos)
      << r.diagnosis;
  EXPECT_EQ(rig.cpu(1).instructions(), 50'001u) << "the other vCPU ran to its halt first";
  EXPECT_EQ(rig.stats(0).skipped_ns, 10'000'000u - 60'008) << "skipped only once, to the end";
}

// A spinner parked in its loop is left out of the others' horizons while it
// is quiescent, but its own APIC timer can still start it storing: the
// other loop is then no hang (the run ends at the time limit, as before).
TEST(MachineSpinSkip, AQuiescentSpinnerWithATimerToComeKeepsTheOtherLoopFromAHang) {
  IdleLoop rechecked;
  rechecked.recheck = true;
  const Action idle_loop = idle_loop_exit(rechecked);
  const Action arm_timer_and_spin = [](FakeVcpu& v, uint64_t) {
    v.write_apic(REG_SVR, SVR_APIC_ENABLED | 0xff);
    v.write_apic(REG_TIMER_DIVIDE_CONFIG, 0xb);  // one tick a ns
    v.write_apic(REG_LVT_TIMER, 0x30);
    v.write_apic(REG_TIMER_INITIAL_COUNT, 9'000'000);  // before the 10 ms limit
    v.retire(10);
    return stop();
  };
  const Action recheck = [](FakeVcpu& v, uint64_t) {  // a parked spinner that found its loop unchanged
    v.retire(5);
    VcpuExit exit = exit_for(VcpuExit::Reason::PauseLoop);
    exit.spin_recheck = true;
    return exit;
  };
  std::vector<Action> cpu0 = {start_aps()}, cpu1 = {arm_timer_and_spin, spin(100)};
  for (int i = 0; i < 40; ++i) cpu0.push_back(idle_loop), cpu1.push_back(recheck);
  Rig rig("2", {cpu0, cpu1});
  const RunResult r = rig.machine->run();
  EXPECT_EQ(rig.cpu(1).injected, (std::vector<uint8_t>{0x30})) << "cpu 1's timer came: " << r.diagnosis;
  EXPECT_EQ(r.diagnosis.find("guest hang: cpu 0"), std::string::npos) << r.diagnosis;
}

}  // namespace
}  // namespace topolab
