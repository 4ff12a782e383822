"""tessel.compile: kernel specs to bundles through tessel-aot.

The compiler needs LLVM/MLIR 22, which the GPU machines lack; so the Python
package does not link it, and compile() runs the `tessel-aot` executable (the
same pipeline, the same options) where one is installed:

1. the path in the TESSEL_AOT environment variable, if set;
2. bin/tessel-aot inside this package (the build tree puts it there, and
   scripts/install-python.sh --with-compiler installs it);
3. tessel-aot on PATH.
"""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Iterable, Union

_PACKAGE_AOT = Path(__file__).resolve().parent / "bin" / "tessel-aot"


class CompileError(RuntimeError):
    """tessel-aot rejected the spec; the message is its diagnostics."""


def find_aot() -> str:
    """The tessel-aot to run; FileNotFoundError saying where it looked if
    there is none."""
    from_env = os.environ.get("TESSEL_AOT")
    if from_env:
        if os.path.isfile(from_env) and os.access(from_env, os.X_OK):
            return from_env
        raise FileNotFoundError(
            f"TESSEL_AOT is '{from_env}', which is not an executable file")
    if os.access(_PACKAGE_AOT, os.X_OK):
        return str(_PACKAGE_AOT)
    on_path = shutil.which("tessel-aot")
    if on_path:
        return on_path
    raise FileNotFoundError(
        "tessel.compile needs tessel-aot, the Tessel compiler, which is not "
        "installed here (it needs LLVM/MLIR 22): looked for TESSEL_AOT, "
        f"{_PACKAGE_AOT} and tessel-aot on PATH. Build it where MLIR is "
        "installed (scripts/install-python.sh --with-compiler), or compile "
        "bundles there and load the .tsb files with tessel.Bundle")


def _is_spec_text(spec: str) -> bool:
    # A path has no newline or brace; every spec has a function body.
    return "\n" in spec or "{" in spec


def compile(spec: Union[str, "os.PathLike[str]", None] = None,
            targets: Union[str, Iterable[str]] = ("host",),
            output: Union[str, "os.PathLike[str]", None] = None,
            options: Iterable[str] = ()) -> Union[bytes, str]:
    """Compiles a kernel spec into a bundle with tessel-aot.

    spec: the path of a spec (.mlir), its text (a string with a newline or a
        brace), or None for the embedded default kernel set.
    targets: 'host', 'sm80', 'sm90', 'sm90a', 'gfx942', 'gfx950' (a list, or one
        comma-separated string).
    output: where to write the bundle; compile() then returns that path.
        Without it, compile() returns the bundle's bytes (for
        tessel.Bundle(device, data)).
    options: more tessel-aot options, e.g. ['--chunk-tokens=16384'].

    Raises CompileError with tessel-aot's diagnostics if the spec does not
    compile, FileNotFoundError if tessel-aot or the spec file is missing.
    """
    aot = find_aot()
    if isinstance(targets, str):
        targets = [targets]
    with tempfile.TemporaryDirectory(prefix="tessel-compile-") as tmp:
        inputs = []
        text_path = None
        if spec is not None:
            if isinstance(spec, str) and _is_spec_text(spec):
                text_path = os.path.join(tmp, "spec.mlir")
                with open(text_path, "w") as f:
                    f.write(spec)
                inputs = [text_path]
            elif isinstance(spec, (str, os.PathLike)):
                path = os.fspath(spec)
                if not os.path.isfile(path):
                    raise FileNotFoundError(f"kernel spec '{path}' does not exist")
                inputs = [path]
            else:
                raise TypeError(f"spec is a path, the spec's text or None, not "
                                f"{type(spec).__name__}")
        bundle = os.fspath(output) if output is not None else \
            os.path.join(tmp, "bundle.tsb")
        command = [aot, *inputs, "-o", bundle, "--targets=" + ",".join(targets),
                   "--quiet", *options]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            diagnostics = (result.stderr or result.stdout).strip()
            if text_path:
                diagnostics = diagnostics.replace(text_path, "<spec>")
            raise CompileError(f"tessel-aot failed (exit {result.returncode}):\n"
                               f"{diagnostics}")
        if output is not None:
            return bundle
        with open(bundle, "rb") as f:
            return f.read()
