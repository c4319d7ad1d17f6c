// SPDX-License-Identifier: GPL-2.0-or-later
// QEMU's option syntax, shared by every parser of a QEMU spelling (the QEMU
// front's command line, -m, -numa, -object): "type,key=value,..." with ",,"
// for a comma inside a value, QEMU's numbers, booleans and sizes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace topolab {

// "a,b=c,d" split at commas; QEMU's ",," escape for a comma inside a value.
std::vector<std::string> split_qemu_properties(std::string_view text);
// The inverse for one item: each "," doubled, as QEMU writes a comma inside
// a value.
std::string escape_qemu_commas(std::string_view item);

struct QemuProperty {
  std::string name, value;
  bool has_value = false;  // "name=value" rather than a bare "name"
};
QemuProperty split_qemu_property(std::string_view item);
// Both at once: every item of `text` as a property.
std::vector<QemuProperty> parse_qemu_properties(std::string_view text);

// QEMU's boolean property values (qapi/qobject-input-visitor.c).
std::optional<bool> parse_qemu_bool(std::string_view text);

// A decimal or 0x-hexadecimal number, nothing around it.
std::optional<uint64_t> parse_qemu_number(std::string_view text);

// QEMU's size syntax (qemu_strtosz): a number, optionally with a fraction,
// and an optional suffix B, K, M, G, T, P or E (either case); `default_shift`
// is the unit of a bare number (0: bytes, as -object size=; 20: MiB, as -m).
// nullopt for anything else or a size past 2^64.
std::optional<uint64_t> parse_qemu_size(std::string_view text, unsigned default_shift);

// QEMU's -m: a size in MiB, or with a suffix K, M, G, T (KiB..TiB), QEMU's
// "size=" spelling allowed. Throws ConfigError for a bad size or one that is
// not a whole MiB.
uint64_t parse_qemu_ram_size(std::string_view text);

}  // namespace topolab
