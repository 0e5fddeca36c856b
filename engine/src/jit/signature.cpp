#include "jit/signature.h"

#include "jit/kernel_text.h"
#include "loom/error.h"
#include "loom/host.h"

namespace loom::jit {

void CallSignature::check(size_t n_tensors, size_t n_scalars, const std::vector<double> &baked_now,
                          const std::string &who) const {
  auto expect = [&](const char *what, size_t want, size_t got) {
    if (want != got)
      throw Error(who + ": called with " + std::to_string(got) + " " + what + ", but its first call had " +
                  std::to_string(want));
  };
  expect("tensors", tensors, n_tensors);
  expect("scalars", scalars, n_scalars);
  expect("baked values", baked.size(), baked_now.size());
  for (size_t i = 0; i < baked.size(); i++)
    if (!same_number(baked_now[i], baked[i]))
      throw Error(who + ": baked value " + std::to_string(i) + " was " + number_str(baked[i]) +
                  " when captured and is " + number_str(baked_now[i]) +
                  " now; a value that changes between calls must be passed as a scalar");
}

namespace {
// The first input before `i` on the same buffer, or -1.
int first_on_same_buffer(const InputViews &in, size_t i) {
  for (size_t j = 0; j < i; j++)
    if (in.buffers[j] == in.buffers[i]) return static_cast<int>(j);
  return -1;
}
}  // namespace

std::vector<InputLayout> input_layouts(const InputViews &in) {
  std::vector<InputLayout> out;
  for (size_t i = 0; i < in.buffers.size(); i++)
    out.push_back({in.views[i], in.buffers[i]->dtype, in.buffers[i]->size, first_on_same_buffer(in, i), -1});
  return out;
}

void bind_inputs(const std::vector<InputLayout> &layouts, const InputViews &in,
                 const std::function<std::string(size_t)> &describe, std::vector<std::shared_ptr<uop::Buffer>> &bound,
                 const std::string &who) {
  for (size_t i = 0; i < layouts.size(); i++) {
    const InputLayout &l = layouts[i];
    const std::shared_ptr<uop::Buffer> &b = in.buffers[i];
    if (!(in.views[i] == l.st) || b->dtype != l.dtype || b->size != l.buffer_size)
      throw Error(who + ": input " + std::to_string(i) + " is " + describe(i) + ", but the capture's was " +
                  shape_str(l.st.shape()) + " " + dtype_name(l.dtype) + " with other strides or storage; "
                  "call reset() to capture again");
    const int same = first_on_same_buffer(in, i);
    if ((same < 0) != (l.same_as < 0))
      throw Error(who + ": input " + std::to_string(i) + (same < 0 ? " no longer shares" : " now shares") +
                  " its storage with an earlier input, unlike the capture's");
    if (l.slot >= 0) bound[static_cast<size_t>(l.slot)] = b;
  }
}

}  // namespace loom::jit
