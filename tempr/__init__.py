"""tempr: long-term memory for AI agents, built as a streaming pipeline."""

__version__ = "0.1.0"
