"""Every inflection of a query word, so "bought" finds "buy" and "children" finds "child".

Postgres' English stemmer only strips regular suffixes: "bought", "went" and "children"
never meet "buy", "go" and "child". lemminflect's lexicon (shipped in its wheel, no download)
maps a word to its lemmas and each lemma to its inflected forms; the keyword arm ORs those in.
"""

from __future__ import annotations

from functools import lru_cache
from types import ModuleType

__all__ = ["load_lexicon", "word_forms"]


@lru_cache(maxsize=1)
def _lexicon() -> tuple[ModuleType, frozenset[str]]:
    # Imported on first use, not with the API: lemminflect imports spaCy (~1.5 s), which the
    # API's start can load next to the embedding model instead of before it.
    import lemminflect
    from spacy.lang.en.stop_words import STOP_WORDS

    return lemminflect, frozenset(STOP_WORDS)


@lru_cache(maxsize=8192)
def word_forms(word: str) -> tuple[str, ...]:
    """The other forms of a lowercase ``word``: its lemmas and all their inflections, in a
    stable order, the word itself left out. Stop words get none: "did" would bring "done"."""
    lemminflect, stop_words = _lexicon()
    if word in stop_words:
        return ()
    forms: dict[str, None] = {}
    for lemmas in lemminflect.getAllLemmas(word).values():
        for lemma in lemmas:
            forms[lemma] = None
            for inflected in lemminflect.getAllInflections(lemma).values():
                forms.update(dict.fromkeys(inflected))
    forms.pop(word, None)
    return tuple(forms)


def load_lexicon() -> None:
    """Import and read the lexicon now (about 2 s) rather than on the first recall; both
    tables load lazily, the inflections' on the first call (~80 ms)."""
    lemminflect = _lexicon()[0]
    lemminflect.getAllLemmas("warm")
    lemminflect.getAllInflections("warm")
