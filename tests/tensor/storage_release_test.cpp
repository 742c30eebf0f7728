// Storage::release / reallocate (Note [Freeing storage in place]): views keep
// referring to the tensor and see the new memory; misuse is an Error.
#include <gtest/gtest.h>

#include "runtime/core/errors.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab {
namespace {

TEST(StorageRelease, ViewsSeeTheReallocatedMemory) {
  Tensor t = arange(0, 6, 1).view({2, 3});
  Tensor row = t.select(0, 1);
  const size_t bytes = t.storage()->nbytes();
  t.storage()->release();
  EXPECT_TRUE(t.storage()->isReleased());
  EXPECT_EQ(t.storage()->nbytes(), 0u);
  EXPECT_EQ(t.storage()->data(), nullptr);
  EXPECT_EQ(t.sizes(), (Shape{2, 3}));  // metadata stays
  t.storage()->reallocate(bytes);
  EXPECT_FALSE(t.storage()->isReleased());
  EXPECT_EQ(t.storage()->nbytes(), bytes);
  t.copy_(fromVector<float>({10, 11, 12, 13, 14, 15}, {2, 3}));
  EXPECT_EQ(row.toVector<float>(), (std::vector<float>{13, 14, 15}));
}

TEST(StorageRelease, RepeatedCyclesKeepTheTensorUsable) {
  Tensor t = zeros({128, 64});
  const size_t bytes = t.storage()->nbytes();
  for (int i = 0; i < 5; ++i) {
    t.storage()->release();
    t.storage()->reallocate(bytes);
    t.fill_(i);
    EXPECT_EQ(t.sum().item<double>(), 128.0 * 64 * i);
  }
}

TEST(StorageRelease, MisuseIsAnError) {
  Tensor t = zeros({4});
  EXPECT_THROW(t.storage()->reallocate(16), Error);  // not released
  t.storage()->release();
  EXPECT_THROW(t.storage()->release(), Error);  // twice
  float external[4] = {1, 2, 3, 4};
  auto wrapped = Storage::wrap(external, sizeof(external), Device::cpu(), {});
  EXPECT_THROW(wrapped->release(), Error);
  EXPECT_EQ(wrapped->data(), external);
}

TEST(StorageRelease, DestroyingAReleasedStorageFreesNothingTwice) {
  auto s = Storage::allocate(256, Device::cpu());
  s->release();
  s.reset();  // under ASan/LSan a double free or leak would be reported
  auto r = Storage::allocate(256, Device::cpu());
  r->release();
  r->reallocate(512);
  EXPECT_EQ(r->nbytes(), 512u);
}

}  // namespace
}  // namespace distlab
