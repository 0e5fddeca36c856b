// loom/distributed.h: the default process group, and collectives from a
// tensor's realized value into a buffer of the result's own.
#include "engine/capture.h"
#include "engine/realize.h"
#include "loom/distributed.h"
#include "runtime/comm/comm.h"
#include "tensor/ops_util.h"

namespace loom::distributed {

namespace comm = runtime::comm;

namespace {

struct Group {
  std::string backend;
  comm::Communicator *c = nullptr;
  std::unique_ptr<comm::Communicator> owned;  // NCCL's; MPI's world lives until exit
};

Group &group() {
  static Group g;
  return g;
}

comm::Communicator &joined(const std::string &what) {
  if (!group().c)
    throw Error(what + ": Default process group has not been initialized, please make sure to call "
                       "init_process_group.");
  return *group().c;
}

// The launcher's word against the library's.
void check_world(const comm::Communicator &c, int world_size, int rank) {
  auto mismatch = [&](const std::string &said, int found) {
    throw Error("init_process_group: the launcher says " + said + " but " + c.name() + " finds " +
                std::to_string(found) + ": loom joins processes through Open MPI, so start them with mpirun -n " +
                std::to_string(world_size > 0 ? world_size : 2) + " or python3 -m loom.run --nproc N");
  };
  if (world_size >= 0 && world_size != c.size())
    mismatch("WORLD_SIZE=" + std::to_string(world_size), c.size());
  if (rank >= 0 && rank != c.rank()) mismatch("RANK=" + std::to_string(rank), c.rank());
}

// `t`'s value, realized row-major in a buffer, and where that buffer is:
// t's own buffer when realizing t leaves it whole there (no copy), else a
// row-major copy.
std::pair<Tensor, const void *> input_of(const Tensor &t, const std::string &what) {
  if (engine::capturing())
    throw Error(what + ": a collective cannot be captured by a JIT (loom.jit, torch.compile): call it outside");
  Tensor r = t;  // the same tensor: realizing it realizes t
  if (!uop::whole_buffer(r.uop().get())) r.realize();
  if (!uop::whole_buffer(r.uop().get())) {
    r = Tensor(tensor::row_major(t.uop()));
    r.realize();
  }
  if (t.numel() == 0) return {r, nullptr};
  auto &buf = uop::base_of(r.uop())->arg_as<uop::BufferArg>().buffer;
  return {r, engine::buffer_data(*buf)};
}

// A new buffer viewed as `shape`, and where it is.
std::pair<Tensor, void *> output_of(DType dtype, const Shape &shape) {
  auto buf = uop::Buffer::create(dtype, shape_numel(shape));
  void *data = shape_numel(shape) ? engine::buffer_data(*buf) : nullptr;
  return {Tensor(uop::buffer_view(buf, shape)), data};
}

comm::Reduce reduce_of(ReduceOp op, DType dtype, const std::string &what) {
  switch (op) {
    case ReduceOp::Avg:
      if (!is_float(dtype))
        throw Error(what + ": ReduceOp.AVG needs a floating tensor, got " + std::string(dtype_name(dtype)));
      return comm::Reduce::Sum;
    case ReduceOp::Sum: return comm::Reduce::Sum;
    case ReduceOp::Product: return comm::Reduce::Product;
    case ReduceOp::Min: return comm::Reduce::Min;
    case ReduceOp::Max: return comm::Reduce::Max;
  }
  throw Error(what + ": unknown ReduceOp");
}

// The result as the op gives it: Avg's sum divided by the world size.
Tensor averaged(const Tensor &out, ReduceOp op, const comm::Communicator &c) {
  return op == ReduceOp::Avg ? out.div(Tensor::full({}, c.size(), out.dtype())) : out;
}

void count(const Tensor &t) {
  RunStats &s = engine::stats();
  s.collectives++;
  s.collective_bytes += t.numel() * static_cast<int64_t>(itemsize(t.dtype()));
}

}  // namespace

struct Work::State {
  std::unique_ptr<comm::Pending> pending;  // null once finished
  Tensor input;                            // what the collective reads, kept alive until then
  Tensor result;
};

namespace {
Work started(std::unique_ptr<comm::Pending> pending, Tensor input, Tensor result) {
  auto s = std::make_shared<Work::State>();
  s->pending = std::move(pending);
  s->input = std::move(input);
  s->result = std::move(result);
  return Work(std::move(s));
}
}  // namespace

bool Work::completed() {
  if (state_->pending && state_->pending->test()) {
    state_->pending.reset();
    state_->input = Tensor();
  }
  return !state_->pending;
}

Tensor Work::wait() {
  if (state_->pending) {
    state_->pending->wait();
    state_->pending.reset();
    state_->input = Tensor();
  }
  return state_->result;
}

std::string missing(const std::string &backend) {
  if (backend == "mpi") return comm::mpi_missing();
  if (backend == "nccl") return comm::nccl_missing();
  return "unknown backend '" + backend + "' (loom has mpi and nccl)";
}

void init(const std::string &backend, int world_size, int rank) {
  Group &g = group();
  if (g.c) throw Error("init_process_group: trying to initialize the default process group twice!");
  const std::string device = engine::device_name();
  const std::string wanted = backend == "nccl" ? "CUDA" : "CPU";
  if (backend != "mpi" && backend != "nccl")
    throw ValueError("init_process_group: unknown backend '" + backend + "' (loom has mpi and nccl)");
  if (device != wanted)
    throw Error("init_process_group: backend " + backend + " reduces " + wanted +
                " tensors, but this process computes on " + device + " (" +
                (backend == "nccl" ? "LOOM_DEVICE=CUDA" : "use backend nccl") + ")");
  if (backend == "mpi") {
    g.c = &comm::mpi();
  } else {
    g.owned = comm::nccl(world_size > 1 ? &comm::mpi() : nullptr);
    g.c = g.owned.get();
  }
  try {
    check_world(*g.c, world_size, rank);
  } catch (...) {
    destroy();
    throw;
  }
  g.backend = backend;
}

bool initialized() { return group().c != nullptr; }
const std::string &backend() {
  joined("get_backend");
  return group().backend;
}
int rank() { return joined("get_rank").rank(); }
int world_size() { return joined("get_world_size").size(); }

void destroy() {
  Group &g = group();
  g.c = nullptr;
  g.owned.reset();
  g.backend.clear();
}

Work all_reduce(const Tensor &t, ReduceOp op, bool async) {
  comm::Communicator &c = joined("all_reduce");
  const comm::Reduce r = reduce_of(op, t.dtype(), "all_reduce");
  auto [in, src] = input_of(t, "all_reduce");
  auto [out, dst] = output_of(t.dtype(), t.shape());
  count(t);
  auto pending = c.all_reduce(src, dst, static_cast<size_t>(t.numel()), t.dtype(), r, async);
  return started(std::move(pending), in, averaged(out, op, c));
}

Work broadcast(const Tensor &t, int root, bool async) {
  comm::Communicator &c = joined("broadcast");
  if (root < 0 || root >= c.size())
    throw ValueError("broadcast: src " + std::to_string(root) + " is not a rank of a world of " +
                     std::to_string(c.size()));
  auto [in, src] = input_of(t, "broadcast");
  count(t);
  // The root sends its own value (and returns it as a tensor of its own, not
  // t, which later in-place updates would change); the others receive into a
  // new buffer.
  if (c.rank() == root)
    return started(c.broadcast(const_cast<void *>(src), static_cast<size_t>(t.numel()), t.dtype(), root, async), in,
                   Tensor(in.uop()));
  auto [out, dst] = output_of(t.dtype(), t.shape());
  return started(c.broadcast(dst, static_cast<size_t>(t.numel()), t.dtype(), root, async), in, out);
}

Work all_gather(const Tensor &t, bool async) {
  comm::Communicator &c = joined("all_gather");
  auto [in, src] = input_of(t, "all_gather");
  Shape shape = t.shape();
  shape.insert(shape.begin(), c.size());
  auto [out, dst] = output_of(t.dtype(), shape);
  count(t);
  return started(c.all_gather(src, dst, static_cast<size_t>(t.numel()), t.dtype(), async), in, out);
}

Work reduce_scatter(const Tensor &t, ReduceOp op, bool async) {
  comm::Communicator &c = joined("reduce_scatter");
  const comm::Reduce r = reduce_of(op, t.dtype(), "reduce_scatter");
  if (t.ndim() == 0 || t.size(0) % c.size() != 0)
    throw ValueError("reduce_scatter: the input's first dim must be a multiple of the world size " +
                     std::to_string(c.size()) + ", got shape " + shape_str(t.shape()));
  auto [in, src] = input_of(t, "reduce_scatter");
  Shape shape = t.shape();
  shape[0] /= c.size();
  auto [out, dst] = output_of(t.dtype(), shape);
  count(t);
  auto pending = c.reduce_scatter(src, dst, static_cast<size_t>(shape_numel(shape)), t.dtype(), r, async);
  return started(std::move(pending), in, averaged(out, op, c));
}

void barrier() { joined("barrier").barrier(); }

}  // namespace loom::distributed
