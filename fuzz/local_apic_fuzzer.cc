// SPDX-License-Identifier: GPL-2.0-or-later
// The local APIC, driven by a program of operations decoded from the input:
// xAPIC MMIO reads and writes, MSR reads and writes (x2APIC range,
// IA32_APIC_BASE, IA32_TSC_DEADLINE), steps of virtual time, bus messages
// accepted, INTA and EOI. The TSC runs at a rate the input picks (below
// 1 GHz too, where issue 14's F1 lived).
// Invariants after every operation:
// - the timer's next event is never in the past: after on_time(now) it is
//   later than now (or there is none), so a scheduler that jumps to it moves;
// - a pending vector beats the processor priority's class, and INTA moves
//   exactly it from IRR to ISR; EOI clears the highest ISR bit;
// - a fixed message with a legal vector to a software-enabled APIC is
//   accepted into IRR;
// - the x2APIC MSRs fault outside x2APIC mode, and the MMIO page is mapped
//   only in xAPIC mode;
// - describe() always works.
#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>

#include "devices/local_apic.h"
#include "fuzz/fuzz_check.h"

using namespace topolab;

namespace {

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool done() const { return pos_ >= size_; }
  template <typename T>
  T take() {
    T v = 0;
    for (size_t i = 0; i < sizeof(T); ++i) v = static_cast<T>((v << 8) | (pos_ < size_ ? data_[pos_++] : 0));
    return v;
  }

 private:
  const uint8_t* data_;
  size_t size_, pos_ = 0;
};

void check_timer(const LocalApic& apic, uint64_t now) {
  if (auto next = apic.next_timer_event()) FUZZ_CHECK(*next > now, "timer event {} not after now {}", *next, now);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader in(data, size);
  static constexpr uint64_t kTscHz[] = {1'000'000, 499'999'999, 500'000'000, 1'000'000'000, 2'000'000'000,
                                        3'700'000'000};
  const uint8_t setup = in.take<uint8_t>();
  LocalApic apic(LocalApicConfig{.apic_id = in.take<uint8_t>(),
                                 .bsp = (setup & 1) != 0,
                                 .x2apic_supported = (setup & 2) != 0,
                                 .tsc_hz = kTscHz[(setup >> 2) % std::size(kTscHz)],
                                 .timer_hz = 1'000'000'000});
  // Times stay far below 2^64 ns so that "after now" can hold.
  constexpr uint64_t kEndOfTime = uint64_t{1} << 62;
  uint64_t now = 0;
  for (int ops = 0; !in.done() && ops < 4096; ++ops) {
    const uint8_t op = in.take<uint8_t>();
    switch ((op & 0x0f) % 10) {  // the high nibble carries flags
      case 0: {  // MMIO read
        const uint32_t offset = in.take<uint16_t>() & 0xfff;
        const unsigned sizes[] = {1, 2, 4, 8};
        (void)apic.mmio_read(offset, sizes[(op >> 4) & 3], now);
        break;
      }
      case 1: {  // MMIO write
        const uint32_t offset = (in.take<uint8_t>() << 4) & 0xff0;
        (void)apic.mmio_write(offset, (op & 0x10) ? 2 : 4, in.take<uint32_t>(), now);
        break;
      }
      case 2: {  // x2APIC MSR read
        const uint32_t msr = LocalApic::MSR_X2APIC_FIRST + in.take<uint8_t>();
        const auto value = apic.rdmsr(msr, now);
        if (apic.mode() != ApicMode::X2Apic) FUZZ_CHECK(!value, "x2APIC MSR {:#x} readable in mode {}", msr, (int)apic.mode());
        break;
      }
      case 3: {  // x2APIC MSR write
        const uint32_t msr = LocalApic::MSR_X2APIC_FIRST + in.take<uint8_t>();
        const bool x2 = apic.mode() == ApicMode::X2Apic;
        const auto w = apic.wrmsr(msr, in.take<uint64_t>(), now);
        if (!x2) FUZZ_CHECK(w.gp, "x2APIC MSR {:#x} writable outside x2APIC mode", msr);
        break;
      }
      case 4: {  // IA32_APIC_BASE
        (void)apic.wrmsr(LocalApic::MSR_IA32_APIC_BASE, in.take<uint64_t>(), now);
        FUZZ_CHECK(apic.mmio_enabled() == (apic.mode() == ApicMode::XApic), "MMIO in mode {}", (int)apic.mode());
        if (!apic.x2apic_supported()) FUZZ_CHECK(apic.mode() != ApicMode::X2Apic, "x2APIC mode without support");
        break;
      }
      case 5:  // IA32_TSC_DEADLINE, sometimes far away
        (void)apic.wrmsr(LocalApic::MSR_IA32_TSC_DEADLINE,
                         (op & 0x10) ? in.take<uint64_t>() : apic.tsc(now) + in.take<uint16_t>(), now);
        break;
      case 6: {  // time passes; what is due fires
        const uint64_t step = (op & 0x10) ? in.take<uint32_t>() : in.take<uint64_t>() >> 8;
        now = std::min(kEndOfTime, now + step);
        apic.on_time(now);
        check_timer(apic, now);
        break;
      }
      case 7: {  // jump to the next timer event, as the machine does
        // A write can arm it in the past (a TSC deadline already passed):
        // then it is due at once.
        if (auto next = apic.next_timer_event(); next && *next <= kEndOfTime) {
          now = std::max(now, *next);
          apic.on_time(now);
          check_timer(apic, now);
        }
        break;
      }
      case 8: {  // a bus message
        ApicMessage msg;
        msg.delivery_mode = static_cast<ApicDeliveryMode>((op >> 4) & 7);
        msg.vector = in.take<uint8_t>();
        msg.trigger_mode = (op & 0x80) ? ApicTriggerMode::Level : ApicTriggerMode::Edge;
        msg.shorthand = ApicShorthand::AllIncludingSelf;
        const bool legal_fixed = msg.delivery_mode == ApicDeliveryMode::Fixed && msg.vector >= 16 &&
                                 apic.software_enabled() && apic.mode() != ApicMode::Disabled;
        FUZZ_CHECK(apic.matches(msg) == (apic.mode() != ApicMode::Disabled), "broadcast match");
        const ApicAcceptResult r = apic.accept(msg);
        if (legal_fixed) {
          FUZZ_CHECK(r.kind == ApicAccept::Interrupt && apic.irr(msg.vector), "fixed vector {:#x} not in IRR", msg.vector);
        }
        break;
      }
      case 9: {  // INTA, then maybe EOI
        const std::optional<uint8_t> pending = apic.pending_vector();
        if (pending) {
          FUZZ_CHECK((*pending >> 4) > (apic.processor_priority() >> 4), "vector {:#x} pending under PPR {:#x}",
                     *pending, apic.processor_priority());
          const bool was_in_isr = apic.isr(*pending);
          const uint8_t v = apic.acknowledge();
          FUZZ_CHECK(v == *pending && apic.isr(v) && !apic.irr(v) && !was_in_isr, "INTA of {:#x} gave {:#x}", *pending, v);
        }
        if (op & 0x10) {
          std::optional<uint8_t> top;
          for (int v = 255; v >= 0 && !top; --v)
            if (apic.isr(static_cast<uint8_t>(v))) top = static_cast<uint8_t>(v);
          const bool x2 = apic.mode() == ApicMode::X2Apic;
          if (x2)
            FUZZ_CHECK(!apic.wrmsr(LocalApic::MSR_X2APIC_FIRST + (apic::REG_EOI >> 4), 0, now).gp, "x2APIC EOI");
          else if (apic.mode() == ApicMode::XApic)
            (void)apic.mmio_write(apic::REG_EOI, 4, 0, now);
          if (top && apic.mode() != ApicMode::Disabled) FUZZ_CHECK(!apic.isr(*top), "EOI left {:#x} in ISR", *top);
        }
        break;
      }
    }
  }
  (void)apic.describe(now);
  return 0;
}
