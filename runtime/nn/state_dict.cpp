#include "runtime/nn/state_dict.hpp"

#include "runtime/core/errors.hpp"

namespace distlab::nn {

void StateDict::insert(const std::string& key, Tensor value) {
  for (auto& [k, v] : entries_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  entries_.emplace_back(key, std::move(value));
}

const Tensor* StateDict::find(const std::string& key) const {
  for (const auto& [k, v] : entries_) {
    if (k == key) return &v;
  }
  return nullptr;
}

const Tensor& StateDict::at(const std::string& key) const {
  if (const Tensor* t = find(key)) return *t;
  throw ValueError("state dict has no key \"" + key + "\"");
}

bool StateDict::erase(const std::string& key) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->first == key) {
      entries_.erase(it);
      return true;
    }
  }
  return false;
}

std::vector<std::string> StateDict::keys() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& [k, v] : entries_) out.push_back(k);
  return out;
}

}  // namespace distlab::nn
