// torch.distributed's default process group on loom tensors: the processes
// of one job, each computing on its own device, joined by a collectives
// library (runtime/comm/comm.h). Backend "mpi" (Open MPI) reduces CPU
// tensors, "nccl" CUDA tensors. Every process makes the same collective
// calls in the same order, as torch requires.
//
// A collective reads its input's value (realizing it) and returns its result
// as a new tensor in a buffer of its own; torch's in-place forms copy that
// into the input (the shim's torch.distributed). With async, the call
// returns once the collective has started; Work::wait() returns the result.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "loom/tensor.h"

namespace loom::distributed {

enum class ReduceOp : uint8_t { Sum, Avg, Product, Min, Max };

// Joins the job through `backend` ("mpi" or "nccl"). `world_size` and
// `rank`, where the launcher said them (torchrun's WORLD_SIZE and RANK;
// -1: unsaid), must be what the library finds: a mismatch raises, naming
// how to launch. NCCL's ranks are MPI's (its id travels over MPI) when
// world_size > 1.
void init(const std::string &backend, int world_size = -1, int rank = -1);
bool initialized();
// The backend, rank and size of the group; raise unless initialized.
const std::string &backend();
int rank();
int world_size();
// Leaves the group; init may join again (MPI stays initialized until exit).
void destroy();
// Why `backend` cannot be used here ("" when it can).
std::string missing(const std::string &backend);

class Work {
 public:
  struct State;
  explicit Work(std::shared_ptr<State> state) : state_(std::move(state)) {}
  bool completed();  // whether it has finished (progressing it)
  Tensor wait();     // waits, then returns the result (again on later calls)

 private:
  std::shared_ptr<State> state_;
};

// Every rank's result: op over the ranks' `t` (Avg: the sum divided by the
// world size, floating tensors only).
Work all_reduce(const Tensor &t, ReduceOp op = ReduceOp::Sum, bool async = false);
// Every rank's result: `root`'s t (each rank's t gives the shape and dtype).
Work broadcast(const Tensor &t, int root, bool async = false);
// (world_size, *t.shape): rank r's t at index r.
Work all_gather(const Tensor &t, bool async = false);
// t's dim 0 cut into world_size blocks; rank r gets op over the ranks of block r.
Work reduce_scatter(const Tensor &t, ReduceOp op = ReduceOp::Sum, bool async = false);
void barrier();

}  // namespace loom::distributed
