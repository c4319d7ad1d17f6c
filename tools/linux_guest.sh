#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Linux guest: Debian 12's own Linux 6.1 kernel, unmodified, and an
# initramfs with busybox, perf and tools/linux_init.sh as /init, which
# prints the guest's view of its topology and runs `perf bench sched`.
#
# Usage: tools/linux_guest.sh [--dir DIR]     (DIR defaults to .deps/linux)
#
# Installed (cmake --install, the .deb) it is PREFIX/share/topolab/linux/
# linux_guest.sh, with /init, the two Python writers and topolab-window and
# topolab-ctxsw built by CMake beside it, and DIR defaults to the user's cache,
# $XDG_CACHE_HOME/topolab/linux or ~/.cache/topolab/linux: where an
# installed topolab looks for the guest (cli/data_paths.h).
#
# Every binary comes from Debian's package archive through `apt-get
# download` and is unpacked with dpkg-deb into DIR: nothing is installed
# on the host, and nothing downloaded is ever committed. DIR/.complete
# names each package's version and the sha256 of its .deb; once it is there
# the script needs no network and only rebuilds the initramfs (cheap, and
# byte-for-byte the same for the same inputs). `rm -rf DIR` starts over,
# with whatever kernel ABI is newest then.
#
# The packages: the newest linux-image-6.1.0-<abi>-amd64 (the signed
# image; its /boot/vmlinuz-* is a plain bzImage), busybox-static, linux-perf,
# and the library packages that hold every shared library perf needs,
# found by reading the NEEDED entries of each ELF file put in (readelf,
# binutils) and looking the soname up in the Depends of the package whose
# file needs it. That works on a fresh Debian 12 machine: it asks the
# archive, not the host's installed packages.
#
# DIR/vmlinuz links to the bzImage; DIR/vmlinux is the uncompressed kernel
# it carries (tools/vmlinux_from_bzimage.py), which topolab boots by PVH without
# running the kernel's XZ decompressor.
#
# Prints one line on stdout: `linux_guest: kernel K initramfs I`; on a cold
# cache progress goes to stderr.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# A checkout has topolab-window's source; an installed tree has the program.
if [ -f "$here/../testcases/linux/topolab_window.c" ]; then
  top=$(cd "$here/.." && pwd)
  dir=$top/.deps/linux
  window_source=$top/testcases/linux
else
  window_source=""
  # The XDG base directory spec's cache, a relative $XDG_CACHE_HOME ignored
  # as the spec says (cli/data_paths.cc reads it the same way).
  cache=${XDG_CACHE_HOME:-}
  if [[ $cache != /* ]]; then cache=""; [[ ${HOME:-} != /* ]] || cache=$HOME/.cache; fi
  dir=${cache:+$cache/topolab/linux}
fi

while [ $# -gt 0 ]; do
  case $1 in
    --dir) dir=${2:?--dir wants a directory}; shift 2 ;;
    --dir=*) dir=${1#--dir=}; shift ;;
    -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "linux_guest: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
die() { echo "linux_guest: error: $*" >&2; exit 1; }
note() { echo "linux_guest: $*" >&2; }
[ -n "$dir" ] || die "no default directory (HOME is not set): give --dir DIR"
for tool in apt-get apt-cache dpkg-deb readelf python3 sha256sum flock ${window_source:+gcc}; do
  command -v "$tool" >/dev/null || die "$tool is missing (tools/setup.sh installs it; the topolab package depends on it)"
done

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
# One run at a time per DIR (parallel ctest jobs, say); the lock is dropped at exit.
exec 9>"$dir/.lock"
flock 9

# The busybox applets /init (tools/linux_init.sh) calls by name.
applets=(sh mount umount cat echo ls mkdir poweroff reboot sleep printf test '[' tr sed grep cut head tail
         basename readlink uname wc sort)

debs=$dir/debs     # the downloaded .deb files, kept for their sha256
pkgs=$dir/pkg      # pkg/NAME/: one package's files
marker=$dir/.complete
declare -A have=()         # package name -> 1 when unpacked under pkg/
fetched=()                 # marker lines: name version sha256 file

# fetch NAME...: download the packages in one apt-get call (each call
# reads apt's lists, a second here) and unpack each into pkg/NAME.
fetch() {
  local name log deb
  note "fetching $*"
  mkdir -p "$debs"
  log=$(mktemp)
  # apt-get download drops NAME_VERSION_ARCH.deb in the working directory.
  if ! (cd "$debs" && apt-get download -q "$@") >"$log" 2>&1; then
    cat "$log" >&2; rm -f "$log"
    die "apt-get download $* failed"
  fi
  rm -f "$log"
  for name in "$@"; do
    deb=$(ls "$debs/${name}"_*.deb 2>/dev/null | head -n 1)
    [ -n "$deb" ] || die "apt-get download $name left no ${name}_*.deb"
    rm -rf "${pkgs:?}/$name"
    mkdir -p "$pkgs/$name"
    if [[ $name == linux-image-* ]]; then
      # Only /boot: the 400 MB of modules are of no use to an initramfs
      # without them (the serial console, ACPI and devtmpfs are built in).
      dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$pkgs/$name" ./boot
    else
      dpkg-deb -x "$deb" "$pkgs/$name"
    fi
    have[$name]=1
    fetched+=("$name $(dpkg-deb -f "$deb" Version) $(sha256sum "$deb" | cut -d' ' -f1) ${deb##*/}")
  done
}

if [ -f "$marker" ]; then
  offline=1
  while read -r name _; do
    [ -d "$pkgs/$name" ] || die "$marker names $name but $pkgs/$name is missing; rm -rf $dir"
    have[$name]=1
  done <"$marker"
  kernel_pkg=$(grep -o '^linux-image-[^ ]*' "$marker") || die "$marker names no kernel; rm -rf $dir"
else
  offline=0
  # A run cut short leaves files but no marker: start clean.
  rm -rf "$debs" "$pkgs"
  kernel_pkg=$(apt-cache search --names-only '^linux-image-6.1.0-[0-9]+-amd64$' | cut -d' ' -f1 | sort -V | tail -n 1)
  [ -n "$kernel_pkg" ] || die "no linux-image-6.1.0-*-amd64 in the package lists (apt-get update?)"
  fetch "$kernel_pkg" busybox-static linux-perf
fi
release=${kernel_pkg#linux-image-}
kernel=$pkgs/$kernel_pkg/boot/vmlinuz-$release
[ -f "$kernel" ] || die "$kernel_pkg has no /boot/vmlinuz-$release"

# ---- what goes into the initramfs ----
manifest=$(mktemp)
trap 'rm -f "$manifest"' EXIT
declare -A entry=()        # archive path -> 1, so each is listed once
declare -A found=()        # soname -> archive path that provides it
elf_queue=()               # "package path" of ELF files still to scan

# guesses SONAME: the package names Debian's library naming (policy 8.1)
# suggests: libfoo.so.1 -> libfoo1, libfoo2.so.1 -> libfoo2-1, and the
# looser libpython3.11.so.1.0 -> libpython3.11, libbabeltrace-ctf.so.1 ->
# libbabeltrace1 and two more. Only guesses, tried among the Depends.
guesses() {
  local base=${1%%.so*} ver=${1#*.so.} major
  [ "$ver" = "$1" ] && ver=""
  major=${ver%%.*}
  base=${base,,}
  base=${base//_/-}
  if [[ $base == *[0-9] ]]; then echo "$base-$ver $base"; else echo "$base$ver"; fi
  echo "${base%%-*}$major"
  # libglib-2.0.so.0 -> libglib2.0-0; and zlib's own name.
  if [[ $base =~ ^([a-z]+)-([0-9].*)$ ]]; then echo "${BASH_REMATCH[1]}${BASH_REMATCH[2]}-$ver"; fi
  if [ "$base" = libz ]; then echo zlib1g; fi
}

# include PKG PATH: put /PATH from pkg/PKG into the archive, following a
# symlink to its target and queueing ELF files for their own NEEDED.
include() {
  local pkg=$1 path=${2#/} src target
  [ -z "${entry[$path]:-}" ] || return 0
  src=$pkgs/$pkg/$path
  entry[$path]=1
  if [ -L "$src" ]; then
    target=$(readlink "$src")
    echo "slink /$path $target 0777" >>"$manifest"
    if [[ $target != /* ]]; then target=$(dirname "/$path")/$target; fi
    target=$(realpath -m -s "$target")
    locate_path "$target" "$pkg"
  elif [ -f "$src" ]; then
    # Permissions from the package's executable bit only, never the host's umask.
    if [ -x "$src" ]; then echo "file /$path $src 0755" >>"$manifest"; else echo "file /$path $src 0644" >>"$manifest"; fi
    if [ "$(head -c 4 "$src" | od -An -c | tr -d ' ')" = '177ELF' ]; then elf_queue+=("$pkg $path"); fi
  else
    die "$pkg has no regular file or symlink /$path"
  fi
}

# The unpacked packages in a fixed order, so a file two of them have
# comes from the same one on every run.
unpacked() { printf '%s\n' "${!have[@]}" | sort; }

# locate_path PATH [PKG]: include /PATH from PKG if it has it, else from
# any unpacked package.
locate_path() {
  local path=${1#/} first=${2:-} p
  for p in $first $(unpacked); do
    if [ -e "$pkgs/$p/$path" ] || [ -L "$pkgs/$p/$path" ]; then include "$p" "$path"; return 0; fi
  done
  die "no unpacked package has /$path"
}

# The directories the loader searches without an ld.so.cache (ld.so --help).
libdirs=(lib/x86_64-linux-gnu usr/lib/x86_64-linux-gnu lib usr/lib)

# find_soname SONAME: include the library from any unpacked package; 1 if none has it.
# (-L too: -e would follow an absolute link out of pkg/ to the host's file.)
find_soname() {
  local p d
  for p in $(unpacked); do
    for d in "${libdirs[@]}"; do
      if [ -e "$pkgs/$p/$d/$1" ] || [ -L "$pkgs/$p/$d/$1" ]; then
        include "$p" "$d/$1"; found[$1]=/$d/$1; return 0
      fi
    done
  done
  return 1
}

# depends_of PKG: the package names of its Pre-Depends and Depends, first
# alternatives, without versions or :any; library packages first.
depends_of() {
  local deb
  deb=$(ls "$debs/${1}"_*.deb | head -n 1)
  { dpkg-deb -f "$deb" Pre-Depends; dpkg-deb -f "$deb" Depends; } | tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/:any//; s/ //g' |
    grep -v '^$' | awk '/^lib|^zlib/ {print; next} {rest = rest $0 "\n"} END {printf "%s", rest}'
}

# need SONAME PKG: make SONAME, which a file of PKG needs, part of the archive.
need() {
  local soname=$1 pkg=$2 dep
  [ -z "${found[$soname]:-}" ] || return 0
  find_soname "$soname" && return 0
  [ "$offline" = 0 ] || die "no unpacked package has $soname (needed by $pkg); rm -rf $dir to fetch again"
  # Not where the name suggested: it should still be in a package the
  # needing one depends on. Fetch them one at a time until one has it.
  for dep in $(depends_of "$pkg"); do
    [ -z "${have[$dep]:-}" ] || continue
    apt-cache show "$dep" >/dev/null 2>&1 || continue   # a virtual package
    fetch "$dep"
    find_soname "$soname" && return 0
  done
  die "found $soname (needed by $pkg) in none of its dependencies"
}

# scan_elves: the loader and the NEEDED libraries of every queued ELF file,
# and theirs in turn, a round (the files the last round put in) at a time.
# The sonames no unpacked package has are first looked for in one batch,
# per round, of the Depends their names suggest.
scan_elves() {
  local round item pkg src interp soname deps batch g i
  local -a sonames interps
  while [ ${#elf_queue[@]} -gt 0 ]; do
    round=("${elf_queue[@]}"); elf_queue=(); batch=(); sonames=(); interps=()
    for i in "${!round[@]}"; do
      item=${round[$i]}; pkg=${item%% *}; src=$pkgs/$pkg/${item#* }
      interp=$(readelf -lW "$src" | sed -n 's/.*Requesting program interpreter: \(.*\)\]$/\1/p')
      interps[$i]=$interp
      # The loader is a library too (libc6's): found as one, then at the path asked for.
      sonames[$i]="${interp:+${interp##*/} }$(readelf -dW "$src" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p' | tr '\n' ' ')"
      [ "$offline" = 0 ] || continue
      deps=""
      for soname in ${sonames[$i]}; do
        [ -z "${found[$soname]:-}" ] || continue
        find_soname "$soname" && continue
        [ -n "$deps" ] || deps=" $(depends_of "$pkg" | tr '\n' ' ') "
        for g in $(guesses "$soname"); do
          if [[ $deps == *" $g "* ]] && [ -z "${have[$g]:-}" ] && [[ " ${batch[*]} " != *" $g "* ]]; then batch+=("$g"); fi
        done
      done
    done
    if [ ${#batch[@]} -gt 0 ]; then fetch "${batch[@]}"; fi
    for i in "${!round[@]}"; do
      pkg=${round[$i]%% *}
      for soname in ${sonames[$i]}; do need "$soname" "$pkg"; done
      if [ -n "${interps[$i]}" ]; then locate_path "${interps[$i]}" "$pkg"; fi
    done
  done
}

include busybox-static bin/busybox
for a in "${applets[@]}"; do echo "slink /bin/$a busybox 0777" >>"$manifest"; done
include linux-perf usr/bin/perf
scan_elves
# topolab's own programs (testcases/linux/): the measuring window
# (busybox cannot write an I/O port) and the context-switch benchmark,
# built here with the host's gcc. Stripped and compiled from their own
# directory, so no path of this checkout gets into the image and the
# initramfs is the same bytes everywhere. Installed, CMake has built them
# the same way (testcases/CMakeLists.txt).
if [ -n "$window_source" ]; then
  window=$dir/topolab-window ctxsw=$dir/topolab-ctxsw
  (cd "$window_source" && gcc -static -s -O2 -Wall -Wextra -o "$window" topolab_window.c &&
    gcc -static -s -O2 -Wall -Wextra -o "$ctxsw" topolab_ctxsw.c)
else
  window=$here/topolab-window ctxsw=$here/topolab-ctxsw
fi
{
  echo "file /init $here/linux_init.sh 0755"
  echo "file /bin/topolab-window $window 0755"
  echo "file /bin/topolab-ctxsw $ctxsw 0755"
  for d in proc sys dev tmp root; do echo "dir /$d 0755"; done
  # The kernel opens /dev/console for /init before devtmpfs is mounted.
  echo "nod /dev/console 0600 c 5 1"
} >>"$manifest"

if [ "$offline" = 0 ]; then
  # The marker last: its presence means every package above is unpacked.
  printf '%s\n' "${fetched[@]}" | sort >"$marker.tmp"
  mv "$marker.tmp" "$marker"
fi

ln -sfn "pkg/$kernel_pkg/boot/vmlinuz-$release" "$dir/vmlinuz"
# Rewritten only when the bytes would differ (the script compares them).
python3 "$here/vmlinux_from_bzimage.py" "$kernel" -o "$dir/vmlinux" || die "cannot extract vmlinux from $kernel"
# The image is rebuilt only when what goes in may have changed: the
# packages are fixed once .complete is there, so the manifest, /init and
# the writer say it all. Uncompressed: the kernel copies 36 MB faster than
# it inflates 12 (a guest's gunzip costs about a billion instructions).
image=$dir/initramfs.cpio
stamp=$(sort "$manifest" | cat - "$here/linux_init.sh" "$here/make_initramfs.py" "$marker" "$window" "$ctxsw" | sha256sum | cut -d' ' -f1)
if [ ! -f "$image" ] || [ "$(cat "$dir/initramfs.stamp" 2>/dev/null)" != "$stamp" ]; then
  python3 "$here/make_initramfs.py" --manifest "$manifest" -o "$image"
  echo "$stamp" >"$dir/initramfs.stamp"
fi
echo "linux_guest: kernel $dir/vmlinuz initramfs $image"
