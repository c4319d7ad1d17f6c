// SPDX-License-Identifier: GPL-2.0-or-later
// fw_cfg's legacy I/O interface (docs/specs/fw_cfg.txt), driven by a program
// of selector writes (8, 16 and 32 bits), data reads of every width at
// either port, and data-port writes, over a configuration the input picks.
// Invariants: after a selector write, byte reads return the item's bytes in
// order and then 0 (an unknown key is an empty item; bit 14, the write
// channel, does not change what is read); wider reads return 0 and consume
// nothing; data-port writes change nothing; and the items say what the spec
// says: "QEMU", ID 1 (no DMA), RAM_SIZE, NB_CPUS and MAX_CPUS little-endian,
// an empty file directory.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "devices/fw_cfg.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/fuzz_input.h"

using namespace topolab;

namespace {

std::vector<uint8_t> le(uint64_t v, unsigned bytes) {
  std::vector<uint8_t> out;
  for (unsigned i = 0; i < bytes; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
  return out;
}

// What the spec says item `key` holds.
std::vector<uint8_t> expected_item(uint16_t key, const FwCfg::Config& c) {
  switch (key & ~0x4000) {
    case FwCfg::kSignature: return {'Q', 'E', 'M', 'U'};
    case FwCfg::kId: return le(1, 4);
    case FwCfg::kRamSize: return le(c.ram_size, 8);
    case FwCfg::kNbCpus: return le(c.nb_cpus, 2);
    case FwCfg::kMaxCpus: return le(c.apic_id_limit, 2);
    case FwCfg::kFileDir: return {0, 0, 0, 0};
    default: return {};
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  FwCfg::Config config{.nb_cpus = in.take<uint16_t>(), .apic_id_limit = in.take<uint16_t>(), .ram_size = in.take<uint64_t>()};
  FwCfg dev(config);
  uint16_t selected = FwCfg::kSignature;  // the reset selection
  size_t offset = 0;
  for (int ops = 0; !in.done() && ops < 4096; ++ops) {
    const uint8_t op = in.take<uint8_t>();
    const unsigned sizes[] = {1, 2, 4, 1};
    const unsigned width = sizes[(op >> 2) & 3];
    const uint16_t port = (op >> 4) & 1;
    switch (op & 3) {
      case 0: {  // selector write: the low 8 or 16 bits select, and rewind
        const uint32_t value = in.take<uint32_t>();
        dev.write(0, width, value);
        selected = static_cast<uint16_t>(width == 1 ? value & 0xff : value & 0xffff);
        offset = 0;
        break;
      }
      case 1:
      case 3: {  // data read
        const uint32_t got = dev.read(port, width);
        const std::vector<uint8_t> item = expected_item(selected, config);
        uint32_t want = 0;
        if (width == 1) {
          want = offset < item.size() ? item[offset] : 0;
          ++offset;
        }
        FUZZ_CHECK(got == want, "key {:#x} byte {} (width {}, port {}): read {:#x}, the item has {:#x}", selected,
                   offset - (width == 1), width, port, got, want);
        break;
      }
      case 2:  // data-port write: ignored
        dev.write(1, width, in.take<uint32_t>());
        break;
    }
  }
  return 0;
}
