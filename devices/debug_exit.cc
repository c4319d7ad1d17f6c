// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/debug_exit.h"

namespace topolab {

void DebugExit::write(uint16_t, unsigned size, uint32_t value) {
  if (value_) return;  // the run is already ending; later writes change nothing
  // QEMU keeps the bytes the access carried: outb 1 and outl 1 both mean 1.
  value_ = size >= 4 ? value : value & ((1u << (8 * size)) - 1);
  on_exit_();
}

}  // namespace topolab
