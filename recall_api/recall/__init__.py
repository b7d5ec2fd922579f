"""Pure building blocks of the recall pipeline: configuration, fusion, scoring and packing.

Nothing in this package touches the database or loads a model, so every function here can be
unit-tested in isolation and reused by the I/O-bound orchestration code.
"""
