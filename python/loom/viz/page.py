"""Writes the viewer's page: one HTML file with the trace, the graphs laid out
by Graphviz (SVG) and the page's script and style inlined; it fetches nothing."""
import json
import os
import shutil
import subprocess

from .replay import read_snapshot

_HERE = os.path.dirname(os.path.abspath(__file__))
# One colour per kernel group, cycled (Graphviz's X11 names).
_PALETTE = ["#cfe2f3", "#d9ead3", "#fff2cc", "#f4cccc", "#d9d2e9", "#fce5cd", "#d0e0e3", "#ead1dc", "#e6e6e6"]


def load_trace(path):
    with open(path, encoding="utf-8") as f:
        try:
            trace = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path} is not a loom trace: {e}") from None
    if not isinstance(trace, dict) or trace.get("version") != 1:
        raise ValueError(f"{path} is not a loom trace (version 1)")
    return trace


def _dot():
    dot = shutil.which("dot")
    if not dot:
        raise RuntimeError("Graphviz's `dot` is not installed (Debian: apt-get install graphviz); "
                           "it lays out the page's graphs")
    return dot


def _quote(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _label(node):
    shape = "(" + ", ".join(str(d) for d in node["shape"]) + ")"
    label = f"{node['op']}\n{shape} {node['dtype']}"
    if node["op"] in ("REDUCE_AXIS", "CONST", "BUFFER") and node["arg"] and len(node["arg"]) <= 32:
        label += "\n" + node["arg"]
    return label


def graph_dot(graph):
    """The graph in Graphviz's language: one cluster per kernel group (its
    realized node and what the kernel inlines), realized nodes drawn bold,
    BUFFER nodes (realized before) grey. A node several kernels inline sits in
    the first one's cluster and is dashed."""
    nodes, groups = graph["nodes"], graph["groups"]
    lines = ["digraph G {", "  rankdir=BT; nodesep=0.15; ranksep=0.3;",
             '  node [shape=box, style="rounded,filled", fillcolor=white, fontname=Helvetica, fontsize=10,'
             ' height=0.3, margin="0.06,0.03"];',
             "  edge [arrowsize=0.5, color=\"#888888\"];"]
    members = [[] for _ in groups]
    loose = []
    for i, n in enumerate(nodes):
        (members[n["groups"][0]] if n["groups"] else loose).append(i)

    def node_line(i):
        n = nodes[i]
        attrs = [f"id={_quote('n%d' % i)}", f"label={_quote(_label(n))}"]
        tip = n["arg"] if not n["why"] else n["why"]
        if tip:
            attrs.append(f"tooltip={_quote(tip)}")
        if n["why"]:
            attrs.append("penwidth=2.5")
        if n["op"] == "BUFFER":
            attrs.append('fillcolor="#bbbbbb"')
        elif n["groups"]:
            attrs.append(f"fillcolor={_quote(_PALETTE[n['groups'][0] % len(_PALETTE)])}")
        if len(n["groups"]) > 1:
            attrs.append('style="rounded,filled,dashed"')
        return f"  n{i} [{', '.join(attrs)}];"

    for g, ids in enumerate(members):
        name = ", ".join(groups[g]["kernels"]) or "(no kernel: size 0)"
        lines.append(f"  subgraph cluster_{g} {{ id={_quote('k%d' % g)}; label={_quote(name)}; "
                     f"fontname=Helvetica; fontsize=10; style=rounded; color=\"#555555\";")
        lines += ["  " + node_line(i) for i in ids]
        lines.append("  }")
    lines += [node_line(i) for i in loose]
    for i, n in enumerate(nodes):
        lines += [f"  n{s} -> n{i};" for s in n["src"]]
    lines.append("}")
    return "\n".join(lines)


def graph_svg(graph, max_nodes):
    if len(graph["nodes"]) > max_nodes:
        return None
    out = subprocess.run([_dot(), "-Tsvg"], input=graph_dot(graph), capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"dot failed: {out.stderr.strip()[:500]}")
    svg = out.stdout
    return svg[svg.index("<svg"):]  # the XML prologue and doctype cannot sit inside HTML


def _asset(name):
    with open(os.path.join(_HERE, name), encoding="utf-8") as f:
        return f.read()


def _html(data):
    # JSON inside <script>: "</" would end the element early.
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    page = _asset("page.html")
    page = page.replace("/*STYLE*/", _asset("page.css"))
    page = page.replace("/*SCRIPT*/", _asset("page.js"))
    return page.replace("/*DATA*/null", payload)


def _write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def write_page(trace, path, max_nodes=6000):
    """The page for a trace (a dict, as loom.viz.trace() or load_trace() give)."""
    svgs = [graph_svg(g, max_nodes) for g in trace.get("graphs", [])]
    _write(path, _html({"mode": "trace", "trace": trace, "svgs": svgs}))


def write_replay_page(snapshots, path):
    """The page for one process-replay snapshot, or two compared side by side."""
    _write(path, _html({"mode": "replay", "snapshots": [read_snapshot(s) for s in snapshots]}))
