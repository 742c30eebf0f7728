// A user's program under `distlab run` and `distlab launch --scenario` when
// something is wrong (issue: bad input): a missing or non-executable command,
// a program that never creates its process group, one that does not link
// distlab::program, one that exits 0 before the others, one that prints
// megabytes, one that leaves a child behind. Each gets a clear diagnosis and
// a bounded run, and nothing is left behind. Also the parser's checks of
// kind = "program" files.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "emulator/scenario/scenario_parser.hpp"
#include "runtime/core/errors.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using distlab::testing::CommandOutput;
using distlab::testing::runCommandLine;
using distlab::testing::TempDir;

std::string programScenario(const std::string& command, const std::string& expect,
                            int worldSize = 2) {
  return "name = \"p\"\ndescription = \"a user's program\"\ngroup = \"test\"\n"
         "[cluster]\nworld_size = " + std::to_string(worldSize) +
         "\nbackend = \"shm\"\ntimeout = 2\nrun_timeout = 30\n"
         "[workload]\nkind = \"program\"\ncommand = " + command + "\n[expect]\n" + expect;
}

std::string writeFile(const TempDir& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir.file(name)) << text;
  return dir.file(name);
}

CommandOutput distlab(const std::string& args) {
  return runCommandLine(std::string(DISTLAB_CLI_PATH) + " " + args);
}

std::string trainer() { return USER_TRAINER_PATH; }

void expectHas(const CommandOutput& r, const std::string& text) {
  EXPECT_NE(r.output.find(text), std::string::npos) << "missing: " << text << "\n" << r.output;
}

TEST(ProgramRun, MissingCommandNamesWhereItLooked) {
  TempDir dir;
  auto file = writeFile(dir, "s.toml", programScenario("[\"./no_such_trainer\"]",
                                                       "outcome = \"success\"\n"));
  CommandOutput r = distlab("run " + file);
  EXPECT_EQ(r.exitCode, 1) << r.output;
  expectHas(r, "command './no_such_trainer' not found (looked for " + dir.file("no_such_trainer"));
  r = distlab("run " + writeFile(dir, "p.toml", programScenario("[\"no_such_trainer_in_path\"]",
                                                                "outcome = \"success\"\n")));
  expectHas(r, "command 'no_such_trainer_in_path' is not in PATH");
}

TEST(ProgramRun, NonExecutableCommandIsRefused) {
  TempDir dir;
  writeFile(dir, "data.txt", "not a program\n");
  auto file = writeFile(dir, "s.toml", programScenario("[\"./data.txt\"]",
                                                       "outcome = \"success\"\n"));
  CommandOutput r = distlab("run " + file);
  EXPECT_EQ(r.exitCode, 1) << r.output;
  expectHas(r, "is not an executable file");
  r = distlab("run --program " + dir.file("data.txt") + " " + file);
  EXPECT_EQ(r.exitCode, 2) << r.output;
  expectHas(r, "--program " + dir.file("data.txt") + ": not an executable file");
}

TEST(ProgramRun, AProgramThatNeverInitializesIsNamed) {
  TempDir dir;
  auto file = writeFile(dir, "s.toml", programScenario("[\"t\", \"--no-init\"]",
                                                       "outcome = \"success\"\n"));
  CommandOutput r = distlab("run --program " + trainer() + " " + file);
  EXPECT_EQ(r.exitCode, 1) << r.output;
  expectHas(r, "rank 0 exited with code 0 without creating its default process group");
  expectHas(r, "link distlab::program");
}

TEST(ProgramRun, AProgramWithoutDistlabProgramIsToldToLinkIt) {
  TempDir dir;
  auto file = writeFile(dir, "s.toml", programScenario("[\"t\"]", "outcome = \"success\"\n"));
  CommandOutput r = distlab("run -v --program " + std::string(PLAIN_PROGRAM_PATH) + " " + file);
  EXPECT_EQ(r.exitCode, 1) << r.output;
  expectHas(r, "does not link distlab::program");
}

TEST(ProgramRun, ARankThatExitsEarlyIsTheCulprit) {
  TempDir dir;
  auto file = writeFile(dir, "s.toml",
                        programScenario("[\"t\", \"--exit-early-rank\", \"1\"]",
                                        "outcome = \"error\"\nculprits = [1]\n"));
  CommandOutput r = distlab("run --program " + trainer() + " " + file);
  EXPECT_EQ(r.exitCode, 0) << r.output;
  expectHas(r, "PASS");
}

TEST(ProgramRun, MegabytesOfOutputStillFinish) {
  TempDir dir;
  auto file = writeFile(dir, "s.toml", programScenario("[\"t\", \"--print-mb\", \"8\"]",
                                                       "outcome = \"success\"\n"));
  CommandOutput r = distlab("run --program " + trainer() + " " + file);
  EXPECT_EQ(r.exitCode, 0) << r.output;
}

// The program's child outlives it: the runner kills it (the rank's process
// group) and says so; no process runs the program's file afterwards.
TEST(ProgramRun, AChildLeftBehindIsKilledAndReported) {
  TempDir dir;
  const std::string copy = dir.file("trainer_copy");
  fs::copy_file(trainer(), copy);
  auto file = writeFile(dir, "s.toml", programScenario("[\"./trainer_copy\", \"--leave-child\"]",
                                                       "outcome = \"success\"\n"));
  CommandOutput r = distlab("run " + file);
  EXPECT_EQ(r.exitCode, 1) << r.output;
  expectHas(r, "a rank process outlived the run");
  for (const auto& entry : fs::directory_iterator("/proc")) {
    std::error_code ec;
    fs::path exe = fs::read_symlink(entry.path() / "exe", ec);
    if (!ec) {
      EXPECT_NE(exe.string(), copy) << "left behind: pid " << entry.path().filename();
    }
  }
}

TEST(ProgramRun, LaunchUnderAScenarioWithoutAWorkload) {
  TempDir dir;
  auto file = writeFile(dir, "s.toml",
                        "name = \"adhoc\"\ndescription = \"d\"\ngroup = \"test\"\n[cluster]\n"
                        "world_size = 2\n[[faults]]\nkind = \"straggler\"\nranks = [0]\n"
                        "at_step = 1\ndelay_ms = 100\n[expect]\noutcome = \"success\"\n");
  CommandOutput r = distlab("launch --scenario " + file + " " + trainer() + " --epochs 1");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  expectHas(r, "PASS  test/adhoc");
  r = distlab("launch --scenario " + file + " --nproc-per-node 2 " + trainer());
  EXPECT_EQ(r.exitCode, 2) << r.output;
  expectHas(r, "--nproc-per-node cannot be combined with --scenario");
}

void expectParseError(const std::string& text, const std::string& message) {
  try {
    distlab::emulator::parseScenarioText(text, "s.toml");
    ADD_FAILURE() << "accepted: " << text;
  } catch (const distlab::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

TEST(ProgramScenarioParser, RefusesWhatCannotApply) {
  const std::string ok = "outcome = \"success\"\n";
  expectParseError(programScenario("[]", ok), "a program workload needs command = [");
  expectParseError(programScenario("\"./train\"", ok), "command");
  expectParseError(programScenario("[\"./t\"]\nenv = { RANK = \"3\" }", ok),
                   "env: RANK is set by `distlab run`");
  expectParseError(programScenario("[\"./t\"]\nenv = { \"1X\" = \"3\" }", ok),
                   "env: '1X' is not a variable name");
  expectParseError(programScenario("[\"./t\"]\nsteps = 3", ok), "unknown key 'steps'");
  expectParseError(programScenario("[\"./t\"]\n[[faults]]\nkind = \"unused_param\"\n"
                                   "ranks = [0]\nparameter = \"\"",
                                   ok),
                   "parameter must name a parameter of the DDP module");
  expectParseError(programScenario("[\"./t\"]\n[[faults]]\nkind = \"uneven_data\"\nranks = [0]\n"
                                   "extra_batches = 2",
                                   ok),
                   "uneven_data on a program needs extra_samples = N");
  expectParseError(programScenario("[\"./t\"]", "outcome = \"success\"\n[expect.report.loss]\n"
                                                "equal_across_ranks = true\n"
                                                "differ_across_ranks = true\n"),
                   "contradict each other");
  expectParseError(programScenario("[\"./t\"]", "outcome = \"success\"\nparams_equal = true\n"),
                   "'params_equal' needs a training workload");
  expectParseError(programScenario("[\"./t\"]", "outcome = \"success\"\n[expect.report.loss]\n"
                                                "min = 2\nmax = 1\n"),
                   "min = 2 is above max = 1");
}

TEST(ProgramScenarioParser, AcceptsProgramFaultsAndAnOverride) {
  auto s = distlab::emulator::parseScenarioText(
      programScenario("[\"./t\", \"--x\"]\nenv = { MY_FLAG = \"1\" }\ncwd = \"sub\"\n"
                      "[[faults]]\nkind = \"hang\"\nranks = [1]\non = \"recv\"\nat_seq = 40\n"
                      "[[faults]]\nkind = \"crash\"\nranks = [0]\nat_step = 7\n"
                      "[[faults]]\nkind = \"skip_backward\"\nranks = [1]\nat_step = 2\n"
                      "[[faults]]\nkind = \"unused_param\"\nranks = [1]\nparameter = \"0.bias\"",
                      "outcome = \"timeout\"\n"),
      "s.toml");
  EXPECT_EQ(s.workloadKind, "program");
  EXPECT_EQ(s.program.command, (std::vector<std::string>{"./t", "--x"}));
  EXPECT_EQ(s.program.env.at("MY_FLAG"), "1");
  EXPECT_EQ(s.program.cwd, "sub");
  ASSERT_EQ(s.faults.size(), 4u);
  EXPECT_EQ(s.faults[3].parameter, "0.bias");
  distlab::emulator::ParseOptions po;
  po.programCommand = {"/bin/prog", "--y"};
  auto adhoc = distlab::emulator::parseScenarioText(
      "name = \"a\"\ndescription = \"d\"\ngroup = \"g\"\n[cluster]\nworld_size = 2\n[expect]\n"
      "outcome = \"success\"\n",
      "a.toml", po);
  EXPECT_EQ(adhoc.program.command, po.programCommand);
  const std::string collectives =
      "name = \"a\"\ndescription = \"d\"\ngroup = \"g\"\n[cluster]\nworld_size = 2\n"
      "[workload]\nkind = \"collectives\"\n"
      "[[workload.steps]]\nop = \"barrier\"\n[expect]\noutcome = \"success\"\n";
  EXPECT_THROW(
      {
        try {
          distlab::emulator::parseScenarioText(collectives, "c.toml", po);
        } catch (const distlab::ValueError& e) {
          EXPECT_NE(std::string(e.what()).find("this scenario runs a collectives workload, but a "
                                               "program was given"),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      distlab::ValueError);
}

}  // namespace
