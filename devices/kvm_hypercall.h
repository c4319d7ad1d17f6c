// SPDX-License-Identifier: GPL-2.0-or-later
// KVM's hypercall ABI (Linux Documentation/virt/kvm/x86/hypercalls.rst), as
// a KVM host answers VMCALL (Intel) and VMMCALL (AMD): the number in RAX,
// up to four arguments in RBX, RCX, RDX and RSI, the result in RAX.
// topolab's host is a KVM-like one, so a guest that sees the hypervisor bit
// may call it; kvm-unit-tests' apic test sends its PV IPIs this way.
//
// Pure: decoding and the KVM_HC_SEND_IPI destinations, with no machine;
// the vCPU traps the instruction and the machine routes the messages.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "devices/kvm_pv_msrs.h"
#include "devices/local_apic.h"

namespace topolab {

struct KvmHypercall {
  uint64_t nr = 0;
  uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  bool long_mode = false;  // 64-bit code: else every register is cut to 32 bits first
  unsigned cpl = 0;
};

struct KvmHypercallResult {
  int64_t ret = 0;                 // what RAX receives
  std::vector<ApicMessage> ipis;   // KVM_HC_SEND_IPI: one physical fixed/NMI message per destination
  std::optional<uint32_t> kick;    // KVM_HC_KICK_CPU: the APIC ID to unhalt
};

// Answers `call`. `apic_exists(id)` says whether a vCPU has that APIC ID
// (KVM's phys_map; the count KVM_HC_SEND_IPI returns is of those).
// KVM_HC_SEND_IPI: a0/a1 are a bitmap of APIC IDs from a2 (min) and
// min + 64 (32 in 32-bit code); a3 is the ICR's low word (vector, delivery
// mode, level, trigger). KVM_HC_KICK_CPU: a1 is the APIC ID of a vCPU to
// unhalt (`kick`); 0. KVM_HC_SCHED_YIELD and KVM_HC_VAPIC_POLL_IRQ return
// 0 (a yield to another vCPU is a hint topolab's scheduler, which gives
// every vCPU a host CPU, has no use for); the rest -KVM_ENOSYS. From
// CPL > 0, -KVM_EPERM, as KVM. With `host.enforce`
// (kvm-pv-enforce-cpuid), SEND_IPI, KICK_CPU and SCHED_YIELD need their
// CPUID features, else -KVM_ENOSYS.
KvmHypercallResult kvm_hypercall(const KvmHypercall& call, const KvmPvHost& host,
                                 const std::function<bool(uint32_t)>& apic_exists);
// KVM's name for a hypercall number ("send_ipi", "kick_cpu", ...; "nr_N"
// for one topolab does not know), as reports print them.
std::string kvm_hypercall_name(uint64_t nr);

}  // namespace topolab
