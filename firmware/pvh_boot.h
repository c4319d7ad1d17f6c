// SPDX-License-Identifier: GPL-2.0-or-later
// A loader for uncompressed ELF64 kernels by the PVH boot ABI (Xen's
// docs/misc/pvh.pandoc), as QEMU's -kernel vmlinux, Firecracker and
// cloud-hypervisor do: a "Xen" ELF note of type XEN_ELFNOTE_PHYS32_ENTRY
// gives a 32-bit physical entry point, and a struct hvm_start_info
// (xen/include/public/arch-x86/hvm/start_info.h, version 1) carries the
// command line, the initrd as module 0, the RSDP's address and the e820
// map. Linux has the note with CONFIG_PVH; booting it this way skips the
// bzImage's decompressor, which is most of a short boot's instructions.
// The vCPU is set up by the caller (Vcpu::enter_multiboot: PVH's entry
// state is flat 32-bit protected mode with paging off and EBX the
// start_info address, which the Multiboot state satisfies).
//
// Not supported: the Xen hypercall interface (nothing answers it, so a
// kernel must take the memory map from start_info, as Linux does when
// version >= 1), start_info flags (0), module command lines (0).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "base/errors.h"
#include "base/guest_ram.h"

namespace topolab {

struct PvhBoot {
  static constexpr uint32_t kStartInfoMagic = 0x336ec578;  // XEN_HVM_START_MAGIC_VALUE, "xEn3"
  uint32_t entry = 0;       // XEN_ELFNOTE_PHYS32_ENTRY: EIP at entry
  uint32_t start_info = 0;  // EBX at entry
  uint32_t kernel_start = 0, kernel_end = 0;  // the lowest and highest byte the PT_LOAD segments take
  uint32_t initrd_start = 0, initrd_size = 0;
  uint32_t cmdline = 0;
};

// True when `image` is a little-endian ELF64 for x86-64 with a "Xen" note
// of type 18 (XEN_ELFNOTE_PHYS32_ENTRY) in a PT_NOTE segment or an
// SHT_NOTE section. Never throws; a malformed image is just not PVH.
bool is_pvh_image(std::span<const uint8_t> image);

// Loads `image` into `ram` by its PT_LOAD segments' physical addresses,
// with `cmdline`, the (possibly empty) `initrd` and `rsdp`, the ACPI RSDP's
// guest-physical address, in the start_info. Throws ImageError with one
// line for an image that is not an ELF64 x86-64 with the PVH note, a
// truncated one, segments outside guest RAM above 1 MiB, a command line
// over Linux's COMMAND_LINE_SIZE, or an initrd that does not fit above the
// kernel.
PvhBoot load_pvh(GuestRam& ram, std::span<const uint8_t> image, const std::string& cmdline,
                 std::span<const uint8_t> initrd, uint32_t rsdp);

}  // namespace topolab
