// SPDX-License-Identifier: GPL-2.0-or-later
// --cost parsing. Input: the spec, over the defaults.
// Invariants: ConfigError is the only refusal; to_string() parses back to
// the same model; the time <-> instructions conversions are monotonic and
// time converted back never gives more instructions than went in (a slice
// budget computed from a time never overshoots it).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "model/cost_model.h"
#include "model/topology.h"  // ConfigError
#include "fuzz/fuzz_check.h"

using namespace topolab;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view spec(reinterpret_cast<const char*>(data), size);
  CostModel m;
  try {
    m = CostModel::parse(spec, CostModel::defaults());
  } catch (const ConfigError&) {
    return 0;
  }
  CostModel again = CostModel::parse(m.to_string(), CostModel::defaults());
  FUZZ_CHECK(again == m, "'{}' -> '{}' -> '{}'", spec, m.to_string(), again.to_string());
  FUZZ_CHECK(m.freq_mhz > 0 && m.cpi_milli > 0, "{}", m.to_string());
  for (uint64_t n : {uint64_t{0}, uint64_t{1}, uint64_t{1000}, uint64_t{123'456'789}, uint64_t{1} << 40}) {
    uint64_t ns = m.ns_for_instructions(n);
    FUZZ_CHECK(m.ns_for_instructions(n + 1) >= ns, "{} not monotonic at {}", m.to_string(), n);
    FUZZ_CHECK(m.instructions_for_ns(ns) <= n, "{}: {} instructions, {} ns", m.to_string(), n, ns);
    FUZZ_CHECK(m.instructions_for_ns(ns + 1) >= m.instructions_for_ns(ns), "{}", m.to_string());
  }
  return 0;
}
