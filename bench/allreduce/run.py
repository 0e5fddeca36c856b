"""all_reduce (sum) bandwidth between 2 processes on this machine: Open
MPI's own figure (mpi_allreduce.c, osu-style: MPI_Allreduce from one
buffer into another), loom through the shim's torch.distributed (Open MPI,
under python3 -m loom.run --nproc 2), and real torch's gloo, each as time
per call, algorithm bandwidth (bytes / time) and the ratio of Open MPI's
time to its own. On a machine whose loom computes on CUDA (LOOM_DEVICE=CUDA),
the loom rows use NCCL in a world of one instead.

    PYTHONPATH=build/python /usr/bin/python3 bench/allreduce/run.py [MIB=64] [ITERS=10]
"""
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = ["--allow-run-as-root"] if os.geteuid() == 0 else []


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def mpi_own(mib, iters, folder):
    exe = os.path.join(folder, "mpi_allreduce")
    subprocess.run(["mpicc", "-O2", "-o", exe, os.path.join(HERE, "mpi_allreduce.c")], check=True)
    out = subprocess.run(["mpirun", "-n", "2", "--oversubscribe", "--bind-to", "none"] + ROOT +
                         [exe, str(mib), str(iters)], check=True, capture_output=True, text=True).stdout
    return [("Open MPI MPI_Allreduce (C)", float(out.split()[0]))]


def rows_of(text):
    return [(name, float(sec)) for name, sec in (line.split("\t") for line in text.splitlines() if "\t" in line)]


def loom_rows(mib, iters, nproc):
    run = subprocess.run([sys.executable, "-m", "loom.run"] + (["--nproc", str(nproc)] if nproc > 1 else []) +
                         [os.path.join(HERE, "ranks.py"), str(mib), str(iters)],
                         check=True, capture_output=True, text=True)
    return [("loom: " + name, sec) for name, sec in rows_of(run.stdout)]


def torch_rows(mib, iters):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "ranks.py"), str(mib), str(iters)],
                              stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ, RANK=str(r), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                                       MASTER_PORT=port, OMP_NUM_THREADS="1"))
             for r in range(2)]
    outs = [p.communicate()[0] for p in procs]
    return [("torch 1.13 gloo: " + name, sec) for name, sec in rows_of(outs[0])]


def main():
    mib = int(sys.argv[1]) if len(sys.argv) > 1 else 64
    iters = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    gpu = os.environ.get("LOOM_DEVICE", "").upper() == "CUDA"
    nbytes = mib * 1024 * 1024
    with tempfile.TemporaryDirectory() as folder:
        rows = mpi_own(mib, iters, folder) if shutil.which("mpicc") else []
    rows += loom_rows(mib, iters, 1 if gpu else 2)
    if not gpu:
        rows += torch_rows(mib, iters)
    base = rows[0][1] if rows and rows[0][0].startswith("Open MPI") else None
    print(f"all_reduce (sum) of {mib} MiB float32, {'1 process, NCCL on the GPU' if gpu else '2 processes'}, "
          f"{cpu_model()}, {iters} calls each")
    print(f"{'way':48s} {'ms/call':>9s} {'GB/s':>7s} {'vs Open MPI':>12s}")
    for name, sec in rows:
        ratio = f"{base / sec:.2f}x" if base else "-"
        print(f"{name:48s} {sec * 1e3:9.2f} {nbytes / sec / 1e9:7.2f} {ratio:>12s}")


if __name__ == "__main__":
    main()
