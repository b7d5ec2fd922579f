"""LLM prompts as typed modules, one task per file: input model, response model, builder, version."""
