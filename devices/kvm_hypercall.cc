// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/kvm_hypercall.h"

namespace topolab {

namespace {

// arch/x86/kvm/lapic.c __pv_send_ipi: the bits of one bitmap word.
void send_from_bitmap(uint64_t bitmap, uint32_t min, unsigned bits, const ApicMessage& shape,
                      const std::function<bool(uint32_t)>& apic_exists, KvmHypercallResult& out) {
  for (unsigned i = 0; i < bits; ++i) {
    if (!((bitmap >> i) & 1)) continue;
    const uint64_t id = uint64_t{min} + i;
    if (id > UINT32_MAX || !apic_exists(static_cast<uint32_t>(id))) continue;
    ApicMessage msg = shape;
    msg.destination = static_cast<uint32_t>(id);
    out.ipis.push_back(msg);
    ++out.ret;
  }
}

}  // namespace

KvmHypercallResult kvm_hypercall(const KvmHypercall& in, const KvmPvHost& host,
                                 const std::function<bool(uint32_t)>& apic_exists) {
  KvmHypercall call = in;
  if (!call.long_mode) {
    for (uint64_t* r : {&call.nr, &call.a0, &call.a1, &call.a2, &call.a3}) *r = static_cast<uint32_t>(*r);
  }
  KvmHypercallResult out;
  if (call.cpl != 0) {
    out.ret = -KVM_EPERM;
    return out;
  }
  // KVM's guest_pv_has: without enforcement every feature counts as there.
  auto has = [&](unsigned feature) { return !host.enforce || host.offers(feature); };
  out.ret = -KVM_ENOSYS;
  switch (call.nr) {
    case KVM_HC_SEND_IPI: {
      if (!has(KVM_FEATURE_PV_SEND_IPI)) return out;
      out.ret = 0;
      using namespace apic;
      // A physical, 32-bit destination whatever the sender's APIC mode: KVM
      // looks the IDs up in its physical map directly.
      const ApicMessage shape{
          .delivery_mode = static_cast<ApicDeliveryMode>((call.a3 >> ICR_DELIVERY_MODE_SHIFT) & 7),
          .vector = static_cast<uint8_t>(call.a3 & ICR_VECTOR),
          .destination_mode = ApicDestinationMode::Physical,
          .level_assert = (call.a3 & ICR_LEVEL_ASSERT) != 0,
          .trigger_mode = (call.a3 & ICR_TRIGGER_LEVEL) ? ApicTriggerMode::Level : ApicTriggerMode::Edge,
          .x2apic = true,
      };
      const unsigned bits = call.long_mode ? 64 : 32;
      const auto min = static_cast<uint32_t>(call.a2);
      send_from_bitmap(call.a0, min, bits, shape, apic_exists, out);
      // KVM adds the cluster size to a u32: it wraps.
      send_from_bitmap(call.a1, static_cast<uint32_t>(min + bits), bits, shape, apic_exists, out);
      return out;
    }
    case KVM_HC_KICK_CPU:
      if (!has(KVM_FEATURE_PV_UNHALT)) return out;
      out.kick = static_cast<uint32_t>(call.a1);
      out.ret = 0;
      return out;
    case KVM_HC_SCHED_YIELD:
      if (!has(KVM_FEATURE_PV_SCHED_YIELD)) return out;
      out.ret = 0;
      return out;
    case KVM_HC_VAPIC_POLL_IRQ:
      out.ret = 0;
      return out;
    default:
      return out;
  }
}

std::string kvm_hypercall_name(uint64_t nr) {
  switch (nr) {
    case KVM_HC_VAPIC_POLL_IRQ: return "vapic_poll_irq";
    case KVM_HC_KICK_CPU: return "kick_cpu";
    case KVM_HC_SEND_IPI: return "send_ipi";
    case KVM_HC_SCHED_YIELD: return "sched_yield";
    default: return "nr_" + std::to_string(nr);
  }
}

}  // namespace topolab
