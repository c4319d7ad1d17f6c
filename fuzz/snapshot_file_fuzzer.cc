// SPDX-License-Identifier: GPL-2.0-or-later
// Snapshot files (emu/snapshot_file.h), which `topolab run --resume FILE`
// reads. Input: a whole file when the first byte is even; when it is odd,
// the rest is a body, which the harness packs (zstd) and seals (xxHash3)
// under a valid header, so that the body's own parser is reached and not
// only the checksum's refusal.
// Invariants:
// - InputError is the only refusal, and its message is one line that
//   names the file;
// - an accepted snapshot encodes to a file that decodes to the same
//   snapshot, and encoding that gives the same bytes again.
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/errors.h"
#include "emu/snapshot_file.h"
#include "fuzz/fuzz_check.h"

using namespace topolab;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string file = data[0] & 1 ? seal_snapshot_body(rest) : std::string(rest);
  const std::string name = "fuzz.snap";
  MachineSnapshot snapshot;
  try {
    snapshot = decode_snapshot(file, name);
  } catch (const InputError& e) {
    const std::string what = e.what();
    FUZZ_CHECK(what.starts_with(name + " ") && what.find('\n') == std::string::npos &&
                   what.find('\r') == std::string::npos,
               "refusal not one line naming the file: '{}'", what);
    return 0;
  }
  const std::string again = encode_snapshot(snapshot);
  MachineSnapshot decoded;
  try {
    decoded = decode_snapshot(again, name);
  } catch (const InputError& e) {
    FUZZ_CHECK(false, "an accepted snapshot, encoded again, is refused: {}", e.what());
  }
  FUZZ_CHECK(decoded == snapshot, "a snapshot does not decode to itself");
  FUZZ_CHECK(encode_snapshot(decoded) == again, "encoding is not deterministic");
  return 0;
}
