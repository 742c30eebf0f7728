#pragma once
// An insertion-ordered name -> tensor map (PyTorch: the OrderedDict that
// Module.state_dict() returns). Lookups are linear; state dicts are small.
#include <string>
#include <utility>
#include <vector>

#include "runtime/tensor/tensor.hpp"

namespace distlab::nn {

class StateDict {
 public:
  using Entry = std::pair<std::string, Tensor>;

  // Inserts or replaces (keeping the first position).
  void insert(const std::string& key, Tensor value);
  bool contains(const std::string& key) const { return find(key) != nullptr; }
  const Tensor* find(const std::string& key) const;
  // Throws ValueError naming the key when absent.
  const Tensor& at(const std::string& key) const;
  bool erase(const std::string& key);
  std::vector<std::string> keys() const;
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  auto begin() const { return entries_.begin(); }
  auto end() const { return entries_.end(); }

 private:
  std::vector<Entry> entries_;
};

}  // namespace distlab::nn
