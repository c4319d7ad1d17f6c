// SPDX-License-Identifier: GPL-2.0-or-later
#include "emu/machine_checkpoints.h"

#include <cstring>
#include <istream>
#include <sstream>

#include "base/state_archive.h"
#include "emu/machine.h"

namespace topolab {
namespace {

constexpr uint64_t kPage = ram_pages::kPageBytes;

}  // namespace

void MachineCheckpoints::between_slices(Machine& machine, uint64_t output_position) {
  const uint64_t total = machine.instructions();
  if (!started_) {
    started_ = true;
    start_instructions_ = total;
    page_hashes_ = ram_pages::hash_pages(machine.ram());
    return;
  }
  const uint64_t last = checkpoints_.empty() ? start_instructions_ : checkpoints_.back().total_instructions;
  if (total >= last + every_) take(machine, output_position);
}

void MachineCheckpoints::take(Machine& machine, uint64_t output_position) {
  MachineCheckpoint c;
  for (unsigned i = 0; i < machine.vcpu_count(); ++i) c.instructions.push_back(machine.cpu(i).instructions());
  c.total_instructions = machine.instructions();
  c.output_position = output_position;
  c.state = save_state_bytes(machine);
  const GuestRam& ram = machine.ram();
  ram_pages::PageHashes hashes = ram_pages::hash_pages(ram);
  for (const uint64_t address : ram_pages::changed_pages(page_hashes_, hashes))
    c.pages.emplace_back(address / kPage, std::string(reinterpret_cast<const char*>(ram.data() + address), kPage));
  page_hashes_ = std::move(hashes);
  saved_bytes_ += c.state.size() + c.pages.size() * kPage;
  checkpoints_.push_back(std::move(c));
}

std::optional<size_t> MachineCheckpoints::latest_before(unsigned vcpu, uint64_t instructions) const {
  for (size_t i = checkpoints_.size(); i-- > 0;)
    if (vcpu < checkpoints_[i].instructions.size() && checkpoints_[i].instructions[vcpu] < instructions) return i;
  return std::nullopt;
}

void MachineCheckpoints::restore(Machine& machine, size_t index) const {
  const MachineCheckpoint& c = checkpoints_.at(index);
  load_state_bytes(machine, c.state);
  // Each page as the latest checkpoint up to `index` that changed it left it;
  // the others are as the machine was built.
  GuestRam& ram = machine.ram();
  std::vector<bool> written(ram.top() / kPage, false);
  for (size_t i = index + 1; i-- > 0;)
    for (const auto& [page, bytes] : checkpoints_[i].pages)
      if (!written[page]) {
        written[page] = true;
        std::memcpy(ram.data() + page * kPage, bytes.data(), kPage);
      }
}

}  // namespace topolab
