// SPDX-License-Identifier: GPL-2.0-or-later
// Booting a -kernel image, whatever its protocol: the files read once, the
// protocol picked from the image's bytes as QEMU's -kernel picks it, the
// image loaded by its loader (Multiboot, a Linux bzImage, or a PVH ELF64),
// and the one state vCPU 0 starts in.
//
// QEMU tries Multiboot before PVH; no image topolab boots has both, and a
// Linux setup header or a PVH note is taken first here, so a kernel that
// also carries a Multiboot header (none of Debian's) boots as Linux.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/errors.h"
#include "base/guest_ram.h"
#include "firmware/multiboot.h"

namespace topolab {

enum class BootProtocol : uint8_t { Multiboot, Linux, Pvh };

// Everything a boot reads from files, read before the machine exists.
struct BootFiles {
  BootProtocol protocol = BootProtocol::Multiboot;
  std::vector<uint8_t> image;
  // The first word of a Multiboot guest's command line (QEMU passes the
  // image's path; topolab its file name, so where it sits changes nothing).
  std::string image_name;
  std::string cmdline;  // -append
  // -initrd: a Linux kernel's initrd (one at most), or a Multiboot image's
  // modules, each with the arguments after its file name.
  std::vector<MultibootModule> initrd;

  bool is_linux_kernel() const { return protocol != BootProtocol::Multiboot; }
};

// Reads the image at `path` and the -initrd files (QEMU's "PATH[ ARGS]" for
// Multiboot modules; a Linux kernel's initrd is one file, named whole),
// each at most `max_bytes`. Throws ImageError with one line.
BootFiles read_boot_files(const std::string& path, const std::string& image_name, const std::string& cmdline,
                          const std::vector<std::string>& initrd, uint64_t max_bytes);

// The state vCPU 0 starts in, as its protocol defines it: 32-bit protected
// mode with paging off, at `entry`, with flat segments (Linux's from the
// GDT the loader wrote) and the boot data's address in a register.
struct BootEntry {
  BootProtocol protocol = BootProtocol::Multiboot;
  uint32_t entry = 0;
  // Multiboot: the information block (EBX; EAX holds the magic). PVH: the
  // start_info (EBX). Linux: boot_params (ESI).
  uint32_t boot_data = 0;
  uint32_t gdt = 0;  // Linux only: the GDT with __BOOT_CS and __BOOT_DS
  uint16_t gdt_limit = 0;
};

// Loads `files` into `ram` by their protocol's loader; `rsdp` is the ACPI
// RSDP's address (PVH passes it in start_info). Throws ImageError.
BootEntry load_boot_image(GuestRam& ram, const BootFiles& files, uint32_t rsdp);

}  // namespace topolab
