// Scenarios on a GPU (Note [Scenarios on a GPU]) as far as a machine without
// one can check them: `[cluster] device` and the nccl backend are parsed and
// validated, an in-flight hang is refused where it cannot act, the FSDP
// engine's integer reshard_after_forward is checked against the shard world,
// and a scenario that wants a GPU the machine lacks is skipped with the
// reason: `distlab run` prints SKIP and exits 77, never a pass or a failure.
// On a machine with a GPU the skip checks turn around (the scenario runs).
#include <gtest/gtest.h>
#include <fstream>
#include <string>

#include "distlab/config.hpp"
#include "emulator/scenario/scenario_device.hpp"
#include "emulator/scenario/scenario_parser.hpp"
#include "runtime/core/errors.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"
#if DISTLAB_HAVE_CUDA
#include "runtime/tensor/cuda/cuda_runtime.hpp"
#endif

namespace distlab::emulator {
namespace {

const char* kHeader = "name = \"t\"\ndescription = \"d\"\ngroup = \"g\"\n";

// Lines: header 1-3, [cluster] 4, then `cluster` lines, then the workload.
std::string scenario(const std::string& cluster, const std::string& rest = "") {
  return std::string(kHeader) + "[cluster]\n" + cluster +
         "[workload]\nkind = \"collectives\"\n[[workload.steps]]\nop = \"all_reduce\"\n"
         "repeat = 3\n" + rest + "[expect]\noutcome = \"success\"\n";
}

std::string fsdpScenario(int worldSize, const std::string& options) {
  return std::string(kHeader) + "[cluster]\nworld_size = " + std::to_string(worldSize) +
         "\n[workload]\nkind = \"training\"\nengine = \"fsdp\"\nengine_options = { " + options +
         " }\n[expect]\noutcome = \"success\"\n";
}

// The parse error of `text`: "bad.toml:<line>: <message>".
std::string parseError(const std::string& text) {
  try {
    parseScenarioText(text, "bad.toml");
  } catch (const ValueError& e) {
    return e.what();
  }
  return "no error";
}

bool machineHasCuda() {
#if DISTLAB_HAVE_CUDA
  return cuda::isAvailable();
#else
  return false;
#endif
}

TEST(ScenarioDevice, DeviceDefaultsToCpuAndReadsCuda) {
  EXPECT_EQ(parseScenarioText(scenario("world_size = 2\n"), "ok.toml").device, "cpu");
  const Scenario s =
      parseScenarioText(scenario("world_size = 2\nbackend = \"shm\"\ndevice = \"cuda\"\n"), "ok");
  EXPECT_EQ(s.device, "cuda");
  EXPECT_EQ(s.backend, "shm");
  const Scenario n =
      parseScenarioText(scenario("world_size = 1\nbackend = \"nccl\"\ndevice = \"cuda\"\n"), "ok");
  EXPECT_EQ(n.backend, "nccl");
  EXPECT_EQ(scenarioRankDevice(parseScenarioText(scenario("world_size = 2\n"), "ok"), 1),
            Device::cpu());
}

TEST(ScenarioDevice, RefusesAnUnknownDeviceAndNcclOnTheCpu) {
  EXPECT_EQ(parseError(scenario("world_size = 2\ndevice = \"tpu\"\n")).rfind("bad.toml:6: ", 0),
            0u);
  EXPECT_NE(parseError(scenario("world_size = 2\ndevice = \"tpu\"\n")).find("cpu, cuda"),
            std::string::npos);
  const std::string nccl = parseError(scenario("world_size = 1\nbackend = \"nccl\"\n"));
  EXPECT_EQ(nccl.rfind("bad.toml:6: ", 0), 0u) << nccl;
  EXPECT_NE(nccl.find("serves CUDA tensors only; add device = \"cuda\""), std::string::npos)
      << nccl;
}

TEST(ScenarioDevice, InFlightHangNeedsNcclAndASequenceNumber) {
  const std::string fault = "[[faults]]\nkind = \"hang\"\nranks = [0]\nat_seq = 2\n"
                            "in_flight = true\n";
  const std::string onShm = parseError(
      scenario("world_size = 2\nbackend = \"shm\"\ndevice = \"cuda\"\n", fault));
  EXPECT_NE(onShm.find("in_flight = true stalls the device stream"), std::string::npos) << onShm;
  EXPECT_NE(onShm.find("backend 'shm' stages CUDA tensors through the host"), std::string::npos);
  const std::string p2p = parseError(scenario(
      "world_size = 2\nbackend = \"nccl\"\ndevice = \"cuda\"\n",
      "[[workload.steps]]\nop = \"send\"\nroot = 1\nranks = [0]\n[[workload.steps]]\nop = "
      "\"recv\"\nroot = 0\nranks = [1]\n[[faults]]\nkind = \"hang\"\nranks = [0]\non = "
      "\"send\"\nat_seq = 1\nin_flight = true\n"));
  EXPECT_NE(p2p.find("in_flight = true needs at_seq = N"), std::string::npos) << p2p;
  const Scenario ok = parseScenarioText(
      scenario("world_size = 2\nbackend = \"nccl\"\ndevice = \"cuda\"\n", fault), "ok.toml");
  ASSERT_EQ(ok.faults.size(), 1u);
  EXPECT_TRUE(ok.faults[0].inFlight);
}

TEST(ScenarioDevice, ReshardAfterForwardTakesADivisorOfTheShardWorld) {
  const Scenario two = parseScenarioText(fsdpScenario(4, "reshard_after_forward = 2"), "ok");
  EXPECT_EQ(two.training.engineOptions.at("reshard_after_forward"), "2");
  EXPECT_EQ(parseScenarioText(fsdpScenario(4, "reshard_after_forward = false"), "ok")
                .training.engineOptions.at("reshard_after_forward"),
            "false");
  const std::string three = parseError(fsdpScenario(4, "reshard_after_forward = 3"));
  EXPECT_EQ(three.rfind("bad.toml:9: ", 0), 0u) << three;
  EXPECT_NE(three.find("reshard_after_forward = 3 does not divide the shard world 4"),
            std::string::npos) << three;
  // With HSDP the shard world is world_size / hsdp_replicas = 2.
  const std::string hsdp =
      parseError(fsdpScenario(4, "hsdp_replicas = 2, reshard_after_forward = 4"));
  EXPECT_NE(hsdp.find("does not divide the shard world 2 (world_size 4 / hsdp_replicas 2)"),
            std::string::npos) << hsdp;
  EXPECT_NE(parseError(fsdpScenario(4, "hsdp_replicas = 3")).find(
                "hsdp_replicas = 3 does not divide world_size 4"),
            std::string::npos);
  EXPECT_NE(parseError(fsdpScenario(4, "reshard_after_forward = 0")).find("out of range"),
            std::string::npos);
  EXPECT_NE(parseError(fsdpScenario(4, "reshard_after_forward = \"2\"")).find(
                "must be true, false or an integer"),
            std::string::npos);
}

TEST(ScenarioDevice, AScenarioThatWantsAGpuIsSkippedWithTheReason) {
  const Scenario cpu = parseScenarioText(scenario("world_size = 2\n"), "ok.toml");
  EXPECT_FALSE(deviceSkipReason(cpu).has_value());
  const Scenario gpu =
      parseScenarioText(scenario("world_size = 2\nbackend = \"shm\"\ndevice = \"cuda\"\n"), "ok");
  if (machineHasCuda()) {
    EXPECT_FALSE(deviceSkipReason(gpu).has_value()) << *deviceSkipReason(gpu);
    return;
  }
  const auto why = deviceSkipReason(gpu);
  ASSERT_TRUE(why.has_value());
  EXPECT_TRUE(why->find("no CUDA device") != std::string::npos ||
              why->find("built without CUDA") != std::string::npos) << *why;
  EXPECT_THROW(scenarioRankDevice(gpu, 0), DistBackendError);
}

TEST(ScenarioDevice, NcclNeedsOneGpuPerRank) {
  const Scenario wide = parseScenarioText(
      scenario("world_size = 64\nbackend = \"nccl\"\ndevice = \"cuda\"\n"), "ok.toml");
  const auto why = deviceSkipReason(wide);
  ASSERT_TRUE(why.has_value());  // no machine here has 64 GPUs
  if (machineHasCuda()) {
    EXPECT_NE(why->find("backend nccl needs one GPU per rank: world_size 64"), std::string::npos)
        << *why;
  }
}

testing::CommandOutput runDistlab(const std::string& args) {
  return testing::runCommandLine(std::string(DISTLAB_CLI_PATH) + " " + args);
}

// The gpu scenario group through `distlab run`: skipped here (exit 77, one
// SKIP line per file with the reason); with a CPU scenario beside them the
// run's verdict is the CPU one's (exit 0) and the summary counts the skips.
TEST(ScenarioDevice, RunSkipsGpuScenariosWithExit77) {
  if (machineHasCuda()) GTEST_SKIP() << "this machine has a CUDA device: the gpu scenarios run";
  testing::TempDir dir;
  std::ofstream(dir.file("gpu.toml"))
      << scenario("world_size = 2\nbackend = \"shm\"\ndevice = \"cuda\"\n");
  std::ofstream(dir.file("cpu.toml")) << scenario("world_size = 2\n");
  const testing::CommandOutput alone = runDistlab("run " + dir.file("gpu.toml"));
  EXPECT_EQ(alone.exitCode, 77) << alone.output;
  EXPECT_NE(alone.output.find("SKIP  g/t"), std::string::npos) << alone.output;
  EXPECT_NE(alone.output.find("skipped: "), std::string::npos) << alone.output;
  EXPECT_NE(alone.output.find("1 scenarios: 0 passed, 0 failed, 1 skipped"), std::string::npos)
      << alone.output;
  const testing::CommandOutput both = runDistlab("run " + dir.path());
  EXPECT_EQ(both.exitCode, 0) << both.output;
  EXPECT_NE(both.output.find("2 scenarios: 1 passed, 0 failed, 1 skipped"), std::string::npos)
      << both.output;
  const testing::CommandOutput group =
      runDistlab(std::string("run ") + DISTLAB_SOURCE_DIR + "/scenarios/gpu");
  EXPECT_EQ(group.exitCode, 77) << group.output;
  EXPECT_EQ(group.output.find("PASS"), std::string::npos) << group.output;
  EXPECT_EQ(group.output.find("FAIL"), std::string::npos) << group.output;
}

// `bench overlap --device cuda` without a GPU: an error naming the reason
// before any run (a sweep of skipped runs would print no figures).
TEST(ScenarioDevice, BenchOverlapOnCudaNeedsAGpu) {
  if (machineHasCuda()) GTEST_SKIP() << "this machine has a CUDA device";
  const testing::CommandOutput r = runDistlab(
      "bench overlap --device cuda --world-sizes 2 --caps 1 "
      "--hooks '' --fsdp '' --no-tracing-overhead");
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("bench overlap --device cuda: "), std::string::npos) << r.output;
}

}  // namespace
}  // namespace distlab::emulator
