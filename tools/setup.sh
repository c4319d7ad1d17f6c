#!/usr/bin/env bash
# Installs every Debian package that topolab's build, tests and demo need.
# Safe to run twice; does nothing slow when everything is already there.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libunicorn-dev libcapstone-dev libfmt-dev libgtest-dev
  libcli11-dev nlohmann-json3-dev
  gcc-multilib          # libgcc for -m32 guest images (64-bit division)
  cpuid hwloc-nox       # decoders our cpuid dumps are checked against
  qemu-system-x86       # the reference peer for differential tests
  python3               # tools/cpuid_diff.py and the report checks
  clang libclang-rt-14-dev  # libFuzzer and the sanitizer runtimes (fuzz/, tools/fuzz_smoke.sh)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "setup: installing ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
