// SPDX-License-Identifier: GPL-2.0-or-later
// The target description gdb reads with qXfer:features:read:target.xml
// (gdb manual, "Target Descriptions" and "qXfer:features:read"): the
// registers of arch/register_file, in their order, each with its number, so
// that `p`/`P` and the `g` packet agree with what gdb shows.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace topolab::debug {

// The whole document: architecture i386:x86-64, one <feature> per group of
// consecutive registers the table puts in the same feature, the types gdb's
// own 64bit-core.xml and 64bit-sse.xml define (i386_eflags, i386_mxcsr,
// vec128); i387_ext is one of gdb's built-in types.
const std::string& target_xml();

// One qXfer read of `document` (gdb manual, "qXfer:object:read:annex:offset,length"):
// `m` and the data when more follows, `l` and the data when this is the
// last of it (an empty `l` at or past the end).
std::string xfer_chunk(std::string_view document, uint64_t offset, uint64_t length);

}  // namespace topolab::debug
