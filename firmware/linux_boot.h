// SPDX-License-Identifier: GPL-2.0-or-later
// A loader for Linux bzImages by the x86 boot protocol (the kernel's
// Documentation/x86/boot.rst), as QEMU's -kernel does for protocol 2.02 and
// later, entering at the 32-bit entry point: it skips the real-mode setup
// code, fills boot_params (the "zero page") itself, and places the
// protected-mode kernel, the command line and the initrd. The vCPU is set
// up by the caller (Vcpu::enter_linux32).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "base/errors.h"
#include "base/guest_ram.h"

namespace topolab {

struct LinuxBoot {
  // Boot protocol 2.02 fixes the 32-bit entry's flat selectors.
  static constexpr uint16_t kBootCodeSelector = 0x10;  // __BOOT_CS
  static constexpr uint16_t kBootDataSelector = 0x18;  // __BOOT_DS

  uint32_t entry = 0;        // code32_start: EIP at entry
  uint32_t boot_params = 0;  // ESI at entry
  uint32_t gdt = 0;          // a GDT in guest RAM with the two selectors
  uint16_t gdt_limit = 0;
  uint16_t protocol = 0;     // e.g. 0x20f
  uint32_t kernel_start = 0, kernel_end = 0;  // the protected-mode kernel as loaded
  uint32_t initrd_start = 0, initrd_size = 0;
  uint32_t cmdline = 0;
};

// True when `image` carries the setup header's "HdrS" magic at 0x202, which
// is how QEMU tells a Linux kernel from a Multiboot image.
bool is_linux_image(std::span<const uint8_t> image);

// Loads `image` into `ram` with `cmdline` and the (possibly empty) `initrd`.
// Throws ImageError with one line for a truncated or unsupported image, a
// command line over the kernel's limit, or a kernel or initrd that does not
// fit in guest RAM.
LinuxBoot load_linux(GuestRam& ram, std::span<const uint8_t> image, const std::string& cmdline,
                     std::span<const uint8_t> initrd);

}  // namespace topolab
