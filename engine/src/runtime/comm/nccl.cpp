// NCCL, loaded with dlopen (libnccl.so.2, e.g. from pip's nvidia-nccl-cu13).
// Only the entry points used here are declared, with NCCL's enum values;
// every collective runs on the legacy default stream, where the CUDA device
// queues its kernels and copies, so it is ordered after the kernels that
// wrote its input and before those that read its output.
#include <dlfcn.h>

#include "loom/error.h"
#include "runtime/comm/comm.h"
#include "runtime/cuda/driver.h"
#include "runtime/library.h"

namespace loom::runtime::comm {

namespace {

using NcclComm = struct NcclComm_st *;
using Stream = cuda::CUstream;
struct UniqueId {
  char bytes[128];  // NCCL_UNIQUE_ID_BYTES
};
constexpr const char *kLibrary = "libnccl.so.2";

struct Api {
  int (*GetUniqueId)(UniqueId *);
  int (*CommInitRank)(NcclComm *, int nranks, UniqueId id, int rank);
  int (*CommDestroy)(NcclComm);
  const char *(*GetErrorString)(int);
  int (*AllReduce)(const void *, void *, size_t, int dtype, int op, NcclComm, Stream);
  int (*Broadcast)(const void *, void *, size_t, int dtype, int root, NcclComm, Stream);
  int (*AllGather)(const void *, void *, size_t, int dtype, NcclComm, Stream);
  int (*ReduceScatter)(const void *, void *, size_t, int dtype, int op, NcclComm, Stream);
};

struct Loaded {
  Api api{};
  std::string missing;
};

Loaded load() {
  Loaded s;
  void *lib = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *e = dlerror();
    s.missing = std::string("nccl: ") + kLibrary +
                " not found (NCCL is not installed; pip's nvidia-nccl-cu13 provides it): " + (e ? e : "unknown error");
    return s;
  }
  Api &a = s.api;
  Symbols need(lib, std::string("nccl: ") + kLibrary);
  need(a.GetUniqueId, "ncclGetUniqueId");
  need(a.CommInitRank, "ncclCommInitRank");
  need(a.CommDestroy, "ncclCommDestroy");
  need(a.GetErrorString, "ncclGetErrorString");
  need(a.AllReduce, "ncclAllReduce");
  need(a.Broadcast, "ncclBroadcast");
  need(a.AllGather, "ncclAllGather");
  need(a.ReduceScatter, "ncclReduceScatter");
  s.missing = need.missing;
  return s;
}

const Loaded &loaded() {
  static const Loaded s = load();
  return s;
}

// NCCL's ncclDataType_t; -1 where it has none.
int type_of(DType dtype) {
  switch (dtype) {
    case DType::Int8: return 0;
    case DType::Bool:
    case DType::UInt8: return 1;
    case DType::Int32: return 2;
    case DType::Int64: return 4;
    case DType::Float16: return 6;
    case DType::Float32: return 7;
    case DType::Float64: return 8;
    case DType::BFloat16: return 9;
    case DType::Int16: return -1;
  }
  return -1;
}

// NCCL's ncclRedOp_t (sum 0, prod 1, max 2, min 3); bools as logical or / and.
int op_of(DType dtype, Reduce op) {
  if (dtype == DType::Bool) return op == Reduce::Sum || op == Reduce::Max ? 2 : 3;
  const int ops[] = {0, 1, 3, 2};
  return ops[static_cast<size_t>(op)];
}

// Waits for the stream, so for the collective queued on it.
class StreamPending final : public Pending {
 public:
  bool test() override {
    wait();
    return true;
  }
  void wait() override { cuda::check(cuda::driver().CtxSynchronize(), "cuCtxSynchronize"); }
};

class Nccl final : public Communicator {
 public:
  explicit Nccl(Communicator *bootstrap);
  ~Nccl() override {
    a_.CommDestroy(comm_);
    if (scratch_) cuda::driver().MemFree(scratch_);
  }
  const char *name() const override { return "nccl"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::unique_ptr<Pending> all_reduce(const void *in, void *out, size_t count, DType dtype, Reduce op,
                                      bool async) override {
    check(a_.AllReduce(in, out, count, dtype_of(dtype), op_of(dtype, op), comm_, nullptr), "ncclAllReduce");
    return done(async);
  }
  std::unique_ptr<Pending> broadcast(void *buf, size_t count, DType dtype, int root, bool async) override {
    check(a_.Broadcast(buf, buf, count, dtype_of(dtype), root, comm_, nullptr), "ncclBroadcast");
    return done(async);
  }
  std::unique_ptr<Pending> all_gather(const void *in, void *out, size_t count, DType dtype, bool async) override {
    check(a_.AllGather(in, out, count, dtype_of(dtype), comm_, nullptr), "ncclAllGather");
    return done(async);
  }
  std::unique_ptr<Pending> reduce_scatter(const void *in, void *out, size_t count, DType dtype, Reduce op,
                                          bool async) override {
    check(a_.ReduceScatter(in, out, count, dtype_of(dtype), op_of(dtype, op), comm_, nullptr), "ncclReduceScatter");
    return done(async);
  }
  void barrier() override;

 private:
  void check(int rc, const char *what) const {
    if (rc != 0) throw Error(std::string("nccl: ") + what + " failed: " + a_.GetErrorString(rc));
  }
  static int dtype_of(DType dtype) {
    const int t = type_of(dtype);
    if (t < 0) throw Error(std::string("nccl: no collectives on ") + dtype_name(dtype) + " tensors");
    return t;
  }
  static std::unique_ptr<Pending> done(bool async) {
    auto p = std::make_unique<StreamPending>();
    if (!async) p->wait();
    return p;
  }
  const Api &a_;
  NcclComm comm_ = nullptr;
  int rank_ = 0, size_ = 1;
  cuda::CUdeviceptr scratch_ = 0;  // barrier()'s one float
};

Nccl::Nccl(Communicator *bootstrap) : a_(loaded().api) {
  if (bootstrap) rank_ = bootstrap->rank(), size_ = bootstrap->size();
  cuda::bind_context();
  UniqueId id{};
  if (rank_ == 0) check(a_.GetUniqueId(&id), "ncclGetUniqueId");
  if (size_ > 1) bootstrap->broadcast(&id, sizeof id, DType::UInt8, 0, false);
  check(a_.CommInitRank(&comm_, size_, id, rank_), "ncclCommInitRank");
}

void Nccl::barrier() {
  // NCCL has no barrier: an all-reduce of one float, waited for.
  const auto &d = cuda::driver();
  if (!scratch_) cuda::check(d.MemAlloc(&scratch_, sizeof(float)), "cuMemAlloc");
  void *p = reinterpret_cast<void *>(scratch_);
  check(a_.AllReduce(p, p, 1, type_of(DType::Float32), 0, comm_, nullptr), "ncclAllReduce");
  cuda::check(d.CtxSynchronize(), "cuCtxSynchronize");
}

}  // namespace

std::string nccl_missing() {
  const std::string &m = loaded().missing;
  if (!m.empty()) return m;
  const std::string &gpu = cuda::driver_missing();
  return gpu.empty() ? "" : "nccl: " + gpu;
}

std::unique_ptr<Communicator> nccl(Communicator *bootstrap) {
  if (std::string m = nccl_missing(); !m.empty()) throw Error(m);
  return std::make_unique<Nccl>(bootstrap);
}

}  // namespace loom::runtime::comm
