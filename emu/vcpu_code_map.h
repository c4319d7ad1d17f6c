// SPDX-License-Identifier: GPL-2.0-or-later
// Which engines hold translated code on which physical page of one guest
// RAM, so that a store by one vCPU into code another vCPU's engine has
// translated reaches that engine (Unicorn patch 0004, docs/unicorn.md).
//
// Every vCPU has an engine of its own, with its own translations, and an
// engine sees only its own stores into them. All the engines that map one
// GuestRam (one machine's vCPUs) share one CodeMap (code_map_for), and
// run one at a time on one thread, so it has no lock. The engine calls it
// from its callbacks, in the middle of a run; it never calls into another
// engine from there: what another engine must do is kept here and done
// by that engine before its next run (take_work).
//
// - A page gets its first block in engine A (code_added): A is recorded as
//   holding code there, and every other engine must protect the page (put
//   its stores on the slow path, where they reach stored()).
// - Engine B stores to a page (stored): every other engine that holds code
//   there must drop its translations of the page before it runs again, and
//   is forgotten as a holder (its next block there is its first again).
//   So no other engine holds code there any more, and B's next stores to
//   the page may take the fast path until one does (code_added protects it
//   in B again): the engine's store callback returns false.
// A record may outlive the code (a full translation buffer is flushed):
// then a store costs a needless invalidation, and the record goes.
// Part of the vCPU engine, but with no Unicorn in it (vcpu_code_map_test.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

namespace topolab {

class GuestRam;

namespace vcpu_internal {

class CodeMap {
 public:
  // Physical pages of 4 KiB.
  static constexpr uint64_t kPageBits = 12;

  // A new engine's slot; its TLB starts empty, so it has nothing to protect.
  unsigned join();
  void leave(unsigned slot);

  // Engine `slot` translated its first block on physical page `page`.
  void code_added(unsigned slot, uint64_t page);
  // Engine `slot` stores to physical page `page`.
  void stored(unsigned slot, uint64_t page);

  // What engine `slot` must do before it runs: pages to protect, pages
  // whose translations to drop. has_work is one load: called every run.
  struct Work {
    std::vector<uint64_t> protect;
    std::vector<uint64_t> invalidate;
  };
  bool has_work(unsigned slot) const { return slots_[slot].has_work; }
  Work take_work(unsigned slot);

  // For tests: whether `slot` is recorded as holding code on `page`.
  bool holds(unsigned slot, uint64_t page) const;

 private:
  struct Slot {
    bool live = false;
    bool has_work = false;
    Work work;
  };
  std::vector<Slot> slots_;
  // Engines (slots) holding code, by physical page; a page nobody holds is
  // not here, so a store to a page without code costs one lookup.
  std::unordered_map<uint64_t, std::vector<unsigned>> holders_;
};

// The CodeMap of the engines that map `ram`, made by the first one to ask
// and gone with the last that holds it.
std::shared_ptr<CodeMap> code_map_for(const GuestRam& ram);

}  // namespace vcpu_internal
}  // namespace topolab
