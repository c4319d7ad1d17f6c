#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Installs every Debian package that topolab's build, tests and demo need,
# and builds the CPU engine, Unicorn 2.1.3 with topolab's patches, which
# Debian 12 does not have (it ships 2.0.1, which maps guest virtual =
# physical): tools/build_unicorn.sh, from the release's source distribution
# on the Python Package Index, pinned by version and sha256, into .deps/
# (git-ignored; `rm -rf build` keeps it).
# Safe to run twice; does nothing slow when everything is already there.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

packages=(
  build-essential cmake pkg-config
  ninja-build           # the build's generator: a quarter faster than make from scratch (docs/reliability.md)
  libcapstone-dev libfmt-dev libgtest-dev
  libcli11-dev nlohmann-json3-dev
  libcereal-dev libzstd-dev libxxhash-dev  # snapshots: state archives, file compression, checksums
  gcc-multilib          # libgcc for -m32 guest images (64-bit division)
  cpuid hwloc-nox       # decoders our cpuid dumps are checked against
  acpica-tools          # iasl: decodes the ACPI tables in tests/acpi_iasl.py
  qemu-system-x86       # the reference peer for differential tests
  python3               # tools/cpuid_diff.py and the report checks
  python3-pip           # fetches Unicorn's source distribution (tools/build_unicorn.sh)
  binutils              # readelf: tools/linux_guest.sh follows perf's NEEDED libraries
  file                  # cpack -G DEB finds the ELF files for dpkg-shlibdeps (dpkg-dev) with it
  clang libclang-rt-14-dev  # libFuzzer and the sanitizer runtimes (fuzz/, tools/fuzz_smoke.sh)
  chromium              # renders the --html pages headless (tests/html_page.sh)
  gdb                   # the debugger's real client: tests/gdb.sh drives it in batch mode
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# python3-pip is only needed when pip is not there already (a pyenv Python, say).
if python3 -m pip --version >/dev/null 2>&1; then
  missing=("${missing[@]/python3-pip}")
fi
want=()
for p in "${missing[@]}"; do [ -n "$p" ] && want+=("$p"); done
if [ ${#want[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "setup: installing ${want[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null
fi

# --- Unicorn 2.1.3, topolab's own build ---
# Why 2.1.3 and not 2.1.4: docs/benchmarks.md (2.1.4 calls a helper at every
# block start and after every memory access). What the patches change:
# docs/unicorn.md.
"$top/tools/build_unicorn.sh"
