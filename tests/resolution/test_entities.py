from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest

from tempr.agents.resolution.entities import (
    KnownEntity,
    Resolution,
    display_name,
    entity_id_for,
    merge_resolution,
    normalize_kind,
    normalize_name,
    resolve_mention,
    resolve_mentions,
)
from tempr.schemas.events import EntityMention, ResolvedEntity
from tempr.schemas.ids import stable_id

BANK = "bank-1"
NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def known(name: str, kind: str = "person", **kw: object) -> KnownEntity:
    return KnownEntity(entity_id=entity_id_for(BANK, name, kind), canonical_name=name, kind=kind, **kw)


def resolve(name: str, candidates: list[KnownEntity], kind: str = "person", **kw) -> Resolution:
    return resolve_mention(EntityMention(name=name, kind=kind), candidates, bank_id=BANK, **kw)


class FakeEntityTable:
    """Stands in for the entities table: resolutions are upserted, then reloaded as candidates."""

    def __init__(self) -> None:
        self.rows: dict[UUID, KnownEntity] = {}

    def candidates(self) -> list[KnownEntity]:
        return list(self.rows.values())

    def apply(self, resolutions: list[Resolution], when: datetime) -> None:
        for res in resolutions:
            self.rows[res.entity_id] = merge_resolution(self.rows.get(res.entity_id), res, when)


# --------------------------------------------------------------------------- normalization


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Caroline", "caroline"),
        ("Caroline's", "caroline"),
        ("CAROLINE’S", "caroline"),
        ("  caroline  ", "caroline"),
        ("The  Beatles", "beatles"),
        ("Google Inc.", "google"),
        ("U.S.A.", "usa"),
        ("O'Brien", "obrien"),
        ("José", "jose"),
        ("Stanford-University!", "stanford university"),
        ("the", "the"),
        ("!!!", "!!!"),
    ],
)
def test_normalize_name(raw: str, expected: str) -> None:
    assert normalize_name(raw) == expected


def test_display_name_keeps_case_drops_possessive() -> None:
    assert display_name("  Caroline's ") == "Caroline"
    assert display_name('"Bob  Chen"') == "Bob Chen"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("PERSON", "person"),
        ("ORG", "org"),
        ("GPE", "location"),
        ("LOC", "location"),
        ("FAC", "location"),
        ("PRODUCT", "product"),
        ("EVENT", "event"),
        ("WORK_OF_ART", "product"),
        ("NORP", "concept"),
        ("DATE", "other"),
        ("Organization", "org"),
        ("tech company", "org"),
        ("national park", "location"),
        ("board games", "product"),
        ("hobby", "concept"),
        ("", "other"),
        (None, "other"),
        ("gibberish", "other"),
    ],
)
def test_normalize_kind(raw: str | None, expected: str) -> None:
    assert normalize_kind(raw) == expected


def test_entity_id_is_stable_id_of_normalized_name() -> None:
    expected = stable_id(BANK, "entity", "caroline")
    assert entity_id_for(BANK, "Caroline") == expected
    assert entity_id_for(BANK, "caroline's", "PERSON") == expected
    assert entity_id_for(BANK, "Caroline", "location") == expected
    assert entity_id_for("other-bank", "Caroline") != expected
    # Concepts have their own id space: "apple" the fruit is not "Apple" the company.
    assert entity_id_for(BANK, "apple", "concept") != entity_id_for(BANK, "Apple", "org")


# --------------------------------------------------------------------------- exact, alias


def test_variants_of_a_name_resolve_to_the_same_entity() -> None:
    caroline = known("Caroline")
    for variant in ("Caroline's", "caroline", "CAROLINE", " Caroline "):
        res = resolve(variant, [caroline])
        assert (res.entity_id, res.matched_by, res.is_new) == (caroline.entity_id, "exact", False)
        assert res.score == 1.0 and not res.borderline


def test_caroline_400_mentions_across_many_batches_is_one_entity() -> None:
    table = FakeEntityTable()
    surfaces = itertools.cycle(["Caroline", "caroline", "Caroline's", "CAROLINE", "Carolin"])
    kinds = itertools.cycle(["person", "PERSON", "other"])
    seen: set[UUID] = set()
    for batch in range(40):
        mentions = [EntityMention(name=next(surfaces), kind=next(kinds)) for _ in range(10)]
        when = NOW + timedelta(hours=batch)
        results = resolve_mentions(mentions, table.candidates(), bank_id=BANK, when=when)
        table.apply(results, when)
        seen.update(r.entity_id for r in results)
    assert seen == {entity_id_for(BANK, "Caroline")}
    (row,) = table.rows.values()
    assert row.canonical_name == "Caroline"
    assert row.kind == "person"
    assert row.mention_count == 400
    assert row.aliases == ["Carolin"]  # the typo, once; case/possessive variants are not aliases


def test_repeated_name_in_one_batch_creates_one_entity() -> None:
    mentions = [EntityMention(name="Caroline", kind="person")] * 3
    results = resolve_mentions(mentions, [], bank_id=BANK)
    assert len({r.entity_id for r in results}) == 1
    assert [r.is_new for r in results] == [True, False, False]
    assert [r.matched_by for r in results] == ["new", "exact", "exact"]


def test_alias_match() -> None:
    melanie = known("Melanie", aliases=["Mel"])
    res = resolve("mel", [melanie])
    assert (res.entity_id, res.matched_by, res.borderline) == (melanie.entity_id, "alias", False)


def test_batch_does_not_mutate_candidates() -> None:
    melanie = known("Melanie")
    resolve_mentions([EntityMention(name="Mel", kind="person")], [melanie], bank_id=BANK)
    assert melanie.aliases == [] and melanie.mention_count == 0


# --------------------------------------------------------------------------- fuzzy


def test_fuzzy_typo_resolves_confidently() -> None:
    caroline = known("Caroline")
    res = resolve("Carolin", [caroline])
    assert (res.entity_id, res.matched_by, res.is_new) == (caroline.entity_id, "fuzzy", False)
    assert res.score == pytest.approx(0.9333, abs=1e-4)
    assert not res.borderline


def test_fuzzy_in_band_resolves_but_is_borderline() -> None:
    sarah = known("Sarah")
    res = resolve("Sara", [sarah])
    assert (res.entity_id, res.matched_by, res.borderline) == (sarah.entity_id, "fuzzy", True)


def test_similar_but_distinct_name_is_new_and_borderline() -> None:
    caroline = known("Caroline")
    res = resolve("Carolyn", [caroline])  # token_sort_ratio 0.80
    assert res.is_new and res.matched_by == "new" and res.borderline
    assert res.entity_id == entity_id_for(BANK, "Carolyn")


def test_unrelated_name_is_new_and_not_borderline() -> None:
    res = resolve("Bob", [known("Caroline")])
    assert res.is_new and not res.borderline


def test_fuzzy_requires_compatible_kind() -> None:
    caroline = known("Caroline")
    assert resolve("Carolin", [caroline], kind="location").is_new
    assert resolve("Carolin", [caroline], kind="other").entity_id == caroline.entity_id


def test_fuzzy_tie_broken_by_co_occurrence_then_recency() -> None:
    context = stable_id("some", "entity")
    katharine = known("Katharine", co_entities={context})
    catherine = known("Catherine", last_seen=NOW - timedelta(days=1))
    plain = [known("Katharine"), known("Catherine")]
    # "katherine" is one edit from both (0.889 each).
    res = resolve("Katherine", plain)
    assert res.borderline and res.matched_by == "fuzzy"  # a near-tie, decided by id only
    assert res == resolve("Katherine", list(reversed(plain)))
    assert resolve("Katherine", [katharine, plain[1]], context_entity_ids={context}).entity_id == (
        katharine.entity_id
    )
    assert resolve("Katherine", [plain[0], catherine], when=NOW).entity_id == catherine.entity_id


# --------------------------------------------------------------------------- person prefix rule


def test_short_person_name_resolves_to_the_one_longer_first_name() -> None:
    melanie = known("Melanie")
    res = resolve("Mel", [melanie])
    assert (res.entity_id, res.matched_by, res.is_new) == (melanie.entity_id, "prefix", False)
    assert res.canonical_name == "Melanie"
    assert res.score == pytest.approx(0.8 + 0.2 * 3 / 7, abs=1e-4)
    assert res.borderline  # a strict prefix is a guess a later LLM may overturn


def test_long_name_resolves_to_the_known_short_form() -> None:
    """Symmetric rule: "Mel" first, then "Melanie" joins Mel's entity, canonical stays "Mel"."""
    mel = known("Mel")
    res = resolve("Melanie", [mel])
    assert (res.entity_id, res.matched_by, res.canonical_name) == (mel.entity_id, "prefix", "Mel")


@pytest.mark.parametrize("order", [("Melanie", "Mel"), ("Mel", "Melanie")])
def test_mel_melanie_merge_whatever_the_order(order: tuple[str, str]) -> None:
    mentions = [EntityMention(name=n, kind="person") for n in order]
    first, second = resolve_mentions(mentions, [], bank_id=BANK)
    assert first.is_new and not second.is_new
    assert second.entity_id == first.entity_id == entity_id_for(BANK, order[0])
    assert second.matched_by == "prefix"


def test_first_name_resolves_to_full_name() -> None:
    alice = known("Alice Chen")
    res = resolve("Alice", [alice])
    assert (res.entity_id, res.matched_by, res.borderline) == (alice.entity_id, "prefix", False)
    assert resolve("Alice Chen", [known("Alice")]).matched_by == "prefix"
    # Two full names with different surnames stay apart.
    assert resolve("Alice Cooper", [alice]).is_new


def test_ambiguous_prefix_is_new_and_borderline() -> None:
    res = resolve("Mel", [known("Melanie"), known("Melissa")])
    assert res.is_new and res.matched_by == "new" and res.borderline
    assert res.entity_id == entity_id_for(BANK, "Mel")


def test_prefix_rule_limits() -> None:
    assert resolve("Al", [known("Alice")]).is_new  # shorter than 3 characters
    assert resolve("Mel", [known("Melanie", kind="location")]).is_new  # persons only
    assert resolve("Mel", [known("Melanie")], kind="org").is_new
    assert resolve("Mel", [known("Melanie")], kind="other").matched_by == "prefix"


# --------------------------------------------------------------------------- kinds


def test_apple_company_and_apple_fruit_stay_apart() -> None:
    apple_org = known("Apple", kind="org")
    fruit = resolve("apple", [apple_org], kind="concept")
    assert fruit.is_new and fruit.entity_id == entity_id_for(BANK, "apple", "concept")
    assert fruit.entity_id != apple_org.entity_id
    # A mention without a kind goes to the existing row; both rows existing is a borderline pick.
    assert resolve("apple", [apple_org], kind="other").entity_id == apple_org.entity_id
    apple_fruit = known("apple", kind="concept")
    assert resolve("Apple", [apple_org, apple_fruit], kind="ORG").entity_id == apple_org.entity_id
    assert resolve("apple", [apple_org, apple_fruit], kind="concept").entity_id == (apple_fruit.entity_id)
    assert resolve("apple", [apple_org, apple_fruit], kind="other").borderline


def test_exact_name_across_named_kinds_merges_as_borderline() -> None:
    google = known("Google", kind="org")
    res = resolve("Google", [google], kind="product")
    assert res.entity_id == google.entity_id and res.kind == "org" and res.borderline


def test_candidate_of_kind_other_learns_the_mention_kind() -> None:
    row = known("Caroline", kind="other")
    res = resolve("Caroline", [row], kind="PERSON")
    assert res.kind == "person"
    assert merge_resolution(row, res, NOW).kind == "person"


# --------------------------------------------------------------------------- determinism


def test_two_independent_resolvers_agree() -> None:
    names = ["Caroline", "Mel", "Melanie", "Apple", "caroline's", "Bob Chen", "Bob"]
    mentions = [EntityMention(name=n, kind="person") for n in names]
    first = resolve_mentions(mentions, [], bank_id=BANK, when=NOW)
    second = resolve_mentions(mentions, [], bank_id=BANK, when=NOW)
    assert first == second
    # Two resolvers that cannot see each other's fresh rows still mint the same id.
    a = resolve("Caroline", [known("Melanie")])
    b = resolve("caroline", [known("Bob")])
    assert a.is_new and b.is_new and a.entity_id == b.entity_id


def test_known_entity_from_resolved_entity_row() -> None:
    row = ResolvedEntity(
        entity_id=entity_id_for(BANK, "Caroline"),
        canonical_name="Caroline",
        kind="PERSON",
        aliases=["Caro"],
        last_seen=NOW,
    )
    entity = KnownEntity.from_resolved(row, mention_count=3)
    assert entity.kind == "person" and entity.aliases == ["Caro"] and entity.mention_count == 3
    assert resolve("caro", [entity]).matched_by == "alias"
