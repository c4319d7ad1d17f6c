// SPDX-License-Identifier: GPL-2.0-or-later
// KVM's paravirtual host side as a guest drives it: the MSRs
// (devices/kvm_pv_msrs.h) and the hypercalls (devices/kvm_hypercall.h),
// under any host (KVM or not, kvm-pv-enforce-cpuid on or off, any CPUID
// features), by a program of RDMSR, WRMSR and VMCALL. The invariants are
// KVM's (Documentation/virt/kvm/x86/msr.rst, hypercalls.rst):
// - without a KVM host no KVM MSR exists; with one, each exists, and with
//   enforcement it works only when CPUID announces its feature; the
//   asynchronous page-fault MSR never works;
// - a refused write changes no MSR; an accepted one reads back (the old and
//   new kvmclock MSRs are one register); the reserved bits refuse: steal
//   time 5:1, the PV EOI flag's alignment, poll control 63:1;
// - kvmclock's page and the steal-time area are there exactly while bit 0
//   of their MSR is set; the host may poll exactly while poll control's bit
//   0 is;
// - a hypercall from CPL > 0 returns -KVM_EPERM and does nothing; with
//   enforcement one whose feature is not announced returns -KVM_ENOSYS and
//   does nothing; KVM_HC_SEND_IPI returns how many messages it made, each
//   to an existing APIC ID inside its two bitmap windows; KVM_HC_KICK_CPU
//   names a1's APIC ID.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "devices/kvm_hypercall.h"
#include "devices/kvm_pv_msrs.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/fuzz_input.h"

using namespace topolab;

namespace {

constexpr std::array<uint32_t, 8> kMsrs = {kMsrKvmWallClock, kMsrKvmSystemTime, kMsrKvmWallClockNew,
                                           kMsrKvmSystemTimeNew, kMsrKvmAsyncPfEn, kMsrKvmStealTime,
                                           kMsrKvmPvEoiEn, kMsrKvmPollControl};

std::optional<unsigned> feature_of(uint32_t msr) {
  switch (msr) {
    case kMsrKvmWallClock:
    case kMsrKvmSystemTime: return KVM_FEATURE_CLOCKSOURCE;
    case kMsrKvmWallClockNew:
    case kMsrKvmSystemTimeNew: return KVM_FEATURE_CLOCKSOURCE2;
    case kMsrKvmStealTime: return KVM_FEATURE_STEAL_TIME;
    case kMsrKvmPvEoiEn: return KVM_FEATURE_PV_EOI;
    case kMsrKvmPollControl: return KVM_FEATURE_POLL_CONTROL;
    default: return std::nullopt;  // asynchronous page faults: never
  }
}

bool reserved_bits_set(uint32_t msr, uint64_t value) {
  switch (msr) {
    case kMsrKvmStealTime: return value & 0x3E;
    case kMsrKvmPvEoiEn: return value & 2;
    case kMsrKvmPollControl: return value & ~uint64_t{1};
    default: return false;
  }
}

std::array<std::optional<uint64_t>, kMsrs.size()> read_all(const KvmPvMsrs& msrs) {
  std::array<std::optional<uint64_t>, kMsrs.size()> out;
  for (size_t i = 0; i < kMsrs.size(); ++i) out[i] = msrs.read(kMsrs[i]);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  const uint8_t shape = in.take<uint8_t>();
  const KvmPvHost host{.present = (shape & 1) != 0, .enforce = (shape & 2) != 0, .features = in.take<uint32_t>()};
  const uint32_t apic_ids = in.take<uint8_t>();  // vCPUs with APIC IDs 0 .. apic_ids-1
  const auto exists = [&](uint32_t id) { return id < apic_ids; };
  KvmPvMsrs msrs(host);
  for (unsigned step = 0; step < 256 && !in.done(); ++step) {
    const uint8_t op = in.take<uint8_t>();
    if (op % 3 < 2) {
      const uint32_t msr = kMsrs[(op >> 2) % kMsrs.size()];
      const std::optional<unsigned> feature = feature_of(msr);
      const bool usable = host.present && feature && (!host.enforce || host.offers(*feature));
      FUZZ_CHECK(msrs.handles(msr) == host.present, "MSR {:#x}: handled {} with a KVM host {}", msr,
                 msrs.handles(msr), host.present);
      if (op % 3 == 0) {
        FUZZ_CHECK(msrs.read(msr).has_value() == usable, "RDMSR {:#x}: usable {}", msr, usable);
        continue;
      }
      const uint64_t value = in.take<uint64_t>();
      const auto before = read_all(msrs);
      const std::optional<KvmPvUpdate> update = msrs.write(msr, value);
      const bool accept = usable && !reserved_bits_set(msr, value);
      FUZZ_CHECK(update.has_value() == accept, "WRMSR {:#x} <- {:#x}: accepted {}, expected {}", msr, value,
                 update.has_value(), accept);
      if (!update) {
        FUZZ_CHECK(read_all(msrs) == before, "a refused WRMSR {:#x} changed an MSR", msr);
        continue;
      }
      FUZZ_CHECK(msrs.read(msr) == value, "WRMSR {:#x} <- {:#x} reads back {:#x}", msr, value,
                 msrs.read(msr).value_or(0));
      if (msr == kMsrKvmSystemTime || msr == kMsrKvmSystemTimeNew) {
        FUZZ_CHECK(msrs.system_time_page().has_value() == ((value & 1) != 0), "kvmclock's page and bit 0");
        FUZZ_CHECK((*update == KvmPvUpdate::SystemTime) == ((value & 1) != 0), "a page to write iff enabled");
      }
      if (msr == kMsrKvmStealTime)
        FUZZ_CHECK(msrs.steal_time_area().has_value() == ((value & 1) != 0), "the steal-time area and bit 0");
      if (msr == kMsrKvmWallClock || msr == kMsrKvmWallClockNew)
        FUZZ_CHECK(*update == KvmPvUpdate::WallClock && msrs.wall_clock_address() == value, "the wall clock's address");
      if (msr == kMsrKvmPollControl) FUZZ_CHECK(msrs.host_may_poll() == (value == 1), "poll control's bit 0");
      continue;
    }
    // A hypercall: one of the known numbers or any.
    static constexpr uint64_t kNumbers[] = {KVM_HC_VAPIC_POLL_IRQ, KVM_HC_KICK_CPU, KVM_HC_SEND_IPI,
                                            KVM_HC_SCHED_YIELD};
    const uint8_t how = in.take<uint8_t>();
    KvmHypercall call{.nr = (how & 4) ? in.take<uint64_t>() : kNumbers[how & 3],
                      .a0 = in.take<uint64_t>(),
                      .a1 = in.take<uint64_t>(),
                      .a2 = in.take<uint32_t>(),
                      .a3 = in.take<uint32_t>(),
                      .long_mode = (how & 8) == 0,
                      .cpl = (how & 0x10) ? 3u : 0u};
    const KvmHypercallResult r = kvm_hypercall(call, host, exists);
    const uint64_t nr = call.long_mode ? call.nr : static_cast<uint32_t>(call.nr);
    const bool acts = r.kick.has_value() || !r.ipis.empty();
    if (call.cpl != 0) {
      FUZZ_CHECK(r.ret == -KVM_EPERM && !acts, "CPL 3 hypercall {}: ret {}", nr, r.ret);
      continue;
    }
    const std::optional<unsigned> needs = nr == KVM_HC_SEND_IPI    ? std::optional(KVM_FEATURE_PV_SEND_IPI)
                                          : nr == KVM_HC_KICK_CPU  ? std::optional(KVM_FEATURE_PV_UNHALT)
                                          : nr == KVM_HC_SCHED_YIELD ? std::optional(KVM_FEATURE_PV_SCHED_YIELD)
                                                                     : std::nullopt;
    if (needs && host.enforce && !host.offers(*needs)) {
      FUZZ_CHECK(r.ret == -KVM_ENOSYS && !acts, "hypercall {} without its feature: ret {}", nr, r.ret);
      continue;
    }
    if (nr == KVM_HC_SEND_IPI) {
      FUZZ_CHECK(r.ret == static_cast<int64_t>(r.ipis.size()), "SEND_IPI returned {} for {} messages", r.ret,
                 r.ipis.size());
      const uint64_t bits = call.long_mode ? 64 : 32;
      const auto min = static_cast<uint32_t>(call.a2);
      for (const ApicMessage& m : r.ipis) {
        FUZZ_CHECK(exists(m.destination), "SEND_IPI to APIC ID {}, which no vCPU has", m.destination);
        const uint32_t offset = m.destination - min;  // u32 arithmetic, as KVM's windows wrap
        FUZZ_CHECK(offset < 2 * bits, "SEND_IPI to {} outside [{}, {} + {})", m.destination, min, min, 2 * bits);
      }
      FUZZ_CHECK(!r.kick, "SEND_IPI kicked");
    } else if (nr == KVM_HC_KICK_CPU) {
      const uint64_t a1 = call.long_mode ? call.a1 : static_cast<uint32_t>(call.a1);
      FUZZ_CHECK(r.ret == 0 && r.kick == static_cast<uint32_t>(a1) && r.ipis.empty(), "KICK_CPU {}: ret {}", a1,
                 r.ret);
    } else if (nr == KVM_HC_SCHED_YIELD || nr == KVM_HC_VAPIC_POLL_IRQ) {
      FUZZ_CHECK(r.ret == 0 && !acts, "hypercall {}: ret {}", nr, r.ret);
    } else {
      FUZZ_CHECK(r.ret == -KVM_ENOSYS && !acts, "unknown hypercall {}: ret {}", nr, r.ret);
    }
  }
  return 0;
}
