"""Time expressions resolved against a fixed reference (Monday 8 May 2023, 13:56 UTC)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from tempr.dates import (
    TimeRange,
    find_time_ranges,
    format_time_range,
    parse_time_expression,
)

REF = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def _d(y: int, m: int, d: int, end: bool = False) -> datetime:
    if end:
        return datetime(y, m, d, 23, 59, 59, tzinfo=UTC)
    return datetime(y, m, d, tzinfo=UTC)


WINDOWS = [
    ("It happened on 8 May, 2023.", _d(2023, 5, 8), _d(2023, 5, 8, True)),
    ("We met on May 3rd.", _d(2023, 5, 3), _d(2023, 5, 3, True)),
    ("Due 2023-04-01 at noon", _d(2023, 4, 1), _d(2023, 4, 1, True)),
    ("Signed on 3/20/2022.", _d(2022, 3, 20), _d(2022, 3, 20, True)),
    ("I went to a support group yesterday.", _d(2023, 5, 7), _d(2023, 5, 7, True)),
    ("What happened last night?", _d(2023, 5, 7), _d(2023, 5, 7, True)),
    ("What did we do last week?", _d(2023, 5, 1), _d(2023, 5, 7, True)),
    ("I started two weeks ago.", _d(2023, 4, 24), _d(2023, 4, 30, True)),
    ("She called three days ago.", _d(2023, 5, 5), _d(2023, 5, 5, True)),
    ("A few days ago it rained.", _d(2023, 5, 3), _d(2023, 5, 6, True)),
    ("What did Alice do last spring?", _d(2022, 3, 1), _d(2022, 5, 31, True)),
    ("Any plans this summer?", _d(2023, 6, 1), _d(2023, 8, 31, True)),
    ("It was cold last winter.", _d(2022, 12, 1), _d(2023, 2, 28, True)),
    ("We moved in the fall of 2022.", _d(2022, 9, 1), _d(2022, 11, 30, True)),
    ("Trips between March and May", _d(2023, 3, 1), _d(2023, 5, 31, True)),
    ("from June to August 2023", _d(2023, 6, 1), _d(2023, 8, 31, True)),
    ("from November to February", _d(2022, 11, 1), _d(2023, 2, 28, True)),
    ("What happened in June 2023?", _d(2023, 6, 1), _d(2023, 6, 30, True)),
    ("What did she do in 2022?", _d(2022, 1, 1), _d(2022, 12, 31, True)),
    ("I was there in May.", _d(2023, 5, 1), _d(2023, 5, 31, True)),
    ("Made ice cream last Friday.", _d(2023, 5, 5), _d(2023, 5, 5, True)),
    ("Went fishing last weekend.", _d(2023, 5, 6), _d(2023, 5, 7, True)),
    ("A show next month!", _d(2023, 6, 1), _d(2023, 6, 30, True)),
    ("A book I read last year", _d(2022, 1, 1), _d(2022, 12, 31, True)),
    ("in late 2022", _d(2022, 9, 1), _d(2022, 12, 31, True)),
    ("the week before 9 June 2023", _d(2023, 6, 2), _d(2023, 6, 8, True)),
]


@pytest.mark.parametrize(("text", "start", "end"), WINDOWS)
def test_windows(text: str, start: datetime, end: datetime) -> None:
    tr = parse_time_expression(text, REF)
    assert tr is not None, text
    assert (tr.start, tr.end) == (start, end), text
    assert tr.start <= tr.end
    assert tr.start.tzinfo is not None and tr.start.utcoffset() == timedelta(0)


@pytest.mark.parametrize(
    "text",
    [
        "May I ask you something?",
        "What does Caroline like?",
        "We march for equal rights.",
        "I have 3 kids and 2022 followers",
        "Right now I am busy.",
        "The second time was better.",
        "We sat in the sun.",
        "I love Fridays.",
        "I've been reading a lot recently.",
        "That was the last time.",
        "I may 3D print it.",
        "",
    ],
)
def test_no_time_expression(text: str) -> None:
    assert parse_time_expression(text, REF) is None


def test_since_runs_until_the_reference() -> None:
    tr = parse_time_expression("I've been painting since 2020", REF)
    assert tr is not None
    assert (tr.start, tr.end) == (_d(2020, 1, 1), REF)


def test_rolling_window_with_the() -> None:
    tr = parse_time_expression("in the past month", REF)
    assert tr is not None
    assert tr.end == REF and tr.start == REF - timedelta(days=30)


def test_find_time_ranges_in_reading_order_with_spans() -> None:
    text = "Yesterday I ran, and last week I swam."
    ranges = find_time_ranges(text, REF)
    assert [r.expression for r in ranges] == ["Yesterday", "last week"]
    assert all(text[r.span[0] : r.span[1]] == r.expression for r in ranges)
    assert all(r.relative for r in ranges)


def test_absolute_dates_are_not_relative() -> None:
    (tr,) = find_time_ranges("Back on 8 May, 2023 we met.", REF)
    assert not tr.relative


def test_several_expressions_give_their_envelope() -> None:
    tr = parse_time_expression("in March 2023 or in June 2023", REF)
    assert tr is not None
    assert (tr.start, tr.end) == (_d(2023, 3, 1), _d(2023, 6, 30, True))


def test_reference_in_another_timezone_is_converted() -> None:
    # 00:30 on 9 May in UTC+2 is still 8 May in UTC.
    ref = datetime(2023, 5, 9, 0, 30, tzinfo=timezone(timedelta(hours=2)))
    tr = parse_time_expression("yesterday", ref)
    assert tr is not None and tr.start == _d(2023, 5, 7)


def test_naive_reference_is_taken_as_utc() -> None:
    tr = parse_time_expression("yesterday", datetime(2023, 5, 8, 12, 0))
    assert tr is not None and tr.start == _d(2023, 5, 7)


def test_last_season_while_in_that_season_is_the_previous_year() -> None:
    summer_ref = datetime(2023, 7, 10, tzinfo=UTC)
    tr = parse_time_expression("last summer", summer_ref)
    assert tr is not None and tr.start == _d(2022, 6, 1)
    tr = parse_time_expression("this summer", summer_ref)
    assert tr is not None and tr.start == _d(2023, 6, 1)


@pytest.mark.parametrize(
    ("start", "end", "label"),
    [
        (_d(2023, 5, 7), _d(2023, 5, 7, True), "7 May 2023"),
        (_d(2023, 5, 1), _d(2023, 5, 7, True), "1-7 May 2023"),
        (_d(2023, 5, 1), _d(2023, 5, 31, True), "May 2023"),
        (_d(2022, 3, 1), _d(2022, 5, 31, True), "spring 2022"),
        (_d(2022, 1, 1), _d(2022, 12, 31, True), "2022"),
        (_d(2023, 4, 29), _d(2023, 5, 2, True), "29 April - 2 May 2023"),
    ],
)
def test_format_time_range(start: datetime, end: datetime, label: str) -> None:
    assert format_time_range(TimeRange(start, end, "x")) == label


def test_last_weekday_on_that_weekday_is_a_week_back() -> None:
    friday = datetime(2023, 5, 12, 9, 0, tzinfo=UTC)
    tr = parse_time_expression("last Friday", friday)
    assert tr is not None and tr.start == _d(2023, 5, 5)


TENSE = [
    # A yearless date in a sentence about the future is its next occurrence ...
    ("I plan to return on July 20, I'll bring you a souvenir!", "20 July 2023"),
    ("We\u2019ll go to Kiel on 17 April.", "17 April 2024"),
    ("I will travel in the summer.", "summer 2023"),  # summer 2023 has not ended yet
    ("We hope to finish by March.", "March 2024"),
    ("I'm going to the dentist on Friday.", "12 May 2023"),
    # ... unless it has not ended yet, names its own year or direction, or the future comes later.
    ("I will see her on 10 May.", "10 May 2023"),
    ("I will visit in May.", "May 2023"),
    ("I will go back on July 20, 2022 in my mind.", "20 July 2022"),
    ("I will never forget last March.", "March 2023"),
    ("On Friday I met Ana, and she will call.", "5 May 2023"),
    ("We met in June. Tomorrow I will rest.", "June 2022"),
    # A past tense keeps the latest occurrence.
    ("I returned on July 20.", "20 July 2022"),
    ("I was going to call on Friday.", "5 May 2023"),
    ("I wanted to go in March.", "March 2023"),
]


@pytest.mark.parametrize(("text", "label"), TENSE)
def test_a_future_tense_moves_a_yearless_date_to_its_next_occurrence(text: str, label: str) -> None:
    assert format_time_range(find_time_ranges(text, REF, tense=True)[0]) == label


def test_questions_keep_the_latest_occurrence() -> None:
    (found,) = find_time_ranges("What will Ines do on July 20?", REF)
    assert format_time_range(found) == "20 July 2022"
