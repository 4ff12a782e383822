# -*- Python -*-
# lit configuration of the Tessel tests: tessel-opt / tessel-aot with
# FileCheck, one pass per RUN line.

import os
import shutil
import sys

import lit.formats
from lit.llvm import llvm_config

config.name = "TESSEL"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tessel_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%tessel_src_root", config.tessel_src_root))
llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

tool_dirs = [config.tessel_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["tessel-opt", "tessel-aot"], tool_dirs)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.tessel_tools_dir, append_path=True)

# Scripts the tests run (scripts/gpu-objects.py) use the interpreter lit runs
# under.
config.substitutions.append(("%python", sys.executable))


def find_ptxas():
    """ptxas where the NVVM pipeline looks for it (CUDA_HOME, CUDA_ROOT,
    /usr/local/cuda, PATH)."""
    roots = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_ROOT")]
    for root in [r for r in roots if r] + ["/usr/local/cuda"]:
        path = os.path.join(root, "bin", "ptxas")
        if os.access(path, os.X_OK):
            return path
    return shutil.which("ptxas")


# Tests that assemble PTX (spill checks of the sm80 kernels) say
# `REQUIRES: ptxas`; without it they are reported UNSUPPORTED, and we say so.
if find_ptxas():
    config.available_features.add("ptxas")
else:
    lit_config.warning("ptxas not found (CUDA_HOME, CUDA_ROOT, "
                       "/usr/local/cuda/bin, PATH): the sm80 ptxas tests "
                       "(no-spill checks) are skipped")
