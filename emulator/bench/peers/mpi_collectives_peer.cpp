// distlab_mpi_peer: the Open MPI side of `distlab bench collectives --peer mpi`.
// Runs under mpirun; times the MPI call that does what each of distlab's bench
// operations does (Note [Bench operations] in emulator/bench/bench_ops.hpp) on
// exactly the sizes, inputs, iteration rule and statistics of distlab's own
// rows (emulator/bench/collective_timer.cpp), so the two tables compare like
// with like, and writes rank 0's rows as JSON. Ops are named as distlab's
// bench names them (torch.distributed's names, and send_recv), so the rows of
// both sides pair up by name. MPI has no list forms: all_gather,
// reduce_scatter and all_to_all time the same calls as their flat forms.
//
//   mpirun -np N distlab_mpi_peer --ops all_reduce,all_gather_into_tensor --min-bytes 8
//          --max-bytes 67108864 --iters 0 --warmup 5 --out rows.json
//
// Standalone on purpose (MPI and the C++ library only): it is built only where
// libopenmpi-dev is installed and must not pull distlab's libraries into an MPI
// process. Arguments come from distlab itself, which validated them; a bad one
// still ends with a message and exit code 2.
// C bindings only: the C++ bindings are deprecated and warn under -Wextra.
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Args {
  std::vector<std::string> ops;
  uint64_t minBytes = 8, maxBytes = 64ull << 20;
  int iters = 0, warmup = 5;
  std::string out;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "distlab_mpi_peer: %s\n", why.c_str());
  MPI_Abort(MPI_COMM_WORLD, 2);
  std::exit(2);
}

uint64_t number(const char* flag, const char* text) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0') usage(std::string(flag) + " '" + text + "' is not a number");
  return v;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage(flag + ": missing value");
    const char* v = argv[++i];
    if (flag == "--ops") {
      std::stringstream in(v);
      for (std::string op; std::getline(in, op, ',');) a.ops.push_back(op);
    } else if (flag == "--min-bytes") a.minBytes = number("--min-bytes", v);
    else if (flag == "--max-bytes") a.maxBytes = number("--max-bytes", v);
    else if (flag == "--iters") a.iters = static_cast<int>(number("--iters", v));
    else if (flag == "--warmup") a.warmup = static_cast<int>(number("--warmup", v));
    else if (flag == "--out") a.out = v;
    else usage("unknown flag " + flag);
  }
  if (a.ops.empty() || a.out.empty() || a.minBytes < 1 || a.maxBytes < a.minBytes) {
    usage("need --ops, --out and 1 <= --min-bytes <= --max-bytes");
  }
  return a;
}

// The same inputs as distlab's rows (collective_timer.cpp: inputValue).
float inputValue(int rank, uint64_t i) {
  return static_cast<float>(static_cast<int64_t>((rank * 7 + i * 3) % 13) - 6);
}

struct Op {
  std::vector<float> in, out;
  std::function<void()> run;
  std::function<float(uint64_t)> expected;
  bool inPlace = false;  // the result is in `in` (all_reduce, broadcast, reduce)
  bool checked = true;   // false: this rank's output is not defined (reduce, gather off root)
};

void fill(std::vector<float>& v, int rank, uint64_t count) {
  v.resize(count);
  for (uint64_t i = 0; i < count; ++i) v[i] = inputValue(rank, i);
}

float sumOverRanks(int n, uint64_t i) {
  float s = 0;
  for (int r = 0; r < n; ++r) s += inputValue(r, i);
  return s;
}

bool is(const std::string& name, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (name == n) return true;
  }
  return false;
}

// all_reduce, broadcast, reduce: one buffer, in place (reduce: on the root).
void inPlace(Op& op, const std::string& name, uint64_t count, int me, int n) {
  fill(op.in, me, count);
  op.inPlace = true;
  float* in = op.in.data();
  const int cc = static_cast<int>(count);
  if (name == "all_reduce") {
    op.run = [=] { MPI_Allreduce(MPI_IN_PLACE, in, cc, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); };
  } else if (name == "broadcast") {
    op.run = [=] { MPI_Bcast(in, cc, MPI_FLOAT, 0, MPI_COMM_WORLD); };
    op.expected = [](uint64_t i) { return inputValue(0, i); };
    return;
  } else {
    op.run = [=] {
      MPI_Reduce(me == 0 ? MPI_IN_PLACE : in, in, cc, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
    };
    op.checked = me == 0;
  }
  op.expected = [n](uint64_t i) { return sumOverRanks(n, i); };
}

// The gathers: rank q's m elements at q * m of `out` (gather: on the root).
void gathering(Op& op, const std::string& name, uint64_t count, int me, int n) {
  const uint64_t m = count / n;
  fill(op.in, me, m);
  op.out.resize(count);
  float* in = op.in.data();
  float* out = op.out.data();
  const int cm = static_cast<int>(m);
  if (name == "gather") {
    op.run = [=] { MPI_Gather(in, cm, MPI_FLOAT, out, cm, MPI_FLOAT, 0, MPI_COMM_WORLD); };
    op.checked = me == 0;
  } else {
    op.run = [=] { MPI_Allgather(in, cm, MPI_FLOAT, out, cm, MPI_FLOAT, MPI_COMM_WORLD); };
  }
  op.expected = [m](uint64_t i) { return inputValue(static_cast<int>(i / m), i % m); };
}

// The scatters: this rank's m elements of the count-element input(s).
void scattering(Op& op, const std::string& name, uint64_t count, int me, int n) {
  const uint64_t m = count / n, offset = static_cast<uint64_t>(me) * m;
  fill(op.in, name == "scatter" ? 0 : me, count);
  op.out.resize(m);
  float* in = op.in.data();
  float* out = op.out.data();
  const int cm = static_cast<int>(m);
  if (name == "scatter") {
    op.run = [=] { MPI_Scatter(in, cm, MPI_FLOAT, out, cm, MPI_FLOAT, 0, MPI_COMM_WORLD); };
    op.expected = [offset](uint64_t i) { return inputValue(0, offset + i); };
    return;
  }
  op.run = [=] { MPI_Reduce_scatter_block(in, out, cm, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); };
  op.expected = [n, offset](uint64_t i) { return sumOverRanks(n, offset + i); };
}

Op makeOp(const std::string& name, uint64_t count, int me, int n) {
  Op op;
  if (is(name, {"all_reduce", "broadcast", "reduce"})) {
    inPlace(op, name, count, me, n);
  } else if (is(name, {"all_gather_into_tensor", "all_gather", "gather"})) {
    gathering(op, name, count, me, n);
  } else if (is(name, {"reduce_scatter_tensor", "reduce_scatter", "scatter"})) {
    scattering(op, name, count, me, n);
  } else if (is(name, {"all_to_all_single", "all_to_all"})) {
    const uint64_t m = count / n, offset = static_cast<uint64_t>(me) * m;
    fill(op.in, me, count);
    op.out.resize(count);
    float* in = op.in.data();
    float* out = op.out.data();
    const int cm = static_cast<int>(m);
    op.run = [=] { MPI_Alltoall(in, cm, MPI_FLOAT, out, cm, MPI_FLOAT, MPI_COMM_WORLD); };
    op.expected = [m, offset](uint64_t i) {
      return inputValue(static_cast<int>(i / m), offset + i % m);
    };
  } else if (name == "barrier") {
    op.run = [] { MPI_Barrier(MPI_COMM_WORLD); };
    op.expected = [](uint64_t) { return 0.0f; };
  } else if (name == "send_recv") {
    if (n < 2) usage("send_recv needs at least 2 ranks");
    fill(op.in, me, count);
    op.out.resize(count);
    float* in = op.in.data();
    float* out = op.out.data();
    const int cc = static_cast<int>(count), next = (me + 1) % n, previous = (me + n - 1) % n;
    op.run = [=] {
      MPI_Sendrecv(in, cc, MPI_FLOAT, next, 0, out, cc, MPI_FLOAT, previous, 0, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
    };
    op.expected = [previous](uint64_t i) { return inputValue(previous, i); };
  } else {
    usage("unknown op " + name);
  }
  return op;
}

int64_t countWrong(Op& op) {
  if (!op.checked) return 0;
  const std::vector<float>& got = op.inPlace ? op.in : op.out;
  int64_t wrong = 0;
  for (uint64_t i = 0; i < got.size(); ++i) wrong += got[i] != op.expected(i) ? 1 : 0;
  return wrong;
}

// nccl-tests' bus factors, as distlab's busBandwidthFactor (bench_ops.cpp).
double busFactor(const std::string& name, int n) {
  if (name == "all_reduce") return 2.0 * (n - 1) / n;
  if (name == "barrier") return 0.0;
  if (is(name, {"broadcast", "reduce", "send_recv"})) return 1.0;
  return static_cast<double>(n - 1) / n;
}

// Elements of a row of `bytes`, as distlab's benchElementCount (bench_ops.cpp).
uint64_t elementCount(const std::string& name, uint64_t bytes, int n) {
  if (name == "barrier") return 0;
  uint64_t count = std::max<uint64_t>(1, bytes / 4);
  if (is(name, {"all_reduce", "broadcast", "reduce", "send_recv"})) return count;
  return std::max<uint64_t>(n, count - count % n);
}

std::string row(const std::string& name, uint64_t count, int iters, std::vector<double>& times,
                int64_t wrong, int n) {
  double sum = 0;
  for (double t : times) sum += t;
  std::nth_element(times.begin(), times.begin() + iters / 2, times.end());
  const double p50 = times[iters / 2];
  const double factor = busFactor(name, n);
  const double algbw = static_cast<double>(count * 4) / (p50 * 1e3);
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "{\"backend\":\"mpi\",\"mode\":\"blocking\",\"op\":\"%s\",\"bytes\":%llu,"
                "\"count\":%llu,\"iters\":%d,\"time_p50_us\":%.6g,\"time_avg_us\":%.6g,"
                "\"algbw_GBps\":%.6g,\"busbw_GBps\":%.6g,\"wrong\":%lld,\"error\":\"\"}",
                name.c_str(), static_cast<unsigned long long>(count * 4),
                static_cast<unsigned long long>(count), iters, p50, sum / iters, algbw,
                algbw * factor, static_cast<long long>(wrong));
  return buf;
}

std::string benchOne(const std::string& name, uint64_t bytes, const Args& a, int me, int n) {
  const uint64_t count = elementCount(name, bytes, n);
  Op op = makeOp(name, count, me, n);
  op.run();
  int64_t wrong = countWrong(op);
  MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  const double warmStart = MPI_Wtime();
  for (int i = 0; i < a.warmup; ++i) op.run();
  int iters = a.iters;
  if (iters <= 0) {
    const double per = (MPI_Wtime() - warmStart) / std::max(1, a.warmup);
    iters = static_cast<int>(std::clamp(0.2 / std::max(per, 1e-7), 5.0, 2000.0));
  }
  MPI_Bcast(&iters, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  std::vector<double> local(iters), slowest(iters);
  for (int i = 0; i < iters; ++i) {
    const double start = MPI_Wtime();
    op.run();
    local[i] = (MPI_Wtime() - start) * 1e6;
  }
  MPI_Allreduce(local.data(), slowest.data(), iters, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return row(name, count, iters, slowest, wrong, n);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const Args a = parse(argc, argv);
  // Warm up like distlab's warmUpGroup: the first timed row must not pay for
  // the ranks' first scheduling and the transport's connection set-up.
  const double until = MPI_Wtime() + 0.2;
  for (int go = 1; go != 0;) {
    float x = 1;
    for (int i = 0; i < 100; ++i) MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    go = MPI_Wtime() < until ? 1 : 0;
    MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
  }
  std::string rows = "[";
  for (const auto& name : a.ops) {
    uint64_t previousCount = 0;
    for (uint64_t bytes = a.minBytes; bytes <= a.maxBytes; bytes *= 2) {
      // A size that rounds to the previous one's elements is that row again
      // (distlab's sweep skips it too: Note [Bench operations]).
      const uint64_t count = elementCount(name, bytes, n);
      if (count != 0 && count == previousCount) continue;
      previousCount = count;
      const std::string r = benchOne(name, bytes, a, me, n);
      rows += (rows.size() > 1 ? ",\n" : "") + r;
      if (name == "barrier") break;  // one row, as distlab's
    }
  }
  rows += "]\n";
  if (me == 0) {
    FILE* f = std::fopen(a.out.c_str(), "w");
    if (f == nullptr || std::fputs(rows.c_str(), f) < 0 || std::fclose(f) != 0) {
      std::fprintf(stderr, "distlab_mpi_peer: cannot write %s\n", a.out.c_str());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  MPI_Finalize();
  return 0;
}
