#include "emulator/scenario/program_command.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "runtime/core/check.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::emulator {
namespace {

namespace fs = std::filesystem;

bool isExecutableFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

[[noreturn]] void failAt(const SourcePos& pos, const std::string& message) {
  throw ValueError(fmt::format("{}:{}: {}", pos.file, pos.line, message));
}

fs::path checkedExecutable(const SourcePos& pos, const fs::path& p, const std::string& written) {
  std::error_code ec;
  if (!fs::exists(p, ec)) {
    failAt(pos, fmt::format("command '{}' not found (looked for {}); build it first or fix "
                            "the path (relative to the scenario file's folder)",
                            written, p.string()));
  }
  if (!isExecutableFile(p)) {
    failAt(pos, fmt::format("command '{}' ({}) is not an executable file; give a program "
                            "(chmod +x for a script with a #! line)",
                            written, p.string()));
  }
  return fs::absolute(p).lexically_normal();
}

fs::path searchInPath(const SourcePos& pos, const std::string& name, const std::string& path) {
  std::stringstream folders(path);
  std::string folder;
  while (std::getline(folders, folder, ':')) {
    const fs::path candidate = fs::path(folder.empty() ? "." : folder) / name;
    if (isExecutableFile(candidate)) return fs::absolute(candidate).lexically_normal();
  }
  failAt(pos, fmt::format("command '{}' is not in PATH ({}); give a path such as './{}' "
                          "(relative to the scenario file's folder)",
                          name, path, name));
}

}  // namespace

ResolvedProgram resolveProgram(const Scenario& s, const std::string& programOverride,
                               const std::string& searchPath) {
  const ProgramWorkload& p = s.program;
  DL_CHECK_T(ValueError, !p.command.empty(), s.path, ": the program workload has no command");
  const fs::path folder = fs::absolute(fs::path(s.path)).parent_path();
  ResolvedProgram out;
  out.argv = p.command;
  const std::string& written = programOverride.empty() ? p.command.front() : programOverride;
  if (!programOverride.empty()) {
    out.argv.front() = checkedExecutable(p.pos, fs::path(programOverride), written).string();
  } else if (written.find('/') != std::string::npos) {
    const fs::path given(written);
    const fs::path at = (given.is_absolute() ? given : folder / given).lexically_normal();
    out.argv.front() = checkedExecutable(p.pos, at, written).string();
  } else {
    out.argv.front() = searchInPath(p.pos, written, searchPath).string();
  }
  const fs::path cwd = p.cwd.empty() ? folder : fs::path(p.cwd).is_absolute() ? fs::path(p.cwd)
                                                                               : folder / p.cwd;
  std::error_code ec;
  if (!fs::is_directory(cwd, ec)) {
    failAt(p.pos, fmt::format("cwd '{}' ({}) is not a directory", p.cwd, cwd.string()));
  }
  out.workingDir = cwd.lexically_normal().string();
  out.env = p.env;
  return out;
}

std::vector<std::string> checkProgramRun(const Scenario& s, const std::vector<RankExit>& exits,
                                         const std::vector<std::optional<RankResult>>& results,
                                         const Diagnosis& d, const std::string& dir) {
  std::vector<std::string> out;
  if (!s.faults.empty() && d.faultUs == 0) {
    out.push_back(fmt::format(
        "{}:{}: no fault fired: the program never reached the trigger (at_seq counts the world "
        "group's collectives, or with `on` its sends/receives; at_step counts DDP/FSDP training "
        "forwards or distlab::program::step markers)",
        s.path, s.faults.front().pos.line));
  }
  for (size_t r = 0; r < exits.size(); ++r) {
    if (exits[r].ok() && !results[r]) {
      out.push_back(fmt::format(
          "{}: rank {} exited with code 0 without creating its default process group under the "
          "scenario, so no fault, link model or check applied to it: the program must call "
          "initProcessGroup (env://) and link distlab::program; see {}/rank{}.log",
          s.path, r, dir, r));
    }
  }
  return out;
}

}  // namespace distlab::emulator
