// SPDX-License-Identifier: GPL-2.0-or-later
// The hooks the vCPU adds to its engine for single places in guest code:
// a one-instruction UC_HOOK_CODE on each trap site (an instruction the
// engine runs wrongly or cannot hook otherwise: vcpu_blocks.h TrapKind), and
// a UC_HOOK_BLOCK bound to one block for the loops it proves or skips (a
// counted loop, a jump to itself, a loop that only reads memory). A hook
// added after a block was translated is not called by that translation:
// whoever adds one has the block translated again. Part of the vCPU engine:
// only the vcpu_*.cc files include it.
#pragma once

#include "emu/vcpu_blocks.h"

#include <unicorn/unicorn.h>

#include <cstdint>
#include <unordered_map>

namespace topolab::vcpu_internal {

// A trap site with its hook.
struct HookedTrap {
  TrapKind kind;
  uint8_t length;
  uc_hook hook;
  uint8_t gpr = 0;  // MOV CR8 (TrapSite::gpr)
  SystemInstruction system = SystemInstruction::Cr0Write;  // TrapKind::System (TrapSite::system)
};

class TrapSites {
 public:
  // The callbacks get `user`.
  TrapSites(uc_engine* uc, void* user) : uc_(uc), user_(user) {}
  TrapSites(const TrapSites&) = delete;
  TrapSites& operator=(const TrapSites&) = delete;

  // The site hooked at `address` (a linear address), or nullptr.
  const HookedTrap* at(uint64_t address) const {
    const auto it = traps_.find(address);
    return it == traps_.end() ? nullptr : &it->second;
  }
  // The same for a site that must be there (the hook that stopped the run).
  const HookedTrap& hooked(uint64_t address) const;
  // Hooks `site` with `callback` (a uc_cb_hookcode_t), once.
  void add(const TrapSite& site, void* callback);

  bool has_block_hook(uint64_t start) const { return block_hooks_.contains(start); }
  // Hooks the block at `start` with `callback` (a uc_cb_hookcode_t), once.
  void add_block_hook(uint64_t start, void* callback, const char* what);
  void remove_block_hook(uint64_t start);

  // Every hook, as the translations they were made for go.
  void remove_all();

 private:
  uc_engine* const uc_;
  void* const user_;
  std::unordered_map<uint64_t, HookedTrap> traps_;      // by instruction address
  std::unordered_map<uint64_t, uc_hook> block_hooks_;  // by block start
};

}  // namespace topolab::vcpu_internal
