// DDPOptions: PyTorch defaults and validation messages.
#include <gtest/gtest.h>

#include "runtime/core/errors.hpp"
#include "runtime/ddp/ddp_options.hpp"

namespace distlab::ddp {
namespace {

std::string errorOf(const DDPOptions& o) {
  try {
    validate(o);
  } catch (const ValueError& e) {
    return e.what();
  }
  return "";
}

TEST(DDPOptionsTest, DefaultsArePyTorchs) {
  DDPOptions o;
  EXPECT_FALSE(o.bucketCapMb.has_value());
  EXPECT_EQ(o.bucketBytesCap(), 26214400);
  EXPECT_EQ(o.firstBucketBytesCap(), 1048576);
  EXPECT_TRUE(o.broadcastBuffers);
  EXPECT_TRUE(o.initSync);
  EXPECT_FALSE(o.findUnusedParameters);
  EXPECT_FALSE(o.gradientAsBucketView);
  EXPECT_FALSE(o.staticGraph);
  EXPECT_FALSE(o.skipAllReduceUnusedParams);
  EXPECT_TRUE(o.delayAllReduceNamedParams.empty());
  EXPECT_TRUE(o.paramToHookAllReduce.empty());
  EXPECT_EQ(errorOf(o), "");
}

TEST(DDPOptionsTest, ExplicitCapAppliesToFirstBucketToo) {
  DDPOptions o;
  o.bucketCapMb = 4;
  EXPECT_EQ(o.bucketBytesCap(), 4 * 1048576);
  EXPECT_EQ(o.firstBucketBytesCap(), 4 * 1048576);
}

TEST(DDPOptionsTest, ValidationNamesTheField) {
  DDPOptions o;
  o.bucketCapMb = 0;
  EXPECT_NE(errorOf(o).find("bucket_cap_mb=0 is invalid"), std::string::npos);
  o.bucketCapMb = -3;
  EXPECT_NE(errorOf(o).find("bucket_cap_mb=-3 is invalid"), std::string::npos);

  DDPOptions d;
  d.delayAllReduceNamedParams = {"a.weight"};
  EXPECT_NE(errorOf(d).find("param_to_hook_all_reduce is empty"), std::string::npos);
  d.paramToHookAllReduce = "b.weight";
  EXPECT_EQ(errorOf(d), "");
  d.delayAllReduceNamedParams = {"a.weight", "a.weight"};
  EXPECT_NE(errorOf(d).find("lists 'a.weight' twice"), std::string::npos);

  DDPOptions h;
  h.paramToHookAllReduce = "b.weight";
  EXPECT_NE(errorOf(h).find("delay_all_reduce_named_params is empty"), std::string::npos);

  DDPOptions s;
  s.skipAllReduceUnusedParams = true;
  EXPECT_NE(errorOf(s).find("needs find_unused_parameters=True"), std::string::npos);
}

TEST(DDPOptionsTest, DescribeListsEveryField) {
  DDPOptions o;
  o.findUnusedParameters = true;
  EXPECT_EQ(describe(o),
            "bucket_cap_mb=25 (default), broadcast_buffers=1, init_sync=1, "
            "find_unused_parameters=1, gradient_as_bucket_view=0, static_graph=0, "
            "skip_all_reduce_unused_params=0, delay_all_reduce_named_params=[], "
            "param_to_hook_all_reduce=None");
}

}  // namespace
}  // namespace distlab::ddp
