"""python3 -m loom.run [--nproc N] [--stats] script.py [args...]: runs an unmodified PyTorch script on loom.

`import torch` and `import torchvision` (and their submodules) in the script load
loom's shim (loom/shim) instead: a meta path finder placed first on sys.meta_path
answers for those names with the shim's modules, so `torch.nn` is
`loom.shim.torch.nn`, one module object under both names. Only this process is
affected; the real torch stays importable everywhere else. --stats prints
the engine's counters when the script ends (kernels run and compiled,
schedules and their cache hits, time in realize and in kernels).

--nproc N runs the script in N processes on this machine, joined for
torch.distributed: loom.run starts Open MPI's mpirun, which starts N copies
of loom.run. Under mpirun (or torchrun) each copy sets torchrun's RANK,
WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE from Open MPI's variables where
they are unset, so a script written for torchrun reads its rank as it would.
"""
import importlib
import importlib.abc
import importlib.util
import os
import runpy
import sys

_ROOTS = ("torch", "torchvision")


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, module):
        self._module = module

    def create_module(self, spec):
        return self._module

    def exec_module(self, module):
        pass  # already executed under its loom.shim name


class ShimFinder(importlib.abc.MetaPathFinder):
    """Finds `torch...` and `torchvision...` as the matching `loom.shim...` modules."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] not in _ROOTS:
            return None
        try:
            module = importlib.import_module("loom.shim." + fullname)
        except ModuleNotFoundError as e:
            if e.name != "loom.shim." + fullname:
                raise
            public = fullname.rsplit(".", 1)
            raise ModuleNotFoundError(f"{fullname} is not supported by loom"
                                      + (f" (no module {public[1]!r} in {public[0]})" if len(public) == 2 else ""),
                                      name=fullname) from None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(module),
                                               is_package=hasattr(module, "__path__"))


def install():
    """Makes `import torch` / `import torchvision` load the shim in this process."""
    for name in list(sys.modules):
        if name.split(".")[0] in _ROOTS:
            raise RuntimeError(f"loom.run: {name} was imported before the shim was installed")
    if not any(isinstance(f, ShimFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, ShimFinder())


def print_stats():
    from loom import run_stats
    s = run_stats()
    print(f"loom: {s['kernels_run']} kernels run, {s['kernels_compiled']} compiled, {s['schedules']} schedules "
          f"({s['schedule_hits']} from the cache), {s['realize_seconds']:.1f} s in realize of which "
          f"{s['kernel_seconds']:.1f} s in kernels; host to device {s['host_writes']} copies "
          f"({s['host_write_bytes'] / 1e6:.1f} MB), device to host {s['host_reads']} ({s['host_read_bytes'] / 1e6:.1f} MB)",
          file=sys.stderr)


# torchrun's variables, from Open MPI's (set by mpirun in each process).
_FROM_MPI = {"RANK": "OMPI_COMM_WORLD_RANK", "WORLD_SIZE": "OMPI_COMM_WORLD_SIZE",
             "LOCAL_RANK": "OMPI_COMM_WORLD_LOCAL_RANK", "LOCAL_WORLD_SIZE": "OMPI_COMM_WORLD_LOCAL_SIZE"}


def set_rank_variables(environ=os.environ):
    for name, mpi in _FROM_MPI.items():
        if mpi in environ and not environ.get(name):
            environ[name] = environ[mpi]
    if "OMPI_COMM_WORLD_RANK" in environ:
        environ.setdefault("MASTER_ADDR", "127.0.0.1")
        environ.setdefault("MASTER_PORT", "29500")


def mpirun_command(nproc, rest):
    """The mpirun command line that runs `python3 -m loom.run REST` in nproc processes on this machine."""
    import shutil
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        raise SystemExit("loom.run: --nproc needs Open MPI's mpirun (Debian's openmpi-bin), which is not on PATH")
    cmd = [mpirun, "-n", str(nproc), "--oversubscribe", "--bind-to", "none"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")  # mpirun refuses root otherwise (containers run as root)
    return cmd + [sys.executable, "-m", "loom.run"] + rest


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--nproc":
        if len(argv) < 3 or not argv[1].isdigit() or int(argv[1]) < 1:
            print("loom.run: --nproc needs a positive number of processes and a script", file=sys.stderr)
            return 2
        import subprocess
        nproc = int(argv[1])
        # A share of the cores each, as torchrun's OMP_NUM_THREADS (mpirun passes the environment on).
        env = dict(os.environ)
        env.setdefault("LOOM_THREADS", str(max(1, (os.cpu_count() or 1) // nproc)))
        return subprocess.call(mpirun_command(nproc, argv[2:]), env=env)
    set_rank_variables()
    if argv and argv[0] == "--stats":
        import atexit
        atexit.register(print_stats)
        argv = argv[1:]
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python3 -m loom.run [--nproc N] [--stats] script.py [args...]\n"
              "       python3 -m loom.run [--nproc N] [--stats] -m module [args...]", file=sys.stderr)
        return 2
    install()
    if argv[0] == "-m":
        if len(argv) < 2:
            print("loom.run: -m needs a module name", file=sys.stderr)
            return 2
        sys.argv = [argv[1]] + argv[2:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return 0
    script = argv[0]
    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
