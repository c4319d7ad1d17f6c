// SPDX-License-Identifier: GPL-2.0-or-later
// In-memory snapshots for reverse execution (emu/machine_debug.h): every
// so many instructions the debugger keeps the machine's state
// (Machine::serialize) and the RAM pages written since the last one, so
// that going back replays from the nearest checkpoint before the target,
// not from the start of the run.
//
// RAM by page hashes: at each checkpoint every 4 KiB page the host has
// backed is hashed (emu/ram_pages.h: xxHash3, some 10 GB/s; a page never
// touched is zero and costs nothing) and only the pages whose hash moved
// are copied.
// The host gives no cheaper dirty log here: the kernel's soft-dirty bits
// are not built into this machine's kernel (CONFIG_MEM_SOFT_DIRTY), and
// write-protecting guest RAM would fault inside the engine's generated
// code. A checkpoint costs a pass over the RAM the guest has touched
// (about 10 ms per 128 MiB; a 16 GiB guest that used 300 MiB pays for 300) and
// the pages the guest wrote since the last one; the first checkpoint's
// pages are those changed since the machine was built, which a machine
// built again from the same configuration starts from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "emu/ram_pages.h"

namespace topolab {

class Machine;

struct MachineCheckpoint {
  std::vector<uint64_t> instructions;  // each vCPU's count then
  uint64_t total_instructions = 0;
  uint64_t output_position = 0;         // bytes of guest output before it
  std::string state;                    // Machine::serialize's bytes
  std::vector<std::pair<uint64_t, std::string>> pages;  // (page, 4 KiB) changed since the previous one
};

class MachineCheckpoints {
 public:
  // One checkpoint every `every_instructions` of all vCPUs together.
  explicit MachineCheckpoints(uint64_t every_instructions) : every_(every_instructions) {}

  // Between two slices. The first call is the start of history (before the
  // first slice; after a --resume, the snapshot's point): the RAM as it is
  // then, which every machine built again for a replay starts from. Then a
  // checkpoint each time one is due: only past the last one, where the
  // machine runs history for the first time.
  void between_slices(Machine& machine, uint64_t output_position);
  // The latest checkpoint strictly before `vcpu` reaches `instructions`;
  // nullopt: none (replay from the start).
  std::optional<size_t> latest_before(unsigned vcpu, uint64_t instructions) const;
  // Puts checkpoint `index` into `machine`, built again from the same
  // configuration and not yet run.
  void restore(Machine& machine, size_t index) const;
  const MachineCheckpoint& at(size_t index) const { return checkpoints_.at(index); }
  size_t size() const { return checkpoints_.size(); }
  uint64_t saved_bytes() const { return saved_bytes_; }

 private:
  void take(Machine& machine, uint64_t output_position);

  uint64_t every_;
  bool started_ = false;  // page_hashes_ hold the RAM at the start of history
  uint64_t start_instructions_ = 0;
  ram_pages::PageHashes page_hashes_;  // at the last checkpoint
  std::vector<MachineCheckpoint> checkpoints_;
  uint64_t saved_bytes_ = 0;
};

}  // namespace topolab
