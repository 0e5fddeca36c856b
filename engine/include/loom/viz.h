// Recording for the viewer: `python3 -m loom.viz` turns a trace into a page
// that follows realizes from the tensor graph to the kernels and their times.
// LOOM_VIZ=1 records from a program's first realize and writes loom_viz.json
// in the working directory when the process exits; LOOM_VIZ=<path> writes
// there instead. While recording, each kernel launch is timed (waiting for a
// GPU's kernel to end, as LOOM_DEBUG=2 does).
//
// The trace (JSON) holds:
//   graphs    each graph structure the scheduler cut: its nodes (op, dtype,
//             shape, arg, sources), which kernels compute each node, and
//             for each node that got its own buffer the rule that chose it;
//             the kernels after each scheduler pass that makes them
//   kernels   each distinct kernel: the program after each codegen pass,
//             the lines a pass changed, the rewrite rules that fired in it,
//             and the source the device compiled (or the library kernel run
//             in its place)
//   realizes  per realize: its graph, schedule-cache hit, kernels run,
//             compiles, work done against work needed, start and end
//   launches  per kernel launch: realize, kernel, start, duration, device
//             memory in use while it ran; compiles: start, duration, count
#pragma once
#include <string>

namespace loom::viz {

void start();  // (re)starts recording in this process: an empty trace from now
void stop();
bool recording();
std::string trace_json();             // the trace so far
void save(const std::string &path);  // trace_json() into `path` (written whole, then renamed into place)

}  // namespace loom::viz
