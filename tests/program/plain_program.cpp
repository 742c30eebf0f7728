// A program that uses distlab's runtime but does not link distlab::program:
// under `distlab run` its initProcessGroup must refuse to run without the
// scenario's machinery, naming the missing link (program_run_test).
#include "runtime/comm/group_management.hpp"
#include "runtime/tensor/tensor.hpp"

int main() {
  distlab::comm::InitOptions io;
  io.backend = "shm";
  auto world = distlab::comm::initProcessGroup(io);
  distlab::Tensor t = distlab::ones({4});
  world->allreduce(t)->wait();
  distlab::comm::destroyProcessGroup();
  return 0;
}
