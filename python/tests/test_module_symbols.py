"""loom._C keeps what it links statically to itself (python/CMakeLists.txt).

Exported, its copy of libloom (and of the C++ runtime, where a toolchain links
libstdc++ statically) could be partly replaced at load time by another copy
already in the process: with GCC 13's static libstdc++ beside the system's
newer one, formatting a number into a std::ostringstream crashed."""
import shutil
import subprocess

import loom._C


def test_the_module_exports_its_init_function_and_no_other_definition():
    nm = shutil.which("nm")
    assert nm, "nm (binutils) is needed to read the module's dynamic symbols"
    out = subprocess.run([nm, "-D", "--defined-only", loom._C.__file__], capture_output=True, text=True,
                         check=True).stdout
    # Strong definitions (text, data, bss, read-only); the weak ones are inline templates of the module's own code.
    strong = [fields[2] for fields in (line.split() for line in out.splitlines())
              if len(fields) == 3 and fields[1] in "TDBR"]
    assert strong == ["PyInit__C"]
