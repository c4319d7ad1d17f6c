// SPDX-License-Identifier: GPL-2.0-or-later
#include "firmware/acpi.h"

#include <algorithm>
#include <iterator>
#include <cstring>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "base/bytes.h"

namespace topolab {

namespace {

// System description table header (§5.2.6), shared by every table but the RSDP.
constexpr uint32_t kHeaderSize = 36;
constexpr uint32_t kHeaderLength = 4, kHeaderRevision = 8, kHeaderChecksum = 9, kHeaderOemId = 10,
                   kHeaderOemTableId = 16, kHeaderOemRevision = 24, kHeaderCreatorId = 28,
                   kHeaderCreatorRevision = 32;
constexpr std::string_view kOemId = "TOPOLB";        // 6 bytes
constexpr std::string_view kOemTableId = "TOPOLAB ";  // 8 bytes
constexpr std::string_view kCreatorId = "TPLB";
constexpr uint32_t kOemRevision = 1, kCreatorRevision = 1;

// RSDP, ACPI 1.0 form (§5.2.5.3): the checksum covers its 20 bytes.
constexpr std::string_view kRsdpSignature = "RSD PTR ";
constexpr uint32_t kRsdpSize = 20;
constexpr uint32_t kRsdpChecksum = 8, kRsdpOemId = 9, kRsdpRevision = 15, kRsdpRsdtAddress = 16;
constexpr uint32_t kRsdpAlignment = 16;  // §5.2.5.1: found on 16-byte boundaries
constexpr uint32_t kTableAlignment = 16;

constexpr uint8_t kRsdtRevision = 1;  // §5.2.7

// FADT (§5.2.9, Table 5.9), ACPI 6.0 layout.
constexpr uint8_t kFadtRevision = 6, kFadtMinor = 0;
constexpr uint32_t kFadtSize = 276;
constexpr uint32_t kFadtFirmwareCtrl = 36, kFadtDsdt = 40, kFadtSciInt = 46, kFadtSmiCmd = 48,
                   kFadtPm1aEvtBlk = 56, kFadtPm1aCntBlk = 64, kFadtPmTmrBlk = 76, kFadtPm1EvtLen = 88,
                   kFadtPm1CntLen = 89, kFadtPmTmrLen = 91, kFadtPLvl2Lat = 96, kFadtPLvl3Lat = 98,
                   kFadtCentury = 108, kFadtIapcBootArch = 109, kFadtFlags = 112, kFadtResetReg = 116, kFadtResetValue = 128,
                   kFadtMinorVersion = 131, kFadtXPm1aEvtBlk = 148, kFadtXPm1aCntBlk = 172, kFadtXPmTmrBlk = 208;
constexpr uint32_t kFadtFlagWbinvd = 1u << 0;
constexpr uint32_t kFadtFlagProcC1 = 1u << 2;
constexpr uint32_t kFadtFlagPwrButton = 1u << 4;  // no fixed-feature power button
constexpr uint32_t kFadtFlagSlpButton = 1u << 5;  // no fixed-feature sleep button
constexpr uint32_t kFadtFlagResetRegSup = 1u << 10;
// P_LVL2_LAT > 100 and P_LVL3_LAT > 1000: no C2, no C3 (§5.2.9, as QEMU).
constexpr uint16_t kNoC2Latency = 0xfff, kNoC3Latency = 0x3e9;
// Generic Address Structure (§5.2.3.2): space 1 is system I/O.
constexpr uint8_t kGasSystemIo = 1;
constexpr uint8_t kGasAccessByte = 1;

// FACS (§5.2.10, Table 5.14): 64 bytes on a 64-byte boundary, no checksum.
constexpr uint32_t kFacsSize = 64, kFacsAlignment = 64, kFacsLength = 4, kFacsVersion = 32;
constexpr uint8_t kFacsVersionValue = 2;

// The DSDT's AML (§19.6): `Name (\_S5, Package (4) { 0, 0, 0, 0 })`, the
// soft-off sleep type QEMU's pc gives PIIX4 (SLP_TYP 0 powers off).
constexpr uint8_t kDsdtAml[] = {0x08, '\\', '_', 'S', '5', '_', 0x12, 0x06, 0x04, 0x00, 0x00, 0x00, 0x00};
// IA-PC boot architecture flags (§5.2.9.3): a COM port at 0x3F8 is an
// undiscoverable legacy device; there is no 8042 and no VGA. The CMOS RTC
// (devices/cmos_rtc.h) is there, with its century at CMOS 0x32 as QEMU's
// FADT says (Linux registers rtc_cmos only when the flag says so).
constexpr uint16_t kIapcLegacyDevices = 1u << 0;
constexpr uint16_t kIapcVgaNotPresent = 1u << 2;
constexpr uint8_t kCmosCenturyIndex = 0x32;

constexpr uint8_t kDsdtRevision = 2;  // §5.2.11.1: 2 = 64-bit AML integers

// MADT (§5.2.12, Table 5.19). Revision 3 is ACPI 4.0's, the first with
// x2APIC entries and the last before Online Capable changed what a
// disabled entry means.
constexpr uint8_t kMadtRevision = 3;
constexpr uint32_t kMadtLocalApicAddress = 36, kMadtFlags = 40, kMadtEntries = 44;
constexpr uint32_t kLocalApicDefaultBase = memory_map::kLocalApicBase;
constexpr uint32_t kMadtPcatCompat = 1u << 0;  // dual 8259s are present (and masked)
constexpr uint8_t kMadtTypeLocalApic = 0, kMadtLocalApicLength = 8;      // §5.2.12.2
constexpr uint8_t kMadtTypeLocalX2Apic = 9, kMadtLocalX2ApicLength = 16;  // §5.2.12.12
constexpr uint32_t kLocalApicFlagEnabled = 1u << 0;  // Table 5.23
constexpr uint8_t kMadtTypeIoApic = 1, kMadtIoApicLength = 12;               // §5.2.12.3
constexpr uint8_t kMadtTypeSourceOverride = 2, kMadtSourceOverrideLength = 10;  // §5.2.12.5
// MPS INTI flags (Table 5.26): active high (01b), level triggered (11b << 2).
constexpr uint16_t kIntiActiveHighLevel = 0x1 | (0x3 << 2);
// QEMU's pc: ISA IRQ 0 (the PIT) is on GSI 2; the PCI interrupt lines
// (IRQs 5, 9, 10, 11, ACPI_BUILD_PCI_IRQS; 9 is also the SCI) are level
// triggered, active high.
struct SourceOverride {
  uint8_t irq;
  uint32_t gsi;
  uint16_t flags;
};
constexpr SourceOverride kSourceOverrides[] = {
    {0, 2, 0}, {5, 5, kIntiActiveHighLevel}, {9, 9, kIntiActiveHighLevel},
    {10, 10, kIntiActiveHighLevel}, {11, 11, kIntiActiveHighLevel}};
// The largest APIC ID a Processor Local APIC entry may carry; 0xFF is the
// xAPIC broadcast ID, so QEMU and we switch to x2APIC entries at 255.
constexpr uint32_t kMaxLocalApicEntryId = 0xfe;

// SRAT (§5.2.16), as QEMU's pc builds it (hw/i386/acpi-build.c build_srat):
// revision 1, a reserved word of 1 "for backward compatibility", one
// processor entry per possible CPU, then memory entries.
constexpr uint8_t kSratRevision = 1;
constexpr uint32_t kSratEntries = kHeaderSize + 12;
constexpr uint8_t kSratTypeLocalApic = 0, kSratLocalApicLength = 16;   // §5.2.16.1
constexpr uint8_t kSratTypeMemory = 1, kSratMemoryLength = 40;         // §5.2.16.2
constexpr uint8_t kSratTypeLocalX2Apic = 2, kSratLocalX2ApicLength = 24;  // §5.2.16.3
constexpr uint32_t kSratFlagEnabled = 1u << 0;
// QEMU's memory entries leave out the legacy hole [640 KiB, 1 MiB).
constexpr uint64_t kLowMemoryEnd = 640 * 1024, kHighMemoryStart = 1024 * 1024;

// SLIT (§5.2.17): revision 1, the node count, then the matrix row by row.
constexpr uint8_t kSlitRevision = 1;
constexpr uint32_t kSlitEntries = kHeaderSize + 8;

// HMAT (ACPI 6.3 §5.2.27), with -machine hmat=on, as QEMU 7.2 builds it
// (hw/acpi/hmat.c): revision 2, a reserved u32, then the structures.
constexpr uint8_t kHmatRevision = 2;
constexpr uint32_t kHmatEntries = kHeaderSize + 4;
// Memory Proximity Domain Attributes (§5.2.27.3): one per node. A node
// with no initiator gets flags 0 and QEMU's MAX_NODES (128) in the field.
constexpr uint16_t kHmatTypeProximity = 0;
constexpr uint32_t kHmatProximityLength = 40;
constexpr uint16_t kHmatInitiatorValid = 1u << 0;
constexpr uint32_t kHmatNoInitiator = kMaxNumaNodes;
// System Locality Latency and Bandwidth Information (§5.2.27.4): 32 bytes
// to the entry base unit, then the initiator and target lists and the
// 16-bit entries.
constexpr uint16_t kHmatTypeLocality = 1;
constexpr uint32_t kHmatLocalityHeader = 32;
constexpr uint64_t kPsPerNs = 1000, kBytesPerMb = 1 << 20;
// Memory Side Cache Information (§5.2.27.5), no SMBIOS handles.
constexpr uint16_t kHmatTypeCache = 2;
constexpr uint32_t kHmatCacheLength = 32;

using memory_map::kAcpiPm1CntOffset;
using memory_map::kAcpiPm1EvtOffset;
using memory_map::kAcpiPmBase;
using memory_map::kAcpiPmTmrOffset;
using memory_map::kAcpiSciIrq;
constexpr uint8_t kAcpiIoApicId = memory_map::kIoApicId;
constexpr uint16_t kAcpiResetPort = memory_map::kResetControlPort;
constexpr uint8_t kAcpiResetValue = memory_map::kResetControlValue;


// Tables are assembled in a host buffer that mirrors guest memory from `base`.
class Image {
 public:
  explicit Image(uint32_t base, uint32_t size) : base_(base), bytes_(size, 0) {}

  template <typename T>
  void put(uint32_t addr, T v) {
    for (size_t i = 0; i < sizeof(T); ++i) bytes_.at(addr - base_ + i) = static_cast<uint8_t>(uint64_t(v) >> (8 * i));
  }
  void put_text(uint32_t addr, std::string_view s) {
    std::copy(s.begin(), s.end(), bytes_.begin() + (addr - base_));
  }
  // The byte at `at` makes [addr, addr + len) sum to zero mod 256.
  void checksum(uint32_t addr, uint32_t len, uint32_t at) {
    uint8_t sum = 0;
    for (uint32_t i = 0; i < len; ++i) sum += bytes_.at(addr - base_ + i);
    bytes_.at(at - base_) = static_cast<uint8_t>(bytes_.at(at - base_) - sum);
  }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  uint32_t base_;
  std::vector<uint8_t> bytes_;
};

void put_header(Image& img, uint32_t addr, std::string_view signature, uint32_t length, uint8_t revision) {
  img.put_text(addr, signature);
  img.put<uint32_t>(addr + kHeaderLength, length);
  img.put<uint8_t>(addr + kHeaderRevision, revision);
  img.put_text(addr + kHeaderOemId, kOemId);
  img.put_text(addr + kHeaderOemTableId, kOemTableId);
  img.put<uint32_t>(addr + kHeaderOemRevision, kOemRevision);
  img.put_text(addr + kHeaderCreatorId, kCreatorId);
  img.put<uint32_t>(addr + kHeaderCreatorRevision, kCreatorRevision);
}

// Call once the table's body is complete.
void seal(Image& img, uint32_t addr, uint32_t length) { img.checksum(addr, length, addr + kHeaderChecksum); }

uint32_t madt_size(const Topology& topo) {
  uint32_t size = kMadtEntries;
  for (unsigned i = 0; i < topo.max_cpus(); ++i)
    size += topo.apic_id(i) <= kMaxLocalApicEntryId ? kMadtLocalApicLength : kMadtLocalX2ApicLength;
  return size + kMadtIoApicLength + std::size(kSourceOverrides) * kMadtSourceOverrideLength;
}

void put_madt(Image& img, uint32_t addr, uint32_t length, const Topology& topo) {
  put_header(img, addr, "APIC", length, kMadtRevision);
  img.put<uint32_t>(addr + kMadtLocalApicAddress, kLocalApicDefaultBase);
  img.put<uint32_t>(addr + kMadtFlags, kMadtPcatCompat);
  uint32_t at = addr + kMadtEntries;
  for (unsigned uid = 0; uid < topo.max_cpus(); ++uid) {
    uint32_t apic_id = topo.apic_id(uid);
    uint32_t flags = uid < topo.cpus() ? kLocalApicFlagEnabled : 0;
    if (apic_id <= kMaxLocalApicEntryId) {
      // uid < 255 here too: APIC IDs never fall below their CPU index.
      img.put<uint8_t>(at, kMadtTypeLocalApic);
      img.put<uint8_t>(at + 1, kMadtLocalApicLength);
      img.put<uint8_t>(at + 2, static_cast<uint8_t>(uid));  // ACPI Processor UID
      img.put<uint8_t>(at + 3, static_cast<uint8_t>(apic_id));
      img.put<uint32_t>(at + 4, flags);
      at += kMadtLocalApicLength;
    } else {
      img.put<uint8_t>(at, kMadtTypeLocalX2Apic);
      img.put<uint8_t>(at + 1, kMadtLocalX2ApicLength);
      img.put<uint32_t>(at + 4, apic_id);  // after 2 reserved bytes
      img.put<uint32_t>(at + 8, flags);
      img.put<uint32_t>(at + 12, uid);  // ACPI Processor UID
      at += kMadtLocalX2ApicLength;
    }
  }
  img.put<uint8_t>(at, kMadtTypeIoApic);
  img.put<uint8_t>(at + 1, kMadtIoApicLength);
  img.put<uint8_t>(at + 2, kAcpiIoApicId);
  img.put<uint32_t>(at + 4, static_cast<uint32_t>(memory_map::kIoApicBase));
  img.put<uint32_t>(at + 8, 0);  // global system interrupt base
  at += kMadtIoApicLength;
  for (const SourceOverride& o : kSourceOverrides) {
    img.put<uint8_t>(at, kMadtTypeSourceOverride);
    img.put<uint8_t>(at + 1, kMadtSourceOverrideLength);
    img.put<uint8_t>(at + 2, 0);  // bus: ISA
    img.put<uint8_t>(at + 3, o.irq);
    img.put<uint32_t>(at + 4, o.gsi);
    img.put<uint16_t>(at + 8, o.flags);
    at += kMadtSourceOverrideLength;
  }
  seal(img, addr, length);
}

// One Memory Affinity structure (§5.2.16.2).
struct SratMemory {
  uint64_t base = 0, length = 0;
  uint32_t node = 0, flags = 0;
};

// QEMU 7.2's memory entries (build_srat): the nodes' memory laid end to
// end from 0 in node order, as the backends are mapped; the range that
// crosses 640 KiB is cut there and goes on at 1 MiB, the one that crosses
// the top of RAM below 4 GiB goes on at 4 GiB; a node without memory has no
// entry; and the list is padded with disabled zero entries to nodes + 2.
std::vector<SratMemory> srat_memory(const NumaConfig& numa, uint64_t below_4g) {
  std::vector<SratMemory> out;
  uint64_t next_base = 0;
  for (unsigned node = 0; node < numa.node_count(); ++node) {
    uint64_t base = next_base, length = numa.nodes()[node].memory_bytes;
    next_base = base + length;
    if (base <= kLowMemoryEnd && next_base > kLowMemoryEnd) {
      length -= next_base - kLowMemoryEnd;
      if (length > 0) out.push_back({base, length, node, kSratFlagEnabled});
      if (next_base <= kHighMemoryStart) {  // the rare node that ends inside the hole
        next_base = kHighMemoryStart;
        continue;
      }
      base = kHighMemoryStart;
      length = next_base - kHighMemoryStart;
    }
    if (base <= below_4g && next_base > below_4g) {
      length -= next_base - below_4g;
      if (length > 0) out.push_back({base, length, node, kSratFlagEnabled});
      base = uint64_t{1} << 32;
      length = next_base - below_4g;
      next_base = base + length;
    }
    if (length > 0) out.push_back({base, length, node, kSratFlagEnabled});
  }
  while (out.size() < numa.node_count() + 2) out.push_back({});
  return out;
}

uint32_t srat_size(const Topology& topo, const NumaConfig& numa, uint64_t below_4g) {
  uint32_t size = kSratEntries;
  for (unsigned i = 0; i < topo.max_cpus(); ++i)
    size += topo.apic_id(i) <= kMaxLocalApicEntryId ? kSratLocalApicLength : kSratLocalX2ApicLength;
  return size + static_cast<uint32_t>(srat_memory(numa, below_4g).size()) * kSratMemoryLength;
}

void put_srat(Image& img, uint32_t addr, uint32_t length, const Topology& topo, const NumaConfig& numa,
              uint64_t below_4g) {
  put_header(img, addr, "SRAT", length, kSratRevision);
  img.put<uint32_t>(addr + kHeaderSize, 1);  // reserved, 1 as QEMU and the ACPI 1.0 era
  uint32_t at = addr + kSratEntries;
  for (unsigned i = 0; i < topo.max_cpus(); ++i) {
    // Every possible CPU is enabled here, as QEMU: the MADT says which
    // are present.
    const uint32_t apic_id = topo.apic_id(i), node = numa.node_of_cpu(i);
    if (apic_id <= kMaxLocalApicEntryId) {
      img.put<uint8_t>(at, kSratTypeLocalApic);
      img.put<uint8_t>(at + 1, kSratLocalApicLength);
      img.put<uint8_t>(at + 2, static_cast<uint8_t>(node));  // proximity domain [7:0]
      img.put<uint8_t>(at + 3, static_cast<uint8_t>(apic_id));
      img.put<uint32_t>(at + 4, kSratFlagEnabled);
      // [8] local SAPIC EID, [9..11] proximity domain [31:8] (nodes < 128),
      // [12..15] clock domain: 0.
      at += kSratLocalApicLength;
    } else {
      img.put<uint8_t>(at, kSratTypeLocalX2Apic);
      img.put<uint8_t>(at + 1, kSratLocalX2ApicLength);
      img.put<uint32_t>(at + 4, node);
      img.put<uint32_t>(at + 8, apic_id);
      img.put<uint32_t>(at + 12, kSratFlagEnabled);
      at += kSratLocalX2ApicLength;
    }
  }
  for (const SratMemory& m : srat_memory(numa, below_4g)) {
    img.put<uint8_t>(at, kSratTypeMemory);
    img.put<uint8_t>(at + 1, kSratMemoryLength);
    img.put<uint32_t>(at + 2, m.node);
    img.put<uint64_t>(at + 8, m.base);
    img.put<uint64_t>(at + 16, m.length);
    img.put<uint32_t>(at + 28, m.flags);
    at += kSratMemoryLength;
  }
  seal(img, addr, length);
}

uint32_t slit_size(const NumaConfig& numa) { return kSlitEntries + numa.node_count() * numa.node_count(); }

void put_slit(Image& img, uint32_t addr, const NumaConfig& numa) {
  const uint32_t length = slit_size(numa);
  put_header(img, addr, "SLIT", length, kSlitRevision);
  img.put<uint64_t>(addr + kHeaderSize, numa.node_count());
  uint32_t at = addr + kSlitEntries;
  for (unsigned from = 0; from < numa.node_count(); ++from)
    for (unsigned to = 0; to < numa.node_count(); ++to) img.put<uint8_t>(at++, numa.distance(from, to));
  seal(img, addr, length);
}

// QEMU's initiators: the nodes with CPUs, in node order.
std::vector<uint32_t> hmat_initiators(const NumaConfig& numa) {
  std::vector<uint32_t> list;
  for (unsigned n = 0; n < numa.node_count(); ++n)
    if (!numa.nodes()[n].cpus.empty()) list.push_back(n);
  return list;
}

uint32_t hmat_locality_size(uint32_t initiators, uint32_t targets) {
  return kHmatLocalityHeader + 4 * initiators + 4 * targets + 2 * initiators * targets;
}

uint32_t hmat_size(const NumaConfig& numa) {
  const Hmat& hmat = numa.hmat();
  const uint32_t initiators = static_cast<uint32_t>(hmat_initiators(numa).size());
  return kHmatEntries + numa.node_count() * kHmatProximityLength +
         static_cast<uint32_t>(hmat.localities.size()) * hmat_locality_size(initiators, numa.node_count()) +
         static_cast<uint32_t>(hmat.caches.size()) * kHmatCacheLength;
}

void put_hmat(Image& img, uint32_t addr, const NumaConfig& numa) {
  const Hmat& hmat = numa.hmat();
  const uint32_t length = hmat_size(numa), nodes = numa.node_count();
  put_header(img, addr, "HMAT", length, kHmatRevision);
  uint32_t at = kHmatEntries + addr;
  for (uint32_t n = 0; n < nodes; ++n) {
    const std::optional<unsigned> initiator = hmat.initiator.at(n);
    img.put<uint16_t>(at, kHmatTypeProximity);
    img.put<uint32_t>(at + 4, kHmatProximityLength);
    img.put<uint16_t>(at + 8, initiator ? kHmatInitiatorValid : 0);
    img.put<uint32_t>(at + 12, initiator ? *initiator : kHmatNoInitiator);
    img.put<uint32_t>(at + 16, n);  // the memory's domain; the rest is reserved
    at += kHmatProximityLength;
  }
  const std::vector<uint32_t> initiators = hmat_initiators(numa);
  const uint32_t s = static_cast<uint32_t>(initiators.size());
  for (const HmatLocality& l : hmat.localities) {
    img.put<uint16_t>(at, kHmatTypeLocality);
    img.put<uint32_t>(at + 4, hmat_locality_size(s, nodes));
    img.put<uint8_t>(at + 8, l.hierarchy);  // flags [3:0]: the memory hierarchy
    img.put<uint8_t>(at + 9, l.data_type);
    img.put<uint32_t>(at + 12, s);
    img.put<uint32_t>(at + 16, nodes);  // every node is a target
    // The entry base unit in ps or MB/s. QEMU computes it in 32 bits, so a
    // latency base of 10^7 ns or more (and its "no latency" base,
    // UINT64_MAX) wraps; kept, as the guest reads QEMU's number.
    const uint32_t unit = static_cast<uint32_t>(l.is_latency() ? l.base * kPsPerNs : l.base / kBytesPerMb);
    img.put<uint64_t>(at + 24, unit);
    uint32_t list = at + kHmatLocalityHeader;
    for (uint32_t i = 0; i < s; ++i) img.put<uint32_t>(list + 4 * i, initiators[i]);
    list += 4 * s;
    for (uint32_t t = 0; t < nodes; ++t) img.put<uint32_t>(list + 4 * t, t);
    list += 4 * nodes;
    // Entries not given stay 0 ("not provided"); a value is value / base,
    // cut to 16 bits as QEMU does.
    for (const HmatLocality::Entry& e : l.entries) {
      const uint32_t row = static_cast<uint32_t>(
          std::find(initiators.begin(), initiators.end(), e.initiator) - initiators.begin());
      img.put<uint16_t>(list + 2 * (row * nodes + e.target), static_cast<uint16_t>(e.value / l.base));
    }
    at += hmat_locality_size(s, nodes);
  }
  std::vector<unsigned> levels(nodes, 0);
  for (const HmatCache& c : hmat.caches) ++levels.at(c.node);
  for (const HmatCache& c : hmat.caches) {
    img.put<uint16_t>(at, kHmatTypeCache);
    img.put<uint32_t>(at + 4, kHmatCacheLength);
    img.put<uint32_t>(at + 8, c.node);
    img.put<uint64_t>(at + 16, c.size);
    // Cache attributes: total levels [3:0], this level [7:4],
    // associativity [11:8], write policy [15:12], line size [31:16].
    img.put<uint32_t>(at + 24, levels[c.node] | c.level << 4 | uint32_t{c.associativity} << 8 |
                                   uint32_t{c.policy} << 12 | uint32_t{c.line} << 16);
    at += kHmatCacheLength;  // then 2 reserved bytes and 0 SMBIOS handles
  }
  seal(img, addr, length);
}

// A system-I/O Generic Address Structure (§5.2.3.2).
void put_io_gas(Image& img, uint32_t at, uint8_t bit_width, uint8_t access_size, uint16_t port) {
  img.put<uint8_t>(at, kGasSystemIo);
  img.put<uint8_t>(at + 1, bit_width);
  img.put<uint8_t>(at + 2, 0);  // bit offset
  img.put<uint8_t>(at + 3, access_size);
  img.put<uint64_t>(at + 4, port);
}

void put_fadt(Image& img, uint32_t addr, uint32_t dsdt, uint32_t facs) {
  put_header(img, addr, "FACP", kFadtSize, kFadtRevision);
  // Only the 32-bit FACS and DSDT pointers: X_FIRMWARE_CTRL and X_DSDT stay
  // 0 (§5.2.9: one of each pair, and both tables are below 4 GiB).
  img.put<uint32_t>(addr + kFadtFirmwareCtrl, facs);
  img.put<uint32_t>(addr + kFadtDsdt, dsdt);
  img.put<uint16_t>(addr + kFadtSciInt, kAcpiSciIrq);
  // SMI_CMD 0: no SMM and no legacy mode to leave; PM1_CNT.SCI_EN reads 1.
  img.put<uint32_t>(addr + kFadtSmiCmd, 0);
  img.put<uint32_t>(addr + kFadtPm1aEvtBlk, kAcpiPmBase + kAcpiPm1EvtOffset);
  img.put<uint32_t>(addr + kFadtPm1aCntBlk, kAcpiPmBase + kAcpiPm1CntOffset);
  img.put<uint32_t>(addr + kFadtPmTmrBlk, kAcpiPmBase + kAcpiPmTmrOffset);
  img.put<uint8_t>(addr + kFadtPm1EvtLen, 4);
  img.put<uint8_t>(addr + kFadtPm1CntLen, 2);
  img.put<uint8_t>(addr + kFadtPmTmrLen, 4);
  img.put<uint16_t>(addr + kFadtPLvl2Lat, kNoC2Latency);
  img.put<uint16_t>(addr + kFadtPLvl3Lat, kNoC3Latency);
  img.put<uint16_t>(addr + kFadtIapcBootArch, kIapcLegacyDevices | kIapcVgaNotPresent);
  img.put<uint8_t>(addr + kFadtCentury, kCmosCenturyIndex);
  // TMR_VAL_EXT clear: the PM timer is 24 bits wide, as PIIX4's.
  img.put<uint32_t>(addr + kFadtFlags,
                    kFadtFlagWbinvd | kFadtFlagProcC1 | kFadtFlagPwrButton | kFadtFlagSlpButton | kFadtFlagResetRegSup);
  put_io_gas(img, addr + kFadtResetReg, 8, kGasAccessByte, kAcpiResetPort);
  img.put<uint8_t>(addr + kFadtResetValue, kAcpiResetValue);
  img.put<uint8_t>(addr + kFadtMinorVersion, kFadtMinor);
  put_io_gas(img, addr + kFadtXPm1aEvtBlk, 32, 0, kAcpiPmBase + kAcpiPm1EvtOffset);
  put_io_gas(img, addr + kFadtXPm1aCntBlk, 16, 0, kAcpiPmBase + kAcpiPm1CntOffset);
  put_io_gas(img, addr + kFadtXPmTmrBlk, 32, 0, kAcpiPmBase + kAcpiPmTmrOffset);
  seal(img, addr, kFadtSize);
}

void put_facs(Image& img, uint32_t addr) {
  img.put_text(addr, "FACS");
  img.put<uint32_t>(addr + kFacsLength, kFacsSize);
  // Hardware signature, waking vectors, global lock and flags stay 0.
  img.put<uint8_t>(addr + kFacsVersion, kFacsVersionValue);
}

}  // namespace

AcpiTables build_acpi_tables(GuestRam& ram, const Topology& topology, const NumaConfig& numa, AcpiWindow window) {
  uint64_t window_end = uint64_t{window.base} + window.size;
  if (!ram.is_ram(window.base, window.size))
    throw AcpiError(fmt::format("ACPI window [{:#x}, {:#x}) is outside guest RAM ({:#x} bytes)", window.base,
                                window_end, ram.total_bytes()));
  // QEMU's below_4g_mem_size: where the first RAM range ends.
  const uint64_t below_4g = ram.regions().front().end();

  // The RSDT lists the FADT, the MADT, then with NUMA the SRAT, with
  // -numa dist the SLIT and with -machine hmat=on the HMAT (QEMU's order).
  const bool hmat = numa.enabled() && numa.hmat_enabled();
  const uint32_t rsdt_entries =
      2 + (numa.enabled() ? 1 : 0) + (numa.has_distance_table() ? 1 : 0) + (hmat ? 1 : 0);
  AcpiTables t;
  t.rsdp = align_up(window.base, kRsdpAlignment);
  t.rsdt = align_up(t.rsdp + kRsdpSize, kTableAlignment);
  uint32_t rsdt_size = kHeaderSize + rsdt_entries * 4;
  t.fadt = align_up(t.rsdt + rsdt_size, kTableAlignment);
  t.dsdt = align_up(t.fadt + kFadtSize, kTableAlignment);
  t.madt = align_up(t.dsdt + kHeaderSize + sizeof(kDsdtAml), kTableAlignment);
  uint64_t next = uint64_t{t.madt} + madt_size(topology);
  uint64_t srat_bytes = 0;
  if (numa.enabled()) {
    srat_bytes = srat_size(topology, numa, below_4g);
    t.srat = static_cast<uint32_t>(align_up(next, kTableAlignment));
    next = t.srat + srat_bytes;
  }
  if (numa.has_distance_table()) {
    t.slit = static_cast<uint32_t>(align_up(next, kTableAlignment));
    next = t.slit + slit_size(numa);
  }
  if (hmat) {
    t.hmat = static_cast<uint32_t>(align_up(next, kTableAlignment));
    next = t.hmat + hmat_size(numa);
  }
  t.facs = static_cast<uint32_t>(align_up(next, kFacsAlignment));
  uint64_t end = uint64_t{t.facs} + kFacsSize;
  if (end > window_end)
    throw AcpiError(fmt::format("ACPI tables for {} CPUs need {} bytes but the window [{:#x}, {:#x}) holds {}",
                                topology.max_cpus(), end - window.base, window.base, window_end, window.size));
  t.end = static_cast<uint32_t>(end);

  Image img(t.rsdp, t.end - t.rsdp);

  img.put_text(t.rsdp, kRsdpSignature);
  img.put_text(t.rsdp + kRsdpOemId, kOemId);
  img.put<uint8_t>(t.rsdp + kRsdpRevision, 0);  // ACPI 1.0: no length, XSDT or extended checksum
  img.put<uint32_t>(t.rsdp + kRsdpRsdtAddress, t.rsdt);
  img.checksum(t.rsdp, kRsdpSize, t.rsdp + kRsdpChecksum);

  put_header(img, t.rsdt, "RSDT", rsdt_size, kRsdtRevision);
  uint32_t entry = t.rsdt + kHeaderSize;
  for (uint32_t table : {t.fadt, t.madt, t.srat, t.slit, t.hmat})
    if (table != 0) {
      img.put<uint32_t>(entry, table);
      entry += 4;
    }
  seal(img, t.rsdt, rsdt_size);

  put_fadt(img, t.fadt, t.dsdt, t.facs);

  const uint32_t dsdt_size = kHeaderSize + sizeof(kDsdtAml);
  put_header(img, t.dsdt, "DSDT", dsdt_size, kDsdtRevision);
  for (uint32_t i = 0; i < sizeof(kDsdtAml); ++i) img.put<uint8_t>(t.dsdt + kHeaderSize + i, kDsdtAml[i]);
  seal(img, t.dsdt, dsdt_size);

  put_madt(img, t.madt, madt_size(topology), topology);
  if (t.srat) put_srat(img, t.srat, static_cast<uint32_t>(srat_bytes), topology, numa, below_4g);
  if (t.slit) put_slit(img, t.slit, numa);
  if (t.hmat) put_hmat(img, t.hmat, numa);
  put_facs(img, t.facs);

  auto out = ram.bytes(t.rsdp, img.bytes().size());
  std::copy(img.bytes().begin(), img.bytes().end(), out.begin());
  return t;
}

std::vector<AcpiTableFile> acpi_table_files(const GuestRam& ram, const AcpiTables& t) {
  std::vector<AcpiTableFile> files;
  auto add = [&](const char* name, uint32_t at, uint32_t length) {
    auto bytes = ram.bytes(at, length);
    files.push_back({fmt::format("{}.dat", name), std::vector<uint8_t>(bytes.begin(), bytes.end())});
  };
  // A table's own header says how long it is (offset 4).
  auto add_table = [&](const char* name, uint32_t at) {
    if (at != 0) add(name, at, ram.read<uint32_t>(at + 4));
  };
  add("rsdp", t.rsdp, kRsdpSize);
  add_table("rsdt", t.rsdt);
  add_table("facp", t.fadt);
  add_table("dsdt", t.dsdt);
  add("facs", t.facs, kFacsSize);
  add_table("apic", t.madt);
  add_table("srat", t.srat);
  add_table("slit", t.slit);
  add_table("hmat", t.hmat);
  return files;
}

}  // namespace topolab
