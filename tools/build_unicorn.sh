#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Builds topolab's CPU engine: Unicorn 2.1.3 from the release's own source
# distribution on the Python Package Index (pinned by version and sha256),
# with topolab's patches (emu/unicorn/*.patch, applied in name order), x86
# only and static, into .deps/unicorn-2.1.3-topolab (git-ignored).
# The build is keyed by the sdist's sha256, the patches and this script: a
# second run with the same key does nothing, a changed patch rebuilds.
# Usage: tools/build_unicorn.sh [--print-key]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

version=2.1.3
sdist=unicorn-$version.tar.gz
sdist_sha256=0c06456cf550c228f2003cc70366afa4aece2e6e7e4c32d8f4b22c717ba6b729
dest=$top/.deps/unicorn-$version-topolab
patches=("$top"/emu/unicorn/*.patch)
[ -e "${patches[0]}" ] || patches=()

key=$( { echo "$sdist_sha256"; for p in "${patches[@]}"; do basename "$p"; sha256sum <"$p"; done;
         sha256sum <"$0"; } | sha256sum | cut -c1-16)
if [ "${1:-}" = "--print-key" ]; then echo "$key"; exit 0; fi
if [ -f "$dest/.complete" ] && [ "$(head -1 "$dest/.complete")" = "$key" ]; then exit 0; fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cache=$top/.deps/downloads
mkdir -p "$cache"
if [ ! -f "$cache/$sdist" ] || [ "$(sha256sum <"$cache/$sdist" | cut -d' ' -f1)" != "$sdist_sha256" ]; then
  echo "setup: fetching Unicorn $version's source distribution from the Python Package Index" >&2
  python3 -m pip download --quiet --no-deps --no-binary :all: \
    --dest "$tmp" "unicorn==$version" 2>"$tmp/pip.log" ||
    { echo "setup: pip could not fetch unicorn==$version (source): $(tail -1 "$tmp/pip.log")" >&2; exit 1; }
  got=$(sha256sum <"$tmp/$sdist" | cut -d' ' -f1)
  if [ "$got" != "$sdist_sha256" ]; then
    echo "setup: $sdist has sha256 $got, expected $sdist_sha256; refusing it" >&2
    exit 1
  fi
  mv "$tmp/$sdist" "$cache/$sdist"
fi

echo "setup: building Unicorn $version (x86 only) with ${#patches[@]} topolab patches" >&2
tar -xzf "$cache/$sdist" -C "$tmp"
src=$tmp/unicorn-$version/src
for p in "${patches[@]}"; do
  (cd "$tmp/unicorn-$version" && git apply --whitespace=nowarn -p1 "$p") ||
    { echo "setup: patch $(basename "$p") does not apply to Unicorn $version" >&2; exit 1; }
done
cmake -S "$src" -B "$tmp/build" -DCMAKE_BUILD_TYPE=Release -DUNICORN_ARCH=x86 \
  -DUNICORN_BUILD_TESTS=OFF -DBUILD_SHARED_LIBS=OFF -DUNICORN_LEGACY_STATIC_ARCHIVE=ON \
  -DUNICORN_INSTALL=OFF >"$tmp/cmake.log" 2>&1 ||
  { tail -20 "$tmp/cmake.log" >&2; echo "setup: configuring Unicorn failed" >&2; exit 1; }
cmake --build "$tmp/build" -j"$(nproc)" >"$tmp/make.log" 2>&1 ||
  { grep -m5 -E "error|Error" "$tmp/make.log" >&2; echo "setup: building Unicorn failed" >&2; exit 1; }

rm -rf "$dest"
mkdir -p "$dest/lib" "$dest/include"
cp "$tmp/build/libunicorn.a" "$dest/lib/"
cp -r "$src/include/unicorn" "$dest/include/"
# What CMake checks and `topolab --version` names: one patch a line.
for p in "${patches[@]}"; do basename "$p" .patch; done >"$dest/topolab-patches.txt"
echo "$key" >"$dest/.complete"
