// SPDX-License-Identifier: GPL-2.0-or-later
// `--snapshot-at VTIME FILE` and `--resume FILE` (emu/machine_snapshot.h)
// for every machine a run builds: the run's own, and each one the debugger
// rebuilds to go back in time (cli/gdb_run.h), which starts from the same
// snapshot and writes the same file again on its way.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "emu/machine_snapshot.h"

namespace topolab {
class Machine;
struct RunResult;
}

namespace topolab::cli {

class RunSnapshots {
 public:
  // `snapshot_at`: empty, or {VTIME, FILE}; `resume`: empty or FILE, read
  // and checked now. Throws InputError (ConfigError for a bad VTIME).
  RunSnapshots(const std::vector<std::string>& snapshot_at, const std::string& resume);

  bool wanted() const { return at_ns_ || resume_; }
  // `out`, recording what the guest writes when a snapshot is to hold it.
  std::function<void(uint8_t)> record_output(std::function<void(uint8_t)> out);
  // For a machine just built, before it runs: starts it from the resumed
  // snapshot (its output so far goes to `out` first), and arms the
  // snapshot to take. Throws InputError when the snapshot is not of this
  // configuration.
  void prepare(Machine& machine, const std::function<void(uint8_t)>& out);
  // After the run: why no snapshot was written, if one was asked for and
  // the run ended before its time.
  std::optional<std::string> missed(const RunResult& result) const;

 private:
  void take(Machine& machine);

  std::optional<uint64_t> at_ns_;
  std::string path_;
  std::optional<MachineSnapshot> resume_;
  MachineFingerprint fingerprint_;
  std::shared_ptr<std::string> output_;  // the latest machine's, when recorded
  bool written_ = false;
};

}  // namespace topolab::cli
