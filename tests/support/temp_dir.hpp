#pragma once
// A temporary directory removed (recursively) when the object goes away, so a
// test leaves nothing behind (docs/DESIGN.md, "Cleanup").
#include <string>

namespace distlab::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path() + "/" + name
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace distlab::testing
