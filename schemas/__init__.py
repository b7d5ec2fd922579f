"""Pydantic models at every boundary: stream events (`events`) and the HTTP API (`api`)."""
