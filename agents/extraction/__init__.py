"""Deterministic, LLM-free fact extraction: sentences, time expressions, entities, facts."""
