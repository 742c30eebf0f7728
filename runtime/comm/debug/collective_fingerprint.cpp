#include "runtime/comm/debug/collective_fingerprint.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>

#include "runtime/core/errors.hpp"

namespace distlab::comm {
namespace {

std::string_view deviceName(DeviceType d) { return d == DeviceType::kCPU ? "cpu" : "cuda"; }

std::string shapesText(const std::vector<TensorSignature>& ts) {
  if (ts.size() == 1) return shapeToString(ts[0].shape);
  std::vector<std::string> parts;
  for (const auto& t : ts) parts.push_back(shapeToString(t.shape));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

template <typename F>
std::string listText(const std::vector<TensorSignature>& ts, F field) {
  std::vector<std::string> parts;
  for (const auto& t : ts) parts.emplace_back(field(t));
  if (parts.size() == 1) return parts[0];
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

std::string dtypesText(const std::vector<TensorSignature>& ts) {
  return listText(ts, [](const TensorSignature& t) { return dtypeName(t.dtype); });
}
std::string devicesText(const std::vector<TensorSignature>& ts) {
  return listText(ts, [](const TensorSignature& t) { return deviceName(t.device); });
}

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t pos = text.find(sep, start);
    out.push_back(text.substr(start, pos == std::string_view::npos ? pos : pos - start));
    if (pos == std::string_view::npos) return out;
    start = pos + 1;
  }
}

template <typename T = int64_t>
T toInt(std::string_view s, std::string_view whole) {
  T v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) {
    throw DistBackendError(fmt::format("malformed collective fingerprint '{}'", whole));
  }
  return v;
}

std::vector<int64_t> toInts(std::string_view s, std::string_view whole) {
  std::vector<int64_t> out;
  if (s.empty()) return out;
  for (auto part : split(s, ',')) out.push_back(toInt(part, whole));
  return out;
}

}  // namespace

CollectiveFingerprint CollectiveFingerprint::of(OpType op, uint64_t seq,
                                                const std::vector<Tensor>& tensors) {
  CollectiveFingerprint fp;
  fp.opType = op;
  fp.seq = seq;
  for (const auto& t : tensors) {
    if (!t.defined()) continue;
    fp.tensors.push_back({t.dtype(), t.device().type, t.sizes()});
  }
  return fp;
}

std::string CollectiveFingerprint::toString() const {
  std::string out = fmt::format("CollectiveFingerPrint(SequenceNumber={}, OpType={}", seq,
                                opTypeName(opType));
  if (!tensors.empty()) {
    out += fmt::format(", {}={}, TensorDtypes={}, TensorDeviceTypes={}",
                       tensors.size() == 1 ? "TensorShape" : "TensorShapes", shapesText(tensors),
                       dtypesText(tensors), devicesText(tensors));
  }
  if (!reduceOp.empty()) out += ", ReduceOp=" + reduceOp;
  if (root >= 0) out += fmt::format(", Root={}", root);
  if (peer >= 0) out += fmt::format(", Peer={}, Tag={}", peer, tag);
  if (!sendCounts.empty()) {
    out += fmt::format(", SendCounts=[{}], RecvCounts=[{}]", fmt::join(sendCounts, ", "),
                       fmt::join(recvCounts, ", "));
  }
  return out + ")";
}

std::string CollectiveFingerprint::shortString() const {
  std::string out = fmt::format("seq {} {}", seq, opTypeName(opType));
  if (!tensors.empty()) out += fmt::format(" {} {}", shapesText(tensors), dtypesText(tensors));
  if (!reduceOp.empty()) out += " " + reduceOp;
  if (root >= 0) out += fmt::format(" root {}", root);
  return out;
}

std::string CollectiveFingerprint::serialize() const {
  std::vector<std::string> ts;
  for (const auto& t : tensors) {
    ts.push_back(fmt::format("{}.{}.{}", static_cast<int>(t.dtype), static_cast<int>(t.device),
                             fmt::join(t.shape, ",")));
  }
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", static_cast<int>(opType), seq,
                     uniformShapes ? 1 : 0, reduceOp, root, peer, tag, fmt::join(ts, ";"),
                     fmt::join(sendCounts, ","), fmt::join(recvCounts, ","));
}

CollectiveFingerprint CollectiveFingerprint::parse(std::string_view text) {
  auto f = split(text, '|');
  if (f.size() != 10) {
    throw DistBackendError(fmt::format("malformed collective fingerprint '{}'", text));
  }
  CollectiveFingerprint fp;
  fp.opType = static_cast<OpType>(toInt(f[0], text));
  fp.seq = toInt<uint64_t>(f[1], text);
  fp.uniformShapes = f[2] == "1";
  fp.reduceOp = std::string(f[3]);
  fp.root = static_cast<int>(toInt(f[4], text));
  fp.peer = static_cast<int>(toInt(f[5], text));
  fp.tag = static_cast<int>(toInt(f[6], text));
  if (!f[7].empty()) {
    for (auto t : split(f[7], ';')) {
      auto parts = split(t, '.');
      if (parts.size() != 3) {
        throw DistBackendError(fmt::format("malformed collective fingerprint '{}'", text));
      }
      fp.tensors.push_back({static_cast<DType>(toInt(parts[0], text)),
                            static_cast<DeviceType>(toInt(parts[1], text)),
                            toInts(parts[2], text)});
    }
  }
  fp.sendCounts = toInts(f[8], text);
  fp.recvCounts = toInts(f[9], text);
  return fp;
}

std::vector<std::string> fingerprintDifferences(const CollectiveFingerprint& a,
                                                const CollectiveFingerprint& b) {
  std::vector<std::string> out;
  if (a.seq != b.seq) out.push_back(fmt::format("\t Sequence number: {}vs {}", a.seq, b.seq));
  if (a.opType != b.opType) {
    out.push_back(fmt::format("  Op type: {}vs {}", opTypeName(a.opType), opTypeName(b.opType)));
    return out;  // the rest compares unrelated calls
  }
  if (a.tensors.size() != b.tensors.size()) {
    out.push_back(fmt::format("  Number of tensors: {}vs {}", a.tensors.size(),
                              b.tensors.size()));
  } else {
    bool shapes = false, dtypes = false, devices = false;
    for (size_t i = 0; i < a.tensors.size(); ++i) {
      shapes |= a.uniformShapes && a.tensors[i].shape != b.tensors[i].shape;
      dtypes |= a.tensors[i].dtype != b.tensors[i].dtype;
      devices |= a.tensors[i].device != b.tensors[i].device;
    }
    if (shapes) {
      out.push_back(fmt::format("  Tensor Tensor shapes: {}vs {}", shapesText(a.tensors),
                                shapesText(b.tensors)));
    }
    if (dtypes) {
      out.push_back(fmt::format("  Tensor Tensor dtypes: {}vs {}", dtypesText(a.tensors),
                                dtypesText(b.tensors)));
    }
    if (devices) {
      out.push_back(fmt::format("  Tensor Tensor devices: {}vs {}", devicesText(a.tensors),
                                devicesText(b.tensors)));
    }
  }
  if (a.reduceOp != b.reduceOp) {
    out.push_back(fmt::format("  Reduce op: {}vs {}", a.reduceOp, b.reduceOp));
  }
  if (a.root != b.root) out.push_back(fmt::format("  Root: {}vs {}", a.root, b.root));
  return out;
}

std::string CountMismatch::describe(const RankNames* names) const {
  const RankNames plain;
  const RankNames& n = names ? *names : plain;
  const std::string from = n.name(sender), to = n.name(receiver);
  return fmt::format("{} sends {} elements to {}, but {} expects {} from {}", from, sent, to, to,
                     expected, from);
}

std::vector<CountMismatch> peerCountMismatches(const std::vector<CollectiveFingerprint>& all) {
  std::vector<CountMismatch> out;
  const int n = static_cast<int>(all.size());
  for (int r = 0; r < n; ++r) {
    if (all[r].sendCounts.size() != static_cast<size_t>(n)) continue;
    for (int q = 0; q < n; ++q) {
      if (all[q].recvCounts.size() != static_cast<size_t>(n)) continue;
      if (all[r].sendCounts[q] != all[q].recvCounts[r]) {
        out.push_back({r, q, all[r].sendCounts[q], all[q].recvCounts[r]});
      }
    }
  }
  return out;
}

std::vector<int> fingerprintCulprits(const std::vector<CollectiveFingerprint>& all) {
  const int n = static_cast<int>(all.size());
  // Classes of agreeing fingerprints; the class of the lowest rank comes first on ties.
  std::vector<int> classOf(n, -1);
  std::vector<int> classSize;
  for (int r = 0; r < n; ++r) {
    for (int s = 0; s < r && classOf[r] < 0; ++s) {
      if (fingerprintDifferences(all[r], all[s]).empty()) classOf[r] = classOf[s];
    }
    if (classOf[r] < 0) {
      classOf[r] = static_cast<int>(classSize.size());
      classSize.push_back(0);
    }
    ++classSize[classOf[r]];
  }
  auto best = std::max_element(classSize.begin(), classSize.end());
  std::vector<int> culprits;
  if (*best * 2 <= n) return culprits;  // no strict majority
  const int majority = static_cast<int>(best - classSize.begin());
  for (int r = 0; r < n; ++r) {
    if (classOf[r] != majority) culprits.push_back(r);
  }
  return culprits;
}

}  // namespace distlab::comm
