// loom::Jit: a training loop under the JIT is bitwise the eager loop, and
// each classic JIT pitfall is either right or a clear error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "loom/autograd.h"
#include "loom/backends.h"
#include "loom/jit.h"
#include "loom/nn.h"

namespace loom {
namespace {

std::vector<double> values(const Tensor &t) {
  const HostTensor h = t.to_host();
  std::vector<double> v;
  for (int64_t i = 0; i < h.numel(); i++) v.push_back(h.get(i));
  return v;
}

// Bitwise equal (NaNs included).
void expect_same_bits(const Tensor &a, const Tensor &b, const std::string &what) {
  const HostTensor ha = a.to_host(), hb = b.to_host();
  ASSERT_EQ(ha.shape, hb.shape) << what;
  ASSERT_EQ(ha.storage->size(), hb.storage->size()) << what;
  EXPECT_EQ(std::memcmp(ha.storage->data(), hb.storage->data(), ha.storage->size()), 0) << what;
}

// A small conv net with BatchNorm, trained with label-smoothed cross-entropy,
// Nesterov SGD with momentum and weight decay (written with assign), a
// learning rate that changes every step, a step counter, and an EMA copy of
// the weights updated every few steps.
struct Model {
  std::vector<Tensor> params, momentum, running, ema;
  Tensor step = Tensor::zeros({}, DType::Int64);

  explicit Model(uint64_t seed) {
    Tensor::manual_seed(seed);
    auto add = [&](Tensor p) {
      params.push_back(p.realize().requires_grad_());
      momentum.push_back(Tensor::zeros(p.shape()).realize());
      ema.push_back(p.detach().contiguous().mul(1.0).realize());
    };
    add(Tensor::randn({8, 3, 3, 3}).mul(0.3));
    add(Tensor::ones({8}));
    add(Tensor::zeros({8}));
    add(Tensor::randn({16, 8, 3, 3}).mul(0.1));
    add(Tensor::ones({16}));
    add(Tensor::zeros({16}));
    add(Tensor::randn({10, 16}).mul(0.2));
    add(Tensor::zeros({10}));
    for (int64_t c : {8, 16}) {
      running.push_back(Tensor::zeros({c}).realize());
      running.push_back(Tensor::ones({c}).realize());
    }
    step.realize();
  }

  Tensor forward(const Tensor &x) {
    Tensor h = nn::conv2d(x, params[0], std::nullopt, 1, 1);
    h = nn::batch_norm(h, running[0], running[1], params[1], params[2], true).relu();
    h = nn::max_pool2d(h, 2);
    h = nn::dropout(h, 0.1);
    h = nn::conv2d(h, params[3], std::nullopt, 1, 1);
    h = nn::batch_norm(h, running[2], running[3], params[4], params[5], true).relu();
    h = h.mean({2, 3});
    return nn::linear(h, params[6], params[7]);
  }

  // One step; args: (x, y), scalars: (lr). Returns the loss, detached.
  std::vector<Tensor> train_step(const JitArgs &a) {
    Tensor loss = nn::cross_entropy(forward(a.tensors[0]), a.tensors[1], std::nullopt, "mean", 0.2);
    std::vector<Tensor> grads = autograd::grad({loss}, params);
    autograd::NoGradGuard no_grad;
    const Tensor &lr = a.scalars[0];
    for (size_t i = 0; i < params.size(); i++) {
      Tensor g = grads[i].add(params[i].mul(5e-4));
      momentum[i].assign(momentum[i].mul(0.9).add(g));
      params[i].assign(params[i].sub(g.add(momentum[i].mul(0.9)).mul(lr)));
    }
    step.assign(step.add(1));
    return {loss.detach()};
  }

  // args: none; scalars: (decay).
  std::vector<Tensor> ema_update(const JitArgs &a) {
    autograd::NoGradGuard no_grad;
    const Tensor &d = a.scalars[0];
    for (size_t i = 0; i < params.size(); i++) ema[i].assign(ema[i].mul(d).add(params[i].detach().mul(d.neg().add(1))));
    return {};
  }
};

struct Batches {
  std::vector<Tensor> x, y;
  Batches() {
    Tensor::manual_seed(99);
    for (int i = 0; i < 3; i++) {
      x.push_back(Tensor::randn({4, 3, 8, 8}).realize());
      y.push_back(Tensor::randint(0, 10, {4}).realize());
    }
  }
};

double one_cycle(int step, int total) {
  const double peak = 0.05, t = static_cast<double>(step) / total;
  return t < 0.3 ? peak * t / 0.3 : peak * (1 - t) / 0.7 + 1e-4;
}

struct TrainRun {
  std::vector<Tensor> losses;
  Model model{5};
};

// 30 steps, the EMA every 5; `jit` runs both functions under loom::Jit.
void train(TrainRun &run, bool jit) {
  Batches data;
  Tensor::manual_seed(1234);
  Model &m = run.model;
  Jit step_jit([&m](const JitArgs &a) { return m.train_step(a); }, "train_step");
  Jit ema_jit([&m](const JitArgs &a) { return m.ema_update(a); }, "ema_update");
  for (int s = 0; s < 30; s++) {
    std::vector<Tensor> in = {data.x[s % 3], data.y[s % 3]};
    const std::vector<double> lr = {one_cycle(s, 30)};
    if (jit) {
      run.losses.push_back(step_jit(in, lr)[0]);
    } else {
      std::vector<Tensor> out = m.train_step(JitArgs{in, {Tensor::from_vector(lr, {}, DType::Float64)}});
      realize_all(out);
      run.losses.push_back(out[0]);
    }
    if (s % 5 == 4) {
      const std::vector<double> decay = {0.9 - 0.01 * s / 5};
      if (jit) {
        ema_jit({}, decay);
      } else {
        std::vector<Tensor> none = m.ema_update(JitArgs{{}, {Tensor::from_vector(decay, {}, DType::Float64)}});
        realize_all(none);
      }
    }
  }
  if (jit) {
    EXPECT_TRUE(step_jit.info().captured);
    EXPECT_TRUE(ema_jit.info().captured);
  }
}

void expect_same_training(const TrainRun &eager, const TrainRun &jitted) {
  ASSERT_EQ(eager.losses.size(), jitted.losses.size());
  for (size_t i = 0; i < eager.losses.size(); i++)
    expect_same_bits(eager.losses[i], jitted.losses[i], "loss " + std::to_string(i));
  const Model &a = eager.model, &b = jitted.model;
  for (size_t i = 0; i < a.params.size(); i++) {
    expect_same_bits(a.params[i], b.params[i], "param " + std::to_string(i));
    expect_same_bits(a.momentum[i], b.momentum[i], "momentum " + std::to_string(i));
    expect_same_bits(a.ema[i], b.ema[i], "ema " + std::to_string(i));
  }
  for (size_t i = 0; i < a.running.size(); i++)
    expect_same_bits(a.running[i], b.running[i], "running " + std::to_string(i));
  EXPECT_EQ(values(b.step), std::vector<double>{30});
  // The losses move: the learning rate and the data reach the replays.
  EXPECT_NE(values(jitted.losses[10]), values(jitted.losses[13]));
}

TEST(Jit, TrainingLoopIsBitwiseTheEagerLoop) {
  TrainRun eager, jitted;
  train(eager, false);
  train(jitted, true);
  expect_same_training(eager, jitted);
}

// Where the device has launch graphs (a GPU's CUDA graphs; the CUDA
// emulator's, which run each graph's own copy of its nodes): the loop with
// its replays submitted as graphs is bitwise the eager loop. A replay after
// the first builds no graph, submits one per stretch of kernels between host
// steps (dropout's draws), and updates the nodes whose buffers changed (the
// batch, the outputs), not the others.
TEST(Jit, ReplaysAsLaunchGraphsAreBitwiseTheEagerLoop) {
  if (std::string(backends::device()) == "cpu") GTEST_SKIP() << "the CPU device has no launch graphs";
  const bool was = backends::set_launch_graphs(true);
  TrainRun eager, graphed;
  train(eager, false);
  train(graphed, true);
  expect_same_training(eager, graphed);

  Model m(5);
  Batches data;
  Jit jit([&m](const JitArgs &a) { return m.train_step(a); });
  for (int s = 0; s < 3; s++) jit({data.x[s], data.y[s]}, {0.01});  // record, capture, first replay
  reset_run_stats();
  jit({data.x[0], data.y[0]}, {0.02});
  const RunStats st = run_stats();
  backends::set_launch_graphs(was);
  EXPECT_EQ(st.graphs_built, 0);
  EXPECT_GE(st.graph_launches, 1);
  EXPECT_LT(st.graph_launches, jit.info().kernels / 4);
  EXPECT_GT(st.graph_node_updates, 0);
  EXPECT_LT(st.graph_node_updates, jit.info().kernels / 2);
  EXPECT_EQ(st.kernels_run, jit.info().kernels);
}

TEST(Jit, ReplayBuildsSchedulesAndCompilesNothing) {
  Model m(5);
  Batches data;
  Jit jit([&m](const JitArgs &a) { return m.train_step(a); });
  for (int s = 0; s < 2; s++) jit({data.x[s], data.y[s]}, {0.01});
  reset_run_stats();
  jit({data.x[2], data.y[2]}, {0.01});
  const RunStats st = run_stats();
  EXPECT_EQ(st.schedules, 0);
  EXPECT_EQ(st.kernels_compiled, 0);
  EXPECT_EQ(st.kernels_run, jit.info().kernels);
  EXPECT_GT(st.kernels_run, 10);
}

// A running statistic nobody returns or realizes still updates on replay.
TEST(Jit, SideEffectStateKeepsUpdating) {
  Tensor mean = Tensor::zeros({3}).realize(), var = Tensor::ones({3}).realize();
  Jit jit([&](const JitArgs &a) {
    nn::batch_norm(a.tensors[0], mean, var, std::nullopt, std::nullopt, true, 0.5);
    return std::vector<Tensor>{};
  });
  std::vector<double> at29;
  for (int s = 1; s <= 30; s++) {
    jit({Tensor::full({2, 3}, static_cast<double>(s))});
    if (s == 29) at29 = values(mean);
  }
  EXPECT_NE(values(mean), at29);
  // mean_30 = 0.5 * mean_29 + 0.5 * 30
  EXPECT_DOUBLE_EQ(values(mean)[0], 0.5 * at29[0] + 15);
}

// A tensor the function makes and updates itself, and a state that is still
// a constant (no buffer) when the capture begins.
TEST(Jit, TensorsWithoutABufferAtTheStartAreCaptured) {
  Tensor count = Tensor::zeros({}, DType::Int64);
  Tensor x = Tensor::from_vector({1, 2}, {2});
  bool first = true;
  Jit jit([&](const JitArgs &a) {
    if (!first) count.assign(count.add(1));  // not updated on call 1: still a constant on call 2
    first = false;
    Tensor acc = Tensor::zeros({2});
    acc.assign(acc.add(a.tensors[0]).mul(2));
    return std::vector<Tensor>{acc};
  });
  for (int i = 0; i < 6; i++) EXPECT_EQ(values(jit({x})[0]), (std::vector<double>{2, 4}));
  EXPECT_TRUE(jit.info().captured);
  EXPECT_EQ(values(count), std::vector<double>{5});
}

TEST(Jit, AnAssignToAnInputReachesTheCallersTensor) {
  Jit jit([](const JitArgs &a) {
    Tensor x = a.tensors[0];
    x.assign(x.mul(2).add(1));
    return std::vector<Tensor>{};
  });
  Tensor a = Tensor::zeros({4}).realize(), b = Tensor::full({4}, 10.0).realize();
  for (int i = 0; i < 4; i++) jit({a});  // 1, 3, 7, 15
  jit({b});                               // 21
  EXPECT_EQ(values(a), std::vector<double>(4, 15));
  EXPECT_EQ(values(b), std::vector<double>(4, 21));
  // A slice of a bigger tensor as the input: the write lands in its base.
  Tensor base = Tensor::zeros({2, 4}).realize();
  Jit row_jit([](const JitArgs &a) {
    Tensor x = a.tensors[0];
    x.assign(x.add(1));
    return std::vector<Tensor>{};
  });
  for (int i = 0; i < 3; i++) row_jit({base.slice(0, 1, 2)});
  EXPECT_EQ(values(base), (std::vector<double>{0, 0, 0, 0, 3, 3, 3, 3}));
}

TEST(Jit, ScalarsAreInputsAndBakedValuesAreGuarded) {
  Tensor w = Tensor::ones({3}).realize();
  Jit jit([&](const JitArgs &a) { return std::vector<Tensor>{w.mul(a.scalars[0])}; });
  for (double lr : {1.0, 2.0, 3.0, 4.0}) EXPECT_EQ(values(jit({}, {lr})[0]), std::vector<double>(3, lr));

  Jit baked([&](const JitArgs &) { return std::vector<Tensor>{w.mul(0.5)}; });
  for (int i = 0; i < 3; i++) baked({}, {}, {0.5});
  try {
    baked({}, {}, {0.25});
    FAIL() << "a changed baked value must raise";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("baked value 0 was 0.5 when captured and is 0.25"), std::string::npos)
        << e.what();
  }
}

// A number the function bakes into a kernel (a learning rate read from a
// variable) that changes between calls 1 and 2 raises at capture.
TEST(Jit, AConstantThatChangesBetweenCallsRaises) {
  Tensor w = Tensor::ones({3}).realize();
  double lr = 0.1;
  Jit jit([&](const JitArgs &) { return std::vector<Tensor>{w.mul(lr)}; });
  jit({});
  lr = 0.2;
  try {
    jit({});
    FAIL() << "a changing constant must raise";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("the number 0.1 in kernel"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("scalar"), std::string::npos) << e.what();
  }
}

TEST(Jit, OutputsAreFreshTensorsOnEveryCall) {
  Jit jit([](const JitArgs &a) { return std::vector<Tensor>{a.tensors[0].add(1)}; });
  std::vector<Tensor> outs;
  for (int i = 0; i < 5; i++) outs.push_back(jit({Tensor::full({3}, static_cast<double>(i)).realize()})[0]);
  for (int i = 0; i < 5; i++) EXPECT_EQ(values(outs[i]), std::vector<double>(3, i + 1));
}

// Batches sliced out of a dataset at other offsets than the capture's: an
// input the function does not update is passed as a row-major copy.
TEST(Jit, InputsThatAreSlicesOfADatasetReplay) {
  Tensor data = Tensor::arange(40, DType::Float32).reshape({10, 4}).contiguous().realize();
  Jit jit([](const JitArgs &a) { return std::vector<Tensor>{a.tensors[0].sum({0})}; });
  for (int i = 0; i < 5; i++) {
    const Tensor batch = data.slice(0, 2 * i, 2 * i + 2);
    EXPECT_EQ(values(jit({batch})[0]), values(batch.sum({0})));
  }
  EXPECT_TRUE(jit.info().captured);
  // An input view updated only from call 2 on got a copy: the capture raises.
  bool update = false;
  Jit late([&](const JitArgs &a) {
    if (update) Tensor(a.tensors[0]).assign(a.tensors[0].add(1));
    update = true;
    return std::vector<Tensor>{};
  });
  late({data.slice(0, 0, 2)});
  try {
    late({data.slice(0, 0, 2)});
    FAIL() << "an update of a copied input must raise";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("input 0 is a view into part of a buffer"), std::string::npos) << e.what();
  }
}

TEST(Jit, InputsUnlikeTheCapturesRaise) {
  Jit jit([](const JitArgs &a) { return std::vector<Tensor>{a.tensors[0].add(1)}; });
  Tensor x = Tensor::zeros({2, 3}).realize();
  jit({x});
  jit({x});
  auto raises = [&](const Tensor &t, const char *what) {
    try {
      jit({t});
      ADD_FAILURE() << what << " must raise";
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find("input 0 is"), std::string::npos) << what << ": " << e.what();
    }
  };
  raises(Tensor::zeros({3, 2}).realize(), "another shape");
  raises(Tensor::zeros({2, 3}, DType::Float64).realize(), "another dtype");
  // Other strides: a row-major copy where the function only reads the input...
  Tensor t = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {3, 2}).transpose(0, 1);
  EXPECT_EQ(values(jit({t})[0]), (std::vector<double>{2, 4, 6, 3, 5, 7}));
  // ...and an error where it updates it in place.
  Jit update([](const JitArgs &a) {
    Tensor(a.tensors[0]).assign(a.tensors[0].add(1));
    return std::vector<Tensor>{};
  });
  Tensor base = Tensor::zeros({2, 3}).realize();
  update({base});
  update({base});
  try {
    update({Tensor::randn({3, 2}).realize().transpose(0, 1)});
    ADD_FAILURE() << "other strides of an updated input must raise";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("input 0 is (2, 3) float32 strides (1, 2)"), std::string::npos) << e.what();
  }
  try {
    jit({x, x});
    ADD_FAILURE() << "another count must raise";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("called with 2 tensors"), std::string::npos) << e.what();
  }
  EXPECT_EQ(values(jit({x})[0]), std::vector<double>(6, 1));  // the capture still works
}

TEST(Jit, AReplayReadingAFreedBufferRaises) {
  auto w = std::make_shared<Tensor>(Tensor::from_vector({1, 1, 1}, {3}));
  Jit jit([&](const JitArgs &a) { return std::vector<Tensor>{a.tensors[0].mul(*w)}; });
  Tensor x = Tensor::full({3}, 2.0).realize();
  jit({x});
  jit({x});
  *w = Tensor::full({3}, 5.0).realize();  // the captured weights' buffer is freed
  try {
    jit({x});
    FAIL() << "reading a freed buffer must raise";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("no tensor holds any more"), std::string::npos) << e.what();
  }
  jit.reset();
  for (int i = 0; i < 3; i++) EXPECT_EQ(values(jit({x})[0]), std::vector<double>(3, 10));
}

// A state whose buffer changed outside the JIT (a copy-on-write update there)
// is read from its current buffer: a slice assign does not go to a stale one.
// Something that still reads the state's old value keeps it.
TEST(Jit, SliceAssignWritesTheStatesCurrentBuffer) {
  Tensor s = Tensor::zeros({4}).realize();
  Jit jit([&](const JitArgs &a) {
    s.slice(0, 0, 2).assign(s.slice(0, 0, 2).add(a.tensors[0]));
    return std::vector<Tensor>{};
  });
  Tensor one = Tensor::ones({2}).realize();
  for (int i = 0; i < 3; i++) jit({one});  // [3, 3, 0, 0]
  Tensor old = s.mul(1);                    // lazy: reads s's buffer
  s.assign(Tensor::full({4}, 10.0));        // s moves to a new buffer (old still reads the first)
  s.realize();
  jit({one});  // [11, 11, 10, 10]
  EXPECT_EQ(values(s), (std::vector<double>{11, 11, 10, 10}));
  EXPECT_EQ(values(old), (std::vector<double>{3, 3, 0, 0}));
  Tensor held = s.mul(1);  // lazy: reads s's current buffer, which the replay would write in place
  jit({one});
  EXPECT_EQ(values(s), (std::vector<double>{12, 12, 10, 10}));
  EXPECT_EQ(values(held), (std::vector<double>{11, 11, 10, 10}));
}

TEST(Jit, RandomNumbersAdvanceOnReplay) {
  auto draws = [](bool jit) {
    Tensor::manual_seed(7);
    Jit j([](const JitArgs &) { return std::vector<Tensor>{Tensor::rand({5}), Tensor::randn({2, 2})}; });
    std::vector<std::vector<double>> out;
    for (int i = 0; i < 5; i++) {
      std::vector<Tensor> r;
      if (jit) {
        r = j({});
      } else {
        r = {Tensor::rand({5}), Tensor::randn({2, 2})};
      }
      out.push_back(values(r[0]));
      out.push_back(values(r[1]));
    }
    return out;
  };
  const auto eager = draws(false), jitted = draws(true);
  EXPECT_EQ(eager, jitted);
  EXPECT_NE(jitted[4], jitted[6]);  // calls 3 and 4 (replays) differ
}

TEST(Jit, ValueChecksRunOnReplay) {
  Jit jit([](const JitArgs &a) {
    return std::vector<Tensor>{nn::cross_entropy(a.tensors[0], a.tensors[1])};
  });
  Tensor logits = Tensor::zeros({2, 3}).realize();
  for (int i = 0; i < 3; i++) jit({logits, Tensor::from_vector({0, 2}, {2}, DType::Int64).realize()});
  EXPECT_THROW(jit({logits, Tensor::from_vector({0, 3}, {2}, DType::Int64).realize()}), IndexError);
}

TEST(Jit, AHostReadThatChangesRaisesOnReplay) {
  Jit jit([](const JitArgs &a) {
    const Tensor &x = a.tensors[0];
    return std::vector<Tensor>{x.sum().item() > 0 ? x.add(1) : x.sub(1)};
  });
  Tensor pos = Tensor::ones({3}).realize();
  for (int i = 0; i < 3; i++) jit({pos});
  try {
    jit({Tensor::full({3}, -1.0).realize()});
    FAIL() << "a changed host read must raise";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("read tensor values on the host"), std::string::npos) << e.what();
  }
}

// A scalar input read on the host is a host read like any other: a replay
// whose scalar differs raises rather than reusing the captured value.
TEST(Jit, AHostReadOfAScalarInputThatChangesRaisesOnReplay) {
  Jit jit([](const JitArgs &a) {
    const Tensor &x = a.tensors[0];
    return std::vector<Tensor>{a.scalars[0].item() > 0 ? x.add(1) : x.sub(1)};
  });
  Tensor x = Tensor::ones({3}).realize();
  for (int i = 0; i < 3; i++) EXPECT_EQ(values(jit({x}, {0.5})[0]), (std::vector<double>{2, 2, 2}));
  try {
    jit({x}, {-0.5});
    FAIL() << "a changed host read of a scalar input must raise";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("read tensor values on the host"), std::string::npos) << e.what();
  }
}

TEST(Jit, AnOutputThatRequiresGradRaises) {
  Tensor w = Tensor::ones({2}).requires_grad_();
  Jit jit([&](const JitArgs &) { return std::vector<Tensor>{w.mul(2)}; });
  EXPECT_THROW(jit({}), Error);
}

TEST(Jit, AValueKeptOutsideTheOutputsRaisesAtCapture) {
  Tensor leaked;
  Jit jit([&](const JitArgs &a) {
    leaked = a.tensors[0].mul(2).realize();
    return std::vector<Tensor>{};
  });
  Tensor x = Tensor::ones({2}).realize();
  jit({x});
  EXPECT_THROW(jit({x}), Error);
}

TEST(Jit, TurnedOffEveryCallRunsEagerly) {
  const bool was = set_jit_enabled(false);  // what LOOM_JIT=0 sets at start
  Jit jit([](const JitArgs &a) { return std::vector<Tensor>{a.tensors[0].add(1)}; });
  Tensor x = Tensor::zeros({3}).realize();
  for (int i = 0; i < 4; i++) jit({x});
  set_jit_enabled(was);
  EXPECT_FALSE(jit.info().captured);
  EXPECT_EQ(jit.info().calls, 4);
}

// Intermediates whose lifetimes do not overlap share memory.
TEST(Jit, IntermediatesShareMemory) {
  Jit jit([](const JitArgs &a) {
    Tensor h = a.tensors[0];
    for (int i = 0; i < 8; i++) h = h.matmul(a.tensors[1]).relu().contiguous();
    return std::vector<Tensor>{h.sum()};
  });
  Tensor x = Tensor::ones({64, 64}).realize(), w = Tensor::full({64, 64}, 0.01).realize();
  std::vector<double> first;
  for (int i = 0; i < 4; i++) {
    auto v = values(jit({x, w})[0]);
    if (i == 0) first = v;
    EXPECT_EQ(v, first);
  }
  const Jit::Info info = jit.info();
  EXPECT_GE(info.intermediate_bytes, 7 * 64 * 64 * 4);
  EXPECT_LE(info.planned_bytes, 3 * 64 * 64 * 4);
}

}  // namespace
}  // namespace loom
