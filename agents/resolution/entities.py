"""Entity resolution: map an extracted mention onto a known entity of the bank, or mint a new one.

Rules, tried in order for one mention (see `resolve_mention`):

1. exact    normalized mention == normalized canonical name of a kind-compatible candidate
            (compatible: either kind is ``other``, or both are concepts, or both are named kinds
            -- person/org/location/product/event -- mirroring the id spaces of `entity_id_for`).
2. alias    normalized mention == a normalized alias of a kind-compatible candidate.
3. fuzzy    rapidfuzz ``token_sort_ratio`` on normalized names (canonical and aliases), kinds
            equal or one of them ``other``; accepted at >= FUZZY_ACCEPT.
4. prefix   persons only: a single-token name of >= 3 characters that is a prefix of exactly
            one known person's first name resolves to that person ("Mel" -> "Melanie",
            "Alice" -> "Alice Chen"). The rule is symmetric: a mention whose first name extends a
            known single-token person ("Melanie" when only "Mel" is known) resolves too, so the
            merge does not depend on which form arrived first. Two or more matching persons:
            no merge, the result is a new entity flagged ``borderline``.
5. new      deterministic id from `entity_id_for`.

Co-occurrence (candidate's ``co_entities`` ∩ ``context_entity_ids``) and recency (``last_seen``
near ``when``) add at most 0.05 to a candidate's rank: they only order several candidates that
passed a rule, they never make a rejected candidate pass.

``borderline`` marks decisions a later LLM pass may revisit: fuzzy scores in
[BORDERLINE_LOW, BORDERLINE_HIGH), prefix matches of a strict prefix, near-ties between
candidates, exact matches across two different specific kinds, and ambiguous prefixes. Without an
LLM the rule's decision stands.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Literal
from uuid import UUID

from rapidfuzz import fuzz

from tempr.schemas.events import EntityMention, ResolvedEntity
from tempr.schemas.ids import stable_id

__all__ = [
    "BORDERLINE_HIGH",
    "BORDERLINE_LOW",
    "FUZZY_ACCEPT",
    "PREFIX_MIN_LEN",
    "EntityKind",
    "KnownEntity",
    "MatchedBy",
    "Resolution",
    "display_name",
    "entity_id_for",
    "merge_resolution",
    "normalize_kind",
    "normalize_name",
    "resolve_mention",
    "resolve_mentions",
]

EntityKind = Literal["person", "org", "location", "product", "concept", "event", "other"]
MatchedBy = Literal["exact", "alias", "fuzzy", "prefix", "new"]

# token_sort_ratio / 100 on normalized names. Measured anchors: "carolin"/"caroline" 0.933 (typo,
# merge confidently); "sara"/"sarah", "katherine"/"catherine" 0.889 (merge, but borderline);
# "caroline"/"carolina" 0.875, "jon"/"john" 0.857, "carolyn"/"caroline" 0.80 (often distinct
# people: keep apart, flagged borderline). Below 0.80 the names are simply different.
BORDERLINE_LOW = 0.80
FUZZY_ACCEPT = 0.88
BORDERLINE_HIGH = 0.92
PREFIX_MIN_LEN = 3
# Ranking bonuses only: they order candidates that already passed a rule and never change
# acceptance, so together they stay small (<= 0.05) next to the similarity itself.
_CO_OCCURRENCE_STEP = 0.01
_CO_OCCURRENCE_MAX = 0.03
_RECENCY_MAX = 0.02
_RECENCY_HORIZON_DAYS = 30.0
_NEAR_TIE = 0.005

_KIND_LABELS: dict[EntityKind, tuple[str, ...]] = {
    # spaCy / OntoNotes labels first, then free-text kinds an LLM tends to emit.
    "person": (
        "person", "per", "people", "human", "individual", "character", "speaker", "user",
        "friend", "family",
    ),
    "org": (
        "org", "organization", "organisation", "company", "business", "institution", "agency",
        "team", "band", "club", "school", "university", "college", "group",
    ),
    "location": (
        "gpe", "loc", "fac", "location", "place", "city", "country", "region", "state",
        "address", "venue", "landmark", "park", "building", "geo",
    ),
    "product": (
        "product", "work_of_art", "software", "tool", "app", "application", "device", "brand",
        "book", "movie", "film", "song", "album", "game", "show", "artwork", "library",
        "framework",
    ),
    "event": (
        "event", "holiday", "meeting", "conference", "festival", "concert", "party", "trip",
        "ceremony",
    ),
    "concept": (
        "concept", "norp", "law", "language", "topic", "idea", "skill", "hobby", "activity",
        "interest", "field", "subject", "emotion", "theme", "cause",
    ),
    "other": (
        "other", "misc", "date", "time", "money", "quantity", "percent", "cardinal", "ordinal",
        "unknown", "thing", "animal", "pet",
    ),
}  # fmt: skip
_KIND_ALIASES: dict[str, EntityKind] = {
    label: kind for kind, labels in _KIND_LABELS.items() for label in labels
}

_APOSTROPHES = re.compile(r"[\u2018\u2019\u02bc`´]")
_POSSESSIVE = re.compile(r"(?<=\w)'s\b|(?<=s)'(?=\s|$)")
_ACRONYM = re.compile(r"(?<!\w)(?:[^\W\d_]\.){2,}")
_NON_WORD = re.compile(r"[\W_]+")
_CORPORATE_SUFFIXES = frozenset({"inc", "llc", "ltd", "corp", "corporation", "incorporated", "plc", "gmbh"})
_DISPLAY_TRIM = " \t\n\"'“”‘’`,;:!?()[]{}<>"


@dataclass(slots=True)
class KnownEntity:
    """A candidate entity as the caller loaded it (from Postgres or an earlier batch)."""

    entity_id: UUID
    canonical_name: str
    kind: str = "other"
    aliases: list[str] = field(default_factory=list)
    mention_count: int = 0
    last_seen: datetime | None = None
    co_entities: set[UUID] = field(default_factory=set)

    @classmethod
    def from_resolved(
        cls,
        entity: ResolvedEntity,
        *,
        mention_count: int = 0,
        co_entities: Iterable[UUID] = (),
    ) -> KnownEntity:
        return cls(
            entity_id=entity.entity_id,
            canonical_name=entity.canonical_name,
            kind=normalize_kind(entity.kind),
            aliases=list(entity.aliases),
            mention_count=mention_count,
            last_seen=entity.last_seen,
            co_entities=set(co_entities),
        )


@dataclass(frozen=True, slots=True)
class Resolution:
    """Outcome for one mention. ``surface`` is the cleaned mention text (an alias to record)."""

    entity_id: UUID
    canonical_name: str
    kind: str
    is_new: bool
    matched_by: MatchedBy
    score: float
    borderline: bool
    surface: str


# --------------------------------------------------------------------------- normalization


def normalize_name(name: str) -> str:
    """Matching key: accent-folded, casefolded, no possessive/punctuation/leading "the"."""
    text = unicodedata.normalize("NFKD", name)
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).casefold()
    text = _APOSTROPHES.sub("'", text)
    text = _POSSESSIVE.sub("", text)
    text = _ACRONYM.sub(lambda m: m.group().replace(".", ""), text)
    # "O'Brien" and "OBrien" are the same spelling choice; a space would split the token.
    text = text.replace("'", "")
    tokens = _NON_WORD.sub(" ", text).split()
    if len(tokens) > 1 and tokens[0] == "the":
        tokens = tokens[1:]
    while len(tokens) > 1 and tokens[-1] in _CORPORATE_SUFFIXES:
        tokens = tokens[:-1]
    return " ".join(tokens) or " ".join(name.casefold().split())


def display_name(name: str) -> str:
    """Human-facing form of a mention: case kept, whitespace collapsed, possessive dropped."""
    text = _APOSTROPHES.sub("'", " ".join(name.split())).strip(_DISPLAY_TRIM)
    text = _POSSESSIVE.sub("", text).strip(_DISPLAY_TRIM)
    return text or name.strip()


def normalize_kind(kind: str | None) -> EntityKind:
    """Map spaCy labels and free-text kinds onto the seven kinds; unknown -> ``other``."""
    if not kind:
        return "other"
    key = "_".join(_NON_WORD.sub(" ", kind.casefold()).split())
    found = _KIND_ALIASES.get(key)
    if found is not None:
        return found
    # "tech company", "national park", "board games": the head noun is usually last.
    for token in reversed(key.split("_")):
        found = _KIND_ALIASES.get(token) or _KIND_ALIASES.get(token.removesuffix("s"))
        if found is not None:
            return found
    return "other"


def _id_space(kind: str) -> str:
    return "concept" if kind == "concept" else "named"


def entity_id_for(bank_id: str, name: str, kind: str | None = "other") -> UUID:
    """Deterministic id of a *new* entity.

    Two resolvers of one bank running concurrently cannot see each other's fresh entities; if
    both mint "Caroline", deriving the id from (bank, normalized name) makes them produce the same
    id, so the upserts converge on one row instead of two duplicates. Concepts live in their own
    id space so "apple" (concept) and "Apple" (org) are two rows; every other kind shares the
    plain ``stable_id(bank_id, "entity", normalize_name(name))`` because LLM kind labels for proper
    nouns are noisy (Google as org or product, Paris as location or other).
    """
    norm = normalize_name(name)
    if _id_space(normalize_kind(kind)) == "concept":
        return stable_id(bank_id, "entity", norm, "concept")
    return stable_id(bank_id, "entity", norm)


# --------------------------------------------------------------------------- candidate index


@dataclass(slots=True)
class _Entry:
    entity: KnownEntity
    kind: EntityKind
    norm: str
    alias_norms: tuple[str, ...]


class _Registry:
    """Candidates indexed by normalized canonical name and alias; updatable during a batch."""

    def __init__(self, candidates: Iterable[KnownEntity]) -> None:
        self.entries: dict[UUID, _Entry] = {}
        self.by_name: dict[str, list[UUID]] = {}
        self.by_alias: dict[str, list[UUID]] = {}
        for candidate in candidates:
            self.put(candidate)

    def put(self, entity: KnownEntity) -> None:
        old = self.entries.get(entity.entity_id)
        if old is not None:
            self._unindex(old)
        norm = normalize_name(entity.canonical_name)
        alias_norms = tuple(dict.fromkeys(a for a in map(normalize_name, entity.aliases) if a != norm))
        entry = _Entry(entity, normalize_kind(entity.kind), norm, alias_norms)
        self.entries[entity.entity_id] = entry
        self.by_name.setdefault(norm, []).append(entity.entity_id)
        for alias in alias_norms:
            self.by_alias.setdefault(alias, []).append(entity.entity_id)

    def _unindex(self, entry: _Entry) -> None:
        eid = entry.entity.entity_id
        self.by_name[entry.norm].remove(eid)
        for alias in entry.alias_norms:
            self.by_alias[alias].remove(eid)

    def lookup(self, index: dict[str, list[UUID]], norm: str) -> list[_Entry]:
        return [self.entries[eid] for eid in index.get(norm, ())]


# --------------------------------------------------------------------------- scoring helpers


@dataclass(frozen=True, slots=True)
class _Scored:
    entry: _Entry
    base: float
    rank: float


def _exact_compatible(mention_kind: str, candidate_kind: str) -> bool:
    if "other" in (mention_kind, candidate_kind):
        return True
    return _id_space(mention_kind) == _id_space(candidate_kind)


def _fuzzy_compatible(mention_kind: str, candidate_kind: str) -> bool:
    return mention_kind == candidate_kind or "other" in (mention_kind, candidate_kind)


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _bonus(entity: KnownEntity, when: datetime | None, context: set[UUID]) -> float:
    shared = len(entity.co_entities & context)
    bonus = min(_CO_OCCURRENCE_MAX, _CO_OCCURRENCE_STEP * shared)
    if when is not None and entity.last_seen is not None:
        days = abs((_aware(when) - _aware(entity.last_seen)).total_seconds()) / 86400.0
        bonus += _RECENCY_MAX * max(0.0, 1.0 - days / _RECENCY_HORIZON_DAYS)
    return bonus


def _rank(
    entries: Iterable[tuple[_Entry, float]], kind: str, when: datetime | None, context: set[UUID]
) -> list[_Scored]:
    scored = [_Scored(e, base, base + _bonus(e.entity, when, context)) for e, base in entries]
    # Same kind first, then score, then the more established entity; the id makes it total.
    scored.sort(
        key=lambda s: (
            s.entry.kind != kind,
            -s.rank,
            -s.entry.entity.mention_count,
            str(s.entry.entity.entity_id),
        )
    )
    return scored


def _near_tie(ranked: Sequence[_Scored]) -> bool:
    return len(ranked) > 1 and ranked[0].rank - ranked[1].rank < _NEAR_TIE


def _fuzzy_score(norm: str, entry: _Entry) -> float:
    names = (entry.norm, *entry.alias_norms)
    return max(fuzz.token_sort_ratio(norm, other, processor=None) for other in names) / 100.0


def _first_token(norm: str) -> str:
    return norm.split(" ", 1)[0]


def _prefix_score(mention_norm: str, entry: _Entry) -> float | None:
    """Score of the person prefix rule between two names, None when it does not apply."""
    best: float | None = None
    mention_tokens = mention_norm.split()
    for name in (entry.norm, *entry.alias_norms):
        name_tokens = name.split()
        pairs: list[tuple[str, str]] = []
        if len(mention_tokens) == 1:
            pairs.append((mention_tokens[0], name_tokens[0]))
        if len(name_tokens) == 1:
            pairs.append((name_tokens[0], mention_tokens[0]))
        for short, long in pairs:
            if len(short) < PREFIX_MIN_LEN or not long.startswith(short):
                continue
            score = 0.8 + 0.2 * len(short) / len(long)
            best = score if best is None else max(best, score)
    return best


# --------------------------------------------------------------------------- resolution


def _resolved(
    scored: _Scored, mention_kind: EntityKind, matched_by: MatchedBy, borderline: bool, surface: str
) -> Resolution:
    entity = scored.entry.entity
    # A candidate stored as "other" learns the mention's specific kind (the store does the same).
    kind = scored.entry.kind if scored.entry.kind != "other" else mention_kind
    return Resolution(
        entity_id=entity.entity_id,
        canonical_name=entity.canonical_name,
        kind=kind,
        is_new=False,
        matched_by=matched_by,
        score=round(scored.base, 4),
        borderline=borderline,
        surface=surface,
    )


def _match_name(
    registry: _Registry,
    index: dict[str, list[UUID]],
    norm: str,
    kind: EntityKind,
    when: datetime | None,
    context: set[UUID],
) -> tuple[_Scored, bool] | None:
    hits = [(e, 1.0) for e in registry.lookup(index, norm) if _exact_compatible(kind, e.kind)]
    if not hits:
        return None
    ranked = _rank(hits, kind, when, context)
    top = ranked[0].entry.kind
    cross_kind = "other" not in (kind, top) and kind != top
    return ranked[0], len(ranked) > 1 or cross_kind


def _match_fuzzy(
    registry: _Registry, norm: str, kind: EntityKind, when: datetime | None, context: set[UUID]
) -> tuple[list[_Scored], float]:
    """Accepted candidates ranked best first, and the best base score seen (for borderline)."""
    scores = [
        (entry, _fuzzy_score(norm, entry))
        for entry in registry.entries.values()
        if _fuzzy_compatible(kind, entry.kind)
    ]
    best = max((s for _, s in scores), default=0.0)
    accepted = [(e, s) for e, s in scores if s >= FUZZY_ACCEPT]
    return _rank(accepted, kind, when, context), best


def _match_prefix(
    registry: _Registry, norm: str, kind: EntityKind, when: datetime | None, context: set[UUID]
) -> list[_Scored]:
    if kind not in ("person", "other"):
        return []
    hits: list[tuple[_Entry, float]] = []
    for entry in registry.entries.values():
        if entry.kind != "person":
            continue
        score = _prefix_score(norm, entry)
        if score is not None:
            hits.append((entry, score))
    return _rank(hits, kind, when, context)


def _resolve_one(
    mention: EntityMention,
    registry: _Registry,
    bank_id: str,
    when: datetime | None,
    context: set[UUID],
) -> Resolution:
    norm = normalize_name(mention.name)
    kind = normalize_kind(mention.kind)
    surface = display_name(mention.name)

    exact_then_alias: tuple[tuple[dict[str, list[UUID]], MatchedBy], ...] = (
        (registry.by_name, "exact"),
        (registry.by_alias, "alias"),
    )
    for index, matched_by in exact_then_alias:
        hit = _match_name(registry, index, norm, kind, when, context)
        if hit is not None:
            return _resolved(hit[0], kind, matched_by, hit[1], surface)

    fuzzy, best_fuzzy = _match_fuzzy(registry, norm, kind, when, context)
    if fuzzy:
        top = fuzzy[0]
        borderline = top.base < BORDERLINE_HIGH or _near_tie(fuzzy)
        return _resolved(top, kind, "fuzzy", borderline, surface)

    prefix = _match_prefix(registry, norm, kind, when, context)
    if len(prefix) == 1:
        return _resolved(prefix[0], kind, "prefix", prefix[0].base < BORDERLINE_HIGH, surface)

    best_prefix = max((p.base for p in prefix), default=0.0)
    return Resolution(
        entity_id=entity_id_for(bank_id, mention.name, kind),
        canonical_name=surface,
        kind=kind,
        is_new=True,
        matched_by="new",
        score=round(max(best_fuzzy, best_prefix), 4),
        borderline=len(prefix) > 1 or best_fuzzy >= BORDERLINE_LOW,
        surface=surface,
    )


def resolve_mention(
    mention: EntityMention,
    candidates: Sequence[KnownEntity],
    *,
    bank_id: str,
    when: datetime | None = None,
    context_entity_ids: set[UUID] | None = None,
) -> Resolution:
    """Resolve one mention against ``candidates`` (rules in the module docstring)."""
    registry = _Registry(candidates)
    return _resolve_one(mention, registry, bank_id, when, set(context_entity_ids or ()))


def resolve_mentions(
    mentions: Sequence[EntityMention],
    candidates: Sequence[KnownEntity],
    *,
    bank_id: str,
    when: datetime | None = None,
    context_entity_ids: set[UUID] | None = None,
) -> list[Resolution]:
    """Resolve a batch in order; each result becomes a candidate for the mentions after it.

    Entities resolved earlier in the batch also join the co-occurrence context of later ones.
    ``candidates`` is not mutated.
    """
    registry = _Registry(
        replace(c, aliases=list(c.aliases), co_entities=set(c.co_entities)) for c in candidates
    )
    context = set(context_entity_ids or ())
    results: list[Resolution] = []
    for mention in mentions:
        resolution = _resolve_one(mention, registry, bank_id, when, context)
        entry = registry.entries.get(resolution.entity_id)
        registry.put(merge_resolution(entry.entity if entry else None, resolution, when))
        context.add(resolution.entity_id)
        results.append(resolution)
    return results


def merge_resolution(
    known: KnownEntity | None, resolution: Resolution, when: datetime | None = None
) -> KnownEntity:
    """The candidate row after ``resolution`` is applied (what an upsert would store).

    The surface form becomes an alias when it normalizes differently from the canonical name, so
    the next "Mel" is an alias hit instead of another prefix guess.
    """
    if known is None:
        return KnownEntity(
            entity_id=resolution.entity_id,
            canonical_name=resolution.canonical_name,
            kind=resolution.kind,
            mention_count=1,
            last_seen=when,
        )
    aliases = list(known.aliases)
    surface_norm = normalize_name(resolution.surface)
    known_norms = {normalize_name(known.canonical_name), *map(normalize_name, aliases)}
    if surface_norm not in known_norms:
        aliases.append(resolution.surface)
    last_seen = known.last_seen
    if when is not None and (last_seen is None or _aware(when) > _aware(last_seen)):
        last_seen = when
    kind = known.kind if normalize_kind(known.kind) != "other" else resolution.kind
    return replace(
        known,
        kind=kind,
        aliases=aliases,
        mention_count=known.mention_count + 1,
        last_seen=last_seen,
        co_entities=set(known.co_entities),
    )
