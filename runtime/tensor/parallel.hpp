#pragma once
// Intra-op threading of the CPU kernels (PyTorch: torch.set_num_threads).
// Only the BLAS calls (matmul/mm/bmm) use threads; elementwise kernels and
// reductions run on the calling thread. Several ranks on one machine should
// each use ncores / nranks threads (1 by default in the emulator) so they do
// not oversubscribe the cores. Process-wide; safe to call from any thread, but
// meant to be set once at startup.
namespace distlab {

void setNumThreads(int threads);  // ValueError unless threads >= 1
int getNumThreads();

}  // namespace distlab
