// SPDX-License-Identifier: GPL-2.0-or-later
// `topolab qemu ARGS` and build/qemu-system-x86_64 ARGS: QEMU 7.2's
// command line (cli/qemu_command.h) run on topolab's machine, topolab's own
// options from TOPOLAB_OPTS, QEMU's exit statuses.
#pragma once

#include <string>
#include <vector>

namespace topolab::cli {

// Runs QEMU's arguments (argv without the program name); every bad input
// is one line and QEMU's status 1.
int run_qemu_front(const std::vector<std::string>& args);

}  // namespace topolab::cli
