// SPDX-License-Identifier: GPL-2.0-or-later
#include "firmware/boot.h"

#include "firmware/linux_boot.h"
#include "firmware/pvh_boot.h"

namespace topolab {

BootFiles read_boot_files(const std::string& path, const std::string& image_name, const std::string& cmdline,
                          const std::vector<std::string>& initrd, uint64_t max_bytes) {
  BootFiles files;
  files.image = read_image_file(path, max_bytes);
  files.protocol = is_linux_image(files.image) ? BootProtocol::Linux
                   : is_pvh_image(files.image) ? BootProtocol::Pvh
                                               : BootProtocol::Multiboot;
  files.image_name = image_name;
  files.cmdline = cmdline;
  if (files.is_linux_kernel()) {
    if (initrd.size() > 1) throw ImageError("a Linux kernel takes one -initrd file");
    if (!initrd.empty()) files.initrd.push_back({"", read_image_file(initrd.front(), max_bytes)});
    return files;
  }
  for (const std::string& spec : initrd) {
    // QEMU's -initrd "FILE ARGS": the file name ends at the first space.
    files.initrd.push_back({spec, read_image_file(spec.substr(0, spec.find(' ')), max_bytes)});
  }
  return files;
}

BootEntry load_boot_image(GuestRam& ram, const BootFiles& files, uint32_t rsdp) {
  const std::span<const uint8_t> initrd =
      files.initrd.empty() ? std::span<const uint8_t>{} : std::span<const uint8_t>{files.initrd.front().bytes};
  switch (files.protocol) {
    case BootProtocol::Linux: {
      const LinuxBoot boot = load_linux(ram, files.image, files.cmdline, initrd);
      return {BootProtocol::Linux, boot.entry, boot.boot_params, boot.gdt, boot.gdt_limit};
    }
    case BootProtocol::Pvh: {
      const PvhBoot boot = load_pvh(ram, files.image, files.cmdline, initrd, rsdp);
      return {BootProtocol::Pvh, boot.entry, boot.start_info};
    }
    case BootProtocol::Multiboot: break;
  }
  const MultibootBoot boot = load_multiboot(ram, files.image, files.image_name, files.cmdline, files.initrd);
  return {BootProtocol::Multiboot, boot.entry, boot.info_address};
}

}  // namespace topolab
