#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The main job: set up, build, and run topolab's default demo (the 16-vCPU
# l3-cache machine as CPUID describes it, a guest checking it, and the
# l3-cache experiment).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/build.sh >/dev/null
exec build/topolab "$@"
