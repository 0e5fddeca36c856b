#include "runtime/launch_graph.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "runtime/device.h"

namespace loom::runtime {

GraphNode graph_launch(const void *fn, int64_t blocks, int64_t threads, void **bufs, size_t buffers, size_t params) {
  GraphNode n{fn, static_cast<unsigned>(blocks), static_cast<unsigned>(threads), buffers, std::vector<uint64_t>(params)};
  for (size_t i = 0; i < params; i++)
    if (i < buffers) {
      n.args[i] = reinterpret_cast<uintptr_t>(bufs[i]);
    } else {
      std::memcpy(&n.args[i], bufs[i], sizeof(uint64_t));
    }
  return n;
}

void LaunchGraph::begin() {
  next_ = 0;
  pending_.clear();
}

bool LaunchGraph::add(const Program &p, void **bufs, int64_t global_size) {
  std::optional<GraphNode> n = p.graph_node(bufs, global_size);
  if (!n) return false;
  pending_.push_back(std::move(*n));
  return true;
}

GraphCounts LaunchGraph::flush() {
  GraphCounts c;
  if (pending_.empty()) return c;
  if (next_ == pieces_.size()) pieces_.emplace_back();
  Piece &piece = pieces_[next_++];
  const bool same = piece.exec && piece.nodes.size() == pending_.size() &&
                    std::equal(pending_.begin(), pending_.end(), piece.nodes.begin(),
                               [](const GraphNode &a, const GraphNode &b) { return a.same_launch(b); });
  if (same) {
    for (size_t i = 0; i < pending_.size(); i++)
      if (pending_[i].args != piece.nodes[i].args) {
        update(piece.exec.get(), i, pending_[i]);
        piece.nodes[i].args = std::move(pending_[i].args);
        c.updated++;
      }
  } else {
    piece.exec.reset();  // the old graph goes before the new one is built
    piece.exec = build(pending_);
    piece.nodes = std::move(pending_);
    c.built++;
  }
  pending_.clear();
  submit(piece.exec.get());
  c.launched++;
  return c;
}

}  // namespace loom::runtime
