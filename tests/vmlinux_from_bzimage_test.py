#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Unit test of tools/vmlinux_from_bzimage.py on synthetic bzImages: a setup
header pointing at an XZ (with the kernel build's appended size) or gzip
payload of a fake ELF64 comes back out byte for byte; the output is left
alone when it already holds those bytes; broken images get one line.
"""
import gzip
import lzma
import os
import struct
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import vmlinux_from_bzimage  # noqa: E402

ELF = b"\x7fELF\x02\x01\x01" + bytes(57) + b"kernel text" * 100


def bzimage(payload, setup_sects=4, protocol=0x20f, offset=0x3a0):
    setup = bytearray(((setup_sects or 4) + 1) * 512)  # 0 means 4
    setup[0x1f1] = setup_sects
    setup[0x202:0x206] = b"HdrS"
    struct.pack_into("<H", setup, 0x206, protocol)
    struct.pack_into("<II", setup, 0x248, offset, len(payload))
    return bytes(setup) + bytes(offset) + payload + bytes(64)


def xz(data):
    # As the kernel's scripts/xz_wrap.sh and size_append do.
    return lzma.compress(data, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC32) + struct.pack("<I", len(data))


class ExtractVmlinux(unittest.TestCase):
    def test_xz_and_gzip_payloads(self):
        self.assertEqual(vmlinux_from_bzimage.extract(bzimage(xz(ELF))), ELF)
        self.assertEqual(vmlinux_from_bzimage.extract(bzimage(gzip.compress(ELF, mtime=0), setup_sects=0)), ELF)

    def test_refusals(self):
        cases = [
            (b"\x7fELF" + bytes(0x300), "HdrS"),
            (bzimage(xz(ELF), protocol=0x207), "2.07"),
            (bzimage(xz(ELF))[:-100], "runs past the end"),
            (bzimage(b"\x28\xb5\x2f\xfd" + bytes(16)), "not XZ"),
            (bzimage(xz(b"MZ not an elf")), "not an ELF64"),
            (bzimage(b"\xfd7zXZ\x00" + bytes(30)), "does not decompress"),
        ]
        for image, words in cases:
            with self.assertRaises(vmlinux_from_bzimage.ExtractError) as e:
                vmlinux_from_bzimage.extract(image)
            self.assertIn(words, str(e.exception))
            self.assertNotIn("\n", str(e.exception))

    def test_writes_once_and_is_idempotent(self):
        with tempfile.TemporaryDirectory() as d:
            src, out = os.path.join(d, "vmlinuz"), os.path.join(d, "vmlinux")
            with open(src, "wb") as f:
                f.write(bzimage(xz(ELF)))
            self.assertEqual(vmlinux_from_bzimage.main([src, "-o", out]), 0)
            with open(out, "rb") as f:
                self.assertEqual(f.read(), ELF)
            os.utime(out, (1, 1))
            self.assertEqual(vmlinux_from_bzimage.main([src, "-o", out]), 0)
            self.assertEqual(os.stat(out).st_mtime, 1)
            self.assertEqual(sorted(os.listdir(d)), ["vmlinux", "vmlinuz"])


if __name__ == "__main__":
    unittest.main()
