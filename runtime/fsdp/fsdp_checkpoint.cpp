// The sharded checkpoint directory (fsdp_state_dict.hpp): save at one world
// size, load at another.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "runtime/comm/group_management.hpp"
#include "runtime/core/check.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/fsdp/fsdp_state_dict.hpp"

namespace distlab::fsdp {
namespace {

constexpr const char* kMagic = "distlab-fsdp-checkpoint v1";

struct Meta {
  DType dtype;
  Shape shape;
  int64_t shardDim;  // -1: replicated
};

int64_t shardDimOf(const dtensor::DTensor& d) {
  for (const auto& p : d.placements()) {
    if (p.isShard()) return p.dim;
  }
  return -1;
}

const dtensor::DTensor* findEntry(const ShardedStateDict& sd, const std::string& fqn) {
  for (const auto& [key, d] : sd) {
    if (key == fqn) return &d;
  }
  return nullptr;
}

dtensor::DTensor replicatedStep(const dtensor::DTensor& like, const Tensor& step) {
  return dtensor::DTensor::fromLocal(
      step, like.mesh(), dtensor::Placements(like.placements().size(), dtensor::Placement::replicate()),
      step.sizes());
}

// The model's entries plus the optimizer's state as "optim.<fqn>.<buffer>"
// (laid out like the parameter) and "optim.<fqn>.step" (a replicated float64).
ShardedStateDict savedEntries(FSDPModule& root, const optim::Optimizer* opt) {
  ShardedStateDict out = shardedStateDict(root);
  if (!opt) return out;
  ShardedStateDict model = out;
  for (const auto& [fqn, param] : rootNamedParameters(root)) {
    const dtensor::DTensor* d = findEntry(model, fqn);
    const optim::ParamState* st = opt->findState(param);
    if (!d || !st) continue;
    for (const auto& [name, buffer] : st->buffers) {
      out.emplace_back("optim." + fqn + "." + name,
                       dtensor::DTensor::fromLocal(buffer, d->mesh(), d->placements(), d->shape()));
    }
    out.emplace_back("optim." + fqn + ".step",
                     replicatedStep(*d, fromVector<double>({static_cast<double>(st->step)})));
  }
  return out;
}

void writeMetadata(const std::string& dir, const ShardedStateDict& sd, int shardWorld) {
  std::ofstream meta(dir + "/metadata.txt");
  meta << kMagic << "\nshard_world " << shardWorld << "\n";
  for (const auto& [fqn, d] : sd) {
    meta << fqn << "\t" << dtypeName(d.dtype()) << "\t";
    for (size_t i = 0; i < d.shape().size(); ++i) meta << (i ? "," : "") << d.shape()[i];
    meta << "\t" << shardDimOf(d) << "\n";
  }
  DL_CHECK_T(Error, meta.good(), "save sharded state dict: cannot write ", dir, "/metadata.txt");
}

void writeRankFile(const std::string& path, const ShardedStateDict& sd) {
  std::ofstream out(path, std::ios::binary);
  for (const auto& [fqn, d] : sd) {
    const int64_t dim = shardDimOf(d);
    dtensor::ShardSpan span = dim < 0 ? dtensor::ShardSpan{0, d.shape().empty() ? 0 : d.shape()[0]}
                                      : d.localSpan(dim);
    Tensor local = d.toLocal().contiguous();
    out.write(reinterpret_cast<const char*>(&span.offset), sizeof(int64_t));
    out.write(reinterpret_cast<const char*>(&span.length), sizeof(int64_t));
    out.write(static_cast<const char*>(local.rawData()), static_cast<std::streamsize>(local.nbytes()));
  }
  DL_CHECK_T(Error, out.good(), "save sharded state dict: cannot write ", path);
}

}  // namespace

void saveShardedStateDict(FSDPModule& root, const std::string& dir,
                          const optim::Optimizer* optimizer) {
  ShardedStateDict sd = savedEntries(root, optimizer);
  const comm::DeviceMesh mesh = root.options().mesh.value();
  const auto coord = mesh.getCoordinate().value();
  const bool firstReplica = mesh.ndim() == 1 || coord[0] == 0;
  // Like PyTorch's checkpoint writer: the folder is created when missing.
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  DL_CHECK_T(Error, !ec, "save sharded state dict: cannot create the folder ", dir, " (",
             ec.message(), ")");
  if (firstReplica) writeRankFile(dir + "/rank" + std::to_string(coord.back()) + ".bin", sd);
  if (comm::getRank() == 0) writeMetadata(dir, sd, static_cast<int>(mesh.shape().back()));
  comm::defaultGroup()->barrier()->wait();
}

namespace {

std::map<std::string, Meta> readMetadata(const std::string& dir, int& shardWorld,
                                         std::vector<std::string>& order) {
  std::ifstream in(dir + "/metadata.txt");
  std::string line;
  DL_CHECK_T(ValueError, std::getline(in, line) && line == kMagic, "load sharded state dict: ",
             dir, "/metadata.txt is missing or not a distlab FSDP checkpoint");
  std::string key;
  in >> key >> shardWorld;
  DL_CHECK_T(ValueError, key == "shard_world" && shardWorld >= 1 && shardWorld <= (1 << 16),
             "load sharded state dict: ", dir, "/metadata.txt line 2 must be 'shard_world N' ",
             "with 1 <= N <= 65536");
  std::getline(in, line);
  std::map<std::string, Meta> out;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string fqn, dtype, shape;
    int64_t dim = -1;
    std::getline(fields, fqn, '\t');
    std::getline(fields, dtype, '\t');
    std::getline(fields, shape, '\t');
    fields >> dim;
    Meta m{parseDType(dtype), {}, dim};
    std::istringstream dims(shape);
    for (std::string v; std::getline(dims, v, ',');) m.shape.push_back(std::stoll(v));
    out[fqn] = m;
    order.push_back(fqn);
  }
  return out;
}

// Copies the overlap of the saved piece [offset, offset + length) along `dim`
// into this rank's local part spanning `mine`.
void copyOverlap(Tensor& local, dtensor::ShardSpan mine, int64_t dim, const Tensor& piece,
                 int64_t offset) {
  const int64_t lo = std::max(mine.offset, offset);
  const int64_t hi = std::min(mine.offset + mine.length, offset + piece.size(dim));
  if (hi <= lo) return;
  Tensor dst = local.narrow(dim, lo - mine.offset, hi - lo);
  dst.copy_(piece.narrow(dim, lo - offset, hi - lo));
}

}  // namespace

// Where the optimizer entries of a checkpoint go when loading: buffers are
// created in the optimizer's state; steps are read into tensors and applied
// after the files were read.
struct OptimTargets {
  ShardedStateDict entries;
  std::vector<std::pair<Tensor, Tensor>> steps;  // (param, float64 [1])
};

OptimTargets optimTargets(FSDPModule& root, optim::Optimizer& opt, const ShardedStateDict& model,
                          const std::vector<std::string>& order) {
  OptimTargets t;
  const nn::NamedTensors params = rootNamedParameters(root);
  for (const std::string& key : order) {
    if (key.rfind("optim.", 0) != 0) continue;
    const std::string rest = key.substr(6);
    const std::string fqn = rest.substr(0, rest.rfind('.'));
    const std::string name = rest.substr(rest.rfind('.') + 1);
    const dtensor::DTensor* d = findEntry(model, fqn);
    auto it = std::find_if(params.begin(), params.end(), [&](const auto& p) { return p.first == fqn; });
    DL_CHECK_T(ValueError, d && it != params.end(), "load sharded state dict: the checkpoint has ",
               "optimizer state for '", fqn, "', which the model does not have (a checkpoint ",
               "from another model?)");
    optim::ParamState& st = opt.state(it->second);
    if (name == "step") {
      Tensor step = zeros({1}, TensorOptions{}.withDType(DType::kFloat64));
      t.steps.emplace_back(it->second, step);
      t.entries.emplace_back(key, replicatedStep(*d, step));
      continue;
    }
    if (!st.buffers.count(name)) st.buffers[name] = zerosLike(it->second.detach());
    t.entries.emplace_back(key, dtensor::DTensor::fromLocal(st.buffers[name], d->mesh(),
                                                            d->placements(), d->shape()));
  }
  return t;
}

namespace {

// Every entry of the model must be in the checkpoint with its shape and dtype.
void checkFits(const ShardedStateDict& mine, const std::map<std::string, Meta>& meta,
               const std::string& dir) {
  for (const auto& [fqn, d] : mine) {
    auto it = meta.find(fqn);
    DL_CHECK_T(ValueError, it != meta.end(), "load sharded state dict: '", fqn,
               "' is not in the checkpoint ", dir, " (a checkpoint from another model?)");
    DL_CHECK_T(ValueError, it->second.shape == d.shape() && it->second.dtype == d.dtype(),
               "load sharded state dict: '", fqn, "' is ", shapeToString(it->second.shape), " ",
               dtypeName(it->second.dtype), " in the checkpoint but ", shapeToString(d.shape()),
               " ", dtypeName(d.dtype()), " in the model (a checkpoint from another model?)");
  }
}

// The next saved piece of `fqn` in `in` and its offset along the shard dim.
Tensor readPiece(std::ifstream& in, const Meta& m, const std::string& path, const std::string& fqn,
                 int64_t& offset) {
  int64_t length = 0;
  in.read(reinterpret_cast<char*>(&offset), sizeof(int64_t));
  in.read(reinterpret_cast<char*>(&length), sizeof(int64_t));
  Shape shape = m.shape;
  if (m.shardDim >= 0) {
    const int64_t size = m.shape[m.shardDim];
    DL_CHECK_T(ValueError, in.good() && offset >= 0 && length >= 0 && offset + length <= size,
               "load sharded state dict: ", path, " holds rows [", offset, ", ", offset + length,
               ") of '", fqn, "', which has ", size, " along dim ", m.shardDim, " (corrupt file?)");
    shape[m.shardDim] = length;
  }
  Tensor piece = empty(shape, TensorOptions{}.withDType(m.dtype));
  in.read(static_cast<char*>(piece.rawData()), static_cast<std::streamsize>(piece.nbytes()));
  DL_CHECK_T(ValueError, in.good(), "load sharded state dict: ", path, " is truncated at '", fqn,
             "'");
  return piece;
}

// Copies what this rank needs out of the file that saved rank `r` wrote.
void readRankFile(const std::string& dir, int r, const std::vector<std::string>& order,
                  const std::map<std::string, Meta>& meta, const ShardedStateDict& mine) {
  const std::string path = dir + "/rank" + std::to_string(r) + ".bin";
  std::ifstream in(path, std::ios::binary);
  DL_CHECK_T(ValueError, in.good(), "load sharded state dict: cannot read ", path);
  for (const std::string& fqn : order) {
    const Meta& m = meta.at(fqn);
    int64_t offset = 0;
    Tensor piece = readPiece(in, m, path, fqn, offset);
    const dtensor::DTensor* d = findEntry(mine, fqn);
    if (d == nullptr) continue;
    Tensor local = d->toLocal();
    if (m.shardDim < 0) {
      if (r == 0) local.copy_(piece);
    } else {
      copyOverlap(local, d->localSpan(m.shardDim), m.shardDim, piece, offset);
    }
  }
}

}  // namespace

void loadShardedStateDictFromDir(FSDPModule& root, const std::string& dir,
                                 optim::Optimizer* optimizer) {
  int savedWorld = 0;
  std::vector<std::string> order;
  auto meta = readMetadata(dir, savedWorld, order);
  ShardedStateDict mine = shardedStateDict(root);
  OptimTargets optimTargetsOf;
  if (optimizer) {
    optimTargetsOf = optimTargets(root, *optimizer, mine, order);
    mine.insert(mine.end(), optimTargetsOf.entries.begin(), optimTargetsOf.entries.end());
  }
  checkFits(mine, meta, dir);
  for (int r = 0; r < savedWorld; ++r) readRankFile(dir, r, order, meta, mine);
  for (auto& [param, step] : optimTargetsOf.steps) {
    optimizer->state(param).step = static_cast<int64_t>(step.item<double>());
  }
}

}  // namespace distlab::fsdp
