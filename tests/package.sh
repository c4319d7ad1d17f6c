#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The installed topolab: `cpack -G DEB` into a scratch directory, the .deb's
# declared Depends (every shared library the binary needs, by its Debian
# package, and what linux_guest.sh runs), its contents unpacked with
# `dpkg-deb -x` (no root, nothing installed on the host) and run from there:
# --version, cpuid, an image under `run` and under the QEMU front in
# libexec/, an experiment case that finds sched.elf by itself and matches
# the build tree's byte for byte, the Linux guest's default directory on
# both sides, and `cmake --install --prefix` giving the same tree.
# Usage: package.sh BUILD_DIR SOURCE_DIR VERSION
set -uo pipefail
build=$1
src=$2
version=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# ---- the package ----
if ! (cd "$tmp" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/out") >"$tmp/cpack.log" 2>&1; then
  echo "FAIL: cpack -G DEB:"; tail -20 "$tmp/cpack.log"; exit 1
fi
debs=("$tmp"/out/*.deb)
[ ${#debs[@]} -eq 1 ] && [ -f "${debs[0]}" ] || { echo "FAIL: cpack made ${debs[*]}, want one .deb"; exit 1; }
deb=${debs[0]}
[ "$(basename "$deb")" = "topolab_${version}_$(dpkg --print-architecture).deb" ] ||
  fail "package file $(basename "$deb")"
[ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || fail "Version $(dpkg-deb -f "$deb" Version), want $version"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends ($(du -k "$deb" | cut -f1) KiB)"
# has PACKAGE: Depends names it (with or without a version).
has() { tr ',' '\n' <<<"$depends" | sed 's/^ *//; s/ .*//' | grep -qx "$1"; }
# The package of every library the binary needs, found as dpkg-shlibdeps
# finds it: the loader's path, or its twin across the /lib -> /usr/lib merge.
while read -r soname; do
  # ldd names a library "SONAME => PATH", the loader by its PATH alone.
  path=$(ldd "$build/topolab" | awk -v so="$soname" '
    $1 == so {print $3; exit}
    $1 ~ /^\// && substr($1, length($1) - length(so)) == "/" so {print $1; exit}')
  [ -n "$path" ] || { fail "ldd does not resolve $soname"; continue; }
  owner=$(dpkg -S "$path" 2>/dev/null || dpkg -S "${path/#\/lib\//\/usr\/lib\/}" 2>/dev/null ||
          dpkg -S "${path/#\/usr\/lib\//\/lib\/}" 2>/dev/null)
  pkg=${owner%%:*}
  [ -n "$pkg" ] || { fail "no Debian package owns $path ($soname)"; continue; }
  has "$pkg" || fail "Depends lacks $pkg, which has $soname"
done < <(readelf -dW "$build/topolab" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p')
for pkg in apt binutils python3; do has "$pkg" || fail "Depends lacks $pkg (linux_guest.sh runs it)"; done
outside=$(dpkg-deb -c "$deb" | awk '{print $6}' | grep -v -e '^\./$' -e '^\./usr/')
[ -z "$outside" ] || fail "files outside /usr: $outside"

root=$tmp/root
dpkg-deb -x "$deb" "$root"
usr=$root/usr
for f in bin/topolab share/topolab/testcases/topology_check.elf share/topolab/testcases/sched.elf \
         share/topolab/testcases/ipi.elf share/topolab/linux/linux_guest.sh share/topolab/linux/linux_init.sh \
         share/topolab/linux/make_initramfs.py share/topolab/linux/vmlinux_from_bzimage.py \
         share/topolab/linux/topolab-window share/topolab/linux/topolab-ctxsw share/doc/topolab/README.md share/doc/topolab/CONTRIBUTING.md \
         share/doc/topolab/LICENSE share/doc/topolab/copyright share/doc/topolab/docs/machine.md; do
  [ -f "$usr/$f" ] || fail "the package has no /usr/$f"
done
[ "$(readlink "$usr/libexec/topolab/qemu-system-x86_64")" = "../../bin/topolab" ] ||
  fail "libexec/topolab/qemu-system-x86_64 is not a link to ../../bin/topolab"
[ -e "$usr/bin/qemu-system-x86_64" ] && fail "a qemu-system-x86_64 on PATH would shadow QEMU's"
cmp -s "$usr/share/doc/topolab/LICENSE" "$src/LICENSE" || fail "the installed LICENSE is not the source's"
# The installed linux_guest.sh has no compiler to build topolab's guest
# programs: CMake's must be the bytes linux_guest.sh builds in a checkout.
for program in window ctxsw; do
  (cd "$src/testcases/linux" && gcc -static -s -O2 -Wall -Wextra -o "$tmp/topolab-$program" "topolab_$program.c") &&
    cmp -s "$tmp/topolab-$program" "$usr/share/topolab/linux/topolab-$program" ||
    fail "the installed topolab-$program differs from the one linux_guest.sh builds"
done

# ---- the installed command, run from the scratch root ----
topolab=$usr/bin/topolab
line=$("$topolab" --version)
[[ $line == "topolab $version on Unicorn 2.1.3 "* ]] || fail "--version says '$line'"
echo "PASS: $line"
"$topolab" cpuid -smp 16,sockets=1,cores=8,threads=2 -cpu Skylake-Server,l3-cache=on >"$tmp/cpuid" 2>&1 &&
  grep -q 'L3 #0: CPUs 0-15' "$tmp/cpuid" || fail "installed topolab cpuid: $(tail -1 "$tmp/cpuid")"
timeout 60 "$topolab" run "$usr/share/topolab/testcases/topology_check.elf" -smp 8,sockets=2,cores=4 -cpu EPYC \
  -append "sockets=2 cores=4" >"$tmp/run" 2>&1 && grep -q '^SUMMARY: [0-9]* tests, 0 unexpected failures' "$tmp/run" ||
  fail "installed topolab run topology_check.elf: $(tail -1 "$tmp/run")"
qemu=$usr/libexec/topolab/qemu-system-x86_64
line=$("$qemu" -version | head -1)
[[ $line == "QEMU emulator version 7.2.0 (topolab $version, on Unicorn 2.1.3 "* ]] || fail "the QEMU front says '$line'"
timeout 60 "$qemu" -nodefaults -device isa-debug-exit,iobase=0xf4,iosize=4 -serial stdio -smp 2 -cpu Skylake-Server \
  -kernel "$usr/share/topolab/testcases/ipi.elf" -append "cpus=2" >"$tmp/qemu" 2>&1
status=$?
[ $status -eq 1 ] && grep -q '^SUMMARY: .* 0 unexpected failures' "$tmp/qemu" ||
  fail "the installed QEMU front on ipi.elf: status $status (want 1), $(tail -1 "$tmp/qemu")"

# An experiment case finds sched.elf among the installed images, and
# computes what the build tree's binary computes with its own.
case_args=(experiment halt-poll --scale 5 --repeats 1 --case 0)
timeout 60 "$topolab" "${case_args[@]}" --output "$tmp/case-installed" >/dev/null 2>"$tmp/case.err" ||
  fail "installed topolab ${case_args[*]}: $(tail -1 "$tmp/case.err")"
timeout 60 "$build/topolab" "${case_args[@]}" --output "$tmp/case-build" >/dev/null 2>&1 ||
  fail "build-tree topolab ${case_args[*]}"
cmp -s "$tmp/case-installed/case-0.json" "$tmp/case-build/case-0.json" ||
  fail "the installed and the build tree's topolab differ on ${case_args[*]}"

# The Linux guest's default directory: the same in the installed command,
# which names the installed script, and in that script.
mkdir -p "$tmp/home"
HOME=$tmp/home XDG_CACHE_HOME='' "$topolab" experiment l3-cache --guest linux >/dev/null 2>"$tmp/linux.err"
status=$?
want="no $tmp/home/.cache/topolab/linux/vmlinux ($usr/share/topolab/linux/linux_guest.sh fetches"
[ $status -eq 125 ] && grep -qF "$want" "$tmp/linux.err" ||
  fail "--guest linux without the guest: status $status (want 125), '$(cat "$tmp/linux.err")' (want '$want')"
# An archive without Linux images stops the script once it has taken (and
# locked) its directory.
mkdir -p "$tmp/fakebin"
printf '#!/bin/sh\nexit 0\n' >"$tmp/fakebin/apt-cache"
chmod +x "$tmp/fakebin/apt-cache"
HOME=$tmp/home XDG_CACHE_HOME='' PATH=$tmp/fakebin:$PATH bash "$usr/share/topolab/linux/linux_guest.sh" \
  >/dev/null 2>"$tmp/guest.err"
grep -q 'no linux-image-6.1.0-\*-amd64 in the package lists' "$tmp/guest.err" ||
  fail "installed linux_guest.sh: $(tail -1 "$tmp/guest.err")"
[ -f "$tmp/home/.cache/topolab/linux/.lock" ] || fail "installed linux_guest.sh did not use ~/.cache/topolab/linux"

# ---- cmake --install: the same tree under any prefix ----
if cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1; then
  diff <(cd "$usr" && find . | sort) <(cd "$tmp/prefix" && find . | sort) >"$tmp/trees.diff" ||
    { fail "cmake --install --prefix and the .deb install different files:"; head "$tmp/trees.diff"; }
  line=$("$tmp/prefix/bin/topolab" --version)
  [[ $line == "topolab $version on Unicorn "* ]] || fail "--prefix: --version says '$line'"
  timeout 60 "$tmp/prefix/libexec/topolab/qemu-system-x86_64" -nodefaults -device isa-debug-exit,iobase=0xf4,iosize=4 \
    -kernel "$tmp/prefix/share/topolab/testcases/topology_check.elf" -append "cores=1" >"$tmp/prefix.out" 2>&1
  [ $? -eq 1 ] || fail "--prefix: the QEMU front on topology_check.elf: $(tail -1 "$tmp/prefix.out")"
else
  fail "cmake --install --prefix:"; tail -5 "$tmp/install.log"
fi

if [ $failures -ne 0 ]; then echo "$failures failures"; exit 1; fi
echo "ok: $(basename "$deb") installs, depends on what it runs, and runs from its installed paths"
