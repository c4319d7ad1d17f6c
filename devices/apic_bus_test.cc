// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/apic_bus.h"

#include <memory>

#include <gtest/gtest.h>

#include "base/state_archive.h"

namespace topolab {
namespace {

using namespace apic;
constexpr uint64_t kNow = 0;

// APICs with the given initial IDs, software-enabled, in xAPIC or x2APIC
// mode, and the bus over them with an ID map as the topology's.
struct Bus {
  Bus(std::vector<uint32_t> ids, bool x2apic) {
    for (uint32_t id : ids) {
      apics.push_back(std::make_unique<LocalApic>(LocalApicConfig{.apic_id = id, .bsp = apics.empty()}));
      LocalApic& apic = *apics.back();
      if (x2apic) {
        apic.wrmsr(LocalApic::MSR_IA32_APIC_BASE, LocalApic::kDefaultBase | APIC_BASE_EN | APIC_BASE_EXTD, kNow);
        apic.wrmsr(LocalApic::MSR_X2APIC_FIRST + REG_SVR / 16, SVR_APIC_ENABLED | 0xff, kNow);
      } else {
        apic.mmio_write(REG_SVR, 4, SVR_APIC_ENABLED | 0xff, kNow);
      }
    }
    std::vector<const LocalApic*> views;
    for (auto& apic : apics) views.push_back(apic.get());
    bus = std::make_unique<ApicBus>(views, [ids](uint32_t id) -> std::optional<unsigned> {
      for (unsigned i = 0; i < ids.size(); ++i)
        if (ids[i] == id) return i;
      return std::nullopt;
    });
  }
  std::vector<unsigned> to(const ApicMessage& m) const { return bus->destinations(m); }
  std::vector<std::unique_ptr<LocalApic>> apics;
  std::unique_ptr<ApicBus> bus;
};

ApicMessage physical(uint32_t dest, bool x2apic = false) {
  return {.vector = 0x40, .destination = dest, .x2apic = x2apic};
}
ApicMessage logical(uint32_t dest, bool x2apic = false) {
  return {.vector = 0x40, .destination_mode = ApicDestinationMode::Logical, .destination = dest, .x2apic = x2apic};
}
ApicMessage shorthand(ApicShorthand s, uint32_t source) {
  return {.vector = 0x40, .shorthand = s, .source_id = source};
}

// crosvm's single_dest: a physical destination names exactly one APIC.
TEST(ApicBus, PhysicalUnicastReachesOneApic) {
  Bus xapic({0, 1, 2, 3}, false);
  EXPECT_EQ(xapic.to(physical(2)), (std::vector<unsigned>{2}));
  EXPECT_EQ(xapic.to(physical(9)), (std::vector<unsigned>{}));
  // Gaps in the IDs (3 cores a package, IDs 0,1,2,4,5,6).
  Bus gaps({0, 1, 2, 4, 5, 6}, true);
  EXPECT_EQ(gaps.to(physical(4, true)), (std::vector<unsigned>{3}));
  EXPECT_EQ(gaps.to(physical(3, true)), (std::vector<unsigned>{}));
}

TEST(ApicBus, X2apicDestinationIsTheFullId) {
  Bus bus({0x01, 0x101}, true);
  EXPECT_EQ(bus.to(physical(0x101, true)), (std::vector<unsigned>{1}));
  EXPECT_EQ(bus.to(physical(0x01, true)), (std::vector<unsigned>{0}));
}

TEST(ApicBus, BroadcastReachesEveryApic) {
  Bus xapic({0, 1, 2}, false);
  EXPECT_EQ(xapic.to(physical(XAPIC_BROADCAST)), (std::vector<unsigned>{0, 1, 2}));
  Bus x2({0, 1, 2}, true);
  EXPECT_EQ(x2.to(physical(X2APIC_BROADCAST, true)), (std::vector<unsigned>{0, 1, 2}));
  EXPECT_EQ(x2.to(physical(XAPIC_BROADCAST, true)), (std::vector<unsigned>{}));  // 0xFF is an ID in x2APIC
}

// crosvm's match_dest: logical flat and cluster, x2APIC clusters.
TEST(ApicBus, LogicalDestinationsMatchTheLdr) {
  Bus flat({0, 1, 2, 3}, false);
  for (unsigned i = 0; i < 4; ++i) {
    flat.apics[i]->mmio_write(REG_DFR, 4, 0xffffffff, kNow);
    flat.apics[i]->mmio_write(REG_LDR, 4, (1u << i) << 24, kNow);
  }
  EXPECT_EQ(flat.to(logical(0b1010)), (std::vector<unsigned>{1, 3}));
  EXPECT_EQ(flat.to(logical(0)), (std::vector<unsigned>{}));
  Bus x2({0, 1, 16, 17}, true);  // the LDR is derived from the ID: cluster = ID[19:4], bit ID[3:0]
  EXPECT_EQ(x2.to(logical((1u << 16) | 0b11, true)), (std::vector<unsigned>{2, 3}));
  EXPECT_EQ(x2.to(logical(0b10, true)), (std::vector<unsigned>{1}));
}

TEST(ApicBus, ShorthandsUseTheSendersId) {
  Bus bus({0, 1, 2}, false);
  EXPECT_EQ(bus.to(shorthand(ApicShorthand::Self, 1)), (std::vector<unsigned>{1}));
  EXPECT_EQ(bus.to(shorthand(ApicShorthand::AllIncludingSelf, 1)), (std::vector<unsigned>{0, 1, 2}));
  EXPECT_EQ(bus.to(shorthand(ApicShorthand::AllExcludingSelf, 1)), (std::vector<unsigned>{0, 2}));
}

TEST(ApicBus, LowestPriorityPicksTheLowestArbitrationPriorityThenId) {
  Bus bus({0, 1, 2, 3}, false);
  for (unsigned i = 0; i < 4; ++i) {
    bus.apics[i]->mmio_write(REG_DFR, 4, 0xffffffff, kNow);
    bus.apics[i]->mmio_write(REG_LDR, 4, (1u << i) << 24, kNow);
  }
  ApicMessage m = logical(0b1110);
  m.delivery_mode = ApicDeliveryMode::LowestPriority;
  EXPECT_EQ(bus.to(m), (std::vector<unsigned>{1}));  // all at priority 0: the lowest ID
  bus.apics[1]->mmio_write(REG_TPR, 4, 0x20, kNow);
  EXPECT_EQ(bus.to(m), (std::vector<unsigned>{2}));
}

TEST(ApicBus, DisabledApicsTakeNothing) {
  Bus bus({0, 1}, false);
  bus.apics[1]->wrmsr(LocalApic::MSR_IA32_APIC_BASE, 0, kNow);  // hardware-disabled
  EXPECT_EQ(bus.to(physical(1)), (std::vector<unsigned>{}));
  EXPECT_EQ(bus.to(physical(XAPIC_BROADCAST)), (std::vector<unsigned>{0}));
}

// A guest that rewrites an xAPIC ID register is routed by what it wrote,
// as asking every APIC would: the bus leaves the fast path.
TEST(ApicBus, RenumberedXapicIdsAreRoutedByTheirNewId) {
  Bus bus({0, 1, 2}, false);
  ApicWrite w = bus.apics[2]->mmio_write(REG_ID, 4, 7u << 24, kNow);
  bus.bus->note_write(w);
  EXPECT_EQ(bus.to(physical(7)), (std::vector<unsigned>{2}));
  EXPECT_EQ(bus.to(physical(2)), (std::vector<unsigned>{}));
  // Two APICs answering to one ID both take it.
  bus.bus->note_write(bus.apics[0]->mmio_write(REG_ID, 4, 7u << 24, kNow));
  EXPECT_EQ(bus.to(physical(7)), (std::vector<unsigned>{0, 2}));
}

// The fast path and asking every APIC agree on every physical destination.
TEST(ApicBus, UnicastFastPathAgreesWithMatches) {
  for (bool x2apic : {false, true}) {
    Bus bus({0, 1, 2, 4, 5, 6, 8, 9}, x2apic);
    for (uint32_t dest = 0; dest < 16; ++dest) {
      std::vector<unsigned> expected;
      for (unsigned i = 0; i < bus.apics.size(); ++i)
        if (bus.apics[i]->matches(physical(dest, x2apic))) expected.push_back(i);
      EXPECT_EQ(bus.to(physical(dest, x2apic)), expected) << "destination " << dest << " x2apic " << x2apic;
    }
  }
}

// An xAPIC ID rewritten before the snapshot: the bus restored over the
// restored APICs must route to the new ID, as the one saved did.
TEST(ApicBusSnapshot, RoundTripsRenumbering) {
  Bus b({0, 1, 2}, false);
  b.bus->note_write(b.apics[1]->mmio_write(REG_ID, 4, 7u << 24, kNow));
  ASSERT_EQ(b.to(physical(7)), (std::vector<unsigned>{1}));

  // The machine builds its bus before it loads the APICs' state into them.
  Bus restored({0, 1, 2}, false);
  for (unsigned i = 0; i < 3; ++i) load_state_bytes(*restored.apics[i], save_state_bytes(*b.apics[i]));
  const std::string bytes = save_state_bytes(*b.bus);
  load_state_bytes(*restored.bus, bytes);
  EXPECT_EQ(save_state_bytes(*restored.bus), bytes);

  for (uint32_t dest : {0u, 1u, 2u, 7u, 0xffu})
    EXPECT_EQ(restored.to(physical(dest)), b.to(physical(dest))) << dest;
  EXPECT_EQ(restored.to(physical(7)), (std::vector<unsigned>{1}));
}

}  // namespace
}  // namespace topolab
