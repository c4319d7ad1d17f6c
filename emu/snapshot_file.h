// SPDX-License-Identifier: GPL-2.0-or-later
// A snapshot (emu/machine_snapshot.h) as bytes and as a file, apart from
// the machine, so that its decoding can be fuzzed without an engine.
//
// The file: a 16-byte magic ("topolab snapshot"), the format version (4
// bytes), 4 reserved, the body's length before and after compression (8
// each), the xxHash3 of the compressed body (8), then the body compressed
// with zstd: the fingerprint, the virtual time and instruction count it was
// taken at, the guest's output so far, the machine's state and the RAM's
// non-zero 4 KiB pages. Integers little-endian; the body is cereal's binary
// archive.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace topolab {

// (name, value) lines that identify a configuration: compared in order.
using MachineFingerprint = std::vector<std::pair<std::string, std::string>>;

// Bumped whenever the file's layout or any class's serialize changes. A
// state that still parses but ends early or late is refused too
// (restore_snapshot), which catches a bump forgotten.
// 2: the PIT's next OUT change, the timeline's device event; 3: the
// fingerprint's memory digest covers RAM's regions and its non-zero pages
// (emu/ram_pages.h), not every byte from 0; 4: the 8259 pair's whole
// state, the PIT line's level, each vCPU's view of INTR, the INTR changes
// in flight.
inline constexpr uint32_t kSnapshotFormat = 5;

struct MachineSnapshot {
  MachineFingerprint fingerprint;
  uint64_t at_ns = 0;          // the virtual time it was taken at
  uint64_t instructions = 0;   // every vCPU's, then
  std::string output;          // what the guest wrote to COM1 before it
  std::string state;           // Machine::serialize's bytes
  // The RAM as (page number, 4 KiB) for every non-zero page.
  std::vector<std::pair<uint64_t, std::string>> pages;
  friend bool operator==(const MachineSnapshot&, const MachineSnapshot&) = default;
};

// The file's bytes, and back: InputError with one line, naming the file
// `name`, for bytes that are not a snapshot, are damaged (the checksum, the
// lengths, the body) or were written by another format.
std::string encode_snapshot(const MachineSnapshot& snapshot);
MachineSnapshot decode_snapshot(std::string_view file, std::string_view name);
// A body (laid out as encode_snapshot lays one out, or not) packed and
// sealed under a valid header: encode_snapshot's second half, and how the
// fuzz harness reaches the body's parser past the checksum.
std::string seal_snapshot_body(std::string_view body);

// Writes `snapshot` to `path`, and reads one; InputError with one line
// when they cannot.
void write_snapshot_file(const std::string& path, const MachineSnapshot& snapshot);
MachineSnapshot read_snapshot_file(const std::string& path);

}  // namespace topolab
