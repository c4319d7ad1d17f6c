// SPDX-License-Identifier: GPL-2.0-or-later
#include "base/platform_devices.h"

#include <gtest/gtest.h>

namespace topolab {
namespace {

TEST(PlatformDevices, DeviceOptionsAreFoundByTheirQemuName) {
  EXPECT_EQ(platform_device_named("pci-testdev"), PlatformDevice::PciTestdev);
  EXPECT_EQ(platform_device_named("isa-debug-exit"), PlatformDevice::IsaDebugExit);
  EXPECT_FALSE(platform_device_named("pit"));  // -machine pit=, no -device
  EXPECT_FALSE(platform_device_named("edu"));
}

TEST(PlatformDevices, ASetHoldsWhatWasAdded) {
  PlatformDevices d{PlatformDevice::Pit, PlatformDevice::PcTestdev};
  EXPECT_TRUE(d.has(PlatformDevice::Pit));
  EXPECT_TRUE(d.has(PlatformDevice::PcTestdev));
  EXPECT_FALSE(d.has(PlatformDevice::PciTestdev));
  d.set(PlatformDevice::Pit, false);
  d.add(PlatformDevice::PciTestdev);
  EXPECT_EQ(d, (PlatformDevices{PlatformDevice::PcTestdev, PlatformDevice::PciTestdev}));
}

}  // namespace
}  // namespace topolab
