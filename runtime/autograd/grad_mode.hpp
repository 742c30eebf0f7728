#pragma once
// Grad mode: whether differentiable ops record a graph (PyTorch: torch.is_grad_enabled).
// Thread-local, like PyTorch: a NoGradGuard on one thread (an optimizer step, a
// DDP bucket copy) never affects another thread's forward.
namespace distlab::autograd {

class GradMode {
 public:
  static bool isEnabled();
  static void setEnabled(bool enabled);
};

// RAII: disables recording for its scope and restores the previous mode.
class NoGradGuard {
 public:
  NoGradGuard() : previous_(GradMode::isEnabled()) { GradMode::setEnabled(false); }
  ~NoGradGuard() { GradMode::setEnabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// RAII: enables recording for its scope (PyTorch: torch.enable_grad).
class EnableGradGuard {
 public:
  EnableGradGuard() : previous_(GradMode::isEnabled()) { GradMode::setEnabled(true); }
  ~EnableGradGuard() { GradMode::setEnabled(previous_); }
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace distlab::autograd
