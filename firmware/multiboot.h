// SPDX-License-Identifier: GPL-2.0-or-later
// A Multiboot 1 loader with QEMU's -kernel behaviour: finds the header in
// the first 8 KiB, loads an ELF32 image by its program headers (or by the
// header's a.out-kludge addresses when flag 16 asks for it), places the
// modules and the information block after the image, and says where to
// enter. The vCPU itself is set up by the caller (Vcpu::enter_multiboot).
//
// Multiboot Specification 0.6.96, sections 3.1 (header), 3.2 (machine
// state) and 3.3 (boot information format).
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/errors.h"
#include "base/guest_ram.h"

namespace topolab {

struct MultibootModule {
  std::string cmdline;  // what the guest reads as the module's string
  std::vector<uint8_t> bytes;
};

struct MultibootBoot {
  static constexpr uint32_t kBootloaderMagic = 0x2badb002;  // EAX at entry
  uint32_t entry = 0;
  uint32_t info_address = 0;  // EBX at entry
  uint32_t image_start = 0, image_end = 0;
  uint32_t end_of_boot_data = 0;  // first byte past everything loaded
};

// Loads `image` into `ram`. `cmdline` is what -append gave; like QEMU, the
// guest sees "<image_name> <cmdline>". Throws ImageError.
MultibootBoot load_multiboot(GuestRam& ram, std::span<const uint8_t> image, const std::string& image_name,
                             const std::string& cmdline, const std::vector<MultibootModule>& modules);

// Reads a whole regular file of at most `max_bytes` (a file larger than
// guest RAM cannot fit anyway, and a FIFO or device would never end);
// throws ImageError("cannot read PATH: reason").
std::vector<uint8_t> read_image_file(const std::string& path, uint64_t max_bytes);

}  // namespace topolab
