// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/cmos_rtc.h"

#include <algorithm>
#include <limits>

namespace topolab {

namespace {

constexpr uint16_t kIndexPort = 0, kDataPort = 1;
constexpr uint64_t kKiB = 1024, kMiB = 1024 * kKiB;
constexpr uint64_t kDividerRestartPhaseNs = CmosRtc::kNsPerSecond / 2;

// The CMOS memory QEMU's pc_cmos_init (hw/i386/pc.c) fills for firmware:
// SeaBIOS reads the memory sizes and boot order, Linux none of them, but a
// guest that dumps the CMOS (or /dev/nvram) sees what it would under QEMU.
constexpr uint8_t kFloppyTypes = 0x10;      // none (QEMU without -fda)
constexpr uint8_t kHardDiskTypes = 0x12;    // none (no IDE disks)
constexpr uint8_t kEquipment = 0x14;        // REG_EQUIPMENT_BYTE
constexpr uint8_t kEquipmentFpu = 1u << 1, kEquipmentPs2Mouse = 1u << 2;
constexpr uint8_t kBaseMemory = 0x15;       // KiB below 1 MiB, at most 640
constexpr uint8_t kExtendedMemory = 0x17;   // KiB above 1 MiB, at most 65535
constexpr uint8_t kExtendedMemory2 = 0x30;  // the same, again
constexpr uint8_t kMemoryAbove16M = 0x34;   // 64 KiB units between 16 MiB and 4 GiB
constexpr uint8_t kMemoryAbove4G = 0x5b;    // 64 KiB units above 4 GiB, 24 bits
constexpr uint8_t kBootDevices12 = 0x3d;    // first and second boot device
constexpr uint8_t kBootDevice3 = 0x38;      // third boot device, bit 0 skips the floppy signature check
constexpr uint8_t kAtaTranslation = 0x39;   // none
// QEMU's default pc boot order "cad": hard disk (2), floppy (1), CD-ROM (3).
constexpr uint8_t kBootOrderCad12 = (0x1 << 4) | 0x2, kBootOrderCad3 = 0x3 << 4;

bool is_time_register(uint8_t index) {
  switch (index) {
    case CmosRtc::REG_SECONDS: case CmosRtc::REG_MINUTES: case CmosRtc::REG_HOURS:
    case CmosRtc::REG_DAY_OF_WEEK: case CmosRtc::REG_DAY_OF_MONTH: case CmosRtc::REG_MONTH:
    case CmosRtc::REG_YEAR: case CmosRtc::REG_CENTURY:
      return true;
    default:
      return false;
  }
}

// Days since 1970-01-01 of a proleptic Gregorian date and back (H. Hinnant,
// "chrono-Compatible Low-Level Date Algorithms"). days_from_civil is linear
// in the day, so an out-of-range day runs on into the next month, as
// QEMU's mktimegm.
int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

void put_word(std::array<uint8_t, CmosRtc::kCmosBytes>& cmos, uint8_t at, uint64_t value, unsigned bytes) {
  for (unsigned i = 0; i < bytes; ++i) cmos[at + i] = static_cast<uint8_t>(value >> (8 * i));
}

}  // namespace

CmosRtc::CmosRtc(std::function<uint64_t()> now_ns, const Config& config)
    : now_ns_(std::move(now_ns)), base_seconds_(config.start) {
  cmos_[REG_A] = kResetA;
  cmos_[REG_B] = kResetB;
  cmos_[REG_D] = D_VRT;
  put_time(config.start);

  const uint64_t low = config.below_4g_ram_bytes;
  cmos_[kFloppyTypes] = 0;
  cmos_[kHardDiskTypes] = 0;
  cmos_[kEquipment] = kEquipmentFpu | kEquipmentPs2Mouse;
  put_word(cmos_, kBaseMemory, std::min<uint64_t>(low / kKiB, 640), 2);
  const uint64_t extended = std::min<uint64_t>(low > kMiB ? (low - kMiB) / kKiB : 0, 0xffff);
  put_word(cmos_, kExtendedMemory, extended, 2);
  put_word(cmos_, kExtendedMemory2, extended, 2);
  put_word(cmos_, kMemoryAbove16M, std::min<uint64_t>(low > 16 * kMiB ? (low - 16 * kMiB) / (64 * kKiB) : 0, 0xffff),
           2);
  put_word(cmos_, kMemoryAbove4G, config.above_4g_ram_bytes / (64 * kKiB), 3);
  cmos_[kBootDevices12] = kBootOrderCad12;
  cmos_[kBootDevice3] = kBootOrderCad3;
  cmos_[kAtaTranslation] = 0;
}

CmosRtc::Civil CmosRtc::civil_from_seconds(int64_t seconds) {
  constexpr int64_t kDay = 86400;
  int64_t days = seconds / kDay, rest = seconds % kDay;
  if (rest < 0) {
    rest += kDay;
    --days;
  }
  // civil_from_days (Hinnant, as above).
  const int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const unsigned month = static_cast<unsigned>(mp < 10 ? mp + 3 : mp - 9);
  const int64_t weekday = ((days % 7) + 7 + 4) % 7;  // 1970-01-01 was a Thursday
  return Civil{.year = yoe + era * 400 + (month <= 2),
               .month = month,
               .day = static_cast<unsigned>(doy - (153 * mp + 2) / 5 + 1),
               .hour = static_cast<unsigned>(rest / 3600),
               .minute = static_cast<unsigned>(rest / 60 % 60),
               .second = static_cast<unsigned>(rest % 60),
               .weekday = static_cast<unsigned>(weekday)};
}

int64_t CmosRtc::seconds_from_civil(int64_t year, int64_t month, int64_t day, int64_t hour, int64_t minute,
                                    int64_t second) {
  return days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second;
}

bool CmosRtc::running() const {
  // QEMU's rtc_running: not in SET, divider at one of its time bases.
  return !(cmos_[REG_B] & B_SET) && (cmos_[REG_A] & A_DV_MASK) <= A_DV_32KHZ;
}

uint64_t CmosRtc::clock_ns_at(uint64_t ns) const {
  // vCPUs' clocks differ: one behind the vCPU that last set the clock sees
  // it as it was set.
  return phase_ns_ + (ns > base_ns_ ? ns - base_ns_ : 0);
}

int64_t CmosRtc::seconds_at(uint64_t ns) const {
  return running() ? base_seconds_ + static_cast<int64_t>(clock_ns_at(ns) / kNsPerSecond) : time_in_registers();
}

bool CmosRtc::update_in_progress_at(uint64_t ns) const {
  return running() && clock_ns_at(ns) % kNsPerSecond >= kNsPerSecond - kUipNs;
}

uint8_t CmosRtc::to_reg(unsigned value) const {
  return static_cast<uint8_t>(cmos_[REG_B] & B_DM_BINARY ? value : ((value / 10) << 4) | (value % 10));
}

unsigned CmosRtc::from_reg(uint8_t value) const {
  return cmos_[REG_B] & B_DM_BINARY ? value : (value >> 4) * 10u + (value & 0x0f);
}

void CmosRtc::put_time(int64_t seconds) {
  const Civil t = civil_from_seconds(seconds);
  const unsigned year = static_cast<unsigned>(std::clamp<int64_t>(t.year, 0, 9999));
  cmos_[REG_SECONDS] = to_reg(t.second);
  cmos_[REG_MINUTES] = to_reg(t.minute);
  cmos_[REG_HOURS] = hours_reg(t.hour);
  cmos_[REG_DAY_OF_WEEK] = to_reg(t.weekday + 1);  // 1 = Sunday
  cmos_[REG_DAY_OF_MONTH] = to_reg(t.day);
  cmos_[REG_MONTH] = to_reg(t.month);
  cmos_[REG_YEAR] = to_reg(year % 100);
  cmos_[REG_CENTURY] = to_reg(year / 100);
}

uint8_t CmosRtc::hours_reg(unsigned hour) const {
  if (cmos_[REG_B] & B_24H) return to_reg(hour);
  return static_cast<uint8_t>(to_reg(hour % 12 ? hour % 12 : 12) | (hour >= 12 ? HOURS_PM : 0));
}

bool CmosRtc::alarm_matches(int64_t seconds) const {
  const Civil t = civil_from_seconds(seconds);
  const auto matches = [this](uint8_t alarm_index, uint8_t value) {
    const uint8_t alarm = cmos_[alarm_index];
    return alarm >= kAlarmDontCare || alarm == value;
  };
  return matches(REG_SECONDS_ALARM, to_reg(t.second)) && matches(REG_MINUTES_ALARM, to_reg(t.minute)) &&
         matches(REG_HOURS_ALARM, hours_reg(t.hour));
}

std::optional<uint64_t> CmosRtc::next_alarm_ns(uint64_t ns) const {
  return alarm_between(ns, std::numeric_limits<uint64_t>::max());
}

std::optional<uint64_t> CmosRtc::alarm_between(uint64_t after_ns, uint64_t until_ns) const {
  if (!running() || until_ns <= after_ns) return std::nullopt;
  // Updates come at each whole second of the clock; the one at clock
  // second s brings the time base_seconds_ + s. A day holds every match.
  const uint64_t clock = clock_ns_at(after_ns);
  const uint64_t first = clock / kNsPerSecond + 1;
  constexpr uint64_t kSecondsPerDay = 86'400;
  uint64_t last = first + kSecondsPerDay;
  if (until_ns - after_ns < kSecondsPerDay * kNsPerSecond) last = (clock + (until_ns - after_ns)) / kNsPerSecond;
  for (uint64_t second = first; second <= last; ++second)
    if (alarm_matches(base_seconds_ + static_cast<int64_t>(second))) return after_ns + (second * kNsPerSecond - clock);
  return std::nullopt;
}

int64_t CmosRtc::time_in_registers() const {
  const uint8_t hours = cmos_[REG_HOURS];
  unsigned hour = from_reg(hours & ~HOURS_PM);
  if (!(cmos_[REG_B] & B_24H)) hour = hour % 12 + (hours & HOURS_PM ? 12 : 0);
  // The day of week is not read back: the chip only counts it on.
  return seconds_from_civil(int64_t{from_reg(cmos_[REG_CENTURY])} * 100 + from_reg(cmos_[REG_YEAR]),
                            from_reg(cmos_[REG_MONTH]), from_reg(cmos_[REG_DAY_OF_MONTH]), hour,
                            from_reg(cmos_[REG_MINUTES]), from_reg(cmos_[REG_SECONDS]));
}

void CmosRtc::resume(uint64_t ns, uint64_t phase_ns) {
  base_seconds_ = time_in_registers();
  base_ns_ = ns;
  phase_ns_ = phase_ns;
  divider_was_reset_ = false;
}

uint8_t CmosRtc::read_data(uint64_t ns) {
  const uint8_t index = index_ == REG_PS2_CENTURY ? REG_CENTURY : index_;
  if (is_time_register(index)) {
    if (running()) put_time(seconds_at(ns));
    return cmos_[index];
  }
  switch (index) {
    case REG_A: return static_cast<uint8_t>(cmos_[REG_A] | (update_in_progress_at(ns) ? A_UIP : 0));
    case REG_C: {
      // AF for an alarm since C was last read; reading clears it.
      const bool af = alarm_between(flags_cleared_ns_, ns).has_value();
      flags_cleared_ns_ = std::max(flags_cleared_ns_, ns);
      if (!af) return 0;
      return static_cast<uint8_t>(C_AF | (cmos_[REG_B] & B_AIE ? C_IRQF : 0));
    }
    default: return cmos_[index];
  }
}

void CmosRtc::write_data(uint8_t value, uint64_t ns) {
  const uint8_t index = index_ == REG_PS2_CENTURY ? REG_CENTURY : index_;
  if (is_time_register(index)) {
    if (!running()) {
      cmos_[index] = value;
      return;
    }
    // The other fields as they read now; the divider runs on.
    put_time(seconds_at(ns));
    cmos_[index] = value;
    resume(ns, clock_ns_at(ns) % kNsPerSecond);
    return;
  }
  switch (index) {
    case REG_A:
    case REG_B: write_control(index, value, ns); break;
    case REG_C:
    case REG_D: break;  // read only
    default: cmos_[index] = value; break;
  }
}

void CmosRtc::write_control(uint8_t index, uint8_t value, uint64_t ns) {
  const bool was_running = running();
  // Stopping: the time registers keep the time, in the format they had.
  if (was_running) put_time(seconds_at(ns));
  if (index == REG_A) {
    cmos_[REG_A] = value & ~A_UIP;  // UIP is read only
    if ((value & A_DV_RESET) == A_DV_RESET) divider_was_reset_ = true;
  } else {
    cmos_[REG_B] = value & B_SET ? value & ~B_UIE : value;
  }
  if (!was_running && running())
    resume(ns, divider_was_reset_ ? kDividerRestartPhaseNs : clock_ns_at(ns) % kNsPerSecond);
}

uint32_t CmosRtc::read(uint16_t offset, unsigned size) {
  const uint64_t ns = now_ns_();
  uint32_t value = 0;
  for (unsigned i = 0; i < size && i < 4; ++i) {
    // The index port is write only and reads all ones, as under QEMU.
    const uint8_t byte = offset + i == kDataPort ? read_data(ns) : 0xff;
    value |= uint32_t{byte} << (8 * i);
  }
  return value;
}

void CmosRtc::write(uint16_t offset, unsigned size, uint32_t value) {
  const uint64_t ns = now_ns_();
  for (unsigned i = 0; i < size && i < 4; ++i) {
    const uint8_t byte = static_cast<uint8_t>(value >> (8 * i));
    if (offset + i == kIndexPort) {
      index_ = byte & ~INDEX_NMI_DISABLE;
      nmi_masked_ = byte & INDEX_NMI_DISABLE;
    } else if (offset + i == kDataPort) {
      write_data(byte, ns);
    }
  }
}

}  // namespace topolab
