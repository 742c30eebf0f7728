// `doc_snippets <index>` runs one documented snippet, on every rank when
// started by `distlab launch`. A failure names the .md file and the line of
// the snippet's fence, so the reader's copy of the example can be found.
#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <typeinfo>

#include "snippet_table.hpp"

namespace {

// The exception's type belongs in the message: it is what a reader would see
// from an uncaught exception (`distlab::ValueError: ...`).
std::string typeName(const std::exception& e) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(
      abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &status), std::free);
  return status == 0 && name ? name.get() : typeid(e).name();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: doc_snippets <index 0..%d>\n", kDocSnippetCount - 1);
    return 2;
  }
  char* end = nullptr;
  const long index = std::strtol(argv[1], &end, 10);
  if (*end != '\0' || index < 0 || index >= kDocSnippetCount) {
    std::fprintf(stderr, "doc_snippets: no snippet '%s' (0..%d)\n", argv[1],
                 kDocSnippetCount - 1);
    return 2;
  }
  const DocSnippet& snippet = kDocSnippets[index];
  const char* rank = std::getenv("RANK") ? std::getenv("RANK") : "-";
  try {
    snippet.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s:%d: snippet failed on rank %s: %s: %s\n", snippet.file,
                 snippet.fenceLine, rank, typeName(e).c_str(), e.what());
    return 1;
  }
  std::printf("%s:%d: snippet ok on rank %s\n", snippet.file, snippet.fenceLine, rank);
  return 0;
}
