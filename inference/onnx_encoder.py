"""A sentence-transformers model's encoder run by ONNX Runtime: the same vectors (within
1e-6 of torch's, checked at start-up) at a fraction of the cost for short texts.

A query is two texts of a dozen tokens; torch spends most of its ~20 ms dispatching a hundred
small operators from Python, ONNX Runtime runs the same graph natively (bench/query_embedding.py).
The graph is exported from the loaded model once and cached on disk, keyed by a digest of its
weights, so every process after the first starts with it ready.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["OnnxEncoder", "default_cache_dir", "int8_encoder_for", "onnx_encoder_for"]

log = logging.getLogger(__name__)

_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_MAX_DIFF = 1e-5  # what "the same vectors" means; measured: ~1e-7
# An int8 query vector against its float one, the worst probe. all-MiniLM-L6-v2 measured
# 0.989-0.998 with per-channel weights (0.95-0.99 per tensor, so that is not offered).
_MIN_INT8_COSINE = 0.98


def default_cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tempr" / "onnx"


def _mean_pooled(model: Any) -> bool:
    """Transformer → mean pooling (→ Normalize): the one shape this runner reproduces."""
    modules = list(model)
    if len(modules) not in (2, 3) or not hasattr(modules[0], "auto_model"):
        return False
    cfg = modules[1].get_config_dict()
    mean = cfg.get("pooling_mode") == "mean" or (
        cfg.get("pooling_mode_mean_tokens") and not cfg.get("pooling_mode_cls_token")
    )
    return bool(mean) and (len(modules) == 2 or type(modules[2]).__name__ == "Normalize")


def _features(model: Any, texts: Sequence[str]) -> dict[str, Any]:
    """The model's own tokenization (sentence-transformers 6 `preprocess`, earlier `tokenize`)."""
    preprocess = getattr(model, "preprocess", None) or model.tokenize
    features: dict[str, Any] = preprocess(list(texts))
    return features


def _digest(encoder: Any) -> str:
    import torch

    h = hashlib.sha256(torch.__version__.encode())
    for name, tensor in encoder.state_dict().items():
        h.update(name.encode())
        h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:24]


def _replace_atomically(path: Path, write: Any) -> None:
    """`write(tmp)` then move tmp into place, so processes starting together never read half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".onnx.part")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _export(encoder: Any, features: dict[str, Any], path: Path) -> None:
    """Trace the encoder to ONNX (dynamic batch and length)."""
    import torch

    class _LastHidden(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return out.last_hidden_state

    axes = {name: {0: "batch", 1: "tokens"} for name in (*_INPUTS, "last_hidden_state")}

    def write(tmp: str) -> None:
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tracer's notes on shapes it fixes: harmless here
            torch.onnx.export(
                _LastHidden(encoder).eval(),
                tuple(features[k] for k in _INPUTS),
                tmp,
                input_names=list(_INPUTS),
                output_names=["last_hidden_state"],
                dynamic_axes=axes,
                opset_version=17,
                dynamo=False,
            )

    _replace_atomically(path, write)


def _quantize(graph: Path, path: Path) -> None:
    """int8 weights per output channel for every MatMul with constant weights; activations are
    quantized per call (dynamic), so no calibration data is needed."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    def write(tmp: str) -> None:
        # The quantizer logs every node it skips on the root logger; it runs once per model.
        logging.disable(logging.WARNING)
        try:
            quantize_dynamic(
                graph,
                tmp,
                weight_type=QuantType.QInt8,
                per_channel=True,
                extra_options={"MatMulConstBOnly": True},
            )
        finally:
            logging.disable(logging.NOTSET)

    _replace_atomically(path, write)


class OnnxEncoder:
    """Tokenize with the model's own preprocessing, run the graph, mean-pool, normalize."""

    def __init__(self, model: Any, graph: Path, threads: int) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # Idle pool threads sleep instead of spinning: the cores are shared with Postgres and
        # the event loop, and a query's forward pass is a few milliseconds.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
        self._model = model
        self.graph = graph

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        features = _features(self._model, texts)
        feeds = {k: features[k].numpy() for k in _INPUTS}
        hidden = self._session.run(None, feeds)[0]
        mask = feeds["attention_mask"][..., None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.where(norms == 0, 1.0, norms)).astype(np.float32)


_PROBES = (
    "What did Melanie paint recently?",
    "What did paint recently?",
    "Caroline said to Melanie: I went to the LGBTQ support group yesterday and it was so powerful.",
    "",
)


def onnx_encoder_for(model: Any, *, threads: int, cache_dir: Path | None = None) -> OnnxEncoder | None:
    """An ONNX runner for the loaded sentence-transformers ``model``, or None (logged) when
    the model is not Transformer + mean pooling, onnxruntime is missing, or its vectors would
    differ from torch's: the caller keeps torch then."""
    if not _mean_pooled(model):
        log.info("embedding model is not Transformer + mean pooling: embedding with torch")
        return None
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        log.info("onnxruntime is not installed: embedding with torch")
        return None
    encoder = model[0].auto_model
    graph = (cache_dir or default_cache_dir()) / f"{_digest(encoder)}.onnx"
    try:
        if not graph.exists():
            _export(encoder, _features(model, _PROBES[:2]), graph)
        runner = OnnxEncoder(model, graph, threads)
        expected = model.encode(list(_PROBES), normalize_embeddings=True, convert_to_numpy=True)
        diff = float(np.abs(runner.encode(_PROBES) - expected).max())
    except Exception:  # an export or runtime this version cannot do: torch still works
        log.warning("ONNX export of the embedding model failed: embedding with torch", exc_info=True)
        return None
    if diff > _MAX_DIFF:
        log.warning("ONNX vectors differ from torch's by %.2g: embedding with torch", diff)
        return None
    return runner


def int8_encoder_for(model: Any, exact: OnnxEncoder, *, threads: int) -> OnnxEncoder | None:
    """An int8 runner of the graph ``exact`` runs, for query vectors only, or None (logged)
    when it cannot be built or its probes' vectors stray from the float ones (cosine below
    `_MIN_INT8_COSINE`). Stored vectors stay float: a query's small error moves near ties,
    a stored vector's would stay in the bank."""
    graph = exact.graph.with_suffix(".int8.onnx")
    try:
        if not graph.exists():
            _quantize(exact.graph, graph)
        runner = OnnxEncoder(model, graph, threads)
        worst = float((runner.encode(_PROBES[:3]) * exact.encode(_PROBES[:3])).sum(axis=1).min())
    except Exception:
        log.warning(
            "int8 quantization of the embedding model failed: queries embedded in float", exc_info=True
        )
        return None
    if worst < _MIN_INT8_COSINE:
        log.warning(
            "int8 query vectors stray from float ones (cosine %.3f): queries embedded in float", worst
        )
        return None
    return runner
