// SPDX-License-Identifier: GPL-2.0-or-later
// The bit fields of the CPUID registers a person reads on the HTML page,
// named as the Intel SDM vol. 2A "CPUID" (and the AMD APM vol. 3 for AMD's
// leaves) name them, with a plain-words note on the fields that carry the
// topology. Data only: decode_register() turns one register into its fields.
//
// model/cpuid.cc has its own constants for the fields it *writes* (private
// there, and checked by put_field); this table also covers the fields a
// reader wants explained (feature flags, vendor strings, leaf 0x1A), so it
// lives beside the reports.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/cpu_model.h"

namespace topolab {

// How a field's value reads.
enum class FieldEncoding : uint8_t {
  Number,     // the value itself
  MinusOne,   // the field holds N - 1
  Hex,        // an ID or a mask
  CacheType,  // leaf 4 / 0x8000001D EAX[4:0]
  LevelType,  // leaf 0xB / 0x1F ECX[15:8]
  CoreType,   // leaf 0x1A EAX[31:24]
};

struct CpuidFieldName {
  uint32_t leaf;
  char reg;  // 'a', 'b', 'c' or 'd'
  unsigned hi, lo;
  std::string_view name;   // the SDM's (or APM's) words
  FieldEncoding encoding;
  std::string_view plain;  // what it means for a topology, or empty
};

// Every named field in a row of its own. Feature bits have a table of their
// own, and the registers that hold text (vendor, hypervisor signature,
// brand string) and AMD's L1 caches (0x80000005 ECX and EDX, one layout)
// are decoded by rule.
const std::vector<CpuidFieldName>& cpuid_field_names();

// "deterministic cache parameters" for 0x4; empty for a leaf we do not name.
std::string_view cpuid_leaf_name(uint32_t leaf);

// One field of one register value, decoded.
struct DecodedField {
  unsigned hi, lo;
  uint32_t value;
  std::string name;
  std::string reading;  // "2 (the field holds N - 1)", "data cache", "'Genu'"
  std::string plain;
};

// The fields of `reg` ('a'..'d') of `leaf` holding `value`, high bits first:
// named fields, then each set feature bit with its -cpu flag name. Leaf 4's
// layout also decodes 0x8000001D, and 0xB's decodes 0x1F.
std::vector<DecodedField> decode_register(uint32_t leaf, char reg, uint32_t value);

// "EAX[25:14]", "EDX[28]".
std::string field_bits(char reg, unsigned hi, unsigned lo);

// Leaf 0x1A EAX[31:24] in words: "Core (P-core)" for 0x40, "Atom (E-core)"
// for 0x20, "" for 0 (no hybrid information), "type 0x.." otherwise.
std::string core_type_name(uint32_t leaf1a_eax);

}  // namespace topolab
