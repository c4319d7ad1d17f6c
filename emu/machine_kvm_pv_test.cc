// SPDX-License-Identifier: GPL-2.0-or-later
// KVM's paravirtual interface on scripted fake vCPUs (devices/kvm_pv_msrs.h,
// devices/kvm_hypercall.h): kvmclock's page on virtual time and the wall
// clock, steal time, KVM_HC_KICK_CPU waking a vCPU blocked in HLT or
// cancelling its next HLT, MSR_KVM_POLL_CONTROL switching the host's
// halt-polling off, and kvm-pv-enforce-cpuid.
#include <gtest/gtest.h>

#include "devices/cmos_rtc.h"
#include "devices/kvm_hypercall.h"
#include "devices/kvm_pv_msrs.h"
#include "emu/machine_test_support.h"

namespace topolab::machine_test {
namespace {

std::function<void(MachineConfig&)> with_cpu(const std::string& cpu) {
  return [=](MachineConfig& config) { config.cpu = parse_cpu(cpu); };
}

Action write_msr(uint32_t msr, uint64_t value, bool* ok = nullptr) {
  return [=](FakeVcpu& v, uint64_t) {
    const bool done = v.host().write_msr(msr, value);
    if (ok) *ok = done;
    v.retire(1);
    return stop();
  };
}
Action hypercall(uint64_t nr, uint64_t a0, uint64_t a1, int64_t* ret = nullptr) {
  return [=](FakeVcpu& v, uint64_t) {
    const std::optional<int64_t> r = v.host().hypercall({.nr = nr, .a0 = a0, .a1 = a1, .long_mode = true});
    if (ret) *ret = r.value_or(-999);
    v.retire(1);
    return stop();
  };
}
Action halt_with_interrupts_off() {
  return [](FakeVcpu& v, uint64_t) {
    v.interrupts_enabled = false;
    v.retire(1);
    return exit_for(VcpuExit::Reason::Halt);
  };
}
template <class T>
Action read_into(uint64_t address, T* out) {
  return [=](FakeVcpu& v, uint64_t) {
    *out = v.ram->read<T>(address);
    v.retire(1);
    return stop();
  };
}
Action read_tsc_into(uint64_t* out) {
  return [=](FakeVcpu& v, uint64_t) {
    *out = v.host().read_tsc();
    v.retire(1);
    return stop();
  };
}

constexpr uint64_t kClockPage = 0x5000, kWallClock = 0x6000, kStealArea = 0x7040;

// The guest's time from kvmclock's page is the virtual time its TSC stands
// for, and the wall clock is the RTC's start: kvmclock + wall clock = the
// RTC's time, as on KVM.
TEST(MachineKvmPv, KvmclockIsVirtualTimeAndTheWallClockTheRtcsStart) {
  uint64_t tsc_then = 0;
  uint32_t version = 0;
  Rig rig("1",
          {{run_for(5000), write_msr(kMsrKvmSystemTimeNew, kClockPage | KVM_MSR_ENABLED),
            write_msr(kMsrKvmWallClockNew, kWallClock), run_for(123456), read_tsc_into(&tsc_then),
            read_into(kClockPage, &version), guest_exit(1)}},
          "", true, with_cpu("Skylake-Server,kvm=on"));
  const RunResult r = rig.machine->run();
  ASSERT_EQ(r.outcome, RunResult::Outcome::GuestExit) << r.diagnosis;
  const GuestRam& ram = rig.machine->ram();
  EXPECT_EQ(version, 2u) << "even: written once";
  const PvclockScale scale{ram.read<uint32_t>(kClockPage + 24), static_cast<int8_t>(ram.read<uint8_t>(kClockPage + 28))};
  EXPECT_EQ(scale, pvclock_scale(1'000'000'000)) << "the rig's TSC runs at 1 GHz";
  EXPECT_EQ(ram.read<uint8_t>(kClockPage + 29), PVCLOCK_TSC_STABLE_BIT) << "kvmclock-stable-bit is on by default";
  const uint64_t ns = pvclock_ns(ram.read<uint64_t>(kClockPage + 16), ram.read<uint64_t>(kClockPage + 8), scale, tsc_then);
  EXPECT_EQ(ns, tsc_then) << "at 1 GHz a TSC tick is a nanosecond of virtual time";
  EXPECT_GT(ns, 128'000u);
  EXPECT_EQ(ram.read<uint32_t>(kWallClock), 2u);
  EXPECT_EQ(ram.read<uint32_t>(kWallClock + 4), static_cast<uint32_t>(CmosRtc::kDefaultStart));
  EXPECT_EQ(ram.read<uint32_t>(kWallClock + 8), 0u);
  EXPECT_EQ(rig.stats(0).exits[static_cast<size_t>(ExitKind::Msr)], 2u);
  EXPECT_EQ(rig.stats(0).kvm_msr_writes, (std::map<uint32_t, uint64_t>{{kMsrKvmWallClockNew, 1}, {kMsrKvmSystemTimeNew, 1}}));
}

// A write to the TSC moves kvmclock's page with it: the guest's time does
// not jump.
TEST(MachineKvmPv, ATscWriteRewritesThePage) {
  uint64_t tsc_then = 0;
  Rig rig("1",
          {{write_msr(kMsrKvmSystemTimeNew, kClockPage | KVM_MSR_ENABLED), run_for(1000),
            write_msr(x86::kMsrTsc, 10'000'000), run_for(1000), read_tsc_into(&tsc_then), guest_exit(1)}},
          "", true, with_cpu("Skylake-Server,kvm=on"));
  ASSERT_EQ(rig.machine->run().outcome, RunResult::Outcome::GuestExit);
  const GuestRam& ram = rig.machine->ram();
  EXPECT_EQ(ram.read<uint32_t>(kClockPage), 4u) << "written twice";
  const uint64_t ns = pvclock_ns(ram.read<uint64_t>(kClockPage + 16), ram.read<uint64_t>(kClockPage + 8),
                                 pvclock_scale(1'000'000'000), tsc_then);
  EXPECT_GT(ns, 2000u);
  EXPECT_LT(ns, 10'000u) << "virtual time, not the TSC's new value";
}

// Each vCPU has a host CPU of its own: no steal, never preempted.
TEST(MachineKvmPv, StealTimeStaysZeroAndNotPreempted) {
  Rig rig("1",
          {{[](FakeVcpu& v, uint64_t) {
              v.ram->write<uint64_t>(kStealArea, 77);  // KVM adds to what is there
              v.ram->write<uint8_t>(kStealArea + kStealTimePreemptedOffset, 1);
              return stop();
            },
            write_msr(kMsrKvmStealTime, kStealArea | KVM_MSR_ENABLED), guest_exit(1)}},
          "", true, with_cpu("Skylake-Server,kvm=on"));
  ASSERT_EQ(rig.machine->run().outcome, RunResult::Outcome::GuestExit);
  const GuestRam& ram = rig.machine->ram();
  EXPECT_EQ(ram.read<uint64_t>(kStealArea), 77u);
  EXPECT_EQ(ram.read<uint32_t>(kStealArea + kStealTimeVersionOffset), 2u);
  EXPECT_EQ(ram.read<uint8_t>(kStealArea + kStealTimePreemptedOffset), 0u);
}

// PV spinlocks' unlock: KVM_HC_KICK_CPU wakes a waiter blocked in HLT with
// interrupts off, which nothing else could wake. It is no IPI.
TEST(MachineKvmPv, KickCpuWakesAVcpuBlockedInHlt) {
  int64_t ret = -1;
  Rig rig("2",
          {{start_aps(), run_for(20000), hypercall(KVM_HC_KICK_CPU, 0, 1, &ret), run_for(20000)},
           {halt_with_interrupts_off(), guest_exit(1)}},
          "", true, with_cpu("Skylake-Server,kvm=on,kvm-pv-unhalt=on"));
  const RunResult r = rig.machine->run();
  ASSERT_EQ(r.outcome, RunResult::Outcome::GuestExit) << r.diagnosis;
  EXPECT_EQ(ret, 0);
  EXPECT_EQ(rig.wakes(1, WakeCause::PvKick), 1u);
  EXPECT_EQ(rig.stats(0).hypercalls.at(KVM_HC_KICK_CPU), 1u);
  EXPECT_EQ(rig.stats(0).exits[static_cast<size_t>(ExitKind::Hypercall)], 1u);
  EXPECT_EQ(rig.stats(0).total_sent(), 2u) << "INIT and SIPI only";
  EXPECT_EQ(rig.stats(1).total_received(), 2u);
  EXPECT_GE(rig.cpu(1).host().read_tsc(), 20000u) << "it slept until the kick";
}

// A kick that finds the vCPU running is kept: its next HLT exits and
// returns at once (KVM's pv_unhalted).
TEST(MachineKvmPv, AKickBeforeTheHltCancelsIt) {
  Rig rig("2",
          {{start_aps(), hypercall(KVM_HC_KICK_CPU, 0, 1), run_for(100)},
           {run_for(50000), halt_with_interrupts_off(), guest_exit(1)}},
          "", true, with_cpu("Skylake-Server,kvm=on,kvm-pv-unhalt=on"));
  const RunResult r = rig.machine->run();
  ASSERT_EQ(r.outcome, RunResult::Outcome::GuestExit) << r.diagnosis;
  EXPECT_EQ(rig.stats(1).hlt_entries, 1u);
  EXPECT_EQ(rig.stats(1).exits[static_cast<size_t>(ExitKind::Hlt)], 1u);
  EXPECT_EQ(rig.wakes(1, WakeCause::PvKick), 0u) << "it never blocked";
  EXPECT_EQ(rig.stats(1).halted_ns, 0u);
}

// The guest's haltpoll driver writes 0 to MSR_KVM_POLL_CONTROL: the host
// blocks the vCPU at once instead of polling (kvm_arch_no_poll).
TEST(MachineKvmPv, PollControlSwitchesTheHostsPollingOff) {
  auto run = [](bool guest_polls) {
    Rig rig("2",
            {{start_aps(), run_for(20000), send_fixed(1, 0x40), run_for(20000)},
             {write_msr(kMsrKvmPollControl, guest_polls ? 0 : 1), enable_apic_and_halt(), guest_exit(1)}},
            "halt_poll_ns=200000", true, with_cpu("Skylake-Server,kvm=on,kvm-poll-control=on"));
    EXPECT_EQ(rig.machine->run().outcome, RunResult::Outcome::GuestExit);
    return rig.stats(1);
  };
  const VcpuStats host_polls = run(false);
  EXPECT_EQ(host_polls.halt_poll_hits, 1u);
  EXPECT_GT(host_polls.host_poll_ns, 0u);
  // KVM's names: the poll caught the wakeup, so the host never blocked.
  EXPECT_EQ(host_polls.halt_poll_success_ns, host_polls.host_poll_ns);
  EXPECT_EQ(host_polls.halt_wakeups, 0u);
  EXPECT_EQ(host_polls.halt_wait_ns, 0u);
  const VcpuStats guest_polls = run(true);
  EXPECT_EQ(guest_polls.halt_poll_hits + guest_polls.halt_poll_misses, 0u);
  EXPECT_EQ(guest_polls.host_poll_ns, 0u);
  EXPECT_EQ(guest_polls.halt_wakeups, 1u) << "blocked at once, woken by the IPI";
  EXPECT_GT(guest_polls.halt_wait_ns, 0u);
  EXPECT_EQ(guest_polls.halt_poll_success_ns + guest_polls.halt_poll_fail_ns, 0u);
}

// kvm-pv-enforce-cpuid=on: an MSR or hypercall whose feature CPUID does
// not announce #GPs or returns -KVM_ENOSYS; without kvm=on there are no
// KVM MSRs at all.
TEST(MachineKvmPv, EnforcedCpuidAndNoKvmHost) {
  bool poll_ok = true, clock_ok = false, plain_ok = true;
  int64_t kick = 0;
  Rig rig("1",
          {{write_msr(kMsrKvmPollControl, 0, &poll_ok), write_msr(kMsrKvmSystemTimeNew, kClockPage, &clock_ok),
            hypercall(KVM_HC_KICK_CPU, 0, 0, &kick), guest_exit(1)}},
          "", true, with_cpu("Skylake-Server,kvm=on,kvm-pv-enforce-cpuid=on"));
  ASSERT_EQ(rig.machine->run().outcome, RunResult::Outcome::GuestExit);
  EXPECT_FALSE(poll_ok);
  EXPECT_TRUE(clock_ok);
  EXPECT_EQ(rig.stats(0).kvm_msr_writes, (std::map<uint32_t, uint64_t>{{kMsrKvmSystemTimeNew, 1}}))
      << "the refused write is no take-up";
  EXPECT_EQ(kick, -KVM_ENOSYS);
  Rig plain("1", {{write_msr(kMsrKvmSystemTimeNew, kClockPage | 1, &plain_ok), guest_exit(1)}});
  ASSERT_EQ(plain.machine->run().outcome, RunResult::Outcome::GuestExit);
  EXPECT_FALSE(plain_ok);
  EXPECT_EQ(plain.machine->ram().read<uint32_t>(kClockPage), 0u);
}

// RDTSCP runs in the guest under KVM (VMX's "enable RDTSCP"): reading its
// IA32_TSC_AUX is no exit, where an RDMSR of the same MSR is one. Linux's
// kvm-clock reads the TSC with RDTSCP on every sched_clock().
TEST(MachineRdtscp, TscAuxWithoutAnExit) {
  std::optional<uint64_t> aux;
  Rig rig("1",
          {{write_msr(x86::kMsrTscAux, 0x1234),
            [&](FakeVcpu& v, uint64_t) {
              aux = v.host().read_tsc_aux();
              v.retire(1);
              return stop();
            },
            guest_exit(1)}});
  ASSERT_EQ(rig.machine->run().outcome, RunResult::Outcome::GuestExit);
  EXPECT_EQ(aux, 0x1234u);
  EXPECT_EQ(rig.stats(0).exits[static_cast<size_t>(ExitKind::Msr)], 1u) << "the WRMSR only";
}

}  // namespace
}  // namespace topolab::machine_test
