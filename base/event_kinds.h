// SPDX-License-Identifier: GPL-2.0-or-later
// The kinds of thing a run counts: why a halted vCPU woke, and the VM exits
// the cost model charges. Their order is the order reports list them in.
// (IPIs are counted by the APIC's own delivery modes and shorthands,
// devices/local_apic.h.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace topolab {

// Why a halted (or MWAIT-parked) vCPU resumed.
// PvKick: KVM_HC_KICK_CPU (PV spinlocks' unlock of a halted waiter).
enum class WakeCause : uint8_t { Interrupt, Timer, Nmi, Init, Sipi, MwaitStore, PvKick };
inline constexpr size_t kWakeCauses = static_cast<size_t>(WakeCause::PvKick) + 1;
std::string_view to_string(WakeCause cause);

// The kinds of VM exit the cost model charges for (model/cost_model.h).
// PauseLoop: a pause-loop exit (PLE) and its yield, when spin skipping is on.
enum class ExitKind : uint8_t { Cpuid, Hlt, Io, Msr, Apic, Icr, Mwait, Monitor, PauseLoop, Hypercall };
inline constexpr size_t kExitKinds = static_cast<size_t>(ExitKind::Hypercall) + 1;
std::string_view to_string(ExitKind kind);

// Serializing system instructions that run in the guest without an exit
// but cost a real CPU far more than the one cycle the clock charges an
// ordinary instruction (model/cost_model.h gives each class its cycles).
// Cr0Write: MOV to CR0, CLTS, LMSW; Cr4GlobalFlush: a MOV to CR4 that
// changes PGE or clears PCIDE, which also invalidates global TLB entries
// (SDM Vol. 3A 4.10.4.1); DescriptorLoad: LGDT, LIDT, LLDT, LTR;
// CacheFlush: WBINVD, INVD; DrWrite: MOV to DR0-DR7.
enum class SystemInstruction : uint8_t {
  Cr0Write, Cr3Write, Cr4Write, Cr4GlobalFlush, Invlpg, Invpcid, DescriptorLoad, CacheFlush, DrWrite
};
inline constexpr size_t kSystemInstructions = static_cast<size_t>(SystemInstruction::DrWrite) + 1;
std::string_view to_string(SystemInstruction kind);

// How an APIC register write leaves the guest on a KVM host with APICv:
// EOI, TPR and x2APIC SELF IPI are virtualised (no exit), an ICR write
// exits unless IPIs are virtualised too, any other APIC register write (and
// IA32_APIC_BASE, TSC_DEADLINE) traps. The local APIC says which a write
// was; the cost model (model/cost_rules.h) says what it costs.
enum class ApicWriteKind : uint8_t { Virtualized, Icr, Trapped };

}  // namespace topolab
