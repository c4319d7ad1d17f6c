// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * topolab-ctxsw: the halt-polling experiment's benchmark on the Linux guest.
 *
 *   topolab-ctxsw LOOPS
 *
 * Two processes, pinned to CPUs 0 and 1, hand a token back and forth
 * LOOPS times through a futex in a shared page: each waits in FUTEX_WAIT
 * until the other writes its turn and wakes it. Every hand-over puts one
 * CPU to sleep (its idle loop: HLT, a poll, MWAIT) and wakes the other
 * (an IPI), which is the traffic halt-polling trades host CPU against.
 * It prints, on the guest's CLOCK_MONOTONIC:
 *
 *   topolab-ctxsw loops=L switches=S elapsed_ns=E ns_per_switch=N
 *
 * with S = 2 L (each round trip is two switches) and N = E / S, timed
 * after a short warm-up. The seed's contextswitch benchmark measured the
 * same thing.
 *
 * A static program of topolab's own, built with the host's gcc, as
 * topolab-window is.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kWarmUp = 100 };

static long futex(volatile int* word, int op, int value) {
  return syscall(SYS_futex, (int*)word, op, value, NULL, NULL, 0);
}

static int pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof set, &set);
}

/* Waits until *turn is `mine`, then gives the turn to the other side. */
static void take_and_pass(volatile int* turn, int mine) {
  while (__atomic_load_n(turn, __ATOMIC_ACQUIRE) != mine) {
    long r = futex(turn, FUTEX_WAIT, !mine);
    if (r != 0 && errno != EAGAIN && errno != EINTR) {
      perror("topolab-ctxsw: futex wait");
      exit(1);
    }
  }
  __atomic_store_n(turn, !mine, __ATOMIC_RELEASE);
  futex(turn, FUTEX_WAKE, 1);
}

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int main(int argc, char** argv) {
  char* end = NULL;
  long loops = argc == 2 ? strtol(argv[1], &end, 10) : 0;
  if (argc != 2 || !end || *end || loops <= 0) {
    fprintf(stderr, "usage: topolab-ctxsw LOOPS (a whole number above 0)\n");
    return 2;
  }
  volatile int* turn = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (turn == MAP_FAILED) {
    perror("topolab-ctxsw: mmap");
    return 1;
  }
  *turn = 0;
  pid_t child = fork();
  if (child < 0) {
    perror("topolab-ctxsw: fork");
    return 1;
  }
  if (child == 0) {
    if (pin(1) != 0) {
      perror("topolab-ctxsw: pin to CPU 1");
      _exit(1);
    }
    for (long i = 0; i < kWarmUp + loops; ++i) take_and_pass(turn, 1);
    _exit(0);
  }
  if (pin(0) != 0) {
    perror("topolab-ctxsw: pin to CPU 0");
    return 1;
  }
  for (long i = 0; i < kWarmUp; ++i) take_and_pass(turn, 0);
  uint64_t begin = now_ns();
  for (long i = 0; i < loops; ++i) take_and_pass(turn, 0);
  /* The child's last hand-back: the token is ours again. */
  while (__atomic_load_n(turn, __ATOMIC_ACQUIRE) != 0) futex(turn, FUTEX_WAIT, 1);
  uint64_t elapsed = now_ns() - begin;
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "topolab-ctxsw: the CPU 1 side failed\n");
    return 1;
  }
  uint64_t switches = 2 * (uint64_t)loops;
  printf("topolab-ctxsw loops=%ld switches=%llu elapsed_ns=%llu ns_per_switch=%llu\n", loops,
         (unsigned long long)switches, (unsigned long long)elapsed, (unsigned long long)(elapsed / switches));
  return 0;
}
