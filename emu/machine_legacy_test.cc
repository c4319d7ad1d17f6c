// SPDX-License-Identifier: GPL-2.0-or-later
// The legacy platform on scripted fake vCPUs. The 8259's INTR through
// LINT0 (ExtINT): a halted BSP woken by the PIT's tick, the INTA's vector,
// a request withdrawn before the INTA, the legacy path of a
// hardware-disabled APIC, and the hang found at once when no APIC takes
// INTR. S3: asleep until the RTC alarm, then vCPU 0 at the FACS's waking
// vector in real mode.
#include <cstring>

#include <gtest/gtest.h>

#include "devices/acpi_pm.h"
#include "devices/cmos_rtc.h"
#include "devices/pic8259.h"
#include "devices/pit8254.h"
#include "emu/machine_test_support.h"
#include "firmware/acpi.h"
#include "firmware/legacy_bios.h"

namespace topolab::machine_test {
namespace {

void with_legacy_bios(MachineConfig& config) {
  config.legacy_bios = true;
  config.time_limit_seconds = 0.2;
  config.devices.add(PlatformDevice::PcTestdev);
}

Action halt_with_interrupts(bool on = true) {
  return [=](FakeVcpu& v, uint64_t) {
    v.interrupts_enabled = on;
    v.retire(1);
    return exit_for(VcpuExit::Reason::Halt);
  };
}
Action out(uint16_t port, uint8_t value, std::optional<bool> interrupts = std::nullopt) {
  return [=](FakeVcpu& v, uint64_t) {
    if (interrupts) v.interrupts_enabled = *interrupts;
    v.host().port_out(port, 1, value);
    v.retire(1);
    return stop();
  };
}
constexpr uint16_t kMasterCommand = Pic8259::kMasterBase, kMasterData = Pic8259::kMasterBase + 1;
constexpr uint8_t kEoi = 0x20;

// kvm-unit-tests' realmode: `sti; hlt` with SeaBIOS's state, woken by the
// first tick of the PIT it left in mode 2 at 18.2 Hz, vector 8.
TEST(MachinePic, TheBiosTimerTickWakesAHaltedBspThroughExtInt) {
  Rig rig("1", {{halt_with_interrupts(), out(kMasterCommand, kEoi), guest_exit(1)}}, "", true, with_legacy_bios);
  const RunResult r = rig.machine->run();
  EXPECT_EQ(r.outcome, RunResult::Outcome::GuestExit) << r.diagnosis;
  ASSERT_EQ(rig.cpu(0).injected, std::vector<uint8_t>{0x08});
  // Mode 2 with count 0 (65,536): OUT falls the tick before the reload and
  // rises at it, one period after the BIOS loaded the count at time 0.
  const uint64_t tick = Pit8254::ns_at(65536);
  EXPECT_GE(rig.cpu(0).injected_at[0], tick);
  EXPECT_LE(rig.cpu(0).injected_at[0], Pit8254::ns_at(65537));
  EXPECT_EQ(rig.wakes(0, WakeCause::Interrupt), 1u);
  EXPECT_EQ(rig.machine->board().pic().isr(false), 0) << "the handler's EOI";
  EXPECT_EQ(rig.stats(0).interrupts_taken.at(0x08), 1u);
}

// The IVT and handlers SeaBIOS leaves (firmware/legacy_bios.h).
TEST(MachinePic, TheBiosStateIsInRamAndTheDevices) {
  Rig rig("1", {{guest_exit(1)}}, "", true, with_legacy_bios);
  GuestRam& ram = rig.machine->ram();
  const auto vector_at = [&](unsigned v) {
    const auto b = ram.bytes(v * 4, 4);
    return uint32_t{b[0]} | b[1] << 8 | b[2] << 16 | uint32_t{b[3]} << 24;
  };
  EXPECT_EQ(vector_at(8), 0xf000fea5u);
  EXPECT_EQ(vector_at(0x1c), 0xf000ff53u);
  EXPECT_EQ(ram.bytes(0xfff53, 1)[0], 0xcf) << "IRET";
  EXPECT_EQ(rig.machine->board().pic().imr(false), 0xb8);
  EXPECT_EQ(rig.machine->board().pic().imr(true), 0x8e);
  EXPECT_EQ(rig.machine->board().pic().vector_base(true), 0x70);
  EXPECT_EQ(rig.machine->board().pic().irr(false), 0) << "the PIT's first edge is no request";
  EXPECT_TRUE(rig.machine->cpu(0).apic().accepts_pic_intr());
  EXPECT_TRUE(rig.machine->cpu(0).apic().software_enabled());
}

// A request that goes away before the INTA (masked again while the vCPU
// had interrupts off) injects nothing; unmasked again, it is taken.
TEST(MachinePic, ARequestMaskedBeforeTheIntaIsNotTaken) {
  constexpr uint8_t kOpenIrq5 = 0xb8 & ~(1u << 5);
  Rig rig("1",
          {{out(kMasterData, kOpenIrq5, false), out(PcTestdev::kIrqLineBase + 5, 1), out(kMasterData, 0xff, true),
            run_for(10), out(kMasterData, kOpenIrq5), run_for(1), guest_exit(1)}},
          "", true, [](MachineConfig& config) {
            with_legacy_bios(config);
            config.devices.remove(PlatformDevice::Pit);  // no tick in the way
          });
  const RunResult r = rig.machine->run();
  EXPECT_EQ(r.outcome, RunResult::Outcome::GuestExit) << r.diagnosis;
  EXPECT_EQ(rig.cpu(0).injected, std::vector<uint8_t>{0x0d});
}

// With IA32_APIC_BASE.EN = 0 INTR goes to the CPU without the APIC: the
// 8259 alone, as a PC before the local APIC (no BIOS state needed).
TEST(MachinePic, AHardwareDisabledApicPassesIntrStraightThrough) {
  const Action disable_apic = [](FakeVcpu& v, uint64_t) {
    EXPECT_TRUE(v.host().write_msr(LocalApic::MSR_IA32_APIC_BASE, LocalApic::kDefaultBase | APIC_BASE_BSP));
    v.interrupts_enabled = false;
    v.retire(1);
    return stop();
  };
  std::vector<Action> script = {disable_apic};
  for (uint8_t b : {0x11, 0x20, 0x04, 0x01}) script.push_back(out(b == 0x11 ? kMasterCommand : kMasterData, b));
  script.push_back(out(kMasterData, 0xdf));  // IRQ 5 only
  script.push_back(out(PcTestdev::kIrqLineBase + 5, 1));
  script.push_back(halt_with_interrupts());
  script.push_back(guest_exit(1));
  Rig rig("1", {script}, "", true, [](MachineConfig& config) { config.devices.add(PlatformDevice::PcTestdev); });
  const RunResult r = rig.machine->run();
  EXPECT_EQ(r.outcome, RunResult::Outcome::GuestExit) << r.diagnosis;
  EXPECT_EQ(rig.cpu(0).injected, std::vector<uint8_t>{0x25});
}

// LINT0 masked: the PIT ticks into the 8259, but no APIC takes INTR, so a
// halted BSP can never wake: a hang found at once, not at the time limit.
TEST(MachinePic, NoApicTakingIntrIsAHangFoundAtOnce) {
  const Action mask_lint0 = [](FakeVcpu& v, uint64_t) {
    v.write_apic(REG_LVT_LINT0, LVT_MASKED | 0x8700);
    return stop();
  };
  Rig rig("1", {{mask_lint0, halt_with_interrupts()}}, "", true, with_legacy_bios);
  const RunResult r = rig.machine->run();
  EXPECT_EQ(r.outcome, RunResult::Outcome::Hung) << r.diagnosis;
  EXPECT_NE(r.diagnosis.find("nothing can wake it"), std::string::npos) << r.diagnosis;
  EXPECT_LT(rig.machine->virtual_time(), Pit8254::ns_at(65536));
}

// The FACS in the BIOS area, found by its signature as a guest's ACPI code does.
uint64_t find_facs(GuestRam& ram) {
  for (uint64_t a = memory_map::kBiosAreaBase; a < memory_map::kBiosAreaBase + memory_map::kBiosAreaSize; a += 64)
    if (std::memcmp(ram.bytes(a, 4).data(), "FACS", 4) == 0) return a;
  return 0;
}

// kvm-unit-tests' s3: the waking vector, RTC_EN, an alarm every second with
// AIE, then SLP_TYP 1 | SLP_EN. The machine sleeps to the next update and
// vCPU 0 resumes in real mode at 0100:0000 (vector 0x1000).
Action enter_s3(uint32_t waking_vector, bool rtc_wakes = true) {
  return [=](FakeVcpu& v, uint64_t) {
    const uint64_t facs = find_facs(*v.ram);
    EXPECT_NE(facs, 0u);
    std::memcpy(v.ram->bytes(facs + kFacsWakingVector, 4).data(), &waking_vector, 4);
    if (rtc_wakes) v.host().port_out(AcpiPm::kBase + AcpiPm::kPm1En, 2, AcpiPm::EN_RTC);
    for (uint8_t alarm : {CmosRtc::REG_SECONDS_ALARM, CmosRtc::REG_MINUTES_ALARM, CmosRtc::REG_HOURS_ALARM}) {
      v.host().port_out(CmosRtc::kBase, 1, alarm);
      v.host().port_out(CmosRtc::kBase + 1, 1, CmosRtc::kAlarmDontCare);
    }
    v.host().port_out(CmosRtc::kBase, 1, CmosRtc::REG_B);
    v.host().port_out(CmosRtc::kBase + 1, 1, CmosRtc::kResetB | CmosRtc::B_AIE);
    v.retire(100);
    v.host().port_out(AcpiPm::kBase + AcpiPm::kPm1Cnt, 2, 0x2400);
    return stop();
  };
}

TEST(MachineS3, TheRtcAlarmWakesTheMachineAtTheFacsWakingVector) {
  uint32_t status = 0;
  uint64_t resumed_at = 0;
  const Action after_resume = [&](FakeVcpu& v, uint64_t) {
    status = v.host().port_in(AcpiPm::kBase + AcpiPm::kPm1Sts, 2);
    resumed_at = v.host().read_tsc();
    return stop();
  };
  Rig rig("2", {{enter_s3(0x1000), after_resume, guest_exit(1)}}, "", true,
          [](MachineConfig& config) { config.time_limit_seconds = 2; });
  const RunResult r = rig.machine->run();
  EXPECT_EQ(r.outcome, RunResult::Outcome::GuestExit) << r.diagnosis;
  ASSERT_TRUE(rig.cpu(0).real_mode_start);
  EXPECT_EQ(*rig.cpu(0).real_mode_start, (std::pair<uint16_t, uint16_t>(0x100, 0)));
  EXPECT_EQ(resumed_at, CmosRtc::kNsPerSecond) << "the first update after it slept";
  EXPECT_EQ(status & (AcpiPm::STS_WAK | AcpiPm::STS_RTC), AcpiPm::STS_WAK | AcpiPm::STS_RTC);
  EXPECT_EQ(rig.machine->cpu(1).state(), MachineCpu::State::WaitForSipi);
}

TEST(MachineS3, AVectorOffA16ByteBoundaryIsSegmentAndOffset) {
  Rig rig("1", {{enter_s3(0x9abcd), guest_exit(1)}}, "", true,
          [](MachineConfig& config) { config.time_limit_seconds = 2; });
  EXPECT_EQ(rig.machine->run().outcome, RunResult::Outcome::GuestExit);
  ASSERT_TRUE(rig.cpu(0).real_mode_start);
  EXPECT_EQ(*rig.cpu(0).real_mode_start, (std::pair<uint16_t, uint16_t>(0x9abc, 0xd)));
}

TEST(MachineS3, SleepWithNoWakeSourceEndsTheRunAtOnce) {
  Rig rig("1", {{enter_s3(0x1000, false), guest_exit(1)}}, "", true,
          [](MachineConfig& config) { config.time_limit_seconds = 2; });
  const RunResult r = rig.machine->run();
  EXPECT_EQ(r.outcome, RunResult::Outcome::Hung);
  EXPECT_NE(r.diagnosis.find("no wake source"), std::string::npos) << r.diagnosis;
}

TEST(MachineS3, AWakeAfterTheTimeLimitEndsTheRunThere) {
  Rig rig("1", {{enter_s3(0x1000), guest_exit(1)}});  // a 10 ms limit
  const RunResult r = rig.machine->run();
  EXPECT_EQ(r.outcome, RunResult::Outcome::BudgetExhausted);
  EXPECT_NE(r.diagnosis.find("sleeps in S3"), std::string::npos) << r.diagnosis;
}

TEST(MachineS3, NoWakingVectorIsOneLine) {
  Rig rig("1", {{enter_s3(0), guest_exit(1)}}, "", true, [](MachineConfig& config) { config.time_limit_seconds = 2; });
  const RunResult r = rig.machine->run();
  EXPECT_EQ(r.outcome, RunResult::Outcome::Crashed);
  EXPECT_NE(r.diagnosis.find("firmware_waking_vector at 0x0"), std::string::npos) << r.diagnosis;
}

}  // namespace
}  // namespace topolab::machine_test
