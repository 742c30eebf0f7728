// Differentiable elementwise ops.
#include <cmath>

#include "runtime/autograd/detail/op_util.hpp"
#include "runtime/autograd/grad_mode.hpp"
#include "runtime/autograd/node.hpp"
#include "runtime/autograd/ops.hpp"
#include "runtime/core/check.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::ops {

using autograd::recordFunction;
using autograd::TensorList;
using detail::reduceLike;

Tensor add(const Tensor& a, const Tensor& b, Scalar alpha) {
  return recordFunction(
      "AddBackward", {a, b}, a.add(b, alpha),
      [sa = a.sizes(), da = a.dtype(), sb = b.sizes(), db = b.dtype(), alpha](
          const TensorList& g, const std::vector<bool>& needs) {
        TensorList out(2);
        if (needs[0]) out[0] = detail::sumToSize(g[0], sa, da);
        if (needs[1]) {
          Tensor gb = alpha.toDouble() == 1.0 ? g[0] : g[0].mul(alpha);
          out[1] = detail::sumToSize(gb, sb, db);
        }
        return out;
      },
      /*savesTensors=*/false);
}

Tensor add(const Tensor& a, Scalar b) {
  return recordFunction(
      "AddBackward", {a}, a.add(b),
      [](const TensorList& g, const std::vector<bool>&) { return TensorList{g[0]}; }, false);
}

Tensor sub(const Tensor& a, const Tensor& b, Scalar alpha) {
  return add(a, b, Scalar(-alpha.toDouble()));
}

Tensor sub(const Tensor& a, Scalar b) { return add(a, Scalar(-b.toDouble())); }

Tensor mul(const Tensor& a, const Tensor& b) {
  return recordFunction(
      "MulBackward", {a, b}, a.mul(b),
      [a = a.detach(), b = b.detach()](const TensorList& g, const std::vector<bool>& needs) {
        TensorList out(2);
        if (needs[0]) out[0] = reduceLike(g[0].mul(b), a);
        if (needs[1]) out[1] = reduceLike(g[0].mul(a), b);
        return out;
      });
}

Tensor mul(const Tensor& a, Scalar b) {
  return recordFunction(
      "MulBackward", {a}, a.mul(b),
      [b, da = a.dtype()](const TensorList& g, const std::vector<bool>&) {
        return TensorList{detail::sumToSize(g[0].mul(b), g[0].sizes(), da)};
      },
      false);
}

Tensor div(const Tensor& a, const Tensor& b) {
  Tensor out = a.div(b);
  return recordFunction("DivBackward", {a, b}, out,
                        [a = a.detach(), b = b.detach(), o = out.detach()](
                            const TensorList& g, const std::vector<bool>& needs) {
                          TensorList r(2);
                          Tensor ga = g[0].div(b);
                          if (needs[0]) r[0] = reduceLike(ga, a);
                          if (needs[1]) r[1] = reduceLike(ga.mul(o).neg(), b);
                          return r;
                        });
}

Tensor div(const Tensor& a, Scalar b) { return mul(a, Scalar(1.0 / b.toDouble())); }

Tensor neg(const Tensor& a) {
  return recordFunction(
      "NegBackward", {a}, a.neg(),
      [](const TensorList& g, const std::vector<bool>&) { return TensorList{g[0].neg()}; }, false);
}

Tensor pow(const Tensor& a, Scalar exponent) {
  return recordFunction("PowBackward", {a}, a.pow(exponent),
                        [a = a.detach(), exponent](const TensorList& g, const std::vector<bool>&) {
                          const double e = exponent.toDouble();
                          if (e == 0.0) return TensorList{zerosLike(a)};
                          return TensorList{g[0].mul(a.pow(Scalar(e - 1.0)).mul(e))};
                        });
}

Tensor exp(const Tensor& a) {
  Tensor out = a.exp();
  return recordFunction("ExpBackward", {a}, out,
                        [o = out.detach()](const TensorList& g, const std::vector<bool>&) {
                          return TensorList{g[0].mul(o)};
                        });
}

Tensor log(const Tensor& a) {
  return recordFunction("LogBackward", {a}, a.log(),
                        [a = a.detach()](const TensorList& g, const std::vector<bool>&) {
                          return TensorList{g[0].div(a)};
                        });
}

Tensor sqrt(const Tensor& a) {
  Tensor out = a.sqrt();
  return recordFunction("SqrtBackward", {a}, out,
                        [o = out.detach()](const TensorList& g, const std::vector<bool>&) {
                          return TensorList{g[0].div(o.mul(2.0))};
                        });
}

Tensor tanh(const Tensor& a) {
  Tensor out = a.tanh();
  return recordFunction("TanhBackward", {a}, out,
                        [o = out.detach()](const TensorList& g, const std::vector<bool>&) {
                          return TensorList{g[0].mul(o.mul(o).neg().add(1.0))};
                        });
}

Tensor sigmoid(const Tensor& a) {
  Tensor out = a.sigmoid();
  return recordFunction("SigmoidBackward", {a}, out,
                        [o = out.detach()](const TensorList& g, const std::vector<bool>&) {
                          return TensorList{g[0].mul(o.mul(o.neg().add(1.0)))};
                        });
}

Tensor relu(const Tensor& a) {
  Tensor out = a.relu();
  return recordFunction("ReluBackward", {a}, out,
                        [o = out.detach()](const TensorList& g, const std::vector<bool>&) {
                          return TensorList{detail::reluBackward(g[0], o)};
                        });
}

Tensor gelu(const Tensor& a) {
  return recordFunction("GeluBackward", {a}, a.gelu(),
                        [a = a.detach()](const TensorList& g, const std::vector<bool>&) {
                          return TensorList{detail::geluBackward(g[0], a)};
                        });
}

Tensor maskedFill(const Tensor& a, const Tensor& mask, Scalar value) {
  return recordFunction(
      "MaskedFillBackward", {a}, a.maskedFill(mask, value),
      [m = mask.detach(), a = a.detach()](const TensorList& g, const std::vector<bool>&) {
        return TensorList{reduceLike(g[0].maskedFill(m, 0), a)};
      });
}

Tensor dropout(const Tensor& a, double p, bool training, Generator& gen) {
  DL_CHECK_T(ValueError, p >= 0.0 && p <= 1.0,
             "dropout probability has to be between 0 and 1, but got ", p);
  if (!training || p == 0.0) return a;
  if (p == 1.0) return mul(a, Scalar(0.0));
  Tensor mask = rand(a.sizes(), gen, detail::plain(a))
                    .lt(Scalar(1.0 - p))
                    .to(a.dtype())
                    .mul(Scalar(1.0 / (1.0 - p)));
  return mul(a, mask);
}

}  // namespace distlab::ops
