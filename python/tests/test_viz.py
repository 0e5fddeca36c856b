"""The viewer (loom.viz): the trace a training step records, and the page it
becomes, opened in Debian's headless Chromium and checked from its DOM."""
import html.parser
import json
import os
import shutil
import subprocess
import sys

import pytest

import loom
import loom.viz

PYTHONPATH = os.path.dirname(os.path.dirname(loom.__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

STEP = """
import torch
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
x, y = torch.randn(32, 8), torch.randint(0, 4, (32,))
for step in range(3):
    loss = torch.nn.functional.cross_entropy(net(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, loss.item())
"""


def chromium():
    for name in ("chromium-headless-shell", "chromium"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("no headless Chromium: ci/install_deps.sh installs Debian's chromium-headless-shell")


class Dom(html.parser.HTMLParser):
    """Elements of a dumped DOM: (tag, attributes, text directly inside)."""

    def __init__(self, text):
        super().__init__()
        self.elements, self.stack = [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        e = [tag, dict(attrs), ""]
        self.elements.append(e)
        if tag not in ("br", "input", "meta", "img"):
            self.stack.append(e)

    def handle_endtag(self, tag):
        while self.stack and self.stack.pop()[0] != tag:
            pass

    def handle_data(self, data):
        for e in self.stack:
            e[2] += data

    def find(self, tag=None, cls=None, **attrs):
        return [e for e in self.elements if (tag is None or e[0] == tag)
                and (cls is None or cls in e[1].get("class", "").split())
                and all(e[1].get(k) == v for k, v in attrs.items())]


def open_page(page):
    out = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1600,1000",
                          "--virtual-time-budget=10000", "--dump-dom", "file://" + os.path.abspath(page)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "<main" in out.stdout, out.stdout[:500]
    return Dom(out.stdout)


def test_trace_counts_match_run_stats():
    loom.viz.start()
    loom.reset_run_stats()
    w = loom.randn(8, 4, requires_grad=True)
    x = loom.randn(16, 8)
    for _ in range(3):
        loss = (x @ w).relu().sum()
        loss.backward()
        with loom.no_grad():
            w -= 0.1 * w.grad
            w.grad = None
        loss.item()
    stats = loom.run_stats()
    trace = loom.viz.trace()
    loom.viz.stop()
    realizes, launches = trace["realizes"], trace["launches"]
    assert len(launches) == stats["kernels_run"]
    assert sum(r["kernels"] for r in realizes) == stats["kernels_run"]
    assert sum(r["cached"] for r in realizes) == stats["schedule_hits"] > 0
    assert sum(r["compiled"] for r in realizes) == stats["kernels_compiled"]
    for r in realizes:
        graph = trace["graphs"][r["graph"]]
        assert len(graph["groups"]) == sum(1 for n in graph["nodes"] if n["why"])
        cut = graph["passes"][0]
        assert cut["pass"] == "cut" and cut["kernels"] == [k for g in graph["groups"] for k in g["kernels"]]
    for realize, kernel, start, ms, live in launches:
        k = trace["kernels"][kernel]
        assert 0 <= realize < len(realizes) and ms >= 0 and live > 0
        assert realizes[realize]["start"] <= start <= realizes[realize]["end"]
        assert [p["pass"] for p in k["passes"]][0] == "schedule (AST)"
        assert k["library"] or k["name"] in k["source"]


def test_page_of_a_training_step_through_the_shim(tmp_path):
    script = tmp_path / "step.py"
    script.write_text(STEP)
    env = dict(os.environ, PYTHONPATH=PYTHONPATH, LOOM_VIZ="1")
    run = subprocess.run([sys.executable, "-m", "loom.run", str(script)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    trace_path = tmp_path / "loom_viz.json"
    assert "LOOM_VIZ trace written" in run.stderr
    trace = json.loads(trace_path.read_text())
    page = subprocess.run([sys.executable, "-m", "loom.viz", str(trace_path)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert page.returncode == 0, page.stderr
    dom = open_page(tmp_path / "loom_viz.html")

    selected = dom.find("tr", cls="selected")
    assert len(selected) == 1
    r = int(selected[0][1]["id"].split("-")[1])
    realize = trace["realizes"][r]
    graph = trace["graphs"][realize["graph"]]
    # The graph: one SVG node per graph node, one cluster per realized node's kernels.
    svg_nodes = [e for e in dom.find("g", cls="node") if e[1].get("id", "").startswith("n")]
    assert len(svg_nodes) == len(graph["nodes"])
    assert len(dom.find("g", cls="cluster")) == len(graph["groups"])
    # The kernel list: this realize's launches, in order.
    items = dom.find("li")
    want = [k for rr, k, *_ in trace["launches"] if rr == r]
    assert [int(e[1]["data-kernel"]) for e in items if "data-kernel" in e[1]] == want
    # The first kernel's "lower" pass: the lines it changed, the rules that fired, and the source.
    kernel = trace["kernels"][want[0]]
    lower = [p for p in kernel["passes"] if p["pass"] == "lower"][0]
    assert lower["changed"] and lower["rules"]
    assert len(dom.find("span", cls="changed")) == len(lower["changed"])
    where, n = lower["rules"][0]
    assert f"rules that fired: {where} x{n}" in dom.find(id="rules")[0][2]
    assert kernel["name"] in dom.find(id="kernel-title")[0][2]
    assert kernel["name"] in dom.find(id="source")[0][2] or kernel["library"]
    # The timeline: a launch per kernel of the realizes shown, memory, the peak, the counters.
    assert dom.find("rect", cls="launch")
    assert dom.find("polyline", cls="mem") and dom.find("circle", cls="peak")
    assert len(dom.find("tr", cls="clickable")) == len(trace["realizes"])
    assert "schedule cache" in dom.find(id="summary")[0][2]


def test_replay_snapshots_side_by_side(tmp_path):
    snap = os.path.join(REPO, "replay", "snapshots", "fusion.softmax.txt")
    changed = tmp_path / "softmax_changed.txt"
    text = open(snap, encoding="utf-8").read()
    assert "loom_maxf" in text
    changed.write_text(text.replace("loom_maxf", "loom_fmaxf", 1))
    out = subprocess.run([sys.executable, "-m", "loom.viz", "--replay", snap, str(changed), "-o",
                          str(tmp_path / "diff.html")], env=dict(os.environ, PYTHONPATH=PYTHONPATH),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    dom = open_page(tmp_path / "diff.html")
    assert "1 of 3 kernels differ" in dom.find(id="replay-differing")[0][2]
    assert [e[2] for e in dom.find("span", cls="removed")] == [[ln for ln in text.split("\n")
                                                                 if "loom_maxf" in ln][0] + "\n"]
    assert len(dom.find("span", cls="added")) == 1


def test_bad_trace_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    out = subprocess.run([sys.executable, "-m", "loom.viz", str(bad)], env=dict(os.environ, PYTHONPATH=PYTHONPATH),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert "is not a loom trace" in out.stderr
    assert not (tmp_path / "bad.html").exists()
