/* The copy rates behind Note [shm single copy] (runtime/comm/backends/shm/shm_single_copy.hpp):
 * process_vm_readv from a forked child's memory against memcpy of the same bytes, per size.
 *
 *   cc -O2 -o /tmp/cma_copy_rate bench/collectives/cma_copy_rate.c && /tmp/cma_copy_rate
 *   /tmp/cma_copy_rate --hugepages   # buffers advised MADV_HUGEPAGE
 *
 * Standalone on purpose (no distlab library): it measures the kernel's path, nothing of ours.
 * The child only waits on a pipe and exits when the parent closes it, so nothing outlives a run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static char* buffer(size_t n, int huge, int fill) {
  const size_t align = 2u << 20;
  char* p = aligned_alloc(align, (n + align - 1) / align * align);
  if (!p) {
    perror("aligned_alloc");
    exit(1);
  }
  if (huge) madvise(p, n, MADV_HUGEPAGE);
  memset(p, fill, n);
  return p;
}

int main(int argc, char** argv) {
  int huge = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--hugepages") == 0) {
      huge = 1;
    } else if (strcmp(argv[i], "--help") == 0) {
      printf("usage: %s [--hugepages]\n", argv[0]);
      return 0;
    } else {
      fprintf(stderr, "%s: unknown argument '%s' (valid: --hugepages, --help)\n", argv[0], argv[i]);
      return 2;
    }
  }
  const size_t sizes[] = {64u << 10, 256u << 10, 1u << 20, 4u << 20, 16u << 20, 64u << 20};
  printf("%10s %16s %16s %8s\n", "bytes", "kernel (GB/s)", "memcpy (GB/s)", "ratio");
  for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); ++s) {
    const size_t n = sizes[s];
    char* src = buffer(n, huge, 1);
    char* dst = buffer(n, huge, 2);
    int fds[2];
    if (pipe(fds) != 0) {
      perror("pipe");
      return 1;
    }
    const pid_t child = fork();
    if (child < 0) {
      perror("fork");
      return 1;
    }
    if (child == 0) {  /* the same addresses, its own copy-on-write pages */
      char c;
      close(fds[1]);
      (void)!read(fds[0], &c, 1);
      _exit(0);
    }
    close(fds[0]);
    int iters = (int)(2e9 / n);
    iters = iters < 5 ? 5 : iters > 2000 ? 2000 : iters;
    const double t0 = seconds();
    for (int k = 0; k < iters; ++k) {
      struct iovec local = {dst, n}, remote = {src, n};
      if (process_vm_readv(child, &local, 1, &remote, 1, 0) != (ssize_t)n) {
        fprintf(stderr, "process_vm_readv: %s\n", strerror(errno));
        close(fds[1]);
        waitpid(child, NULL, 0);
        return 1;
      }
    }
    const double t1 = seconds();
    for (int k = 0; k < iters; ++k) {
      memcpy(dst, src, n);
      __asm__ volatile("" : : "r"(dst) : "memory");
    }
    const double t2 = seconds();
    const double kernel = n * (double)iters / (t1 - t0) / 1e9;
    const double copy = n * (double)iters / (t2 - t1) / 1e9;
    printf("%10zu %16.2f %16.2f %8.2f\n", n, kernel, copy, kernel / copy);
    close(fds[1]);
    waitpid(child, NULL, 0);
    free(src);
    free(dst);
  }
  return 0;
}
