// In-place updates cost what they write: into the existing buffer when
// nothing else can still read the old value, a copy first otherwise.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/realize.h"
#include "loom/autograd.h"

namespace loom {
namespace {

Tensor iota(const Shape &shape) {
  return Tensor::arange(shape_numel(shape), DType::Float32).reshape(shape).contiguous().realize();
}

const void *storage(const Tensor &t) {
  const UOpRef &u = t.uop();
  const UOpRef &b = u->op == uop::Op::View ? u->src[0] : u;
  return b->arg_as<uop::BufferArg>().buffer->data();
}

TEST(InPlace, WholeUpdateWritesTheExistingBuffer) {
  Tensor w = iota({64, 32});
  const void *before = storage(w);
  reset_run_stats();
  w.assign(w.mul(2.0).add(1.0));  // an optimizer-style update reading the old value elementwise
  w.realize();
  EXPECT_EQ(run_stats().kernels_run, 1);
  EXPECT_EQ(run_stats().buffers_allocated, 0);
  EXPECT_EQ(storage(w), before);
  EXPECT_EQ(w.to_host().get(100), 201.0);
}

// A host read of a buffer already computed (a batch's targets checked by
// cross_entropy, a loss read by item()) is not a realize: updates still
// pending (running statistics) run with the step's next realize, not in a
// schedule of their own.
TEST(InPlace, AHostReadOfAComputedBufferLeavesPendingUpdatesPending) {
  Tensor targets = iota({4});
  Tensor stat = iota({8});
  stat.assign(stat.mul(0.9).add(1.0));
  reset_run_stats();
  EXPECT_EQ(targets.to_host().get(3), 3.0);
  EXPECT_EQ(run_stats().schedules, 0);
  EXPECT_EQ(stat.to_host().get(5), 5.5);  // the update, in the first realize
  EXPECT_EQ(run_stats().schedules, 1);
  EXPECT_EQ(targets.slice(0, 1, 2).item(), 1.0);  // a view of one element is realized, as before
  EXPECT_EQ(run_stats().schedules, 2);
}

TEST(InPlace, RowWriteStoresOnlyTheRow) {
  Tensor a = iota({256, 256});
  const void *before = storage(a);
  Tensor row = a.slice(0, 7, 8);
  reset_run_stats();
  row.assign(Tensor::full({1, 256}, -1.0));
  a.realize();
  EXPECT_EQ(run_stats().kernels_run, 1);  // the stores only: no copy of the 65536 elements
  EXPECT_EQ(run_stats().buffers_allocated, 0);
  EXPECT_EQ(storage(a), before);
  const HostTensor h = a.to_host();
  EXPECT_EQ(h.get(7 * 256 + 3), -1.0);
  EXPECT_EQ(h.get(6 * 256 + 3), 6.0 * 256 + 3);
}

// A graph built before the update still reads the old value: the update
// copies (copy-on-write) and leaves the old buffer alone.
TEST(InPlace, LiveGraphKeepsTheOldValue) {
  Tensor a = iota({16, 16});
  const void *before = storage(a);
  Tensor old_plus = a.add(0.5);  // lazy, reads a's buffer
  reset_run_stats();
  a.slice(0, 2, 3).assign(Tensor::zeros({1, 16}));
  a.realize();
  EXPECT_EQ(run_stats().buffers_allocated, 1);
  EXPECT_NE(storage(a), before);
  EXPECT_EQ(old_plus.to_host().get(2 * 16 + 1), 2.0 * 16 + 1 + 0.5);
  EXPECT_EQ(a.to_host().get(2 * 16 + 1), 0.0);
}

// A flipped read of the old value is not elementwise: the update cannot run in place.
TEST(InPlace, NonElementwiseReadOfTheOldValueCopies) {
  Tensor a = iota({8});
  a.assign(a.flip({0}));
  const HostTensor h = a.to_host();
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(h.get(i), 7.0 - i);
}

// An update whose inputs were realized since it was built is substituted at
// its first read; it is still computed once: reading it again (to_host does
// not replace the tensor's node) reads its buffer instead of applying the
// in-place update a second time.
TEST(InPlace, AnUpdateReadTwiceIsAppliedOnce) {
  Tensor a = iota({8});
  Tensor m = iota({8}).exp();  // lazy
  a.assign(a.mul(0.5).add(m));
  m.realize();
  const HostTensor first = a.to_host(), second = a.to_host();
  for (int64_t i = 0; i < 8; ++i) {
    EXPECT_FLOAT_EQ(first.get(i), 0.5 * i + std::exp(static_cast<float>(i)));
    EXPECT_EQ(second.get(i), first.get(i));
  }
}

// `a + b` read both by the whole overwrite of b and by a later value: the
// stores into b's buffer would run before the later kernel reads b's old
// value there, so the overwrite goes into a new buffer.
TEST(InPlace, AnOldValueReadByAnotherKernelKeepsItsBuffer) {
  Tensor a = iota({4});
  Tensor b = iota({4}).mul(10.0).contiguous().realize();
  a.assign(a.add(b));          // a + b, into a's buffer
  a.assign(a.add(b));          // a + 2b, lazy
  b.assign(a);                 // b = a + 2b, which reads b's old value
  a.assign(a.add(b));          // 2a + 4b, reading that a + 2b again
  const HostTensor ha = a.to_host(), hb = b.to_host();
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(hb.get(i), 21.0 * i) << i;
    EXPECT_EQ(ha.get(i), 42.0 * i) << i;
  }
}

// A lazy value still held by the caller reads b's old value, inside the kernel
// of another update that runs before b's own: b's update must not overwrite
// the buffer that value is computed from later.
TEST(InPlace, AHeldValueReadInAnEarlierKernelKeepsItsBuffer) {
  Tensor a = iota({4}).contiguous().realize();
  Tensor b = iota({4}).mul(10.0).contiguous().realize();
  Tensor held = a.add(b);  // a + b = 11i, lazy, read later
  a.assign(a.add(held));   // 12i
  b.assign(a);             // b's update reads the new a: a's kernel runs first
  std::vector<Tensor> both{a, b};
  realize_all(both);       // one schedule for both updates; `held` is not computed
  const HostTensor hh = held.to_host(), ha = a.to_host(), hb = b.to_host();
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(hh.get(i), 11.0 * i) << i;
    EXPECT_EQ(ha.get(i), 12.0 * i) << i;
    EXPECT_EQ(hb.get(i), 12.0 * i) << i;
  }
}

// SGD with momentum (torch's nesterov form, as the hlb step runs it): the
// momentum's kernel reads the parameter's old value (through the gradient
// plus weight decay, also computed again in the parameter's kernel) and runs
// before the parameter's update. Both updates store into their own buffers.
TEST(InPlace, MomentumAndParameterUpdatesStoreIntoTheirBuffers) {
  Tensor p = iota({64}), m = iota({64});
  const Tensor grad = iota({64});
  const void *p_at = storage(p), *m_at = storage(m);
  std::vector<float> hp(64), hm(64), hg(64);
  for (size_t i = 0; i < 64; ++i) hp[i] = hm[i] = hg[i] = static_cast<float>(i);
  for (int step = 0; step < 3; ++step) {
    reset_run_stats();
    {
      Tensor g = grad.add(p.mul(5e-4));
      m.assign(m.mul(0.9).add(g));
      p.assign(p.sub(g.add(m.mul(0.9)).mul(0.01)));
    }
    std::vector<Tensor> state{p, m};
    realize_all(state);
    EXPECT_EQ(run_stats().kernels_run, 2) << "step " << step;
    EXPECT_EQ(run_stats().buffers_allocated, 0) << "step " << step;
    for (size_t i = 0; i < 64; ++i) {
      const float g = hg[i] + hp[i] * 5e-4f;
      hm[i] = hm[i] * 0.9f + g;
      hp[i] = hp[i] - (g + hm[i] * 0.9f) * 0.01f;
    }
  }
  EXPECT_EQ(storage(p), p_at);
  EXPECT_EQ(storage(m), m_at);
  const HostTensor got_p = p.to_host(), got_m = m.to_host();
  for (int64_t i = 0; i < 64; ++i) {
    EXPECT_FLOAT_EQ(got_p.get(i), hp[static_cast<size_t>(i)]) << i;
    EXPECT_FLOAT_EQ(got_m.get(i), hm[static_cast<size_t>(i)]) << i;
  }
}

// The same updates with the gradient plus weight decay still held, lazy: it
// reads the parameter's old value after the updates, so the parameter's
// update goes into a new buffer.
TEST(InPlace, AHeldValueOfTheOldParameterKeepsItsBuffer) {
  Tensor p = iota({8}), m = iota({8}), grad = iota({8});
  Tensor g = grad.add(p.mul(0.5));  // 3i / 2
  m.assign(m.mul(0.9).add(g));
  p.assign(p.sub(g.add(m.mul(0.9)).mul(0.1)));
  reset_run_stats();
  std::vector<Tensor> state{p, m};
  realize_all(state);
  EXPECT_EQ(run_stats().buffers_allocated, 1);
  const HostTensor hg = g.to_host(), hp = p.to_host();
  for (int64_t i = 0; i < 8; ++i) {
    const auto x = static_cast<float>(i), gi = x + x * 0.5f, mi = x * 0.9f + gi;
    EXPECT_FLOAT_EQ(hg.get(i), gi) << i;
    EXPECT_FLOAT_EQ(hp.get(i), x - (gi + mi * 0.9f) * 0.1f) << i;
  }
}

// A repeated update reuses the donation decided for its structure only under
// the same reference counts: in the step where a lazy value of the old
// parameter is held, the update goes to a new buffer (the old one keeps the
// value to read). The next step stores in place again, checked once more
// (the parameter is now a new buffer's view, with other counts than before),
// and the one after reuses that decision.
TEST(InPlace, AnUpdateUnderOtherHoldersIsCheckedAgain) {
  Tensor p = iota({8});
  for (int step = 0; step < 6; ++step) {
    Tensor old_half;
    if (step == 3) old_half = p.mul(0.5);
    p.assign(p.mul(0.5).add(1.0));
    reset_run_stats();
    p.realize();
    if (step >= 2) {
      EXPECT_EQ(run_stats().donation_checks, step == 3 || step == 4 ? 1 : 0) << "step " << step;
      EXPECT_EQ(run_stats().buffers_allocated, step == 3 ? 1 : 0) << "step " << step;
    }
    if (step == 3) {
      EXPECT_EQ(p.to_host().get(4), 2.125);        // 4 -> 3 -> 2.5 -> 2.25 -> 2.125
      EXPECT_EQ(old_half.to_host().get(4), 1.125);  // half of 2.25, the value before the update
    }
  }
}

// Which intermediates of a repeated update are transient is reused only
// under the reference counts it was decided under: the step that holds the
// shift (the sum's kernel computes it) is decided again, keeps its buffer and
// remembers it, so reading the shift afterwards computes nothing (it copies
// the remembered value out).
TEST(InPlace, AHeldIntermediateOfARepeatedUpdateKeepsItsBuffer) {
  Tensor p = iota({8});
  for (int step = 0; step < 6; ++step) {
    Tensor shift = p.sum().div(16);
    p.assign(p.sub(shift));
    if (step != 3) shift = Tensor();
    p.realize();
    if (step == 3) {
      reset_run_stats();
      EXPECT_EQ(shift.item(), 0.21875);  // the sum halves each step: 28 / 16 / 2^3
      EXPECT_EQ(run_stats().work, 0);
    }
  }
  EXPECT_EQ(p.to_host().get(0), -3.4453125);  // 0 - 1.75 * (1 + 1/2 + ... + 1/32)
}

// A loss shown through detach() and realized with the gradients: the loss
// itself then reads that buffer too, so neither holds the forward's graph,
// and the parameter's update stores into its buffer (the loss keeps its value).
TEST(InPlace, ARealizedDetachedLossLeavesTheParameterUpdatedInPlace) {
  Tensor w = iota({8});
  w.requires_grad_();
  const Tensor x = iota({8});
  Tensor loss = w.mul(x).sum().mul(0.5);  // not a view (a sum over all dims is one, of its kept-dims result)
  std::vector<Tensor> done = autograd::grad({loss}, {w});
  const Tensor shown = loss.detach();
  done.push_back(shown);
  realize_all(done);
  const void *at = storage(w);
  reset_run_stats();
  {
    autograd::NoGradGuard no_grad;
    w.assign(w.sub(done[0].mul(0.5)));
  }
  w.realize();
  EXPECT_EQ(run_stats().buffers_allocated, 0);
  EXPECT_EQ(storage(w), at);
  EXPECT_EQ(w.to_host().get(3), 2.25);  // 3 - 1.5 / 2
  EXPECT_EQ(loss.item(), 70.0);         // half the sum of i^2 over 0..7, from before the update
  EXPECT_EQ(shown.item(), 70.0);
}

// A whole copy into an unrealized tensor takes the source's buffer node as
// its value; writes into each of the two afterwards are two updates of that
// one value, and only one may store into its buffer.
TEST(InPlace, TwoTensorsHoldingOneBufferTakeTheirOwnWrites) {
  Tensor b = iota({4});
  Tensor a = Tensor::zeros({4}).add(1.0);  // lazy: its value is a graph, not a buffer
  a.assign(b);
  b.assign(Tensor::full({4}, 7.0));
  a.assign(Tensor::full({4}, 5.0));
  std::vector<Tensor> both{a, b};
  realize_all(both);
  EXPECT_EQ(a.to_host().get(3), 5.0);
  EXPECT_EQ(b.to_host().get(3), 7.0);
}

// A copy from a view of the written tensor's own storage is refused where
// torch's copy_ refuses it: both dense, and their memory partly overlaps
// (intersecting ranges, or the same range with other strides). Cases and
// verdicts as torch 1.13 gives them.
TEST(InPlace, ACopyFromPartlyOverlappingMemoryRaisesAsInTorch) {
  auto copy = [](Tensor dst, const Tensor &src) { dst.assign(src); };
  Tensor b = iota({2, 2});
  EXPECT_THROW(copy(b, b.slice(0, 1, 2)), Error);  // a row of itself, broadcast over it
  Tensor c = iota({2, 2});
  EXPECT_NO_THROW(copy(c, c));  // the same memory and strides
  Tensor d = iota({2, 2});
  EXPECT_NO_THROW(copy(d.slice(0, 0, 1), d.slice(0, 1, 2)));  // disjoint rows
  Tensor e = iota({2, 3});
  EXPECT_NO_THROW(copy(e.slice(1, 0, 1), e.slice(1, 1, 2)));  // strided columns: torch does not check
  Tensor f = iota({4});
  EXPECT_THROW(copy(f.slice(0, 0, 3), f.slice(0, 1, 4)), Error);  // shifted by one
  Tensor g = iota({2, 2});
  EXPECT_THROW(copy(g, g.permute({1, 0})), Error);  // the same range, transposed
  EXPECT_EQ(d.to_host().get(0), 2.0);
}

// A state updated in place every step through a view (a parameter that is a
// detached handle of another tensor, as `p.data = t` makes it) holds one step
// of graph: the pending update is computed with the next realize, and the
// view then reads its buffer instead of the graph that computed it (which
// would hold every earlier step's graph and buffers).
TEST(InPlace, UpdatesThroughAViewKeepLiveBuffersFlat) {
  Tensor base = iota({64});
  Tensor p = base.detach();
  std::vector<int64_t> live;
  for (int step = 0; step < 12; ++step) {
    Tensor g = Tensor::full({64}, 0.5).contiguous().realize();  // a fresh buffer each step, like a gradient
    p.assign(p.sub(g.mul(0.1)));
    Tensor::full({1}, 1.0).add(1.0).realize();  // any realize computes the pending update
    live.push_back(memory_stats().live_buffers);
  }
  for (size_t i = 3; i < live.size(); ++i) EXPECT_EQ(live[i], live[2]) << "step " << i;
  EXPECT_NEAR(p.to_host().get(5), 5.0 - 12 * 0.05, 1e-4);
  EXPECT_NEAR(base.to_host().get(5), 5.0 - 12 * 0.05, 1e-4);
}

}  // namespace
}  // namespace loom
