/* How long one cache line takes to go to another process and back on this machine: the floor
 * under any shared-memory collective's latency (reports/collectives_shm_notes.md, small messages).
 * Two processes on a shared page take turns: the parent writes i, the child sees it and writes
 * i back, the parent sees that. Prints the best and the median of 9 batches, in ns per round trip.
 *
 *   cc -O2 -o /tmp/core_round_trip bench/collectives/core_round_trip.c && /tmp/core_round_trip
 *   /tmp/core_round_trip --iters 100000      # round trips per batch (default 50000)
 *
 * Standalone on purpose (no distlab library): it measures the machine, nothing of ours.
 * Nothing waits forever: either side gives up after 5 s without an answer, and the child dies
 * with its parent (PR_SET_PDEATHSIG) and is reaped before the parent returns.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kBatches = 9 };
static const double kGiveUpNs = 5e9;

static double nowNs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

/* Spins until *word == want; 0 on success, -1 after kGiveUpNs. */
static int awaitValue(_Atomic long* word, long want) {
  const double start = nowNs();
  for (;;) {
    for (int i = 0; i < 1024; ++i) {
      if (atomic_load_explicit(word, memory_order_acquire) == want) return 0;
      __builtin_ia32_pause();
    }
    if (nowNs() - start > kGiveUpNs) return -1;
  }
}

static long parseIters(int argc, char** argv) {
  long iters = 50000;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--help") == 0) {
      printf("usage: %s [--iters N]   (N: round trips per batch, 1..100000000)\n", argv[0]);
      exit(0);
    } else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc) {
      char* end = NULL;
      errno = 0;
      iters = strtol(argv[++i], &end, 10);
      if (errno != 0 || *end != '\0' || end == argv[i] || iters < 1 || iters > 100000000) {
        fprintf(stderr, "%s: --iters must be an integer in 1..100000000, got '%s'\n", argv[0],
                argv[i]);
        exit(2);
      }
    } else {
      fprintf(stderr, "%s: unknown or incomplete argument '%s' (valid: --iters N, --help)\n",
              argv[0], argv[i]);
      exit(2);
    }
  }
  return iters;
}

static int compareDoubles(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  const long iters = parseIters(argc, argv);
  _Atomic long* page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) {
    perror("mmap");
    return 1;
  }
  _Atomic long* ping = page;      /* parent writes */
  _Atomic long* pong = page + 8;  /* child writes: another cache line */
  const long total = iters * kBatches;
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child < 0) {
    perror("fork");
    return 1;
  }
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    for (long i = 1; i <= total; ++i) {
      if (awaitValue(ping, i) != 0) _exit(1);
      atomic_store_explicit(pong, i, memory_order_release);
    }
    _exit(0);
  }
  double perBatch[kBatches];
  int failed = 0;
  for (int b = 0; b < kBatches && !failed; ++b) {
    const double start = nowNs();
    for (long i = b * iters + 1; i <= (b + 1) * iters; ++i) {
      atomic_store_explicit(ping, i, memory_order_release);
      if (awaitValue(pong, i) != 0) {
        failed = 1;
        break;
      }
    }
    perBatch[b] = (nowNs() - start) / iters;
  }
  if (failed) kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  if (failed || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "%s: the other process stopped answering for 5 s\n", argv[0]);
    return 1;
  }
  qsort(perBatch, kBatches, sizeof(double), compareDoubles);
  printf("round trip between two processes: best %.0f ns, median %.0f ns (%d batches of %ld)\n",
         perBatch[0], perBatch[kBatches / 2], kBatches, iters);
  return 0;
}
