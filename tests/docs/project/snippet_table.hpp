#pragma once
// The table the generated snippet source defines: one entry per compiled
// snippet, in the order the test driver numbers them.

struct DocSnippet {
  const char* file;  // the .md file, relative to the source tree
  int fenceLine;     // the line of its ```cpp fence
  void (*run)();
};

extern const DocSnippet kDocSnippets[];
extern const int kDocSnippetCount;
