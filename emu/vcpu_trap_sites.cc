// SPDX-License-Identifier: GPL-2.0-or-later
#include "emu/vcpu_trap_sites.h"

#include "emu/vcpu_contexts.h"

#include <fmt/format.h>

#include <stdexcept>

namespace topolab::vcpu_internal {

const HookedTrap& TrapSites::hooked(uint64_t address) const {
  if (const HookedTrap* trap = at(address)) return *trap;
  throw std::logic_error(fmt::format("no trap site hooked at {:#x}", address));
}

void TrapSites::add(const TrapSite& site, void* callback) {
  if (traps_.contains(site.address)) return;
  uc_hook hook;
  check(uc_hook_add(uc_, &hook, UC_HOOK_CODE, callback, user_, site.address, site.address), "trap site hook");
  traps_.emplace(site.address, HookedTrap{site.kind, site.length, hook, site.gpr, site.system});
}

void TrapSites::add_block_hook(uint64_t start, void* callback, const char* what) {
  if (block_hooks_.contains(start)) return;
  uc_hook hook;
  check(uc_hook_add(uc_, &hook, UC_HOOK_BLOCK, callback, user_, start, start), what);
  block_hooks_.emplace(start, hook);
}

void TrapSites::remove_block_hook(uint64_t start) {
  const auto it = block_hooks_.find(start);
  if (it == block_hooks_.end()) return;
  check(uc_hook_del(uc_, it->second), "uc_hook_del (block hook)");
  block_hooks_.erase(it);
}

void TrapSites::remove_all() {
  for (const auto& [address, trap] : traps_) check(uc_hook_del(uc_, trap.hook), "uc_hook_del (trap site)");
  traps_.clear();
  for (const auto& [start, hook] : block_hooks_) check(uc_hook_del(uc_, hook), "uc_hook_del (block hook)");
  block_hooks_.clear();
}

}  // namespace topolab::vcpu_internal
