// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/pc_testdev.h"

#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "base/state_archive.h"

namespace topolab {
namespace {

struct Lines {
  std::vector<std::pair<unsigned, bool>> seen;
  PcTestdev dev{[this](unsigned line, bool level) { seen.emplace_back(line, level); }};
};

TEST(PcTestdev, ScratchRegisterKeepsEachAccessAtItsByteOffset) {
  Lines t;
  t.dev.write(0, 4, 0x11223344);
  EXPECT_EQ(t.dev.read(0, 4), 0x11223344u);
  EXPECT_EQ(t.dev.read(1, 2), 0x2233u);
  t.dev.write(1, 2, 0xabcd);
  EXPECT_EQ(t.dev.scratch(), 0x11abcd44u);
  t.dev.write(3, 1, 0x1ff);  // only the byte
  EXPECT_EQ(t.dev.scratch(), 0xffabcd44u);
  // ioport-byte at 0xE8 is the same register.
  EXPECT_EQ(t.dev.read(PcTestdev::kIoportByte, 4), 0xffabcd44u);
  t.dev.write(PcTestdev::kIoportByte + 2, 1, 0x00);
  EXPECT_EQ(t.dev.read(0, 4), 0xff00cd44u);
  t.dev.write(3, 4, 0x12345678);  // runs past the register: the bytes that fit
  EXPECT_EQ(t.dev.scratch(), 0x7800cd44u);
}

TEST(PcTestdev, FlushPageIsWriteOnlyAndChangesNothing) {
  Lines t;
  t.dev.write(0, 4, 7);
  t.dev.write(PcTestdev::kFlushPage, 4, 0x123000);
  EXPECT_EQ(t.dev.scratch(), 7u);
  EXPECT_EQ(t.dev.read(PcTestdev::kFlushPage, 4), 0xffffffffu);
}

TEST(PcTestdev, IrqLinePortsDriveIsaLines) {
  Lines t;
  PortDevice& lines = t.dev.irq_lines();
  lines.write(0x0e, 1, 1);
  lines.write(0x0e, 1, 0);
  lines.write(0x00, 1, 0x80);
  lines.write(0x17, 1, 1);
  lines.write(0x0e, 2, 1);   // QEMU: byte accesses only
  lines.write(0x18, 1, 1);   // past the 24 lines
  EXPECT_EQ(t.seen, (std::vector<std::pair<unsigned, bool>>{{14, true}, {14, false}, {0, true}, {23, true}}));
  EXPECT_EQ(lines.read(0, 1), 0xffffffffu);
}

TEST(PcTestdev, IomemIsLittleEndianScratchAndBoundsChecked) {
  Lines t;
  t.dev.iomem_write(0x10, 4, 0xdeadbeef);
  EXPECT_EQ(t.dev.iomem_read(0x10, 1), 0xefu);
  EXPECT_EQ(t.dev.iomem_read(0x12, 2), 0xdeadu);
  t.dev.iomem_write(PcTestdev::kIomemSize - 8, 8, 0x0102030405060708ull);
  EXPECT_EQ(t.dev.iomem_read(PcTestdev::kIomemSize - 8, 8), 0x0102030405060708ull);
  t.dev.iomem_write(PcTestdev::kIomemSize - 2, 4, 1);  // would run past the end: dropped
  EXPECT_EQ(t.dev.iomem_read(PcTestdev::kIomemSize - 2, 4), 0u);
  EXPECT_EQ(t.dev.iomem_read(~0ull, 4), 0u);
}

TEST(PcTestdevSnapshot, RoundTripsScratchAndIomem) {
  Lines t;
  t.dev.write(0, 4, 0x11223344);
  t.dev.iomem_write(0x10, 4, 0xdeadbeef);
  t.dev.iomem_write(PcTestdev::kIomemSize - 8, 8, 0x0102030405060708ull);
  const std::string bytes = save_state_bytes(t.dev);
  Lines restored;
  load_state_bytes(restored.dev, bytes);
  EXPECT_EQ(save_state_bytes(restored.dev), bytes);

  const auto run = [](Lines& l) {
    std::vector<uint64_t> seen{l.dev.read(0, 4), l.dev.read(PcTestdev::kIoportByte + 1, 2)};
    for (uint64_t offset = 0; offset < PcTestdev::kIomemSize; offset += 8) seen.push_back(l.dev.iomem_read(offset, 8));
    l.dev.irq_lines().write(0x0e, 1, 1);
    return seen;
  };
  const std::vector<uint64_t> seen = run(t);
  EXPECT_EQ(seen[0], 0x11223344u);
  EXPECT_EQ(run(restored), seen);
  EXPECT_EQ(restored.seen, (std::vector<std::pair<unsigned, bool>>{{14, true}}));
}

}  // namespace
}  // namespace topolab
