"""Compile on miss: kernels made from their spec when no bundle has them.

    cache = tessel.KernelCache()          # $TESSEL_CACHE_DIR, else
                                          # $XDG_CACHE_HOME/tessel or
                                          # ~/.cache/tessel
    kernel = cache.kernel(device, "my_prefill", tessel.specs.prefill(...))

The first call for a (spec, compiler, target) compiles the spec with
tessel-aot for the device's preferred target, writes the bundle into the
cache directory (atomically: concurrent processes may race, never see half
a file) and loads it; later calls, in this process or another, load that
file. The key hashes the spec, the target and the compiler's identity (its
path, size and modification time: a rebuilt compiler compiles again).
Where there is no tessel-aot, a cached bundle is still used; a miss is a
tessel.Error (NOT_FOUND) naming the kernel, with the spec to compile
elsewhere. AOT bundles stay the engine's path: this is for research and
for shapes nobody compiled.
"""

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Dict, Optional, Tuple

from . import _tessel, compiler
from .runtime import Bundle, Kernel


def default_directory() -> Path:
    if os.environ.get("TESSEL_CACHE_DIR"):
        return Path(os.environ["TESSEL_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache")
    return Path(base) / "tessel"


def _compiler_identity() -> Tuple[Optional[str], str]:
    """(tessel-aot's path or None, a string that changes when it does)."""
    try:
        aot = compiler.find_aot()
    except FileNotFoundError:
        return None, ""
    st = os.stat(aot)
    return aot, f"{os.path.realpath(aot)}:{st.st_size}:{st.st_mtime_ns}"


def _missing(name: str, target: str, spec: str, why: str) -> _tessel.Error:
    message = (f"tessel: kernel '{name}' for {target} is in no bundle and "
               f"{why}; compile this spec where tessel-aot is installed "
               f"(tessel-aot spec.mlir --targets={target} -o kernels.tsb) "
               f"and load the bundle:\n{spec}")
    error = _tessel.Error(message)
    error.code, error.message = _tessel.StatusCode.NOT_FOUND, message
    return error


class KernelCache:
    """Bundles compiled from specs on demand, kept in `directory`."""

    def __init__(self, directory=None):
        self.directory = Path(directory) if directory is not None else \
            default_directory()
        self._loaded: Dict[Tuple[str, int, str, str], Bundle] = {}

    def kernel(self, device: _tessel.Device, name: str, spec: str) -> Kernel:
        """Kernel `name` of `spec` (the text of one or more func.func) on
        `device`, compiled for device.target on the first miss."""
        bundle = self.bundle(device, spec, name=name)
        if name not in bundle:
            raise _missing(name, device.target, spec,
                           "its spec does not define it")
        return bundle[name]

    def bundle(self, device: _tessel.Device, spec: str,
               target: Optional[str] = None, name: str = "") -> Bundle:
        """The bundle of `spec` compiled for `target` (default: the
        device's preferred one, device.target; another target the device
        runs, e.g. 'sm80' on an H200, picks that code), loaded on `device`;
        compiled on the first miss."""
        target = target or device.target
        loaded_key = (device.kind, device.ordinal, target, spec)
        bundle = self._loaded.get(loaded_key)
        if bundle is None:
            aot, identity = _compiler_identity()
            path = self._find(spec, target, identity)
            if path is None:
                if aot is None:
                    raise _missing(name or "(any)", target, spec,
                                   "there is no tessel-aot here to compile it")
                path = self._compile(spec, target, identity)
            bundle = Bundle(device, str(path))
            self._loaded[loaded_key] = bundle
        return bundle

    def prepare(self, spec: str, target: str) -> Path:
        """Compiles `spec` for `target` into the cache now (e.g. 'sm90a' on
        a build machine, for GPU machines without a compiler that share or
        copy the directory); the bundle's path."""
        aot, identity = _compiler_identity()
        if aot is None:
            raise FileNotFoundError("KernelCache.prepare needs tessel-aot")
        path = self._path(spec, target, identity)
        return path if path.is_file() else self._compile(spec, target,
                                                         identity)

    def _path(self, spec: str, target: str, identity: str) -> Path:
        key = hashlib.sha256(
            f"{target}\n{identity}\n{spec}".encode()).hexdigest()[:32]
        return self.directory / f"{target}-{key}.tsb"

    def _find(self, spec: str, target: str, identity: str) -> Optional[Path]:
        """The cached bundle of `spec`: the current compiler's if there is
        one; without a compiler (identity ''), any compiler's."""
        if identity:
            path = self._path(spec, target, identity)
            return path if path.is_file() else None
        # No compiler: the spec's text is recorded beside each bundle.
        for record in sorted(self.directory.glob(f"{target}-*.mlir")):
            if record.read_text() == spec:
                bundle = record.with_suffix(".tsb")
                if bundle.is_file():
                    return bundle
        return None

    def _compile(self, spec: str, target: str, identity: str) -> Path:
        path = self._path(spec, target, identity)
        self.directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".part")
        os.close(fd)
        try:
            compiler.compile(spec, targets=[target], output=tmp)
            path.with_suffix(".mlir").write_text(spec)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return path


_default: Optional[KernelCache] = None


def default_cache() -> KernelCache:
    """The process's cache in default_directory() (made on first use)."""
    global _default
    if _default is None:
        _default = KernelCache()
    return _default


__all__ = ["KernelCache", "default_cache", "default_directory"]
