// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/fw_cfg.h"

namespace topolab {

namespace {
constexpr uint16_t kSelectorPort = 0;
// Bit 14 of the selector asks for the write channel; reads ignore it, as
// QEMU's fw_cfg_data_read indexes entries with FW_CFG_ENTRY_MASK.
constexpr uint16_t kWriteChannel = 0x4000;
constexpr uint32_t kIdTraditionalInterface = 1u << 0;

std::vector<uint8_t> le(uint64_t v, unsigned bytes) {
  std::vector<uint8_t> out;
  for (unsigned i = 0; i < bytes; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
  return out;
}
}  // namespace

FwCfg::FwCfg(const Config& config) {
  set_item(kSignature, {'Q', 'E', 'M', 'U'});
  set_item(kId, le(kIdTraditionalInterface, 4));
  set_item(kRamSize, le(config.ram_size, 8));
  set_item(kNbCpus, le(config.nb_cpus, 2));
  set_item(kMaxCpus, le(config.apic_id_limit, 2));
  set_item(kFileDir, {0, 0, 0, 0});  // the count is big-endian, unlike every other item
}

void FwCfg::set_item(uint16_t key, std::vector<uint8_t> bytes) { items_[key] = std::move(bytes); }

uint32_t FwCfg::read(uint16_t, unsigned size) {
  if (size != 1) return 0;
  auto it = items_.find(selected_ & ~kWriteChannel);
  if (it == items_.end() || offset_ >= it->second.size()) return 0;
  return it->second[offset_++];
}

void FwCfg::write(uint16_t offset, unsigned size, uint32_t value) {
  if (offset != kSelectorPort) return;  // data-port writes: ignored, as in QEMU
  selected_ = static_cast<uint16_t>(size == 1 ? value & 0xff : value & 0xffff);
  offset_ = 0;
}

}  // namespace topolab
