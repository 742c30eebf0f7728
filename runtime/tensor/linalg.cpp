// Matrix products: mm, bmm and matmul (torch.matmul rules) on OpenBLAS.
//
// Note [GEMM operand layout]
// cblas takes each operand as a row-major matrix with a leading dimension,
// optionally transposed. A 2-D view whose last dim is dense is passed as
// NoTrans with ld = stride(0); a view whose *first* dim is dense (a .t() of a
// contiguous matrix, e.g. the weight in x.matmul(w.t())) is passed as Trans
// with ld = stride(1). Only other layouts are copied. Half types are widened
// to float32, multiplied with sgemm (fp32 accumulation) and rounded back;
// integer dtypes use plain loops accumulating in their own type, as PyTorch.
//
// Note [Small-M NT GEMM]
// OpenBLAS is markedly slower for C = A . B^T (NoTrans, Trans) when A has few
// rows, which is exactly the Linear forward x[32,1024] . W^T. Computing the
// transposed product C^T = B . A^T (the same call with the operands swapped)
// and transposing the small result into place measured 26% faster at M = 32
// (1300 -> 962 us single-threaded, 1024x1024 weight; 53% at M = 8, 12% at
// M = 64, a loss from M = 128 on), so that form is used for M <= 64.
#include <cblas.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "runtime/core/check.hpp"
#include "runtime/tensor/detail/convert.hpp"
#include "runtime/tensor/detail/tensor_util.hpp"
#include "runtime/tensor/dispatch.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab {
namespace {

using detail::concat;

struct Operand {
  bool trans = false;
  int64_t ld = 1;
};

// How cblas can read a rows x cols matrix with strides (s0, s1), if at all.
std::optional<Operand> blasLayout(int64_t rows, int64_t cols, int64_t s0, int64_t s1) {
  if ((cols == 1 || s1 == 1) && (rows == 1 || s0 >= std::max<int64_t>(1, cols))) {
    return Operand{false, rows == 1 ? std::max<int64_t>(1, cols) : s0};
  }
  if ((rows == 1 || s0 == 1) && (cols == 1 || s1 >= std::max<int64_t>(1, rows))) {
    return Operand{true, cols == 1 ? std::max<int64_t>(1, rows) : s1};
  }
  return std::nullopt;
}

// A 3-D operand [batch, rows, cols] in a cblas-readable layout (copied if needed).
struct BatchOperand {
  Tensor tensor;
  Operand op;
};

BatchOperand prepare(const Tensor& t) {
  const auto layout = blasLayout(t.sizes()[1], t.sizes()[2], t.strides()[1], t.strides()[2]);
  if (layout) return {t, *layout};
  Tensor c = t.contiguous();
  return {c, Operand{false, std::max<int64_t>(1, c.sizes()[2])}};
}

constexpr int64_t kSwapMaxRows = 64;

// dst[M,N] = src[N,M]^T, in cache-sized tiles.
template <typename T>
void transposeInto(const T* src, T* dst, int64_t M, int64_t N) {
  constexpr int64_t kTile = 16;
  for (int64_t i0 = 0; i0 < N; i0 += kTile) {
    for (int64_t j0 = 0; j0 < M; j0 += kTile) {
      const int64_t iEnd = std::min(N, i0 + kTile);
      const int64_t jEnd = std::min(M, j0 + kTile);
      for (int64_t j = j0; j < jEnd; ++j) {
        for (int64_t i = i0; i < iEnd; ++i) dst[j * N + i] = src[i * M + j];
      }
    }
  }
}

template <typename T>
void gemmCall(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t M, int64_t N, int64_t K, const T* a,
              int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
  } else {
    cblas_dgemm(CblasRowMajor, ta, tb, M, N, K, 1.0, a, lda, b, ldb, 0.0, c, ldc);
  }
}

template <typename T>
void gemmBlas(const BatchOperand& a, const BatchOperand& b, Tensor& out, int64_t M, int64_t N,
              int64_t K) {
  const auto ta = a.op.trans ? CblasTrans : CblasNoTrans;
  const auto tb = b.op.trans ? CblasTrans : CblasNoTrans;
  const T* pa = static_cast<const T*>(a.tensor.rawData());
  const T* pb = static_cast<const T*>(b.tensor.rawData());
  T* pc = static_cast<T*>(out.rawData());
  const int64_t batch = out.sizes()[0];
  // Note [Small-M NT GEMM]
  const bool swap = !a.op.trans && b.op.trans && M <= kSwapMaxRows && N >= 2 * M;
  std::vector<T> scratch(swap ? static_cast<size_t>(M * N) : 0);
  for (int64_t i = 0; i < batch; ++i) {
    const T* ai = pa + i * a.tensor.strides()[0];
    const T* bi = pb + i * b.tensor.strides()[0];
    T* ci = pc + i * M * N;
    if (swap) {
      gemmCall<T>(CblasNoTrans, CblasTrans, N, M, K, bi, b.op.ld, ai, a.op.ld, scratch.data(), M);
      transposeInto(scratch.data(), ci, M, N);
    } else {
      gemmCall<T>(ta, tb, M, N, K, ai, a.op.ld, bi, b.op.ld, ci, std::max<int64_t>(1, N));
    }
  }
}

template <typename T>
void gemmLoops(const Tensor& a, const Tensor& b, Tensor& out, int64_t M, int64_t N, int64_t K) {
  const Tensor ac = a.contiguous();
  const Tensor bc = b.contiguous();
  const T* pa = static_cast<const T*>(ac.rawData());
  const T* pb = static_cast<const T*>(bc.rawData());
  T* pc = static_cast<T*>(out.rawData());
  const int64_t batch = out.sizes()[0];
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t i = 0; i < M; ++i) {
      T* row = pc + (n * M + i) * N;
      std::fill(row, row + N, T{0});
      for (int64_t k = 0; k < K; ++k) {
        const T aik = pa[(n * M + i) * K + k];
        const T* brow = pb + (n * K + k) * N;
        for (int64_t j = 0; j < N; ++j) row[j] = static_cast<T>(row[j] + aik * brow[j]);
      }
    }
  }
}

// [B, M, K] x [B, K, N] -> new contiguous [B, M, N]; shapes already checked.
Tensor batchedGemm(const Tensor& a, const Tensor& b) {
  const int64_t batch = a.sizes()[0];
  const int64_t M = a.sizes()[1];
  const int64_t K = a.sizes()[2];
  const int64_t N = b.sizes()[2];
  const DType dt = a.dtype();
  if (!a.device().isCpu()) {
    // Device kernel "bmm": {out [batch, M, N]} = {a [batch, M, K]} x {b [batch, K, N]}.
    Tensor out = detail::makeEmpty({batch, M, N}, dt, a.device());
    runKernel(a.device(), "bmm", {out}, {a, b.to(a.device())});
    return out;
  }
  if (dt == DType::kFloat16 || dt == DType::kBFloat16) {
    return batchedGemm(a.to(DType::kFloat32), b.to(DType::kFloat32)).to(dt);
  }
  Tensor out = detail::makeEmpty({batch, M, N}, dt);
  if (K == 0 || M == 0 || N == 0 || batch == 0) return out.zero_();
  switch (dt) {
    case DType::kFloat32: gemmBlas<float>(prepare(a), prepare(b), out, M, N, K); break;
    case DType::kFloat64: gemmBlas<double>(prepare(a), prepare(b), out, M, N, K); break;
    case DType::kInt8: gemmLoops<int8_t>(a, b, out, M, N, K); break;
    case DType::kUInt8: gemmLoops<uint8_t>(a, b, out, M, N, K); break;
    case DType::kInt32: gemmLoops<int32_t>(a, b, out, M, N, K); break;
    case DType::kInt64: gemmLoops<int64_t>(a, b, out, M, N, K); break;
    default: break;
  }
  return out;
}

void checkOperands(const char* op, const Tensor& a, const Tensor& b) {
  detail::checkDefined(op, a);
  detail::checkDefined(op, b);
  detail::checkSameDevice(op, a, b);
  if (a.dtype() != b.dtype()) {
    throw Error(concat(op, ": expected both operands to have the same dtype, but got ",
                       dtypeName(a.dtype()), " != ", dtypeName(b.dtype())));
  }
  if (a.dtype() == DType::kBool) throw Error(concat(op, ": not implemented for dtype bool"));
}

void checkInner(const char* op, const Tensor& a, const Tensor& b, int64_t ka, int64_t kb) {
  if (ka != kb) {
    throw Error(concat(op, ": shapes ", shapeToString(a.sizes()), " and ",
                       shapeToString(b.sizes()), " cannot be multiplied (", ka, " != ", kb,
                       ")"));
  }
}

}  // namespace

Tensor Tensor::mm(const Tensor& other) const {
  checkOperands("mm", *this, other);
  if (dim() != 2 || other.dim() != 2) {
    throw Error(concat("mm: expected 2-D tensors, got ", dim(), "-D and ", other.dim(), "-D"));
  }
  checkInner("mm", *this, other, sizes()[1], other.sizes()[0]);
  return batchedGemm(unsqueeze(0), other.unsqueeze(0)).squeeze(0);
}

Tensor Tensor::bmm(const Tensor& other) const {
  checkOperands("bmm", *this, other);
  if (dim() != 3 || other.dim() != 3) {
    throw Error(concat("bmm: expected 3-D tensors, got ", dim(), "-D and ", other.dim(), "-D"));
  }
  if (sizes()[0] != other.sizes()[0]) {
    throw Error(concat("bmm: batch sizes differ: ", shapeToString(sizes()), " and ",
                       shapeToString(other.sizes())));
  }
  checkInner("bmm", *this, other, sizes()[2], other.sizes()[1]);
  return batchedGemm(*this, other);
}

Tensor Tensor::matmul(const Tensor& other) const {
  checkOperands("matmul", *this, other);
  const int64_t da = dim();
  const int64_t db = other.dim();
  if (da == 0 || db == 0) {
    throw Error(concat("matmul: both arguments need at least 1 dimension, got ", da, "-D and ",
                       db, "-D"));
  }
  const Tensor a = da == 1 ? unsqueeze(0) : *this;          // [.., M, K]
  const Tensor b = db == 1 ? other.unsqueeze(1) : other;    // [.., K, N]
  const int64_t K = a.sizes().back();
  checkInner("matmul", *this, other, K, b.sizes()[b.dim() - 2]);
  const int64_t M = a.sizes()[a.dim() - 2];
  const int64_t N = b.sizes().back();
  Tensor out;
  if (b.dim() == 2) {
    // Fold a's batch dims into its rows: one GEMM, no copy when a's rows are dense.
    Shape outShape(a.sizes().begin(), a.sizes().end() - 1);
    outShape.push_back(N);
    out = batchedGemm(a.reshape({1, -1, K}), b.unsqueeze(0)).view(outShape);
  } else {
    const Shape batchA(a.sizes().begin(), a.sizes().end() - 2);
    const Shape batchB(b.sizes().begin(), b.sizes().end() - 2);
    const Shape batch = detail::broadcastFor("matmul", batchA, batchB);
    const int64_t count = shapeNumel(batch);
    Shape shapeA = batch, shapeB = batch, outShape = batch;
    shapeA.insert(shapeA.end(), {M, K});
    shapeB.insert(shapeB.end(), {K, N});
    outShape.insert(outShape.end(), {M, N});
    out = batchedGemm(a.expand(shapeA).reshape({count, M, K}),
                      b.expand(shapeB).reshape({count, K, N}))
              .view(outShape);
  }
  if (da == 1) out = out.squeeze(out.dim() - 2);
  if (db == 1) out = out.squeeze(out.dim() - 1);
  return out;
}

}  // namespace distlab
