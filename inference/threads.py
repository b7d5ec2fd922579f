"""How many threads the local models use in this process (`TEMPR_TORCH_THREADS`)."""

from __future__ import annotations

__all__ = ["configure_torch_threads"]


def configure_torch_threads(threads: int, model_threads: int = 0) -> None:
    """Set once per process, before a model runs; 0 keeps torch's and BLAS's defaults.
    `model_threads` (> 0) gives torch, and the ONNX Runtime session built after it, that many
    threads instead, while BLAS keeps `threads`.

    BLAS (numpy's OpenBLAS) gets the same count: link building multiplies a few new facts'
    vectors by a few hundred stored ones per chunk, and OpenBLAS's second thread made each
    product ~8x slower on a busy 2-core machine (waking it and spinning cost more than the
    work) while it took CPU from the model and spaCy.
    """
    import torch
    from threadpoolctl import threadpool_limits

    if threads > 0:
        torch.set_num_threads(threads)
        threadpool_limits(limits=threads, user_api="blas")
    if model_threads > 0:
        torch.set_num_threads(model_threads)
