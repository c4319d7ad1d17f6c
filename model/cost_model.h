// SPDX-License-Identifier: GPL-2.0-or-later
// The cost model: what virtual time a KVM-like host would charge for the
// things a guest does that leave the guest (VM exits), and how long a vCPU
// takes to resume after it stopped (halt, MWAIT). It changes only virtual
// time, the modelled exit counts and the modelled host CPU use, never what
// the guest computes. Pure data; docs/cost_model.md gives every default and
// where it comes from.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/event_kinds.h"

namespace topolab {


struct CostModel {
  // The modelled CPU: CPI in thousandths (1000 = one cycle per
  // instruction) and the clock, which is also the TSC rate.
  uint64_t cpi_milli = 1000;
  uint64_t freq_mhz = 2000;

  // Round trip of one exit (exit, handling in the host, entry), charged to
  // the vCPU that made it. APIC is a trapped APIC register write other than
  // the ICR (timer, LVT, SVR; EOI, TPR and self-IPI are virtualised).
  uint64_t cpuid_exit_ns = 0;
  uint64_t hlt_exit_ns = 0;
  uint64_t io_exit_ns = 0;
  uint64_t msr_exit_ns = 0;
  uint64_t icr_exit_ns = 0;
  // Without IPI virtualisation KVM sends the IPI this far into the ICR
  // write's exit; with it the IPI leaves at the write.
  uint64_t icr_send_ns = 0;
  uint64_t mwait_exit_ns = 0;
  uint64_t monitor_exit_ns = 0;

  // An IPI reaches a running vCPU after ipi_running_ns (posted interrupt).
  uint64_t ipi_running_ns = 0;
  // A vCPU the host blocked in HLT (or in a trapped MWAIT) runs again
  // halt_wake_ns after its wakeup event; if the event comes within
  // halt_poll_ns of the halt, the host was still polling and it is
  // poll_wake_ns instead (a poll hit; the polling counts as host CPU).
  uint64_t halt_wake_ns = 0;
  uint64_t poll_wake_ns = 0;
  uint64_t halt_poll_ns = 0;
  // MWAIT passed through (no exits, as QEMU -overcommit cpu-pm=on): the
  // vCPU stays on its host CPU while it waits, and leaves C1 after
  // mwait_wake_ns. Trapped: KVM runs MWAIT as a NOP, so the guest's idle
  // loop spins through exits; the model keeps the guest's MWAIT waiting
  // but charges an exit per MWAIT and MONITOR and counts the wait as host
  // CPU, resuming the vCPU at its wakeup event.
  bool mwait_passthrough = true;
  uint64_t mwait_wake_ns = 0;
  // IPI virtualisation: ICR writes do not exit.
  bool ipiv = false;
  // Pause-loop exiting (SDM Vol. 3C 25.1.3), in cycles of the modelled CPU:
  // PAUSEs at most ple_gap apart form one loop, which exits once it has
  // run ple_window (ple_window=0: no pause-loop exits). A pause-loop exit and
  // its yield cost ple_exit_ns. Only with spin skipping on (emu/pause_loop.h).
  uint64_t ple_gap = 0;
  uint64_t ple_window = 0;
  uint64_t ple_exit_ns = 0;

  // Serializing system instructions that run without an exit: what each
  // class costs the modelled CPU in cycles, in place of CPI, charged to
  // the vCPU's clock when the instruction is reached (whether or not it
  // then faults); 0 leaves it at CPI, as everything else. Sources:
  // docs/cost_model.md.
  uint64_t cr0_write_cycles = 0;
  uint64_t cr3_write_cycles = 0;
  uint64_t cr4_write_cycles = 0;
  uint64_t cr4_global_flush_cycles = 0;
  uint64_t invlpg_cycles = 0;
  uint64_t invpcid_cycles = 0;
  uint64_t descriptor_load_cycles = 0;
  uint64_t cache_flush_cycles = 0;
  uint64_t dr_write_cycles = 0;

  // The published defaults (docs/cost_model.md).
  static CostModel defaults();
  // "key=value,key=value" over `base`; the item "none" zeroes every exit
  // cost, latency and system instruction's cycles (keeping cpi, freq_mhz, ple_gap and ple_window). Throws ConfigError naming the key
  // for an unknown key, a repeated key or a value out of range.
  static CostModel parse(std::string_view spec, const CostModel& base);
  // Every parameter as (key, value text), in a fixed order; parse() of
  // them joined gives the same model back.
  std::vector<std::pair<std::string, std::string>> entries() const;
  std::string to_string() const;  // entries joined as parse() reads them

  uint64_t exit_ns(ExitKind kind) const;
  uint64_t system_cycles(SystemInstruction kind) const;
  // What the clock adds for one such instruction on top of the CPI it is
  // charged as it retires, in thousandths of a cycle.
  uint64_t system_extra_milli_cycles(SystemInstruction kind) const {
    const uint64_t milli = system_cycles(kind) * 1000;
    return milli > cpi_milli ? milli - cpi_milli : 0;
  }

  // Virtual time of `instructions` at this CPI and clock, and back.
  uint64_t ns_for_instructions(uint64_t instructions) const;
  uint64_t instructions_for_ns(uint64_t ns) const;
  // Instructions retired in `cycles` at this CPI (PLE's gap and window).
  uint64_t instructions_for_cycles(uint64_t cycles) const;
  uint64_t tsc_hz() const { return freq_mhz * 1'000'000; }
  // The TSC counts at the CPU clock (an invariant TSC).
  uint64_t tsc_for_ns(uint64_t ns) const {
    return static_cast<uint64_t>(static_cast<unsigned __int128>(ns) * freq_mhz / 1000);
  }

  bool operator==(const CostModel&) const = default;
};

}  // namespace topolab
