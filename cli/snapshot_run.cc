// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/snapshot_run.h"

#include <fmt/format.h>

#include "base/errors.h"
#include "cli/command_line.h"
#include "emu/machine.h"

namespace topolab::cli {

RunSnapshots::RunSnapshots(const std::vector<std::string>& snapshot_at, const std::string& resume) {
  if (snapshot_at.size() == 2) {
    at_ns_ = parse_virtual_time(snapshot_at[0], "--snapshot-at");
    path_ = snapshot_at[1];
  }
  if (!resume.empty()) resume_ = read_snapshot_file(resume);
  if (resume_ && at_ns_ && *at_ns_ < resume_->at_ns)
    throw ConfigError(fmt::format("--snapshot-at {}: the resumed snapshot was taken later, at {} ns", snapshot_at[0],
                                  resume_->at_ns));
}

std::function<void(uint8_t)> RunSnapshots::record_output(std::function<void(uint8_t)> out) {
  if (!at_ns_) return out;
  auto recorded = std::make_shared<std::string>();
  output_ = recorded;
  return [recorded, out = std::move(out)](uint8_t byte) {
    recorded->push_back(static_cast<char>(byte));
    out(byte);
  };
}

void RunSnapshots::prepare(Machine& machine, const std::function<void(uint8_t)>& out) {
  if (!wanted()) return;
  fingerprint_ = machine_fingerprint(machine);
  if (resume_) {
    const std::string difference = fingerprint_difference(resume_->fingerprint, fingerprint_);
    if (!difference.empty())
      throw InputError(fmt::format("--resume: the snapshot is of another machine or build ({})", difference));
    restore_snapshot(machine, *resume_);
    for (const char c : resume_->output) out(static_cast<uint8_t>(c));
  }
  if (at_ns_) machine.snapshot_at(*at_ns_, [this](Machine& m) { take(m); });
}

void RunSnapshots::take(Machine& machine) {
  const MachineSnapshot snapshot = take_snapshot(machine, fingerprint_, output_ ? *output_ : std::string());
  write_snapshot_file(path_, snapshot);
  if (!written_)
    fmt::print(stderr, "topolab: snapshot at {:.6f} s of virtual time ({} instructions) written to {}\n",
               static_cast<double>(snapshot.at_ns) / 1e9, snapshot.instructions, path_);
  written_ = true;
}

std::optional<std::string> RunSnapshots::missed(const RunResult& result) const {
  if (!at_ns_ || written_) return std::nullopt;
  return fmt::format("no snapshot written: the run ended at {:.6f} s of virtual time, before --snapshot-at's {:.6f} s",
                     static_cast<double>(result.virtual_ns) / 1e9, static_cast<double>(*at_ns_) / 1e9);
}

}  // namespace topolab::cli
