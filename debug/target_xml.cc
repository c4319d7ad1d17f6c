// SPDX-License-Identifier: GPL-2.0-or-later
#include "debug/target_xml.h"

#include <algorithm>

#include <fmt/format.h>

#include "arch/register_file.h"
#include "base/text_buffer.h"

namespace topolab::debug {
namespace {

// As gdb/features/i386/64bit-core.xml defines it (bit 1 is the unnamed
// always-one bit).
constexpr std::string_view kEflagsType = R"(  <flags id="i386_eflags" size="4">
    <field name="CF" start="0" end="0"/>
    <field name="" start="1" end="1"/>
    <field name="PF" start="2" end="2"/>
    <field name="AF" start="4" end="4"/>
    <field name="ZF" start="6" end="6"/>
    <field name="SF" start="7" end="7"/>
    <field name="TF" start="8" end="8"/>
    <field name="IF" start="9" end="9"/>
    <field name="DF" start="10" end="10"/>
    <field name="OF" start="11" end="11"/>
    <field name="NT" start="14" end="14"/>
    <field name="RF" start="16" end="16"/>
    <field name="VM" start="17" end="17"/>
    <field name="AC" start="18" end="18"/>
    <field name="VIF" start="19" end="19"/>
    <field name="VIP" start="20" end="20"/>
    <field name="ID" start="21" end="21"/>
  </flags>
)";

// As gdb/features/i386/64bit-sse.xml defines them, without the bfloat16
// view gdb 11 added (older gdbs reject a description naming that type).
constexpr std::string_view kSseTypes = R"(  <vector id="v4f" type="ieee_single" count="4"/>
  <vector id="v2d" type="ieee_double" count="2"/>
  <vector id="v16i8" type="int8" count="16"/>
  <vector id="v8i16" type="int16" count="8"/>
  <vector id="v4i32" type="int32" count="4"/>
  <vector id="v2i64" type="int64" count="2"/>
  <union id="vec128">
    <field name="v4_float" type="v4f"/>
    <field name="v2_double" type="v2d"/>
    <field name="v16_int8" type="v16i8"/>
    <field name="v8_int16" type="v8i16"/>
    <field name="v4_int32" type="v4i32"/>
    <field name="v2_int64" type="v2i64"/>
    <field name="uint128" type="uint128"/>
  </union>
  <flags id="i386_mxcsr" size="4">
    <field name="IE" start="0" end="0"/>
    <field name="DE" start="1" end="1"/>
    <field name="ZE" start="2" end="2"/>
    <field name="OE" start="3" end="3"/>
    <field name="UE" start="4" end="4"/>
    <field name="PE" start="5" end="5"/>
    <field name="DAZ" start="6" end="6"/>
    <field name="IM" start="7" end="7"/>
    <field name="DM" start="8" end="8"/>
    <field name="ZM" start="9" end="9"/>
    <field name="OM" start="10" end="10"/>
    <field name="UM" start="11" end="11"/>
    <field name="PM" start="12" end="12"/>
    <field name="FZ" start="15" end="15"/>
  </flags>
)";

// The types a feature defines before its registers use them: a type is
// defined once, in the first feature whose register uses it.
void append_types_used(fmt::memory_buffer& out, std::string_view feature, bool& eflags_done, bool& sse_done) {
  for (const auto& reg : x86::debug_registers()) {
    if (reg.feature != feature) continue;
    if (reg.type == "i386_eflags" && !eflags_done) {
      out.append(kEflagsType);
      eflags_done = true;
    }
    if ((reg.type == "vec128" || reg.type == "i386_mxcsr") && !sse_done) {
      out.append(kSseTypes);
      sse_done = true;
    }
  }
}

std::string build_target_xml() {
  fmt::memory_buffer out;
  out.append(std::string_view(
      "<?xml version=\"1.0\"?>\n<!DOCTYPE target SYSTEM \"gdb-target.dtd\">\n<target version=\"1.0\">\n"
      "<architecture>i386:x86-64</architecture>\n"));
  bool eflags_done = false, sse_done = false;
  std::string_view open_feature;
  for (const auto& reg : x86::debug_registers()) {
    if (reg.feature != open_feature) {
      if (!open_feature.empty()) out.append(std::string_view("</feature>\n"));
      open_feature = reg.feature;
      appendf(out, "<feature name=\"{}\">\n", open_feature);
      append_types_used(out, open_feature, eflags_done, sse_done);
    }
    appendf(out, "  <reg name=\"{}\" bitsize=\"{}\" type=\"{}\" group=\"{}\" regnum=\"{}\"/>\n", reg.name, reg.bits,
            reg.type, reg.group, static_cast<unsigned>(reg.id));
  }
  if (!open_feature.empty()) out.append(std::string_view("</feature>\n"));
  out.append(std::string_view("</target>\n"));
  return fmt::to_string(out);
}

}  // namespace

const std::string& target_xml() {
  // Built from constant data on first use; a function-local constant, not
  // mutable global state.
  static const std::string document = build_target_xml();
  return document;
}

std::string xfer_chunk(std::string_view document, uint64_t offset, uint64_t length) {
  if (offset >= document.size()) return "l";
  const uint64_t available = document.size() - offset;
  const uint64_t take = std::min(available, length);
  std::string out(take < available ? "m" : "l");
  out.append(document.substr(offset, take));
  return out;
}

}  // namespace topolab::debug
