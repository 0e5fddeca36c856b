// Collectives between the processes of one job, on device buffers: the
// runtime's side of torch.distributed. Each backend is a library loaded with
// dlopen on first use, as the GPU's are, so a binary built here runs where
// it is absent: Open MPI (libmpi.so.40) for buffers in host memory, NCCL
// (libnccl.so.2) for CUDA buffers. As MPI and NCCL require, every process
// of the job makes the same collective calls in the same order.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "loom/dtype.h"

namespace loom::runtime::comm {

// torch's ReduceOp.AVG is SUM followed by a division, above this layer.
enum class Reduce : uint8_t { Sum, Product, Min, Max };
const char *reduce_name(Reduce op);  // "sum", ...

// A collective in flight. The buffers it reads and writes must stay alive,
// and unwritten by anything else, until wait() returns or test() is true.
class Pending {
 public:
  virtual ~Pending() = default;
  virtual bool test() = 0;  // whether it has finished (progressing it)
  virtual void wait() = 0;
};

// The processes of one job, numbered 0..size()-1. Counts are elements of
// `dtype`. With async, a call returns once the collective has started (MPI's
// nonblocking collectives, NCCL's stream); otherwise once it has finished,
// through the library's blocking call.
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual const char *name() const = 0;  // "mpi", "nccl"
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // out[i] = op over the ranks' in[i], i < count.
  virtual std::unique_ptr<Pending> all_reduce(const void *in, void *out, size_t count, DType dtype, Reduce op,
                                              bool async) = 0;
  // buf on every rank becomes `root`'s buf.
  virtual std::unique_ptr<Pending> broadcast(void *buf, size_t count, DType dtype, int root, bool async) = 0;
  // out (size() * count elements) = rank 0's in, then rank 1's, ...
  virtual std::unique_ptr<Pending> all_gather(const void *in, void *out, size_t count, DType dtype, bool async) = 0;
  // out (count elements) = op over the ranks of block rank() of their in
  // (size() blocks of count elements).
  virtual std::unique_ptr<Pending> reduce_scatter(const void *in, void *out, size_t count, DType dtype, Reduce op,
                                                  bool async) = 0;
  virtual void barrier() = 0;
};

// Why a backend cannot be used in this process, as a sentence naming what
// is missing; "" when its library loads.
std::string mpi_missing();
std::string nccl_missing();

// Open MPI's world (MPI_COMM_WORLD): the library is loaded and initialized
// on the first call, and finalized when the process exits. Every rank when
// the process was started by mpirun; otherwise a world of this process alone.
Communicator &mpi();

// A NCCL communicator over the CUDA device's GPU (the legacy default stream,
// so it runs in order with the kernels). The ranks are `bootstrap`'s, which
// carries rank 0's NCCL id to the others; without one, a world of one.
std::unique_ptr<Communicator> nccl(Communicator *bootstrap);

}  // namespace loom::runtime::comm
