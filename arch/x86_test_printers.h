// SPDX-License-Identifier: GPL-2.0-or-later
// gtest printers for the x86 vocabulary: a Fault prints by its name
// ("#GP(0x10)"), not as its bytes.
#pragma once

#include <ostream>

#include "arch/event_delivery.h"

namespace topolab::x86 {

inline void PrintTo(const Fault& f, std::ostream* os) { *os << describe(Event::from_fault(f)); }

}  // namespace topolab::x86
