"""Benches that read the banks an earlier `bench.locomo_retrieval` run filled: their options,
and one pass over the conversations' banks through a running server."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import httpx

from bench.common import console
from bench.locomo_data import DATA_DIR, Sample, conversation_paths, load_sample

__all__ = ["add_kept_bank_args", "over_kept_banks"]

T = TypeVar("T")


def add_kept_bank_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", required=True, help="a running server whose banks hold the conversations")
    parser.add_argument(
        "--data", type=Path, default=DATA_DIR, help=f"conversations folder (default {DATA_DIR})"
    )
    parser.add_argument("--conversations", default=None, help="comma-separated stems (default: all)")
    parser.add_argument("--preset", default="default")
    parser.add_argument("--json", type=Path, default=None, help="write the summary here")


def over_kept_banks(
    args: argparse.Namespace, run_one: Callable[[httpx.Client, Sample], list[T]], counted: str
) -> list[T]:
    """``run_one`` on each chosen conversation's bank, its outputs concatenated."""
    out: list[T] = []
    with httpx.Client(base_url=args.url, timeout=120.0) as client:
        for path in conversation_paths(args.conversations, args.data):
            sample = load_sample(path)
            out += run_one(client, sample)
            console.print(f"  {sample.stem}: {len(out)} {counted} so far")
    return out
