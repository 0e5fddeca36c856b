// Launches replayed in the same order every time (a JIT's), submitted
// together where the device can: recorded once as the nodes of a graph (a
// CUDA graph), then on each replay the nodes whose arguments changed are
// updated in place and the graph goes to the device in one call instead of
// a launch per kernel.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace loom::runtime {

class Program;

// A generated kernel's launch as a graph node: its function (opaque to all
// but its device), its grid, and each parameter's value (a buffer's address,
// or a runtime scalar's bits).
struct GraphNode {
  const void *fn = nullptr;
  unsigned blocks = 0, threads = 0;
  size_t buffers = 0;  // the first `buffers` args are addresses
  std::vector<uint64_t> args;
  bool same_launch(const GraphNode &o) const { return fn == o.fn && blocks == o.blocks && threads == o.threads; }
};

// The node of a launch of `fn` as Program::launch is given it: `bufs`, the
// `buffers` buffers' addresses, then pointers to the runtime scalars' 64-bit
// values, `params` in all.
GraphNode graph_launch(const void *fn, int64_t blocks, int64_t threads, void **bufs, size_t buffers, size_t params);

// What a flush did: graphs built (instantiated), graphs submitted, nodes
// whose arguments it updated.
struct GraphCounts {
  int64_t built = 0, launched = 0, updated = 0;
};

// The launches between two flushes are one piece (one graph); a replay is
// the same sequence of pieces every time.
class LaunchGraph {
 public:
  virtual ~LaunchGraph() = default;
  // A replay starts: the pieces that follow are the previous replay's, in order.
  void begin();
  // Queues p's launch in the current piece; false where p is no graph node
  // (an extern library call): flush, then launch it directly.
  bool add(const Program &p, void **bufs, int64_t global_size);
  // Submits the piece queued since the last flush: the previous replay's
  // piece at this place with its changed nodes updated where its launches
  // are the same kernels and grids, else a piece built anew.
  GraphCounts flush();

 protected:
  // An executable graph of `nodes`, run in order; its arguments' updates; its submission.
  virtual std::shared_ptr<void> build(const std::vector<GraphNode> &nodes) = 0;
  virtual void update(void *exec, size_t i, const GraphNode &node) = 0;
  virtual void submit(void *exec) = 0;

 private:
  struct Piece {
    std::vector<GraphNode> nodes;
    std::shared_ptr<void> exec;
  };
  std::vector<Piece> pieces_;
  std::vector<GraphNode> pending_;
  size_t next_ = 0;  // the piece the pending launches replay
};

}  // namespace loom::runtime
