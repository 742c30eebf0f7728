#include "runtime/autograd/grad_mode.hpp"

namespace distlab::autograd {
namespace {
thread_local bool tGradEnabled = true;
}  // namespace

bool GradMode::isEnabled() { return tGradEnabled; }
void GradMode::setEnabled(bool enabled) { tGradEnabled = enabled; }

}  // namespace distlab::autograd
