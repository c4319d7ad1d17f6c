#!/usr/bin/env bash
# Installs every Debian package that topolab's build, tests and demo need,
# and the CPU engine, Unicorn 2.1.3, which Debian 12 does not have (it ships
# 2.0.1, which maps guest virtual = physical): the Unicorn project's own
# manylinux wheel from the Python Package Index, pinned by version and
# sha256, unpacked into .deps/ (git-ignored; `rm -rf build` keeps it).
# Safe to run twice; does nothing slow when everything is already there.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

packages=(
  build-essential cmake pkg-config
  libcapstone-dev libfmt-dev libgtest-dev
  libcli11-dev nlohmann-json3-dev
  gcc-multilib          # libgcc for -m32 guest images (64-bit division)
  cpuid hwloc-nox       # decoders our cpuid dumps are checked against
  qemu-system-x86       # the reference peer for differential tests
  python3               # tools/cpuid_diff.py and the report checks
  python3-pip           # fetches the Unicorn wheel below
  unzip
  binutils              # readelf: tools/linux_guest.sh follows perf's NEEDED libraries
  clang libclang-rt-14-dev  # libFuzzer and the sanitizer runtimes (fuzz/, tools/fuzz_smoke.sh)
  chromium              # renders the --html pages headless (tools/tests/html_page.sh)
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

# --- Unicorn 2.1.3 ---
# Why 2.1.3 and not 2.1.4: docs/benchmarks.md (2.1.4 calls a helper at every
# block start and after every memory access).
unicorn_version=2.1.3
unicorn_wheel=unicorn-2.1.3-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
unicorn_sha256=c6699453167b1abc98e6dc13728568b383b3d02acd4ec8b5d0189c522bd90522
unicorn_dir=$top/.deps/unicorn-$unicorn_version
if [ ! -f "$unicorn_dir/.complete" ]; then
  echo "setup: fetching Unicorn $unicorn_version from the Python Package Index" >&2
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  # The wheel's file name pins the platform and ABI, so the same file comes
  # whatever Python runs pip; only its C library and headers are used.
  python3 -m pip download --quiet --no-deps --only-binary=:all: \
    --platform manylinux2014_x86_64 --python-version 3.11 --implementation cp --abi cp311 \
    --dest "$tmp" "unicorn==$unicorn_version"
  got=$(sha256sum "$tmp/$unicorn_wheel" | cut -d' ' -f1)
  if [ "$got" != "$unicorn_sha256" ]; then
    echo "setup: $unicorn_wheel has sha256 $got, expected $unicorn_sha256; refusing it" >&2
    exit 1
  fi
  rm -rf "$unicorn_dir"
  mkdir -p "$tmp/unpacked" "$unicorn_dir/lib"
  unzip -q "$tmp/$unicorn_wheel" 'unicorn/include/*' 'unicorn/lib/*' -d "$tmp/unpacked"
  cp -r "$tmp/unpacked/unicorn/include" "$unicorn_dir/include"
  cp "$tmp/unpacked/unicorn/lib/libunicorn.a" "$tmp/unpacked/unicorn/lib/libunicorn.so.2" "$unicorn_dir/lib/"
  echo "$unicorn_sha256  $unicorn_wheel" >"$unicorn_dir/.complete"
fi
