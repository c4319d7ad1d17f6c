// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/kvm_pv_msrs.h"

#include <cstring>

namespace topolab {

namespace {

// kvm_steal_time's reserved bits: the area is 64-byte aligned, and bits
// 5:1 of the MSR must be 0 (KVM_STEAL_RESERVED_MASK).
constexpr uint64_t kStealTimeReserved = 0x3E;

template <size_t N, class T>
void put(std::array<uint8_t, N>& out, size_t offset, T value) {
  std::memcpy(out.data() + offset, &value, sizeof value);  // little-endian, as the guest reads it
}

}  // namespace

bool KvmPvMsrs::handles(uint32_t msr) const {
  if (!host_.present) return false;
  switch (msr) {
    case kMsrKvmWallClock:
    case kMsrKvmSystemTime:
    case kMsrKvmWallClockNew:
    case kMsrKvmSystemTimeNew:
    case kMsrKvmAsyncPfEn:
    case kMsrKvmStealTime:
    case kMsrKvmPvEoiEn:
    case kMsrKvmPollControl:
      return true;
    default:
      return false;
  }
}

bool KvmPvMsrs::usable(uint32_t msr) const {
  if (!handles(msr)) return false;
  unsigned feature = 0;
  switch (msr) {
    case kMsrKvmWallClock:
    case kMsrKvmSystemTime: feature = KVM_FEATURE_CLOCKSOURCE; break;
    case kMsrKvmWallClockNew:
    case kMsrKvmSystemTimeNew: feature = KVM_FEATURE_CLOCKSOURCE2; break;
    // topolab's host has no asynchronous page faults to give.
    case kMsrKvmAsyncPfEn: return false;
    case kMsrKvmStealTime: feature = KVM_FEATURE_STEAL_TIME; break;
    case kMsrKvmPvEoiEn: feature = KVM_FEATURE_PV_EOI; break;
    case kMsrKvmPollControl: feature = KVM_FEATURE_POLL_CONTROL; break;
    default: return false;
  }
  return !host_.enforce || host_.offers(feature);
}

std::optional<uint64_t> KvmPvMsrs::read(uint32_t msr) const {
  if (!usable(msr)) return std::nullopt;
  switch (msr) {
    case kMsrKvmWallClock:
    case kMsrKvmWallClockNew: return wall_clock_;
    case kMsrKvmSystemTime:
    case kMsrKvmSystemTimeNew: return system_time_;
    case kMsrKvmStealTime: return steal_time_;
    case kMsrKvmPvEoiEn: return pv_eoi_;
    case kMsrKvmPollControl: return poll_control_;
    default: return std::nullopt;
  }
}

std::optional<KvmPvUpdate> KvmPvMsrs::write(uint32_t msr, uint64_t value) {
  if (!usable(msr)) return std::nullopt;
  switch (msr) {
    case kMsrKvmWallClock:
    case kMsrKvmWallClockNew:
      // Any address: KVM writes the structure there (a write outside RAM is lost).
      wall_clock_ = value;
      return KvmPvUpdate::WallClock;
    case kMsrKvmSystemTime:
    case kMsrKvmSystemTimeNew:
      system_time_ = value;
      return value & KVM_MSR_ENABLED ? KvmPvUpdate::SystemTime : KvmPvUpdate::None;
    case kMsrKvmStealTime:
      if (value & kStealTimeReserved) return std::nullopt;
      steal_time_ = value;
      return value & KVM_MSR_ENABLED ? KvmPvUpdate::StealTime : KvmPvUpdate::None;
    case kMsrKvmPvEoiEn:
      // kvm_lapic_set_pv_eoi: the flag word is 4-byte aligned.
      if ((value & ~KVM_MSR_ENABLED) & 3) return std::nullopt;
      pv_eoi_ = value;
      return KvmPvUpdate::None;
    case kMsrKvmPollControl:
      if (value & ~uint64_t{1}) return std::nullopt;
      poll_control_ = value;
      return KvmPvUpdate::None;
    default: return std::nullopt;
  }
}

void KvmPvMsrs::reset() { *this = KvmPvMsrs(host_); }

std::optional<uint64_t> KvmPvMsrs::system_time_page() const {
  if (!(system_time_ & KVM_MSR_ENABLED)) return std::nullopt;
  return system_time_ & ~KVM_MSR_ENABLED;
}

std::optional<uint64_t> KvmPvMsrs::steal_time_area() const {
  if (!(steal_time_ & KVM_MSR_ENABLED)) return std::nullopt;
  return steal_time_ & ~uint64_t{63};
}

PvclockScale pvclock_scale(uint64_t tsc_hz) {
  // Find shift and mul with ns = ((ticks shifted) * mul) >> 32 for
  // 1e9 ns per tsc_hz ticks: first bring the tick rate below twice the
  // ns rate and into 32 bits, then up above the ns rate, so that
  // mul = (ns rate << 32) / tick rate fits 32 bits with the most precision.
  uint64_t ns_rate = 1'000'000'000;
  uint64_t ticks = tsc_hz;
  int shift = 0;
  while (ticks > ns_rate * 2 || (ticks >> 32)) {
    ticks >>= 1;
    --shift;
  }
  auto ticks32 = static_cast<uint32_t>(ticks);
  while (ticks32 <= ns_rate || (ns_rate >> 32)) {
    if ((ns_rate >> 32) || (ticks32 & 0x80000000u))
      ns_rate >>= 1;
    else
      ticks32 <<= 1;
    ++shift;
  }
  return {static_cast<uint32_t>((ns_rate << 32) / ticks32), static_cast<int8_t>(shift)};
}

uint64_t pvclock_ns(uint64_t system_time_ns, uint64_t tsc_timestamp, PvclockScale scale, uint64_t tsc) {
  uint64_t delta = tsc - tsc_timestamp;
  delta = scale.shift < 0 ? delta >> -scale.shift : delta << scale.shift;
  return system_time_ns + static_cast<uint64_t>((static_cast<unsigned __int128>(delta) * scale.mul) >> 32);
}

std::array<uint8_t, 32> pvclock_time_info(uint32_t version, uint64_t tsc_timestamp, uint64_t system_time_ns,
                                          PvclockScale scale, uint8_t flags) {
  std::array<uint8_t, 32> out{};
  put(out, 0, version);
  put(out, 8, tsc_timestamp);
  put(out, 16, system_time_ns);
  put(out, 24, scale.mul);
  put(out, 28, scale.shift);
  put(out, 29, flags);
  return out;
}

std::array<uint8_t, 12> pvclock_wall_clock(uint32_t version, uint32_t sec, uint32_t nsec) {
  std::array<uint8_t, 12> out{};
  put(out, 0, version);
  put(out, 4, sec);
  put(out, 8, nsec);
  return out;
}

}  // namespace topolab
