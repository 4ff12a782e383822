"""Argument checks shared by tessel.torch and tessel.ops: each error names
the function (`where`), the argument and the constraint."""

import torch


def shape(t) -> str:
    return "[" + ", ".join(str(d) for d in t.shape) + "]"


def tensor(where: str, name: str, t, rank: int, layout: str) -> None:
    """`t` is a torch tensor of `rank` dimensions (`layout`, e.g. '[T, H]')."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{where}: '{name}' must be a torch tensor {layout}, "
                        f"got {type(t).__name__}")
    if t.dim() != rank:
        raise ValueError(f"{where}: '{name}' must be {layout} ({rank}-D), "
                         f"got shape {shape(t)}")


def same_device(where: str, ref_name: str, ref, named) -> None:
    """Every (name, tensor) of `named` is on the device of `ref`."""
    for name, t in named:
        if t.device != ref.device:
            raise ValueError(f"{where}: '{name}' is on {t.device} but "
                             f"'{ref_name}' is on {ref.device}")


def like(where: str, ref_name: str, ref, named) -> None:
    """Every (name, tensor) of `named` has the dtype and device of `ref`."""
    for name, t in named:
        if t.dtype != ref.dtype:
            raise TypeError(f"{where}: '{name}' is {t.dtype} but "
                            f"'{ref_name}' is {ref.dtype}; they must match")
    same_device(where, ref_name, ref, named)
