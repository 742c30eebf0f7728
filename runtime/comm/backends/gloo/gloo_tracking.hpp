#pragma once
// Tracking wrappers around Gloo's transport: a Device whose contexts hand out
// UnboundBuffers that register themselves while alive, so the backend can wake
// every wait of an operation it must interrupt (Note [Gloo peer failure]).
//
// Why: when a connection breaks, Gloo fails the operations posted on that pair
// but not a receive whose message was already half read (it has left the
// pair's pending list), and nothing at all on other pairs. Such a wait would
// sit until the operation's timeout. abortAll() calls abortWaitRecv/Send on
// every live buffer; the interrupted Gloo algorithm then returns or throws at
// its next step on a closed pair, and the backend fails the operation.
// The wrappers delegate everything else unchanged (all buffers the Gloo
// algorithms create go through transport::Context::createUnboundBuffer).
#include <memory>
#include <mutex>
#include <set>

#include <gloo/transport/context.h>
#include <gloo/transport/device.h>
#include <gloo/transport/unbound_buffer.h>

namespace distlab::comm::gloo_backend {

class BufferRegistry {
 public:
  void add(::gloo::transport::UnboundBuffer* inner);
  void remove(::gloo::transport::UnboundBuffer* inner);
  // Wakes every wait on every live buffer (each returns "aborted").
  void abortAll();
  size_t live() const;

 private:
  mutable std::mutex mutex_;
  std::set<::gloo::transport::UnboundBuffer*> buffers_;  // GUARDED_BY(mutex_)
};

// Wraps `inner` (a TCP device); contexts created through it track buffers in
// `registry`.
std::shared_ptr<::gloo::transport::Device> trackBuffers(
    std::shared_ptr<::gloo::transport::Device> inner, std::shared_ptr<BufferRegistry> registry);

}  // namespace distlab::comm::gloo_backend
