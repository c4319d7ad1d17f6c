#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Unit test of tools/make_initramfs.py: the archive is read back with a
newc parser of its own (not the writer's code, and no cpio needed), and
must follow the format, be deterministic, pad to 4 bytes, and carry device
nodes, symlinks and the parents nobody listed. Runs in well under a second.
"""
import gzip
import os
import stat
import struct
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import make_initramfs  # noqa: E402

FIELDS = ("ino", "mode", "uid", "gid", "nlink", "mtime", "filesize",
          "devmajor", "devminor", "rdevmajor", "rdevminor", "namesize", "check")


def parse_newc(data):
    """[(name, header dict, file data)] of a newc archive, checking as it
    goes that every header and every file's data start on a 4-byte
    boundary and that the padding is zeros. Stops after TRAILER!!!."""
    out, pos = [], 0
    while True:
        assert pos % 4 == 0, f"header at {pos} is not 4-byte aligned"
        assert data[pos:pos + 6] == b"070701", f"bad magic at {pos}: {data[pos:pos + 6]!r}"
        raw = data[pos + 6:pos + 110]
        assert len(raw) == 104 and all(c in b"0123456789ABCDEF" for c in raw), f"bad header at {pos}"
        h = {k: int(raw[i * 8:i * 8 + 8], 16) for i, k in enumerate(FIELDS)}
        name_end = pos + 110 + h["namesize"]
        assert data[name_end - 1] == 0, "name is not NUL-terminated"
        name = data[pos + 110:name_end - 1].decode()
        body = name_end + (-name_end % 4)
        assert data[name_end:body] == b"\0" * (body - name_end), f"{name}: name padding not zeros"
        end = body + h["filesize"]
        content = data[body:end]
        pos = end + (-end % 4)
        assert data[end:pos] == b"\0" * (pos - end), f"{name}: data padding not zeros"
        out.append((name, h, content))
        if name == "TRAILER!!!":
            return out, data[pos:]


class MakeInitramfsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        t = self.tmp.name
        self.init = os.path.join(t, "init")
        with open(self.init, "w") as f:
            f.write("#!/bin/sh\necho hello\n")  # 21 bytes: its data needs padding
        os.chmod(self.init, 0o700)  # the archive's mode comes from the spec, not from here
        self.lib = os.path.join(t, "libx.so.1")
        with open(self.lib, "wb") as f:
            f.write(b"\x7fELF" + bytes(range(256)) * 3)
        self.manifest = os.path.join(t, "manifest")
        with open(self.manifest, "w") as f:
            f.write("# a comment\n\n"
                    f"file /init {self.init} 0755\n"
                    "dir /proc 0755\n"
                    "nod /dev/console 0600 c 5 1\n"
                    "slink /lib64/ld-linux-x86-64.so.2 /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 0777 0 0\n"
                    f"file /lib/x86_64-linux-gnu/libx.so.1 {self.lib} 0644 0 0\n")

    def tearDown(self):
        self.tmp.cleanup()

    def make(self, *extra, out="out.cpio.gz"):
        path = os.path.join(self.tmp.name, out)
        args = ["--manifest", self.manifest, "--symlink", "/bin/sh=busybox",
                "--file", f"/bin/busybox={self.init}", "--dir", "/sys", "--nod", "/dev/null=c:1:3", *extra]
        self.assertEqual(make_initramfs.main(args + ["-o", path]), 0)
        with open(path, "rb") as f:
            return f.read()

    def entries(self, gz):
        members, rest = parse_newc(gzip.decompress(gz))
        self.assertEqual(rest, b"", "bytes after the trailer")
        return members

    def test_gzip_header_has_no_time_or_name(self):
        gz = self.make()
        self.assertEqual(gz[:3], b"\x1f\x8b\x08")
        self.assertEqual(gz[3] & 0x08, 0, "FNAME set")
        self.assertEqual(struct.unpack("<I", gz[4:8])[0], 0, "gzip mtime is not 0")

    def test_format(self):
        members = self.entries(self.make())
        names = [n for n, _, _ in members]
        self.assertEqual(names[-1], "TRAILER!!!")
        body = names[:-1]
        self.assertEqual(body, sorted(body, key=str.encode), "entries not sorted")
        # Parents nobody listed come in as directories.
        for d in ("bin", "dev", "lib", "lib/x86_64-linux-gnu", "lib64"):
            self.assertIn(d, body)
        self.assertFalse(any(n.startswith("/") for n in names), "names carry a leading /")
        for i, (name, h, _) in enumerate(members[:-1], start=1):
            self.assertEqual(h["ino"], i, f"{name}: inode not in order")
            for k in ("uid", "gid", "mtime", "devmajor", "devminor", "check"):
                self.assertEqual(h[k], 0, f"{name}: {k} is not 0")
            self.assertEqual(h["namesize"], len(name) + 1)
        trailer = members[-1][1]
        # GNU cpio's trailer: every field 0 but nlink 1 and the name's size.
        self.assertEqual(trailer, dict.fromkeys(FIELDS, 0) | {"nlink": 1, "namesize": 11})

    def test_kinds(self):
        m = {n: (h, d) for n, h, d in self.entries(self.make())}
        h, d = m["init"]
        self.assertEqual(h["mode"], stat.S_IFREG | 0o755)
        self.assertEqual(d, b"#!/bin/sh\necho hello\n")
        self.assertEqual(h["filesize"], 21)
        self.assertEqual(m["lib/x86_64-linux-gnu/libx.so.1"][0]["mode"], stat.S_IFREG | 0o644)
        h, d = m["dev/console"]
        self.assertEqual(h["mode"], stat.S_IFCHR | 0o600)
        self.assertEqual((h["rdevmajor"], h["rdevminor"], h["filesize"]), (5, 1, 0))
        self.assertEqual(m["dev/null"][0]["mode"], stat.S_IFCHR | 0o600)
        self.assertEqual((m["dev/null"][0]["rdevmajor"], m["dev/null"][0]["rdevminor"]), (1, 3))
        h, d = m["lib64/ld-linux-x86-64.so.2"]
        self.assertEqual(h["mode"], stat.S_IFLNK | 0o777)
        self.assertEqual(d, b"/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
        self.assertEqual(m["bin/sh"][1], b"busybox")
        # --file takes 0755 from an executable source, whatever its own mode bits.
        self.assertEqual(m["bin/busybox"][0]["mode"], stat.S_IFREG | 0o755)
        for d in ("proc", "sys", "dev", "bin"):
            self.assertEqual(m[d][0]["mode"], stat.S_IFDIR | 0o755)
            self.assertEqual(m[d][0]["nlink"], 2)

    def test_mode_override(self):
        m = {n: h for n, h, _ in self.entries(self.make("--mode", "/dev/console=0620", "--mode", "/proc=0555"))}
        self.assertEqual(m["dev/console"]["mode"], stat.S_IFCHR | 0o620)
        self.assertEqual(m["proc"]["mode"], stat.S_IFDIR | 0o555)

    def test_deterministic(self):
        first = self.make(out="a.cpio.gz")
        # The source's times and the host's clock must not show.
        os.utime(self.init, (12345, 67890))
        second = self.make(out="b.cpio.gz")
        self.assertEqual(first, second)
        plain = self.make(out="c.cpio")
        self.assertEqual(gzip.decompress(first), plain)

    def test_bad_specs(self):
        bad = os.path.join(self.tmp.name, "bad")
        for line in ("dir /x 0755 1000 1000", "fifo /x 0644", "nod /x 0600 p 1 2", "dir /../x 0755",
                     "file /x /nonexistent 0644", "dir /x 01777777"):
            with open(bad, "w") as f:
                f.write(line + "\n")
            with self.assertRaises(SystemExit, msg=line):
                make_initramfs.main(["--manifest", bad, "-o", os.path.join(self.tmp.name, "bad.cpio")])
        with self.assertRaises(SystemExit):
            self.make("--dir", "/proc")  # listed twice
        with self.assertRaises(SystemExit):
            self.make("--dir", "/init/x")  # a parent that is a file


if __name__ == "__main__":
    unittest.main()
