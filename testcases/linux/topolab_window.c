/*
 * topolab-window: the Linux guest's side of topolab's measuring window.
 *
 *   topolab-window begin   read /proc/interrupts, then open the window
 *   topolab-window end     close the window, then read /proc/interrupts
 *
 * and print what was read. The window is topolab's measure port (0x4A0:
 * 1 begins, 2 ends), which snapshots every counter of the machine, so the
 * guest's /proc/interrupts deltas and topolab's counts cover the same
 * stretch of the run but for the few instructions between the read and the
 * port write, in one process, with no fork or exec between them. Under QEMU
 * the port is unassigned and the write does nothing.
 *
 * A static program of topolab's own, built with the host's gcc: busybox
 * has no way to write an I/O port.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/io.h>
#include <unistd.h>

enum { kMeasurePort = 0x4a0, kBegin = 1, kEnd = 2 };

static char buffer[1 << 20];

static long read_interrupts(void) {
  int fd = open("/proc/interrupts", O_RDONLY);
  if (fd < 0) return -1;
  long total = 0;
  for (;;) {
    ssize_t n = read(fd, buffer + total, sizeof buffer - 1 - (size_t)total);
    if (n < 0) {
      close(fd);
      return -1;
    }
    if (n == 0) break;
    total += n;
  }
  close(fd);
  return total;
}

int main(int argc, char** argv) {
  if (argc != 2 || (strcmp(argv[1], "begin") && strcmp(argv[1], "end"))) {
    fprintf(stderr, "usage: topolab-window begin|end\n");
    return 2;
  }
  const int begin = strcmp(argv[1], "begin") == 0;
  if (ioperm(kMeasurePort, 4, 1) != 0) {
    perror("topolab-window: ioperm");
    return 1;
  }
  long n = 0;
  if (begin) n = read_interrupts();
  outl(begin ? kBegin : kEnd, kMeasurePort);
  if (!begin) n = read_interrupts();
  if (n < 0) {
    perror("topolab-window: /proc/interrupts");
    return 1;
  }
  fwrite(buffer, 1, (size_t)n, stdout);
  return 0;
}
