"""loom.viz: a page that follows realizes from the tensor graph to the kernels
and their times.

Record with ``LOOM_VIZ=1`` (any program, C++ or Python, the torch shim
included: the trace goes to ``loom_viz.json`` when the process exits,
``LOOM_VIZ=path.json`` picks the file) or from Python with ``loom.viz.start()``
and ``loom.viz.save(path)``; then ``python3 -m loom.viz [trace]`` writes the
page next to the trace (``--serve`` also serves it on 127.0.0.1). The page
is one file and fetches nothing: the graphs are laid out by Graphviz's
``dot`` when the page is written. ``python3 -m loom.viz --replay A.txt
[B.txt]`` shows process-replay snapshots, two of them side by side.
"""
import json

from .. import _C
from .page import write_page, write_replay_page  # noqa: F401


def start():
    """Records every realize from now (an empty trace)."""
    _C.viz_start()


def stop():
    _C.viz_stop()


def recording():
    return _C.viz_recording()


def trace():
    """The trace recorded so far, as a dict (see loom/viz.h for its parts)."""
    return json.loads(_C.viz_trace_json())


def save(path):
    """Writes the trace recorded so far to `path` (JSON)."""
    _C.viz_save(str(path))
