#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Writes the uncompressed kernel (vmlinux, an ELF64) that a bzImage
carries, so topolab can boot it by PVH and skip the kernel's own
decompressor. The host does the work the guest's decompressor would.

Where the payload is (the kernel's Documentation/x86/boot.rst, "Details of
header fields"): the protected-mode part starts after (setup_sects + 1)
sectors of 512 bytes (setup_sects 0 means 4), and the setup header's
payload_offset (0x248) and payload_length (0x24c) give the compressed
kernel inside that part. Boot protocol 2.08 or later. Debian's kernels
compress with XZ (CONFIG_KERNEL_XZ); gzip, bzip2 and LZMA payloads are
unpacked too, LZ4, LZO and zstd are refused. What comes out is the
kernel's vmlinux.bin (objcopy -S of vmlinux) followed, for a relocatable
kernel, by its relocation table; the ELF's headers ignore the tail.

Deterministic and idempotent: the output depends on the bzImage's bytes
only, and an output already holding those bytes is left alone (its mtime
too). Written through a temporary file and a rename, so a run cut short
leaves no half kernel behind.

topolab's own code, from the boot protocol's field descriptions: not the
kernel's scripts/extract-vmlinux (a shell script that searches the image
for compression magic), and no kernel code.

Usage: vmlinux_from_bzimage.py BZIMAGE -o VMLINUX
"""
import argparse
import bz2
import lzma
import os
import struct
import sys
import tempfile
import zlib

MIN_PROTOCOL = 0x208  # the first with payload_offset and payload_length


class ExtractError(Exception):
    """The bzImage cannot give a vmlinux; one line."""


def payload(image):
    """The compressed kernel inside the bzImage `image` (bytes)."""
    if len(image) < 0x250 or image[0x202:0x206] != b"HdrS":
        raise ExtractError('not a bzImage: no "HdrS" setup header at 0x202')
    protocol, = struct.unpack_from("<H", image, 0x206)
    if protocol < MIN_PROTOCOL:
        raise ExtractError(f"boot protocol {protocol >> 8}.{protocol & 0xff:02} has no payload fields "
                           f"(2.08 and later do)")
    setup_sects = image[0x1f1] or 4
    offset, length = struct.unpack_from("<II", image, 0x248)
    start = (setup_sects + 1) * 512 + offset
    if start + length > len(image):
        raise ExtractError(f"the payload [{start:#x}+{length:#x}] runs past the end of the {len(image)}-byte file")
    return image[start:start + length]


def decompress(data):
    """The payload unpacked, by its magic number."""
    try:
        if data.startswith(b"\xfd7zXZ\x00"):
            # The kernel's build appends the uncompressed size (4 bytes)
            # after the XZ stream; a multi-stream decoder would choke on it.
            return lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(data)
        if data.startswith(b"\x1f\x8b"):
            return zlib.decompressobj(wbits=31).decompress(data)
        if data.startswith(b"BZh"):
            return bz2.BZ2Decompressor().decompress(data)
        if data.startswith(b"\x5d\x00\x00"):
            return lzma.LZMADecompressor(format=lzma.FORMAT_ALONE).decompress(data)
    except (lzma.LZMAError, OSError, EOFError, zlib.error) as e:
        raise ExtractError(f"the payload does not decompress: {e}") from None
    raise ExtractError(f"the payload's compression (magic {data[:4].hex()}) is not XZ, gzip, bzip2 or LZMA")


def extract(image):
    """vmlinux's bytes from a bzImage's bytes."""
    out = decompress(payload(image))
    if out[:5] != b"\x7fELF\x02":
        raise ExtractError("the payload is not an ELF64 kernel")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description="Extract the uncompressed vmlinux from a bzImage.")
    ap.add_argument("bzimage")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args(argv)
    try:
        with open(args.bzimage, "rb") as f:
            vmlinux = extract(f.read())
    except (OSError, ExtractError) as e:
        print(f"vmlinux_from_bzimage: {args.bzimage}: {e}", file=sys.stderr)
        return 1
    try:
        with open(args.output, "rb") as f:
            if f.read() == vmlinux:
                return 0
    except OSError:
        pass
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(args.output)), prefix=".vmlinux.")
    with os.fdopen(fd, "wb") as f:
        f.write(vmlinux)
    os.chmod(tmp, 0o644)
    os.replace(tmp, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
