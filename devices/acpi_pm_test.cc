// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/acpi_pm.h"

#include <gtest/gtest.h>

#include "base/state_archive.h"

namespace topolab {
namespace {

struct Pm {
  uint64_t now = 0;
  int power_offs = 0, suspends = 0;
  AcpiPm pm{[this] { return now; }, [this] { ++power_offs; }, [this] { ++suspends; }};
};

TEST(AcpiPm, TimerCountsAt3579545HzOnVirtualTimeAndWrapsAt24Bits) {
  Pm t;
  EXPECT_EQ(t.pm.read(AcpiPm::kPmTmr, 4), 0u);
  t.now = 1'000'000'000;  // one second
  EXPECT_EQ(t.pm.read(AcpiPm::kPmTmr, 4), 3'579'545u);
  t.now = 1'000;  // 1 us: 3.58 ticks, rounded down
  EXPECT_EQ(t.pm.read(AcpiPm::kPmTmr, 4), 3u);
  t.now = 5'000'000'000;  // 17,897,725 ticks: past 2^24
  EXPECT_EQ(t.pm.read(AcpiPm::kPmTmr, 4), 17'897'725u & 0xffffff);
  EXPECT_EQ(t.pm.read(AcpiPm::kPmTmr + 2, 1), (17'897'725u >> 16) & 0xff);
  t.pm.write(AcpiPm::kPmTmr, 4, 0);  // read only
  EXPECT_EQ(t.pm.read(AcpiPm::kPmTmr, 4), 17'897'725u & 0xffffff);
  EXPECT_EQ(AcpiPm::ticks_at(~0ull / 2), static_cast<uint64_t>(static_cast<unsigned __int128>(~0ull / 2) * 3579545 / 1'000'000'000));
}

TEST(AcpiPm, TmrStsSetsWhenBit23ChangesAndClearsOnWriteOne) {
  Pm t;
  EXPECT_EQ(t.pm.read(AcpiPm::kPm1Sts, 2) & AcpiPm::STS_TMR, 0u);
  t.now = 2'400'000'000;  // 8.59 M ticks > 2^23
  EXPECT_TRUE(t.pm.read(AcpiPm::kPm1Sts, 2) & AcpiPm::STS_TMR);
  t.pm.write(AcpiPm::kPm1Sts, 2, 0);  // writing 0 changes nothing
  EXPECT_TRUE(t.pm.read(AcpiPm::kPm1Sts, 2) & AcpiPm::STS_TMR);
  t.pm.write(AcpiPm::kPm1Sts, 2, AcpiPm::STS_TMR);
  EXPECT_EQ(t.pm.read(AcpiPm::kPm1Sts, 2) & AcpiPm::STS_TMR, 0u);
}

TEST(AcpiPm, EnableReadsBackAndControlKeepsSciEn) {
  Pm t;
  t.pm.write(AcpiPm::kPm1En, 2, 0xffff);
  EXPECT_EQ(t.pm.read(AcpiPm::kPm1En, 2), AcpiPm::EN_MASK);
  EXPECT_EQ(t.pm.read(AcpiPm::kPm1Sts, 4) >> 16, AcpiPm::EN_MASK);
  EXPECT_EQ(t.pm.read(AcpiPm::kPm1Cnt, 2), AcpiPm::CNT_SCI_EN);
  t.pm.write(AcpiPm::kPm1Cnt, 2, 0);
  EXPECT_EQ(t.pm.read(AcpiPm::kPm1Cnt, 2), AcpiPm::CNT_SCI_EN);
  t.pm.write(AcpiPm::kPm1Cnt, 2, 5u << AcpiPm::CNT_SLP_TYP_SHIFT);  // type only: no sleep
  EXPECT_EQ(t.pm.read(AcpiPm::kPm1Cnt, 2), AcpiPm::CNT_SCI_EN | (5u << AcpiPm::CNT_SLP_TYP_SHIFT));
  EXPECT_EQ(t.power_offs, 0);
}

TEST(AcpiPm, SlpEnWithTypeZeroPowersOff) {
  Pm t;
  t.pm.write(AcpiPm::kPm1Cnt, 2, AcpiPm::CNT_SLP_EN | (2u << AcpiPm::CNT_SLP_TYP_SHIFT));  // ignored
  EXPECT_EQ(t.power_offs, 0);
  t.pm.write(AcpiPm::kPm1Cnt, 2, AcpiPm::CNT_SLP_EN);  // \_S5: SLP_TYP 0
  EXPECT_EQ(t.power_offs, 1);
  t.pm.write(AcpiPm::kPm1Cnt + 1, 1, AcpiPm::CNT_SLP_EN >> 8);  // the high byte alone
  EXPECT_EQ(t.power_offs, 2);
  EXPECT_EQ(t.pm.read(AcpiPm::kPm1Cnt, 2) & AcpiPm::CNT_SLP_EN, 0u);
}

// kvm-unit-tests' s3: RTC_EN in PM1_EN, then SLP_TYP 1 | SLP_EN (0x2400):
// S3 as QEMU's PIIX4; waking sets WAK_STS and RTC_STS, each cleared by a 1.
TEST(AcpiPm, SlpTypOneSuspendsAndWakingSetsWakAndRtcStatus) {
  Pm t;
  EXPECT_FALSE(t.pm.rtc_wakes());
  t.pm.write(AcpiPm::kPm1En, 2, AcpiPm::EN_RTC);
  EXPECT_TRUE(t.pm.rtc_wakes());
  t.pm.write(AcpiPm::kPm1Cnt, 2, 0x2400);
  EXPECT_EQ(t.suspends, 1);
  EXPECT_EQ(t.power_offs, 0);
  EXPECT_EQ(t.pm.read(AcpiPm::kPm1Sts, 2) & (AcpiPm::STS_WAK | AcpiPm::STS_RTC), 0u);
  t.pm.wake_from_s3(true);
  EXPECT_EQ(t.pm.read(AcpiPm::kPm1Sts, 2) & (AcpiPm::STS_WAK | AcpiPm::STS_RTC), AcpiPm::STS_WAK | AcpiPm::STS_RTC);
  t.pm.write(AcpiPm::kPm1Sts, 2, AcpiPm::STS_RTC);
  EXPECT_EQ(t.pm.read(AcpiPm::kPm1Sts, 2) & (AcpiPm::STS_WAK | AcpiPm::STS_RTC), AcpiPm::STS_WAK);
  t.pm.write(AcpiPm::kPm1Sts + 1, 1, AcpiPm::STS_WAK >> 8);
  EXPECT_EQ(t.pm.read(AcpiPm::kPm1Sts, 2) & AcpiPm::STS_WAK, 0u);
}

TEST(AcpiPmSnapshot, RoundTripsEnablesControlAndTheClearedTimerStatus) {
  Pm t;
  t.pm.write(AcpiPm::kPm1En, 2, AcpiPm::EN_MASK);
  t.pm.write(AcpiPm::kPm1Cnt, 2, 5u << AcpiPm::CNT_SLP_TYP_SHIFT);
  t.now = 2'400'000'000;  // TMR_STS set...
  t.pm.write(AcpiPm::kPm1Sts, 2, AcpiPm::STS_TMR);  // ...and cleared
  const std::string bytes = save_state_bytes(t.pm);
  Pm restored;
  restored.now = t.now;
  load_state_bytes(restored.pm, bytes);
  EXPECT_EQ(save_state_bytes(restored.pm), bytes);

  const auto run = [](Pm& p) {
    std::vector<uint32_t> seen;
    for (uint64_t ns : {2'400'000'000ull, 3'000'000'000ull, 4'800'000'000ull}) {
      p.now = ns;
      for (uint16_t offset : {AcpiPm::kPm1Sts, AcpiPm::kPm1En, AcpiPm::kPm1Cnt, AcpiPm::kPmTmr})
        seen.push_back(p.pm.read(offset, offset == AcpiPm::kPmTmr ? 4 : 2));
    }
    p.pm.write(AcpiPm::kPm1Cnt, 2, AcpiPm::CNT_SLP_EN);
    seen.push_back(static_cast<uint32_t>(p.power_offs));
    return seen;
  };
  const std::vector<uint32_t> seen = run(t);
  EXPECT_EQ(seen[0] & AcpiPm::STS_TMR, 0u);  // still cleared
  EXPECT_EQ(run(restored), seen);
}

}  // namespace
}  // namespace topolab
