"""bench/gpu_table.py, where there is no GPU: at small sizes on the CPU every
workload asked for runs on both sides, and the hlb-like step's loss after the
timed steps is the same in loom as in torch from the same weights and batch."""
import importlib.util
import pathlib

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "bench" / "gpu_table.py"


def load_script():
    spec = importlib.util.spec_from_file_location("gpu_table", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def table_rows(text):
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0] not in ("workload", "---"):
            rows[cells[0]] = cells
    return rows


def test_small_workloads_run_on_both_sides_and_the_step_losses_agree(capsys):
    wanted = ["chain", "sum_dim0", "matmul512", "conv_fwdbwd", "index:scatter_add", "hlb64"]
    load_script().main(["--device", "cpu", "--small", "--runs", "2"] + wanted)
    rows = table_rows(capsys.readouterr().out)
    assert sorted(rows) == sorted(wanted)
    for name, (_, loom_ms, torch_ms, speed, note) in rows.items():
        assert float(loom_ms) > 0 and float(torch_ms) > 0 and speed.endswith("x"), (name, note)
    note = rows["hlb64"][4]
    assert note.startswith("loss loom "), note
    loom_loss, torch_loss = float(note.split()[2]), float(note.split()[4])
    assert loom_loss == pytest.approx(torch_loss, rel=1e-5)
