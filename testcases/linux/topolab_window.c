// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * topolab-window: the Linux guest's side of topolab's measuring window.
 *
 *   topolab-window begin   open the window
 *   topolab-window end     close the window
 *
 * and print /proc/interrupts as it was at that instant. The window is
 * topolab's measure port (0x4A0: 1 begins, 2 ends), which snapshots every
 * counter of the machine. The program reads /proc/interrupts, writes the
 * mark, and reads it again: each counter only grows, so where the RES and
 * CAL lines of both reads agree they are exactly the counts at the mark,
 * on every CPU. If an IPI came in between, it marks again (a second mark
 * moves the window's edge). The guest's deltas then equal topolab's counts
 * of the window. Under QEMU the port is unassigned and the write does
 * nothing.
 *
 * A static program of topolab's own, built with the host's gcc: busybox
 * has no way to write an I/O port.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/io.h>
#include <unistd.h>

enum { kMeasurePort = 0x4a0, kBegin = 1, kEnd = 2, kMaxAttempts = 1000 };
enum { kBufferSize = 1 << 20 };

static char before[kBufferSize], after[kBufferSize];

static long read_interrupts(char* buffer) {
  int fd = open("/proc/interrupts", O_RDONLY);
  if (fd < 0) return -1;
  long total = 0;
  for (;;) {
    ssize_t n = read(fd, buffer + total, kBufferSize - 1 - (size_t)total);
    if (n < 0) {
      close(fd);
      return -1;
    }
    if (n == 0) break;
    total += n;
  }
  close(fd);
  buffer[total] = '\0';
  return total;
}

/* The line of `label` ("RES:") in a /proc/interrupts text, up to its end. */
static const char* line_of(const char* text, const char* label, size_t* length) {
  for (const char* p = text; *p;) {
    const char* start = p;
    while (*p == ' ') ++p;
    const char* end = strchr(p, '\n');
    if (!end) end = p + strlen(p);
    if (strncmp(p, label, strlen(label)) == 0) {
      *length = (size_t)(end - start);
      return start;
    }
    p = *end ? end + 1 : end;
  }
  *length = 0;
  return NULL;
}

static int same_line(const char* a, const char* b, const char* label) {
  size_t la, lb;
  const char* x = line_of(a, label, &la);
  const char* y = line_of(b, label, &lb);
  return la == lb && (la == 0 || memcmp(x, y, la) == 0);
}

int main(int argc, char** argv) {
  if (argc != 2 || (strcmp(argv[1], "begin") && strcmp(argv[1], "end"))) {
    fprintf(stderr, "usage: topolab-window begin|end\n");
    return 2;
  }
  const int mark = strcmp(argv[1], "begin") == 0 ? kBegin : kEnd;
  if (ioperm(kMeasurePort, 4, 1) != 0) {
    perror("topolab-window: ioperm");
    return 1;
  }
  long n = read_interrupts(before);
  for (int attempt = 0; n >= 0 && attempt < kMaxAttempts; ++attempt) {
    outl(mark, kMeasurePort);
    n = read_interrupts(after);
    if (n < 0 || (same_line(before, after, "RES:") && same_line(before, after, "CAL:"))) break;
    memcpy(before, after, (size_t)n + 1);
  }
  if (n < 0) {
    perror("topolab-window: /proc/interrupts");
    return 1;
  }
  fwrite(after, 1, (size_t)n, stdout);
  return 0;
}
