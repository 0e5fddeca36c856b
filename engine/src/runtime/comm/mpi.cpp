// Open MPI, loaded with dlopen. Only the entry points used here are
// declared. Open MPI's handles (MPI_Comm, MPI_Datatype, MPI_Op, ...) are
// pointers, and its predefined ones (MPI_COMM_WORLD, MPI_FLOAT, MPI_SUM)
// are the addresses of the library's global objects, found by name; this
// is Open MPI's ABI (libmpi.so.40, Open MPI 3 to 5), not every MPI's.
#include <dlfcn.h>

#include <climits>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "loom/error.h"
#include "loom/host.h"
#include "runtime/comm/comm.h"
#include "runtime/library.h"

namespace loom::runtime::comm {

namespace {

using Handle = void *;  // MPI_Comm, MPI_Datatype, MPI_Op, MPI_Errhandler, MPI_Request
using UserFn = void (*)(void *in, void *inout, int *len, Handle *dtype);
constexpr int kThreadSerialized = 2;  // MPI_THREAD_SERIALIZED
constexpr int kMaxErrorString = 256;  // MPI_MAX_ERROR_STRING
constexpr const char *kLibrary = "libmpi.so.40";

struct Api {
  int (*Initialized)(int *);
  int (*Finalized)(int *);
  int (*Init_thread)(int *, char ***, int required, int *provided);
  int (*Finalize)();
  int (*Comm_rank)(Handle, int *);
  int (*Comm_size)(Handle, int *);
  int (*Comm_set_errhandler)(Handle, Handle);
  int (*Error_string)(int, char *, int *);
  int (*Op_create)(UserFn, int commute, Handle *);
  int (*Allreduce)(const void *, void *, int, Handle, Handle, Handle);
  int (*Iallreduce)(const void *, void *, int, Handle, Handle, Handle, Handle *);
  int (*Bcast)(void *, int, Handle, int, Handle);
  int (*Ibcast)(void *, int, Handle, int, Handle, Handle *);
  int (*Allgather)(const void *, int, Handle, void *, int, Handle, Handle);
  int (*Iallgather)(const void *, int, Handle, void *, int, Handle, Handle, Handle *);
  int (*Reduce_scatter_block)(const void *, void *, int, Handle, Handle, Handle);
  int (*Ireduce_scatter_block)(const void *, void *, int, Handle, Handle, Handle, Handle *);
  int (*Barrier)(Handle);
  int (*Wait)(Handle *, void *status);
  int (*Test)(Handle *, int *flag, void *status);
  // Predefined handles: the addresses of Open MPI's objects.
  Handle world, errors_return;
  Handle c_bool, uint8, int8, int16, int32, int64, uint16, float32, float64;
  Handle sum, prod, min, max, lor, land;
};

struct Loaded {
  Api api{};
  std::string missing;  // "" when usable
};

Loaded load() {
  Loaded s;
  // RTLD_GLOBAL: Open MPI's own plugins resolve libmpi's symbols.
  void *lib = dlopen(kLibrary, RTLD_NOW | RTLD_GLOBAL);
  if (!lib) {
    const char *e = dlerror();
    s.missing = std::string("mpi: ") + kLibrary +
                " not found (Open MPI is not installed: Debian's openmpi-bin and libopenmpi-dev): " +
                (e ? e : "unknown error");
    return s;
  }
  Api &a = s.api;
  Symbols need(lib, std::string("mpi: ") + kLibrary, " (not Open MPI 3 or later)");
  need(a.Initialized, "MPI_Initialized");
  need(a.Finalized, "MPI_Finalized");
  need(a.Init_thread, "MPI_Init_thread");
  need(a.Finalize, "MPI_Finalize");
  need(a.Comm_rank, "MPI_Comm_rank");
  need(a.Comm_size, "MPI_Comm_size");
  need(a.Comm_set_errhandler, "MPI_Comm_set_errhandler");
  need(a.Error_string, "MPI_Error_string");
  need(a.Op_create, "MPI_Op_create");
  need(a.Allreduce, "MPI_Allreduce");
  need(a.Iallreduce, "MPI_Iallreduce");
  need(a.Bcast, "MPI_Bcast");
  need(a.Ibcast, "MPI_Ibcast");
  need(a.Allgather, "MPI_Allgather");
  need(a.Iallgather, "MPI_Iallgather");
  need(a.Reduce_scatter_block, "MPI_Reduce_scatter_block");
  need(a.Ireduce_scatter_block, "MPI_Ireduce_scatter_block");
  need(a.Barrier, "MPI_Barrier");
  need(a.Wait, "MPI_Wait");
  need(a.Test, "MPI_Test");
  const std::pair<Handle *, const char *> objects[] = {
      {&a.world, "ompi_mpi_comm_world"}, {&a.errors_return, "ompi_mpi_errors_return"},
      {&a.c_bool, "ompi_mpi_c_bool"},    {&a.uint8, "ompi_mpi_uint8_t"},
      {&a.int8, "ompi_mpi_int8_t"},      {&a.int16, "ompi_mpi_int16_t"},
      {&a.int32, "ompi_mpi_int32_t"},    {&a.int64, "ompi_mpi_int64_t"},
      {&a.uint16, "ompi_mpi_uint16_t"},  {&a.float32, "ompi_mpi_float"},
      {&a.float64, "ompi_mpi_double"},   {&a.sum, "ompi_mpi_op_sum"},
      {&a.prod, "ompi_mpi_op_prod"},     {&a.min, "ompi_mpi_op_min"},
      {&a.max, "ompi_mpi_op_max"},       {&a.lor, "ompi_mpi_op_lor"},
      {&a.land, "ompi_mpi_op_land"}};
  for (auto [handle, symbol] : objects) need(*handle, symbol);
  s.missing = need.missing;
  return s;
}

const Loaded &loaded() {
  static const Loaded s = load();
  return s;
}

// float16 / bfloat16 reductions, which MPI does not define: user ops over
// 16-bit words, each element computed in float and rounded back (as torch
// computes a half op).
template <float (*To)(uint16_t), uint16_t (*From)(float), Reduce R>
void half_op(void *in, void *inout, int *len, Handle *) {
  const auto *a = static_cast<const uint16_t *>(in);
  auto *b = static_cast<uint16_t *>(inout);
  for (int i = 0; i < *len; i++) {
    const float x = To(a[i]), y = To(b[i]);
    float r = R == Reduce::Sum ? x + y : R == Reduce::Product ? x * y : R == Reduce::Min ? (x < y ? x : y)
                                                                                         : (x > y ? x : y);
    if (x != x || y != y) r = x + y;  // NaN propagates, as torch's min/max
    b[i] = From(r);
  }
}

template <float (*To)(uint16_t), uint16_t (*From)(float)>
std::vector<UserFn> half_ops() {
  return {half_op<To, From, Reduce::Sum>, half_op<To, From, Reduce::Product>, half_op<To, From, Reduce::Min>,
          half_op<To, From, Reduce::Max>};
}

// Raises "mpi: <what> failed: <MPI's text>" unless rc is MPI_SUCCESS.
void check(const Api &a, int rc, const char *what) {
  if (rc == 0) return;
  char text[kMaxErrorString] = {};
  int n = 0;
  std::string why = a.Error_string(rc, text, &n) == 0 ? std::string(text, static_cast<size_t>(n))
                                                        : "error " + std::to_string(rc);
  throw Error(std::string("mpi: ") + what + " failed: " + why);
}

class MpiPending final : public Pending {
 public:
  MpiPending(const Api &a, std::vector<Handle> requests) : a_(a), requests_(std::move(requests)) {}
  bool test() override;
  void wait() override;

 private:
  const Api &a_;
  std::vector<Handle> requests_;  // MPI_REQUEST_NULL (nullptr in Open MPI) once done
};

class Mpi final : public Communicator {
 public:
  Mpi();
  const char *name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::unique_ptr<Pending> all_reduce(const void *in, void *out, size_t count, DType dtype, Reduce op,
                                      bool async) override;
  std::unique_ptr<Pending> broadcast(void *buf, size_t count, DType dtype, int root, bool async) override;
  std::unique_ptr<Pending> all_gather(const void *in, void *out, size_t count, DType dtype, bool async) override;
  std::unique_ptr<Pending> reduce_scatter(const void *in, void *out, size_t count, DType dtype, Reduce op,
                                          bool async) override;
  void barrier() override { check(a_.Barrier(a_.world), "MPI_Barrier"); }
  void check(int rc, const char *what) const { comm::check(a_, rc, what); }

 private:
  Handle type_of(DType dtype) const;
  Handle op_of(DType dtype, Reduce op) const;
  const Api &a_;
  int rank_ = 0, size_ = 1;
  std::vector<Handle> half_ops_, bf16_ops_;  // by Reduce
};

bool MpiPending::test() {
  for (Handle &r : requests_) {
    if (!r) continue;
    int done = 0;
    check(a_, a_.Test(&r, &done, nullptr), "MPI_Test");
    if (!done) return false;
  }
  return true;
}

void MpiPending::wait() {
  for (Handle &r : requests_)
    if (r) check(a_, a_.Wait(&r, nullptr), "MPI_Wait");
}

Mpi::Mpi() : a_(loaded().api) {
  int inited = 0, finalized = 0;
  check(a_.Finalized(&finalized), "MPI_Finalized");
  if (finalized) throw Error("mpi: MPI was finalized already in this process and cannot start again");
  check(a_.Initialized(&inited), "MPI_Initialized");
  if (!inited) {
    int provided = 0;
    int rc = a_.Init_thread(nullptr, nullptr, kThreadSerialized, &provided);
    if (rc != 0) throw Error("mpi: MPI_Init_thread failed (error " + std::to_string(rc) + ")");
    // MPI must finalize before the process ends (mpirun reports a rank that
    // exits without it as failed).
    std::atexit([] {
      const Api &a = loaded().api;
      int done = 0;
      if (a.Finalized(&done) == 0 && !done) a.Finalize();
    });
  }
  // Errors come back as return codes, which become exceptions, instead of
  // aborting the job.
  check(a_.Comm_set_errhandler(a_.world, a_.errors_return), "MPI_Comm_set_errhandler");
  check(a_.Comm_rank(a_.world, &rank_), "MPI_Comm_rank");
  check(a_.Comm_size(a_.world, &size_), "MPI_Comm_size");
  auto create = [&](const std::vector<UserFn> &fns, std::vector<Handle> &ops) {
    for (UserFn f : fns) {
      ops.push_back(nullptr);
      check(a_.Op_create(f, 1, &ops.back()), "MPI_Op_create");
    }
  };
  create(half_ops<half_bits_to_float, float_to_half_bits>(), half_ops_);
  create(half_ops<bf16_bits_to_float, float_to_bf16_bits>(), bf16_ops_);
}

Handle Mpi::type_of(DType dtype) const {
  switch (dtype) {
    case DType::Bool: return a_.c_bool;
    case DType::UInt8: return a_.uint8;
    case DType::Int8: return a_.int8;
    case DType::Int16: return a_.int16;
    case DType::Int32: return a_.int32;
    case DType::Int64: return a_.int64;
    case DType::Float16:
    case DType::BFloat16: return a_.uint16;
    case DType::Float32: return a_.float32;
    case DType::Float64: return a_.float64;
  }
  throw Error("mpi: unknown dtype");
}

Handle Mpi::op_of(DType dtype, Reduce op) const {
  const auto i = static_cast<size_t>(op);
  if (dtype == DType::Float16) return half_ops_[i];
  if (dtype == DType::BFloat16) return bf16_ops_[i];
  if (dtype == DType::Bool) {  // torch reduces bools as logical or (sum, max) and and (product, min)
    return op == Reduce::Sum || op == Reduce::Max ? a_.lor : a_.land;
  }
  const Handle ops[] = {a_.sum, a_.prod, a_.min, a_.max};
  return ops[i];
}

// MPI counts are ints: a longer buffer goes as several collectives of at most
// this many elements.
constexpr size_t kChunk = size_t{1} << 30;

int checked_count(size_t count, const char *collective) {
  if (count > static_cast<size_t>(INT_MAX))
    throw Error(std::string("mpi: ") + collective + " of " + std::to_string(count) +
                " elements per rank exceeds MPI's limit of " + std::to_string(INT_MAX));
  return static_cast<int>(count);
}

std::unique_ptr<Pending> Mpi::all_reduce(const void *in, void *out, size_t count, DType dtype, Reduce op,
                                         bool async) {
  const size_t item = itemsize(dtype);
  const Handle type = type_of(dtype), mop = op_of(dtype, op);
  std::vector<Handle> requests;
  for (size_t at = 0; at < count; at += kChunk) {
    const int n = static_cast<int>(std::min(kChunk, count - at));
    const void *src = in == out ? reinterpret_cast<const void *>(1) /* MPI_IN_PLACE */
                                : static_cast<const char *>(in) + at * item;
    void *dst = static_cast<char *>(out) + at * item;
    if (!async) {
      check(a_.Allreduce(src, dst, n, type, mop, a_.world), "MPI_Allreduce");
      continue;
    }
    requests.push_back(nullptr);
    check(a_.Iallreduce(src, dst, n, type, mop, a_.world, &requests.back()), "MPI_Iallreduce");
  }
  return std::make_unique<MpiPending>(a_, std::move(requests));
}

std::unique_ptr<Pending> Mpi::broadcast(void *buf, size_t count, DType dtype, int root, bool async) {
  if (root < 0 || root >= size_)
    throw Error("mpi: broadcast from rank " + std::to_string(root) + " in a world of " + std::to_string(size_));
  const size_t item = itemsize(dtype);
  std::vector<Handle> requests;
  for (size_t at = 0; at < count; at += kChunk) {
    const int n = static_cast<int>(std::min(kChunk, count - at));
    void *p = static_cast<char *>(buf) + at * item;
    if (!async) {
      check(a_.Bcast(p, n, type_of(dtype), root, a_.world), "MPI_Bcast");
      continue;
    }
    requests.push_back(nullptr);
    check(a_.Ibcast(p, n, type_of(dtype), root, a_.world, &requests.back()), "MPI_Ibcast");
  }
  return std::make_unique<MpiPending>(a_, std::move(requests));
}

std::unique_ptr<Pending> Mpi::all_gather(const void *in, void *out, size_t count, DType dtype, bool async) {
  const int n = checked_count(count, "all_gather");
  const Handle type = type_of(dtype);
  std::vector<Handle> requests;
  if (!async) {
    check(a_.Allgather(in, n, type, out, n, type, a_.world), "MPI_Allgather");
  } else {
    requests.push_back(nullptr);
    check(a_.Iallgather(in, n, type, out, n, type, a_.world, &requests.back()), "MPI_Iallgather");
  }
  return std::make_unique<MpiPending>(a_, std::move(requests));
}

std::unique_ptr<Pending> Mpi::reduce_scatter(const void *in, void *out, size_t count, DType dtype, Reduce op,
                                             bool async) {
  const int n = checked_count(count, "reduce_scatter");
  const Handle type = type_of(dtype), mop = op_of(dtype, op);
  std::vector<Handle> requests;
  if (!async) {
    check(a_.Reduce_scatter_block(in, out, n, type, mop, a_.world), "MPI_Reduce_scatter_block");
  } else {
    requests.push_back(nullptr);
    check(a_.Ireduce_scatter_block(in, out, n, type, mop, a_.world, &requests.back()),
          "MPI_Ireduce_scatter_block");
  }
  return std::make_unique<MpiPending>(a_, std::move(requests));
}

}  // namespace

const char *reduce_name(Reduce op) {
  switch (op) {
    case Reduce::Sum: return "sum";
    case Reduce::Product: return "product";
    case Reduce::Min: return "min";
    case Reduce::Max: return "max";
  }
  return "?";
}

std::string mpi_missing() { return loaded().missing; }

Communicator &mpi() {
  if (!loaded().missing.empty()) throw Error(loaded().missing);
  static std::once_flag once;
  static std::unique_ptr<Mpi> world;
  std::call_once(once, [] { world = std::make_unique<Mpi>(); });
  return *world;
}

}  // namespace loom::runtime::comm
