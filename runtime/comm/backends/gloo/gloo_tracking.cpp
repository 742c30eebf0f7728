#include "runtime/comm/backends/gloo/gloo_tracking.hpp"

#include <gloo/transport/pair.h>

namespace distlab::comm::gloo_backend {
namespace {

namespace transport = ::gloo::transport;

class TrackedBuffer : public transport::UnboundBuffer {
 public:
  TrackedBuffer(std::unique_ptr<transport::UnboundBuffer> inner,
                std::shared_ptr<BufferRegistry> registry)
      : transport::UnboundBuffer(inner->ptr, inner->size),
        inner_(std::move(inner)),
        registry_(std::move(registry)) {
    registry_->add(inner_.get());
  }
  ~TrackedBuffer() override { registry_->remove(inner_.get()); }

  bool waitRecv(int* rank, std::chrono::milliseconds timeout) override {
    return inner_->waitRecv(rank, timeout);
  }
  bool waitSend(int* rank, std::chrono::milliseconds timeout) override {
    return inner_->waitSend(rank, timeout);
  }
  void abortWaitRecv() override { inner_->abortWaitRecv(); }
  void abortWaitSend() override { inner_->abortWaitSend(); }
  void send(int dstRank, uint64_t slot, size_t offset, size_t nbytes) override {
    inner_->send(dstRank, slot, offset, nbytes);
  }
  void recv(int srcRank, uint64_t slot, size_t offset, size_t nbytes) override {
    inner_->recv(srcRank, slot, offset, nbytes);
  }
  void recv(std::vector<int> srcRanks, uint64_t slot, size_t offset, size_t nbytes) override {
    inner_->recv(std::move(srcRanks), slot, offset, nbytes);
  }

 private:
  std::unique_ptr<transport::UnboundBuffer> inner_;
  std::shared_ptr<BufferRegistry> registry_;
};

class TrackedContext : public transport::Context {
 public:
  TrackedContext(std::shared_ptr<transport::Context> inner, std::shared_ptr<BufferRegistry> registry)
      : transport::Context(inner->rank, inner->size),
        inner_(std::move(inner)),
        registry_(std::move(registry)) {}

  std::unique_ptr<transport::Pair>& getPair(int rank) override { return inner_->getPair(rank); }
  std::unique_ptr<transport::Pair>& createPair(int rank) override {
    // Gloo sets the timeout on this (outer) context; pairs take the inner one's.
    inner_->setTimeout(getTimeout());
    return inner_->createPair(rank);
  }
  std::unique_ptr<transport::UnboundBuffer> createUnboundBuffer(void* ptr, size_t size) override {
    return std::make_unique<TrackedBuffer>(inner_->createUnboundBuffer(ptr, size), registry_);
  }

 private:
  std::shared_ptr<transport::Context> inner_;
  std::shared_ptr<BufferRegistry> registry_;
};

class TrackedDevice : public transport::Device {
 public:
  TrackedDevice(std::shared_ptr<transport::Device> inner, std::shared_ptr<BufferRegistry> registry)
      : inner_(std::move(inner)), registry_(std::move(registry)) {}

  std::string str() const override { return inner_->str(); }
  const std::string& getPCIBusID() const override { return inner_->getPCIBusID(); }
  int getInterfaceSpeed() const override { return inner_->getInterfaceSpeed(); }
  bool hasGPUDirect() const override { return inner_->hasGPUDirect(); }
  std::shared_ptr<transport::Context> createContext(int rank, int size) override {
    return std::make_shared<TrackedContext>(inner_->createContext(rank, size), registry_);
  }

 private:
  std::shared_ptr<transport::Device> inner_;
  std::shared_ptr<BufferRegistry> registry_;
};

}  // namespace

void BufferRegistry::add(::gloo::transport::UnboundBuffer* inner) {
  std::lock_guard<std::mutex> lock(mutex_);
  buffers_.insert(inner);
}

void BufferRegistry::remove(::gloo::transport::UnboundBuffer* inner) {
  std::lock_guard<std::mutex> lock(mutex_);
  buffers_.erase(inner);
}

void BufferRegistry::abortAll() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto* b : buffers_) {
    b->abortWaitRecv();
    b->abortWaitSend();
  }
}

size_t BufferRegistry::live() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return buffers_.size();
}

std::shared_ptr<::gloo::transport::Device> trackBuffers(
    std::shared_ptr<::gloo::transport::Device> inner, std::shared_ptr<BufferRegistry> registry) {
  return std::make_shared<TrackedDevice>(std::move(inner), std::move(registry));
}

}  // namespace distlab::comm::gloo_backend
