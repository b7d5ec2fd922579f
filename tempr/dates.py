"""Resolve time expressions in text to absolute UTC windows, relative to a reference time.

Why explicit regexes first: ``dateparser.search_dates`` happily turns "May I ask", "march on",
"now", "second" or a bare "3" into dates. Both extraction and the recall service must be
conservative (a wrong window silently filters out the right memories), so only phrases that
match one of the rules below count as temporal. ``dateparser.parse`` is still used, but only to
read the explicit calendar dates those rules have already isolated ("8 May, 2023", "May 8th",
"05/08/2023").

Window rules (all windows are whole periods, start <= end, end inclusive at second precision):

* Days: "yesterday", "last night", "today", "tomorrow", "N days ago" -> that calendar day.
* "last week" / "this week" / "next week" -> Monday..Sunday calendar weeks (ISO).
  "N weeks ago" -> the calendar week containing reference - N weeks.
* "last/this/next month|year" and "N months|years ago" -> calendar months / years.
* "the past|last week|month|year|N days|few weeks" (with "the") -> rolling window ending at
  the reference time, because "in the past month" means the last 30 days, not last May.
* "a few days ago" -> 2..5 days back; "a couple of days ago" -> 1..3 days back; likewise for
  weeks (calendar weeks), months and years: vague counts widen the window instead of guessing.
* Weekends: "last weekend" is the most recent Saturday-Sunday that ended before the reference
  day (if the reference is itself on a weekend, the one before it); "this weekend" the
  Saturday-Sunday of the reference week; "next weekend" the one after that.
* Weekdays: "last Friday" is the most recent Friday strictly before the reference day;
  "this Friday" the Friday of the reference week; "next Friday" the first Friday strictly after
  the reference day; "on Friday" the most recent Friday on or before the reference day.
* Seasons are northern-hemisphere meteorological seasons: spring = Mar-May, summer = Jun-Aug,
  fall/autumn = Sep-Nov, winter = Dec-Feb. "winter 2023" is the winter whose January and
  February fall in 2023 (Dec 2022 - Feb 2023).
  "last <season>" is the most recent occurrence that ended before the *current* season started,
  so in spring 2023 "last spring" is spring 2022 and "last winter" is Dec 2022 - Feb 2023.
  "this <season>" is the current season if we are in it, otherwise the occurrence of the
  reference year (for winter: the coming one from September on, else the one just ended).
  "next <season>" is the first occurrence starting after the reference day.
  "in the <season>" with no year is the latest occurrence that has started (may be current).
* Month names need a year, a day, or a leading preposition/modifier ("in June", "last March",
  "since May") to count: "May I ask" and "we march" are not dates. A bare month is its latest
  occurrence that has started; "last June" is the latest June before the current month.
* Years need a preposition ("in 2022", "during 2021", "since 2019") or a month/season.
* Ranges: "between March and May", "from June to August 2023" -> start of the first period to
  the end of the second; a trailing year applies to both ends, and a first period that would
  come after the second is moved back a year ("from November to February").
* "since <period>" -> from the period start to the reference time. "the week/day/month before
  <explicit date>" shifts the window around that date.
* Vague words ("recently", "lately", "now", "soon", "these days") are ignored on purpose.
* With ``tense=True`` (the fact extractor), an expression that names no year or direction
  ("on July 20", "in June", "in the summer", "on Friday") in a sentence that speaks of the
  future before it ("I plan to return on July 20", "we'll go in June") is its next
  occurrence rather than its latest one, when the latest one has already ended. Without a
  parser, the future is read from a closed set of English markers (will, 'll, going to, plan
  to, hope to ...); a sentence without one keeps the latest occurrence.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache
from typing import Any

from tempr.spans import DisjointSpans

__all__ = [
    "TimeRange",
    "find_time_ranges",
    "format_time_range",
    "parse_time_expression",
]

_SECOND = timedelta(seconds=1)


@dataclass(frozen=True)
class TimeRange:
    """An absolute UTC window a time expression refers to.

    ``relative`` tells whether the expression needed the reference time to be understood
    ("yesterday") as opposed to being absolute ("8 May 2023"); the fact extractor only
    annotates the former. ``span`` is the expression's character span in the searched text.
    """

    start: datetime
    end: datetime
    expression: str
    relative: bool = True
    span: tuple[int, int] = field(default=(-1, -1), compare=False)


# --------------------------------------------------------------------------- vocabulary

_MONTHS = {
    name: i
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_SEASONS = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}
_WEEKDAYS = {
    name: i
    for i, name in enumerate(["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"])
}
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "fifteen": 15,
    "twenty": 20,
    "thirty": 30,
}
# Vague counts -> (min, max) units back.
_VAGUE = {"couple": (1, 3), "few": (2, 5), "several": (3, 7)}

_MONTH_FULL = r"january|february|march|april|may|june|july|august|september|october|november|december"
_MONTH_ANY = _MONTH_FULL + r"|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec"
_SEASON = r"spring|summer|fall|autumn|winter"
_WEEKDAY = r"monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_YEAR = r"(?:19|20)\d{2}"
_DAY = r"(?:3[01]|[12]\d|0?[1-9])(?:st|nd|rd|th)?"
_COUNT = (
    r"\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen"
    r"|twenty|thirty|a\s+couple(?:\s+of)?|couple(?:\s+of)?|a\s+few|few|several"
)
_UNIT = r"day|week|month|year|decade|hour|minute"
_B = r"(?<![\w-])"  # left word boundary that also refuses "mid-" style joins we did not ask for
_E = r"(?![\w])"

_PERIOD = rf"(?:(?:{_MONTH_FULL}|{_SEASON})(?:\s*,?\s*(?:of\s+)?{_YEAR})?|{_YEAR})"


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


# --------------------------------------------------------------------------- window helpers


def _day(d: date) -> tuple[datetime, datetime]:
    return _days(d, d)


def _days(first: date, last: date) -> tuple[datetime, datetime]:
    start = datetime.combine(first, time(), UTC)
    end = datetime.combine(last + timedelta(days=1), time(), UTC) - _SECOND
    return start, end


def _month(year: int, month: int) -> tuple[datetime, datetime]:
    last = calendar.monthrange(year, month)[1]
    return _days(date(year, month, 1), date(year, month, last))


def _months(year: int, month: int, count: int) -> tuple[datetime, datetime]:
    """``count`` consecutive calendar months starting at (year, month)."""
    end_year, end_month = _shift_month(year, month, count - 1)
    return _month(year, month)[0], _month(end_year, end_month)[1]


def _year(year: int) -> tuple[datetime, datetime]:
    return _days(date(year, 1, 1), date(year, 12, 31))


def _week(d: date) -> tuple[datetime, datetime]:
    monday = d - timedelta(days=d.weekday())
    return _days(monday, monday + timedelta(days=6))


def _shift_month(year: int, month: int, delta: int) -> tuple[int, int]:
    index = year * 12 + (month - 1) + delta
    return index // 12, index % 12 + 1


def _season_window(start_year: int, start_month: int) -> tuple[datetime, datetime]:
    return _months(start_year, start_month, 3)


def _season_start_of(d: date) -> tuple[int, int]:
    """(year, month) at which the season containing ``d`` started."""
    if d.month == 12:
        return d.year, 12
    if d.month <= 2:
        return d.year - 1, 12
    return d.year, (d.month - 3) // 3 * 3 + 3


def _season_occurrence(season: str, label_year: int) -> tuple[int, int]:
    month = _SEASONS[season]
    return (label_year - 1, 12) if month == 12 else (label_year, month)


# --------------------------------------------------------------------------- resolvers


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str]
    resolve: Callable[[re.Match[str], date, datetime], tuple[datetime, datetime] | None]
    relative: bool = True


def _count(raw: str) -> tuple[int, int]:
    """(min, max) for a count word; exact counts give min == max."""
    word = re.sub(r"\s+", " ", raw.lower()).replace(" of", "").strip()
    word = word.removeprefix("a ").strip()
    if word in _VAGUE:
        return _VAGUE[word]
    if word.isdigit():
        return int(word), int(word)
    n = _NUMBERS.get(word, 1)
    return n, n


def _unit_back(unit: str, today: date, n: int) -> tuple[datetime, datetime]:
    """The calendar unit that lies ``n`` units before ``today`` (negative n: ahead)."""
    if unit in ("day", "hour", "minute"):
        return _day(today - timedelta(days=n if unit == "day" else 0))
    if unit == "week":
        return _week(today - timedelta(weeks=n))
    if unit == "month":
        y, m = _shift_month(today.year, today.month, -n)
        return _month(y, m)
    if unit == "decade":
        return _days(date(today.year - 10 * n, 1, 1), date(today.year - 10 * n, 12, 31))
    return _year(today.year - n)


def _resolve_ago(m: re.Match[str], today: date, ref: datetime) -> tuple[datetime, datetime]:
    low, high = _count(m.group("n"))
    unit = m.group("unit").lower()
    sign = 1 if m.group("dir").lower() in ("ago", "back", "before", "earlier") else -1
    if unit in ("hour", "minute"):
        moment = ref - sign * (timedelta(hours=high) if unit == "hour" else timedelta(minutes=high))
        return _day(moment.date())
    near, far = _unit_back(unit, today, sign * low), _unit_back(unit, today, sign * high)
    return min(near[0], far[0]), max(near[1], far[1])


def _resolve_in_n(m: re.Match[str], today: date, ref: datetime) -> tuple[datetime, datetime]:
    low, high = _count(m.group("n"))
    unit = m.group("unit").lower()
    near, far = _unit_back(unit, today, -low), _unit_back(unit, today, -high)
    return min(near[0], far[0]), max(near[1], far[1])


def _resolve_day_word(m: re.Match[str], today: date, ref: datetime) -> tuple[datetime, datetime]:
    phrase = re.sub(r"\s+", " ", m.group(0).lower())
    if "other day" in phrase:
        return _days(today - timedelta(days=7), today - timedelta(days=1))
    if "day before yesterday" in phrase:
        return _day(today - timedelta(days=2))
    if "day after tomorrow" in phrase:
        return _day(today + timedelta(days=2))
    if "yesterday" in phrase or "last night" in phrase:
        return _day(today - timedelta(days=1))
    if "tomorrow" in phrase:
        return _day(today + timedelta(days=1))
    return _day(today)


def _resolve_relative_unit(m: re.Match[str], today: date, ref: datetime) -> tuple[datetime, datetime]:
    mod = re.sub(r"\s+", " ", m.group("mod").lower())
    unit = m.group("unit").lower()
    offset = {"last": 1, "past": 1, "previous": 1, "this past": 1, "this": 0, "next": -1}.get(mod, -1)
    if unit == "weekend":
        return _weekend(today, offset)
    return _unit_back(unit, today, offset)


def _weekend(today: date, offset: int) -> tuple[datetime, datetime]:
    """Saturday-Sunday of the reference week shifted by ``-offset`` weeks.

    On a Saturday or Sunday the current weekend is "this weekend", so "last weekend" is
    always the one of the previous calendar week.
    """
    saturday = today - timedelta(days=today.weekday()) + timedelta(days=5 - 7 * offset)
    return _days(saturday, saturday + timedelta(days=1))


def _resolve_rolling(m: re.Match[str], today: date, ref: datetime) -> tuple[datetime, datetime]:
    unit = m.group("unit").lower()
    _, high = _count(m.group("n")) if m.group("n") else (1, 1)
    if unit == "weekend":
        return _weekend(today, 1)
    delta = {
        "day": timedelta(days=high),
        "week": timedelta(weeks=high),
        "month": timedelta(days=30 * high),
        "year": timedelta(days=365 * high),
        "decade": timedelta(days=3652 * high),
        "hour": timedelta(hours=high),
        "minute": timedelta(minutes=high),
    }[unit]
    return ref - delta, ref


def _resolve_weekday(m: re.Match[str], today: date, ref: datetime) -> tuple[datetime, datetime]:
    mod = re.sub(r"\s+", " ", (m.group("mod") or "on").lower())
    target = _WEEKDAYS[m.group("wd").lower()]
    back = (today.weekday() - target) % 7
    if mod in ("last", "past", "this past", "previous"):
        return _day(today - timedelta(days=back or 7))
    if mod == "this":
        return _day(today - timedelta(days=today.weekday()) + timedelta(days=target))
    if mod == "next":
        ahead = (target - today.weekday()) % 7
        return _day(today + timedelta(days=ahead or 7))
    return _day(today - timedelta(days=back))


def _bare_weekday_ok(m: re.Match[str]) -> bool:
    """A weekday with no modifier only counts when capitalized ("on Friday", "Friday night")."""
    return bool(m.group("mod")) or m.group("wd")[0].isupper()


def _latest_month(month: int, today: date, *, strictly_before: bool) -> int:
    """Year of the latest occurrence of ``month`` that started (or ended, if strict) by today."""
    if month < today.month or (month == today.month and not strictly_before):
        return today.year
    return today.year - 1


def _resolve_month_mod(m: re.Match[str], today: date, ref: datetime) -> tuple[datetime, datetime]:
    mod = re.sub(r"\s+", " ", m.group("mod").lower()).strip(" -")
    month = _MONTHS[m.group("mon").lower()]
    if mod in ("last", "past", "this past", "previous"):
        year = _latest_month(month, today, strictly_before=True)
    elif mod == "next":
        year = today.year if month > today.month else today.year + 1
    elif mod == "this":
        year = today.year
    else:
        year = _latest_month(month, today, strictly_before=False)
    return _part_of(_month(year, month), mod)


def _part_of(window: tuple[datetime, datetime], mod: str) -> tuple[datetime, datetime]:
    """Narrow a month or year window for "early"/"mid"/"late" (thirds of the period)."""
    start, end = window
    if mod not in ("early", "mid", "late", "middle", "beginning", "start", "end"):
        return window
    third = (end - start + _SECOND) / 3
    if mod in ("early", "beginning", "start"):
        return start, _floor_day(start + third) - _SECOND
    if mod in ("mid", "middle"):
        return _floor_day(start + third), _floor_day(start + 2 * third) - _SECOND
    return _floor_day(start + 2 * third), end


def _floor_day(moment: datetime) -> datetime:
    return datetime.combine(moment.date(), time(), UTC)


def _mod_word(m: re.Match[str]) -> str:
    raw = (m.groupdict().get("mod") or "").lower()
    for word in ("early", "mid", "middle", "late", "beginning", "start", "end"):
        if re.search(rf"\b{word}\b", raw) or raw.startswith(word):
            return word
    return ""


def _resolve_month_year(m: re.Match[str], today: date, ref: datetime) -> tuple[datetime, datetime]:
    month = _MONTHS[m.group("mon").lower().rstrip(".")]
    return _part_of(_month(int(m.group("year")), month), _mod_word(m))


def _resolve_year(m: re.Match[str], today: date, ref: datetime) -> tuple[datetime, datetime]:
    return _part_of(_year(int(m.group("year"))), _mod_word(m))


def _resolve_decade(m: re.Match[str], today: date, ref: datetime) -> tuple[datetime, datetime]:
    start = int(m.group("decade"))
    if start < 100:  # "the 90s": two-digit decades up to the 40s are this century
        start += 2000 if start <= 40 else 1900
    return _days(date(start, 1, 1), date(start + 9, 12, 31))


def _resolve_season_mod(m: re.Match[str], today: date, ref: datetime) -> tuple[datetime, datetime]:
    mod = re.sub(r"\s+", " ", (m.group("mod") or "").lower()).strip()
    season = m.group("season").lower()
    month = _SEASONS[season]
    current = _season_start_of(today)
    candidates = [(y, month) for y in range(today.year - 2, today.year + 2)]
    windows = [(c, _season_window(*c)) for c in candidates]
    if mod in ("last", "past", "this past", "the past", "previous"):
        current_start = _season_window(*current)[0]
        return max((w for c, w in windows if w[1] < current_start), key=lambda w: w[0])
    if mod in ("next", "the coming", "coming"):
        return min((w for c, w in windows if w[0].date() > today), key=lambda w: w[0])
    if mod == "this":
        if current[1] == month:
            return _season_window(*current)
        if month == 12:
            return _season_window(today.year if today.month >= 9 else today.year - 1, 12)
        return _season_window(today.year, month)
    # "in the summer": the latest occurrence that has started.
    return max((w for c, w in windows if w[0].date() <= today), key=lambda w: w[0])


def _resolve_season_year(m: re.Match[str], today: date, ref: datetime) -> tuple[datetime, datetime]:
    return _season_window(*_season_occurrence(m.group("season").lower(), int(m.group("year"))))


def _resolve_explicit(m: re.Match[str], today: date, ref: datetime) -> tuple[datetime, datetime] | None:
    word = m.groupdict().get("mon") or ""
    if word in ("may", "march", "mar") and not m.groupdict().get("year"):
        return None  # lower-case "may 5" is more likely a verb than a date
    parsed = _dateparser_parse(m.group(0), ref)
    if parsed is None:
        return None
    return _day(parsed.date())


def _dateparser_parse(text: str, ref: datetime) -> datetime | None:
    return _cached_parse(re.sub(r"\s+", " ", text.strip()), ref.replace(tzinfo=None))


@lru_cache(maxsize=4096)
def _cached_parse(text: str, naive_ref: datetime) -> datetime | None:
    import dateparser  # imported lazily: ~0.1 s, and most texts contain no calendar date

    settings: dict[str, Any] = {
        "RELATIVE_BASE": naive_ref,
        "PREFER_DATES_FROM": "past",
        "RETURN_AS_TIMEZONE_AWARE": True,
        "TIMEZONE": "UTC",
        "TO_TIMEZONE": "UTC",
        "DATE_ORDER": "MDY",
        "STRICT_PARSING": False,
    }
    try:
        return dateparser.parse(text, languages=["en"], settings=settings)
    except Exception:
        return None


def _period_bounds(raw: str, default_year: int | None, today: date) -> tuple[tuple[datetime, datetime], bool]:
    """Window of one end of a range, and whether it carried its own year."""
    raw = re.sub(r"\s+", " ", raw.lower().replace(",", " ")).strip()
    year_match = re.search(_YEAR, raw)
    year = int(year_match.group(0)) if year_match else None
    word = raw.split(" ")[0]
    if word.isdigit():
        return _year(int(word)), True
    if word in _SEASONS:
        label = year or default_year or today.year
        return _season_window(*_season_occurrence(word, label)), year is not None
    month = _MONTHS[word]
    if year is None:
        year = default_year or _latest_month(month, today, strictly_before=False)
    return _month(year, month), year_match is not None


def _resolve_range(m: re.Match[str], today: date, ref: datetime) -> tuple[datetime, datetime]:
    second, _ = _period_bounds(m.group("b"), None, today)
    first, first_has_year = _period_bounds(m.group("a"), None, today)
    if not first_has_year:
        # The trailing year (or the second end's resolved year) applies to both ends.
        first, _ = _period_bounds(m.group("a"), second[0].year, today)
        if first[0] > second[0]:
            first, _ = _period_bounds(m.group("a"), second[0].year - 1, today)
    return first[0], max(first[1], second[1])


# --------------------------------------------------------------------------- rules

_RULES: list[_Rule] = [
    _Rule(
        _rx(
            rf"{_B}(?:between|from)\s+(?P<a>{_PERIOD})\s+(?:and|to|until|till|through|-)\s+"
            rf"(?P<b>{_PERIOD}){_E}"
        ),
        _resolve_range,
    ),
    _Rule(
        _rx(rf"{_B}(?P<day>{_DAY})(?:\s+of)?\s+(?P<mon>{_MONTH_ANY})\.?(?:\s*,?\s*(?P<year>{_YEAR}))?{_E}"),
        _resolve_explicit,
        relative=False,
    ),
    _Rule(
        _rx(rf"{_B}(?P<mon>{_MONTH_ANY})\.?\s+(?P<day>{_DAY})(?!\s*:)(?:\s*,?\s*(?P<year>{_YEAR}))?{_E}"),
        _resolve_explicit,
        relative=False,
    ),
    _Rule(_rx(rf"{_B}(?P<year>{_YEAR})-\d{{2}}-\d{{2}}{_E}"), _resolve_explicit, relative=False),
    _Rule(
        _rx(rf"{_B}(?:0?[1-9]|1[0-2])/(?:0?[1-9]|[12]\d|3[01])/(?P<year>{_YEAR}){_E}"),
        _resolve_explicit,
        relative=False,
    ),
    _Rule(
        _rx(
            rf"{_B}(?:(?P<mod>early|mid|late|the\s+(?:beginning|start|end|middle)\s+of)[-\s]+)?"
            rf"(?P<mon>{_MONTH_ANY})\.?\s*,?\s*(?:of\s+)?(?P<year>{_YEAR}){_E}"
        ),
        _resolve_month_year,
        relative=False,
    ),
    _Rule(
        _rx(
            rf"{_B}(?P<mod>(?:this\s+past|last|past|previous|this|next|in|during|since|until|"
            rf"till|by|early|mid|late|around|throughout)(?:\s+the\s+month\s+of)?)[-\s]+"
            rf"(?P<mon>{_MONTH_FULL}){_E}(?!\s*\d)"
        ),
        _resolve_month_mod,
    ),
    _Rule(
        _rx(rf"{_B}(?:the\s+)?(?P<season>{_SEASON})\s+(?:of\s+)?(?P<year>{_YEAR}){_E}"),
        _resolve_season_year,
        relative=False,
    ),
    _Rule(
        _rx(
            rf"{_B}(?P<mod>this\s+past|the\s+past|last|past|previous|this|next|the\s+coming)\s+"
            rf"(?P<season>{_SEASON}){_E}"
        ),
        _resolve_season_mod,
    ),
    _Rule(
        _rx(
            rf"{_B}(?:in|during|over|throughout)\s+the\s+(?P<season>{_SEASON}){_E}"
            rf"(?P<mod>)(?!\s+of\b)"
        ),
        _resolve_season_mod,
    ),
    _Rule(
        _rx(
            rf"{_B}(?:(?:in|during|since|from|until|till|by|around|throughout|of|back\s+in|"
            rf"the\s+year)\s+|(?P<mod>early|mid|late|the\s+(?:beginning|start|end|middle)\s+of)"
            rf"[-\s]+(?:in\s+)?)(?P<year>{_YEAR}){_E}(?!\s*[-/]\d)"
        ),
        _resolve_year,
        relative=False,
    ),
    _Rule(_rx(rf"{_B}(?:in\s+)?the\s+'?(?P<decade>(?:19|20)?\d0)'?s{_E}"), _resolve_decade, False),
    _Rule(
        _rx(
            r"(?<![\w-])(?:the\s+day\s+before\s+yesterday|the\s+day\s+after\s+tomorrow|"
            r"(?:yesterday|today|tomorrow)(?:\s+(?:morning|afternoon|evening|night))?|tonight|"
            r"last\s+night|this\s+(?:morning|afternoon|evening)|the\s+other\s+day)(?![\w])"
        ),
        _resolve_day_word,
    ),
    _Rule(
        _rx(rf"{_B}(?P<n>{_COUNT})\s+(?P<unit>{_UNIT})s?\s+(?P<dir>ago|back|from\s+now|later){_E}"),
        _resolve_ago,
    ),
    _Rule(
        _rx(rf"{_B}in\s+(?P<n>{_COUNT})\s+(?P<unit>day|week|month|year)s?{_E}(?!\s+(?:ago|old))"),
        _resolve_in_n,
    ),
    _Rule(
        _rx(
            rf"{_B}the\s+(?:past|last|previous)\s+(?:(?P<n>{_COUNT})\s+)?"
            rf"(?P<unit>{_UNIT}|weekend)s?{_E}(?!\s+of\b)"
        ),
        _resolve_rolling,
    ),
    _Rule(
        _rx(
            rf"{_B}(?P<mod>this\s+past|last|past|previous|this|next)\s+"
            rf"(?P<unit>day|week|weekend|month|year|decade){_E}(?!\s+of\b)"
        ),
        _resolve_relative_unit,
    ),
    _Rule(
        _rx(
            rf"{_B}(?:(?P<mod>this\s+past|last|past|previous|this|next|on)\s+)?"
            rf"(?P<wd>{_WEEKDAY}){_E}(?!s)"
        ),
        _resolve_weekday,
    ),
]

_CONTEXT_CHARS = 80  # enough for "the weekend prior to on " and some spacing
_SINCE = _rx(r"\bsince\s+(?:the\s+)?$")
_AROUND_DATE = _rx(
    r"\bthe\s+(?P<unit>day|week|weekend|month)\s+(?P<rel>before|after|of|prior\s+to)\s+(?:on\s+)?$"
)


# --------------------------------------------------------------------------- public API


def find_time_ranges(text: str, reference: datetime, *, tense: bool = False) -> list[TimeRange]:
    """All time expressions of ``text`` resolved against ``reference``, in reading order.

    Overlapping candidates are settled longest-first, so "between March and May" wins over
    "March" and "May" alone. ``tense``: a yearless date in a sentence about the future is its
    next occurrence (see the module's rules); for statements, not for questions.
    """
    ref = _as_utc(reference)
    today = ref.date()
    candidates = _candidates(text, today, ref, tense=tense)
    chosen: list[TimeRange] = []
    taken = DisjointSpans()
    for cand in sorted(candidates, key=lambda c: (-(c.span[1] - c.span[0]), c.span[0])):
        if taken.overlaps(cand.span):
            continue
        taken.add(cand.span)
        chosen.append(cand)
    return [_widen(text, c, ref) for c in sorted(chosen, key=lambda c: c.span[0])]


def parse_time_expression(text: str, reference: datetime) -> TimeRange | None:
    """One window for a whole query, or None when it names no period.

    Several expressions give their envelope: a query naming two periods ("in May or June")
    wants both covered, and a recall filter that is too wide costs less than one too narrow.
    """
    ranges = find_time_ranges(text, reference)
    if not ranges:
        return None
    if len(ranges) == 1:
        return ranges[0]
    return TimeRange(
        start=min(r.start for r in ranges),
        end=max(r.end for r in ranges),
        expression=text[ranges[0].span[0] : ranges[-1].span[1]],
        relative=any(r.relative for r in ranges),
        span=(ranges[0].span[0], ranges[-1].span[1]),
    )


def format_time_range(tr: TimeRange) -> str:
    """A short human rendering ("7 May 2023", "1-7 May 2023", "spring 2022", "2022")."""
    start, end = tr.start.astimezone(UTC), tr.end.astimezone(UTC)
    first, last = start.date(), end.date()
    whole_days = start.time() == time() and (end + _SECOND).time() == time()
    if first == last:
        return _fmt_day(first)
    if whole_days and first.day == 1 and (last + timedelta(days=1)).day == 1:
        return _fmt_months(first, last)
    if first.year == last.year and first.month == last.month:
        return f"{first.day}-{last.day} {first:%B} {first.year}"
    if first.year == last.year:
        return f"{first.day} {first:%B} - {_fmt_day(last)}"
    return f"{_fmt_day(first)} - {_fmt_day(last)}"


# --------------------------------------------------------------------------- internals


def _as_utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _candidates(text: str, today: date, ref: datetime, *, tense: bool = False) -> list[TimeRange]:
    found: list[TimeRange] = []
    for rule in _RULES:
        for m in rule.pattern.finditer(text):
            if rule.resolve is _resolve_weekday and not _bare_weekday_ok(m):
                continue
            try:
                window = rule.resolve(m, today, ref)
                cycle = _cycle(rule, m) if tense and window is not None else None
                if window is not None and cycle and window[1] < _floor_day(ref) and _future(text, m.start()):
                    window = _next_occurrence(window, cycle)
            except (ValueError, KeyError, OverflowError):
                window = None
            if window is None:
                continue
            start, end = window
            found.append(TimeRange(start, max(start, end), m.group(0), rule.relative, (m.start(), m.end())))
    return found


# Modifiers after which a month or season is its latest occurrence (no year, no direction).
_UNDIRECTED = frozenset(
    {"", "in", "during", "early", "mid", "late", "around", "throughout", "until", "till", "by"}
)
_FUTURE = _rx(
    r"\b(?:will|shall|gonna|(?<!was\s)(?<!were\s)going\s+to|(?:plan|hope|intend|want|expect)(?:s|ing)?\s+to"
    r"|about\s+to|looking\s+forward|can'?t\s+wait|cannot\s+wait|upcoming)\b|['\u2019]ll\b"
)
_SENTENCE_END = re.compile(r"[.!?\n][^.!?\n]*$")
_SENTENCE_CHARS = 200  # a sentence's words before the expression that can set its tense


def _cycle(rule: _Rule, m: re.Match[str]) -> str | None:
    """ "year" or "week" for an expression resolved to its latest occurrence by default (no
    year, no "last"/"next"/"this"), which a future tense moves forward by that much."""
    groups = m.groupdict()
    mod = re.sub(r"\s+", " ", (groups.get("mod") or "").lower()).strip(" -")
    if rule.resolve is _resolve_explicit:
        return "year" if groups.get("mon") and not groups.get("year") else None
    if rule.resolve in (_resolve_month_mod, _resolve_season_mod):
        return "year" if mod.removesuffix(" the month of") in _UNDIRECTED else None
    if rule.resolve is _resolve_weekday:
        return "week" if mod in ("", "on") else None
    return None


def _future(text: str, start: int) -> bool:
    """Whether the sentence speaks of the future before the expression that starts at `start`."""
    before = text[max(0, start - _SENTENCE_CHARS) : start]
    end = _SENTENCE_END.search(before)
    clause = before if end is None else before[end.start() + 1 :]
    return _FUTURE.search(clause) is not None


def _next_occurrence(window: tuple[datetime, datetime], cycle: str) -> tuple[datetime, datetime]:
    start, end = window
    if cycle == "week":
        return start + timedelta(days=7), end + timedelta(days=7)
    return _a_year_later(start), _a_year_later(end)


def _a_year_later(moment: datetime) -> datetime:
    """The same day a year later; the last day of a month stays the last (February)."""
    last = calendar.monthrange(moment.year, moment.month)[1]
    last_next = calendar.monthrange(moment.year + 1, moment.month)[1]
    day = last_next if moment.day == last else min(moment.day, last_next)
    return moment.replace(year=moment.year + 1, day=day)


def _widen(text: str, tr: TimeRange, ref: datetime) -> TimeRange:
    """Apply context the rules do not see: "since X" and "the week before X"."""
    # Only the words just before matter; reading the whole prefix per expression would make
    # a long text full of dates quadratic.
    before = text[max(0, tr.span[0] - _CONTEXT_CHARS) : tr.span[0]]
    since = _SINCE.search(before) or tr.expression.lower().startswith("since")
    if since and tr.start <= ref:
        return replace(tr, end=max(tr.end, ref), relative=True)
    around = _AROUND_DATE.search(before)
    if around and not tr.relative:
        unit, rel = around.group("unit").lower(), around.group("rel").lower()
        window = _around(tr.start.date(), unit, rel)
        return replace(tr, start=window["start"], end=window["end"], relative=False)
    return tr


def _around(anchor: date, unit: str, rel: str) -> dict[str, datetime]:
    length = {"day": 1, "week": 7, "weekend": 2, "month": 30}[unit]
    if rel == "of":
        start, end = _week(anchor) if unit == "week" else _day(anchor)
    elif rel == "after":
        start, end = _days(anchor + timedelta(days=1), anchor + timedelta(days=length))
    else:
        start, end = _days(anchor - timedelta(days=length), anchor - timedelta(days=1))
    return {"start": start, "end": end}


def _fmt_day(d: date) -> str:
    return f"{d.day} {d:%B} {d.year}"


def _fmt_months(first: date, last: date) -> str:
    if (first.year, first.month) == (last.year, last.month):
        return f"{first:%B} {first.year}"
    if first.month == 1 and last.month == 12:
        return str(first.year) if first.year == last.year else f"{first.year}-{last.year}"
    span = (last.year - first.year) * 12 + last.month - first.month + 1
    if span == 3 and first.month in (3, 6, 9, 12):
        name = {3: "spring", 6: "summer", 9: "fall", 12: "winter"}[first.month]
        return f"{name} {first.year}" if name != "winter" else f"winter {first.year}-{last.year}"
    if first.year == last.year:
        return f"{first:%B} - {last:%B} {last.year}"
    return f"{first:%B} {first.year} - {last:%B} {last.year}"
