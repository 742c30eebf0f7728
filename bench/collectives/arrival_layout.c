/* What the layout of an arrival costs: two processes take the steps of a small
 * allreduce in lockstep, with nothing of distlab around them, in two layouts
 * (reports/collectives_shm_notes.md, sixth round):
 *
 *   three-line  today's shm step: seq and op type into the rank's control line, the
 *               descriptor (one line) and the payload (one slot line) written, then the
 *               step stored in the control line and a full fence; the peer spins on the
 *               step, then reads the descriptor and the payload.
 *   one-line    step, descriptor and payload in one cache line, stored last.
 *
 * Between steps each side may run `--work N` iterations of a dependent floating-point
 * chain (software the real path runs between arrivals); --work 0 times the layout alone.
 * Prints the best of 7 batches in ns per step for each layout (and, with --work, for
 * the work alone).
 *
 *   cc -O2 -o /tmp/arrival_layout bench/collectives/arrival_layout.c && /tmp/arrival_layout
 *   /tmp/arrival_layout --iters 200000 --work 400
 *
 * Standalone (no distlab library): it measures the machine and the layout. Nothing waits
 * forever: either side gives up after 5 s, and the child dies with its parent.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kBatches = 7 };
static const double kGiveUpNs = 5e9;

typedef struct {
  _Alignas(64) _Atomic uint64_t step;
  _Atomic uint64_t seq;
  _Atomic uint32_t opType;
} Control;
typedef struct {
  _Alignas(64) uint64_t seq;
  uint32_t opType, dtype, reduceOp;
  int32_t root;
  uint64_t bytes;
  double scalar;
  uint64_t addr;
} Desc;
typedef struct {
  _Alignas(64) unsigned char data[64];
} Line;
typedef struct { /* the one-line record: step last */
  _Alignas(64) uint64_t seq;
  uint32_t opType, dtype, reduceOp;
  int32_t root;
  uint32_t bytes;
  unsigned char payload[28];
  _Atomic uint64_t step;
} Record;
typedef struct {
  Control control[2];
  Desc desc[2][2];
  Line slot[2][2][16]; /* slots a few lines apart, as in the segment */
  Record record[2][2];
  _Alignas(64) _Atomic uint32_t sleepers;
} Shared;

static Shared* shared;
static long work;
static volatile double sink;

static double nowNs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static void busy(void) {
  double a = sink;
  for (long k = 0; k < work; ++k) a = a * 1.0000001 + 1e-9;
  sink = a;
}

/* Spins until *word >= want; exits the process after kGiveUpNs. */
static void awaitStep(_Atomic uint64_t* word, uint64_t want) {
  const double start = nowNs();
  for (;;) {
    for (int i = 0; i < 1024; ++i) {
      if (atomic_load_explicit(word, memory_order_acquire) >= want) return;
      __builtin_ia32_pause();
    }
    if (nowNs() - start > kGiveUpNs) {
      fprintf(stderr, "arrival_layout: the other process stopped answering for 5 s\n");
      _exit(1);
    }
  }
}

static void threeLine(int me, uint64_t i) {
  const int p = i & 1, peer = 1 - me;
  const float one = 1.0f;
  atomic_store_explicit(&shared->control[me].seq, i, memory_order_relaxed);
  atomic_store_explicit(&shared->control[me].opType, 1, memory_order_relaxed);
  const Desc d = {i, 1, 0, 0, -1, 8, 0, 0};
  shared->desc[me][p] = d;
  memcpy(shared->slot[me][p][0].data, &one, sizeof one);
  atomic_store_explicit(&shared->control[me].step, i, memory_order_release);
  atomic_thread_fence(memory_order_seq_cst);
  if (atomic_load(&shared->sleepers) != 0) abort();
  awaitStep(&shared->control[peer].step, i);
  const Desc theirs = shared->desc[peer][p];
  if (theirs.seq != i || theirs.bytes != 8) abort();
  float a, b;
  memcpy(&a, shared->slot[peer][p][0].data, sizeof a);
  memcpy(&b, shared->slot[me][p][0].data, sizeof b);
  sink += a + b;
}

static void oneLine(int me, uint64_t i) {
  const int p = i & 1, peer = 1 - me;
  const float one = 1.0f;
  Record* mine = &shared->record[me][p];
  mine->seq = i;
  mine->opType = 1;
  mine->bytes = 8;
  memcpy(mine->payload, &one, sizeof one);
  atomic_store_explicit(&mine->step, i, memory_order_release);
  atomic_thread_fence(memory_order_seq_cst);
  if (atomic_load(&shared->sleepers) != 0) abort();
  Record* theirs = &shared->record[peer][p];
  awaitStep(&theirs->step, i);
  if (theirs->seq != i || theirs->bytes != 8) abort();
  float a, b;
  memcpy(&a, theirs->payload, sizeof a);
  memcpy(&b, mine->payload, sizeof b);
  sink += a + b;
}

static long parseLong(const char* flag, const char* text, long lo, long hi) {
  char* end = NULL;
  errno = 0;
  const long v = strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || end == text || v < lo || v > hi) {
    fprintf(stderr, "arrival_layout: %s must be an integer in %ld..%ld, got '%s'\n", flag, lo, hi,
            text);
    exit(2);
  }
  return v;
}

static double timeLayout(void (*step)(int, uint64_t), long iters) {
  memset(shared, 0, sizeof *shared);
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child < 0) {
    perror("fork");
    exit(1);
  }
  const int me = child == 0 ? 1 : 0;
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
  }
  double best = 1e300;
  for (long b = 0; b < kBatches; ++b) {
    const double start = nowNs();
    for (long k = 1; k <= iters; ++k) {
      busy();
      step(me, (uint64_t)(b * iters + k));
    }
    const double perStep = (nowNs() - start) / iters;
    if (perStep < best) best = perStep;
  }
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) exit(1);
  return best;
}

/* The --work chain alone, in this process: what the steps add to it. */
static double timeWorkAlone(long iters) {
  double best = 1e300;
  for (long b = 0; b < kBatches; ++b) {
    const double start = nowNs();
    for (long k = 0; k < iters; ++k) busy();
    const double perStep = (nowNs() - start) / iters;
    if (perStep < best) best = perStep;
  }
  return best;
}

int main(int argc, char** argv) {
  long iters = 200000;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--help") == 0) {
      printf("usage: %s [--iters N] [--work W]   (N: steps per batch, 1..100000000; W: "
             "floating-point chain iterations between steps, 0..1000000)\n", argv[0]);
      return 0;
    } else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc) {
      iters = parseLong("--iters", argv[++i], 1, 100000000);
    } else if (strcmp(argv[i], "--work") == 0 && i + 1 < argc) {
      work = parseLong("--work", argv[++i], 0, 1000000);
    } else {
      fprintf(stderr, "arrival_layout: unknown or incomplete argument '%s' (valid: --iters N, "
              "--work W, --help)\n", argv[i]);
      return 2;
    }
  }
  shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) {
    perror("mmap");
    return 1;
  }
  const double three = timeLayout(threeLine, iters);
  const double one = timeLayout(oneLine, iters);
  printf("per step, best of %d batches of %ld (work %ld): three-line %.0f ns, one-line %.0f ns",
         kBatches, iters, work, three, one);
  if (work > 0) printf(", the work alone %.0f ns", timeWorkAlone(iters));
  printf("\n");
  return 0;
}
