"""How many threads the local models use in this process (`TEMPR_TORCH_THREADS`)."""

from __future__ import annotations

__all__ = ["configure_torch_threads"]


def configure_torch_threads(threads: int) -> None:
    """Set once per process, before a model runs; 0 keeps torch's default."""
    if threads <= 0:
        return
    import torch

    torch.set_num_threads(threads)
