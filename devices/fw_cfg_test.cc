// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/fw_cfg.h"

#include <gtest/gtest.h>

#include "base/state_archive.h"

namespace topolab {
namespace {

// The guest's recipe: outw key, 0x510; then inb 0x511 per byte.
std::vector<uint8_t> read_item(FwCfg& dev, uint16_t key, size_t n) {
  dev.write(0, 2, key);
  std::vector<uint8_t> out;
  for (size_t i = 0; i < n; ++i) out.push_back(static_cast<uint8_t>(dev.read(1, 1)));
  return out;
}
uint64_t read_le(FwCfg& dev, uint16_t key, size_t n) {
  uint64_t v = 0;
  auto b = read_item(dev, key, n);
  for (size_t i = 0; i < n; ++i) v |= uint64_t{b[i]} << (8 * i);
  return v;
}

// 12 CPUs as 2 sockets x 3 cores x 2 threads: APIC IDs 0-5, 8-13.
FwCfg twelve_sparse() { return FwCfg({.nb_cpus = 12, .apic_id_limit = 14, .ram_size = 128ull << 20}); }

TEST(FwCfg, EveryItemReadsBack) {
  FwCfg dev = twelve_sparse();
  EXPECT_EQ(read_item(dev, FwCfg::kSignature, 4), (std::vector<uint8_t>{'Q', 'E', 'M', 'U'}));
  EXPECT_EQ(read_le(dev, FwCfg::kId, 4), 1u);  // traditional interface, no DMA
  EXPECT_EQ(read_le(dev, FwCfg::kRamSize, 8), 128ull << 20);
  EXPECT_EQ(read_le(dev, FwCfg::kNbCpus, 2), 12u);
  EXPECT_EQ(read_le(dev, FwCfg::kMaxCpus, 2), 14u);
  EXPECT_EQ(read_item(dev, FwCfg::kFileDir, 4), (std::vector<uint8_t>{0, 0, 0, 0}));
}

TEST(FwCfg, SelectingRewinds) {
  FwCfg dev = twelve_sparse();
  EXPECT_EQ(read_item(dev, FwCfg::kSignature, 2), (std::vector<uint8_t>{'Q', 'E'}));
  EXPECT_EQ(read_item(dev, FwCfg::kSignature, 4), (std::vector<uint8_t>{'Q', 'E', 'M', 'U'}));
  read_item(dev, FwCfg::kNbCpus, 1);
  EXPECT_EQ(read_le(dev, FwCfg::kNbCpus, 2), 12u);
}

TEST(FwCfg, ReadsPastTheEndAreZero) {
  FwCfg dev = twelve_sparse();
  EXPECT_EQ(read_item(dev, FwCfg::kNbCpus, 5), (std::vector<uint8_t>{12, 0, 0, 0, 0}));
  EXPECT_EQ(read_item(dev, FwCfg::kSignature, 6), (std::vector<uint8_t>{'Q', 'E', 'M', 'U', 0, 0}));
}

TEST(FwCfg, UnknownKeysReadZero) {
  FwCfg dev = twelve_sparse();
  for (uint16_t key : {0x02, 0x04, 0x18, 0x20, 0x7fff, 0x8003})
    EXPECT_EQ(read_item(dev, key, 4), (std::vector<uint8_t>(4, 0))) << key;
}

TEST(FwCfg, ByteSelectorAndReadsFromEitherPort) {
  FwCfg dev = twelve_sparse();
  dev.write(0, 1, 0x05);  // outb works like outw for keys below 0x100
  EXPECT_EQ(dev.read(0, 1), 12u);
  EXPECT_EQ(dev.read(1, 1), 0u);
}

TEST(FwCfg, WideReadsAndDataWritesChangeNothing) {
  FwCfg dev = twelve_sparse();
  dev.write(0, 2, FwCfg::kSignature);
  EXPECT_EQ(dev.read(1, 2), 0u);  // QEMU accepts only byte reads
  dev.write(1, 1, 0x42);          // the data port is read-only
  EXPECT_EQ(dev.read(1, 1), uint32_t{'Q'});
}

TEST(FwCfg, WriteChannelBitIsIgnoredForReads) {
  FwCfg dev = twelve_sparse();
  EXPECT_EQ(read_le(dev, 0x4000 | FwCfg::kNbCpus, 2), 12u);
}

TEST(FwCfgSnapshot, RoundTripsTheSelectedItemAndTheReadPosition) {
  FwCfg dev = twelve_sparse();
  EXPECT_EQ(read_item(dev, FwCfg::kRamSize, 3), (std::vector<uint8_t>{0, 0, 0}));
  const std::string bytes = save_state_bytes(dev);
  FwCfg restored = twelve_sparse();
  load_state_bytes(restored, bytes);
  EXPECT_EQ(save_state_bytes(restored), bytes);
  // The guest reads on where it stopped: byte 3 of 128 MiB is 0x08.
  std::vector<uint32_t> seen, restored_seen;
  for (int i = 0; i < 6; ++i) {
    seen.push_back(dev.read(1, 1));
    restored_seen.push_back(restored.read(1, 1));
  }
  EXPECT_EQ(restored_seen, seen);
  EXPECT_EQ(seen[0], 0x08u);
}

}  // namespace
}  // namespace topolab
