// Tensor::device() and Tensor::to(): every tensor lives on the process's one
// device (LOOM_DEVICE); moving to another raises, saying how to get there.
#include <gtest/gtest.h>

#include "engine/realize.h"
#include "loom/error.h"
#include "loom/tensor.h"

namespace loom {
namespace {

std::string message_of(const std::function<void()> &f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

TEST(Devices, ATensorIsOnTheProcesssDeviceAndToAnotherRaisesNamingIt) {
  Tensor x = Tensor::randn({3, 4});
  const std::string here = x.device(), other = here == "cpu" ? "cuda" : "cpu";
  EXPECT_EQ(here, std::string(engine::device_name()) == "CPU" ? "cpu" : "cuda");
  EXPECT_EQ(x.to(here).uop(), x.uop());
  const std::string m = message_of([&] { x.to(other); });
  EXPECT_NE(m.find("computes on " + std::string(engine::device_name())), std::string::npos) << m;
  EXPECT_NE(m.find("LOOM_DEVICE=" + std::string(other == "cuda" ? "CUDA" : "CPU")), std::string::npos) << m;
  // Where CUDA cannot be used, the message says what is missing.
  const std::string missing = engine::device_missing("CUDA");
  if (other == "cuda" && !missing.empty()) {
    EXPECT_NE(m.find(missing), std::string::npos) << m;
  }
  EXPECT_NE(message_of([&] { x.to("tpu"); }).find("expected a device type cpu or cuda, got 'tpu'"), std::string::npos);
  EXPECT_NE(message_of([&] { x.to("cuda:1"); }).find("cuda:0"), std::string::npos);
}

}  // namespace
}  // namespace loom
