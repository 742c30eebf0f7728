#include "runtime/autograd/gradcheck.hpp"

#include <cmath>
#include <sstream>

#include "runtime/autograd/engine.hpp"
#include "runtime/autograd/grad_mode.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::autograd {
namespace {

constexpr uint64_t kProjectionSeed = 0x6772616463686bULL;

double project(const TensorList& outs, const TensorList& vs) {
  double total = 0.0;
  for (size_t k = 0; k < outs.size(); ++k) {
    total += outs[k].to(DType::kFloat64).mul(vs[k]).sum().item<double>();
  }
  return total;
}

}  // namespace

bool gradcheck(const GradcheckFn& fn,
               const TensorList& inputs,
               double eps,
               double atol,
               double rtol,
               bool raiseException) {
  // Fresh contiguous leaves, so perturbing them never touches the caller's data.
  TensorList leaves;
  for (const Tensor& in : inputs) {
    Tensor leaf = in.detach().clone();
    if (in.requiresGrad()) leaf.setRequiresGrad(true);
    leaves.push_back(leaf);
  }
  TensorList outs = fn(leaves);
  Generator gen(kProjectionSeed);
  TensorList vs;
  TensorList roots;
  TensorList rootGrads;
  for (const Tensor& out : outs) {
    vs.push_back(randn(out.sizes(), gen, TensorOptions{DType::kFloat64}));
    if (out.requiresGrad()) {
      roots.push_back(out);
      rootGrads.push_back(vs.back().to(out.dtype()));
    }
  }
  if (!roots.empty()) backward(roots, rootGrads);
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (!inputs[i].requiresGrad()) continue;
    Tensor& leaf = leaves[i];
    Tensor analytic = leaf.grad().defined() ? leaf.grad().to(DType::kFloat64).contiguous()
                                            : zeros(leaf.sizes(), TensorOptions{DType::kFloat64});
    const double* an = analytic.data<double>();
    for (int64_t j = 0; j < leaf.numel(); ++j) {
      double numeric = 0.0;
      {
        NoGradGuard noGrad;
        Tensor flat = leaf.view({-1});
        const double orig = flat.select(0, j).item<double>();
        flat.select(0, j).fill_(orig + eps);
        const double plus = project(fn(leaves), vs);
        flat.select(0, j).fill_(orig - eps);
        const double minus = project(fn(leaves), vs);
        flat.select(0, j).fill_(orig);
        numeric = (plus - minus) / (2.0 * eps);
      }
      if (std::abs(an[j] - numeric) > atol + rtol * std::abs(numeric)) {
        if (!raiseException) return false;
        std::ostringstream msg;
        msg << "gradcheck: Jacobian mismatch for input " << i << " (shape "
            << shapeToString(leaf.sizes()) << ") at flat index " << j << ": analytic " << an[j]
            << " vs numerical " << numeric << " (atol " << atol << ", rtol " << rtol << ")";
        throw Error(msg.str());
      }
    }
  }
  return true;
}

bool gradcheck(const std::function<Tensor(const TensorList&)>& fn,
               const TensorList& inputs,
               double eps,
               double atol,
               double rtol,
               bool raiseException) {
  return gradcheck(GradcheckFn([&fn](const TensorList& xs) { return TensorList{fn(xs)}; }), inputs,
                   eps, atol, rtol, raiseException);
}

}  // namespace distlab::autograd
