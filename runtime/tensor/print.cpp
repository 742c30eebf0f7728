// PyTorch-style printing:
//   tensor([[1., 2.],
//           [3., 4.]], dtype=float64)
// Floats print as "1." when every value is integral, else with 4 decimals, or
// in scientific notation when the magnitudes span too much (PyTorch's rule).
// More than 1000 elements are summarised with the first and last 3 per dim;
// rows wrap at 80 columns.
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "runtime/tensor/detail/tensor_util.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab {
namespace {

constexpr int64_t kThreshold = 1000;
constexpr int64_t kEdgeItems = 3;
constexpr size_t kLineWidth = 80;

struct Formatter {
  enum class Mode { kInteger, kIntegralFloat, kFixed, kScientific, kBool } mode;
  size_t width = 1;

  std::string format(double v) const {
    char buf[64];
    if (mode == Mode::kBool) return v != 0 ? "True" : "False";
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    switch (mode) {
      case Mode::kInteger: std::snprintf(buf, sizeof(buf), "%.0f", v); break;
      case Mode::kIntegralFloat: std::snprintf(buf, sizeof(buf), "%.0f.", v); break;
      case Mode::kFixed: std::snprintf(buf, sizeof(buf), "%.4f", v); break;
      default: std::snprintf(buf, sizeof(buf), "%.4e", v); break;
    }
    return buf;
  }
  std::string padded(double v) const {
    std::string s = format(v);
    return std::string(width > s.size() ? width - s.size() : 0, ' ') + s;
  }
};

Formatter makeFormatter(const Tensor& t, const std::vector<double>& values) {
  Formatter f{Formatter::Mode::kInteger};
  if (t.dtype() == DType::kBool) {
    f.mode = Formatter::Mode::kBool;
  } else if (isFloatingPoint(t.dtype())) {
    bool integral = true;
    double maxAbs = 0, minAbs = INFINITY;
    for (double v : values) {
      if (!std::isfinite(v)) continue;
      integral = integral && v == std::nearbyint(v);
      maxAbs = std::max(maxAbs, std::fabs(v));
      if (v != 0) minAbs = std::min(minAbs, std::fabs(v));
    }
    const bool wideRange = maxAbs > 1e8 || (minAbs > 0 && maxAbs / minAbs > 1000);
    if (integral) {
      f.mode = wideRange ? Formatter::Mode::kScientific : Formatter::Mode::kIntegralFloat;
    } else {
      f.mode = wideRange || (minAbs < 1e-4 && minAbs > 0) ? Formatter::Mode::kScientific
                                                          : Formatter::Mode::kFixed;
    }
  }
  for (double v : values) f.width = std::max(f.width, f.format(v).size());
  return f;
}

// Indices shown along a dim of `size` (-1 marks the "..." gap).
std::vector<int64_t> shownIndices(int64_t size, bool summarise) {
  std::vector<int64_t> idx;
  if (summarise && size > 2 * kEdgeItems) {
    for (int64_t i = 0; i < kEdgeItems; ++i) idx.push_back(i);
    idx.push_back(-1);
    for (int64_t i = size - kEdgeItems; i < size; ++i) idx.push_back(i);
  } else {
    for (int64_t i = 0; i < size; ++i) idx.push_back(i);
  }
  return idx;
}

void collect(const Tensor& t, bool summarise, std::vector<double>& out) {
  if (t.dim() == 0) {
    out.push_back(t.item<double>());
    return;
  }
  for (int64_t i : shownIndices(t.sizes()[0], summarise)) {
    if (i >= 0) collect(t.select(0, i), summarise, out);
  }
}

// A row: elements wrapped so a line stays within kLineWidth (PyTorch's rule:
// (linewidth - indent) / (width + 2) elements per line).
void renderRow(const Tensor& t, const Formatter& f, bool summarise, size_t indent,
               std::string& out) {
  std::vector<std::string> items;
  for (int64_t i : shownIndices(t.sizes()[0], summarise)) {
    items.push_back(i < 0 ? " ..." : f.padded(t.select(0, i).item<double>()));
  }
  const size_t perLine = std::max<size_t>(
      1, (kLineWidth > indent ? kLineWidth - indent : 0) / (f.width + 2));
  out += "[";
  for (size_t k = 0; k < items.size(); ++k) {
    if (k > 0 && k % perLine == 0) {
      out.append(",\n").append(indent + 1, ' ');
    } else if (k > 0) {
      out.append(", ");
    }
    out += items[k];
  }
  out += "]";
}

void render(const Tensor& t, const Formatter& f, bool summarise, size_t indent, std::string& out) {
  if (t.dim() == 0) {
    out += f.padded(t.item<double>());
    return;
  }
  if (t.dim() == 1) {
    renderRow(t, f, summarise, indent, out);
    return;
  }
  out += "[";
  const auto idx = shownIndices(t.sizes()[0], summarise);
  for (size_t k = 0; k < idx.size(); ++k) {
    if (k > 0) out.append(",").append(t.dim() - 1, '\n').append(indent + 1, ' ');
    if (idx[k] < 0) {
      out += "...";
    } else {
      render(t.select(0, idx[k]), f, summarise, indent + 1, out);
    }
  }
  out += "]";
}

}  // namespace

std::string Tensor::toString() const {
  if (!defined()) return "tensor(undefined)";
  if (device().isMeta()) {  // PyTorch: tensor(..., device='meta', size=(2, 3))
    std::string size;
    for (int64_t d = 0; d < dim(); ++d) size += (d ? ", " : "") + std::to_string(sizes()[d]);
    if (dim() == 1) size += ",";
    std::string text = "tensor(..., device='meta', size=(" + size + ")";
    if (dtype() != DType::kFloat32) text += ", dtype=" + std::string(dtypeName(dtype()));
    return text + ")";
  }
  if (!device().isCpu()) {  // the values, then device='cuda:0'
    std::string text = to(Device::cpu()).toString();
    text.pop_back();
    return text + ", device='" + device().str() + "')";
  }
  const bool summarise = numel() > kThreshold;
  std::vector<double> values;
  collect(*this, summarise, values);
  const Formatter f = makeFormatter(*this, values);
  std::string body;
  render(*this, f, summarise, 7, body);
  std::string text = "tensor(" + body;
  std::vector<std::string> extras;
  if (numel() == 0 && dim() > 1) {
    std::string size = "size=(";
    for (int64_t d = 0; d < dim(); ++d) size += (d ? ", " : "") + std::to_string(sizes()[d]);
    extras.push_back(size + ")");
  }
  if (dtype() != DType::kFloat32 && dtype() != DType::kInt64 && dtype() != DType::kBool) {
    extras.push_back("dtype=" + std::string(dtypeName(dtype())));
  }
  if (requiresGrad()) extras.push_back("requires_grad=True");
  for (const auto& e : extras) text += ", " + e;
  return text + ")";
}

std::ostream& operator<<(std::ostream& out, const Tensor& tensor) {
  return out << tensor.toString();
}

}  // namespace distlab
