"""The stream bench's backlog verdict and its measured maximum."""

from __future__ import annotations

import pytest

from bench.sustained_stream import _backlog_shape, measured_maximum


def test_a_backlog_that_drains_only_after_the_schedule_is_not_called_bounded() -> None:
    # Overloaded: the backlog climbs by 40 a second for the 120 s schedule; the sender's last
    # retains land at 150 s, while it drains by 100 a second.
    climb = [(float(t), 40 * t) for t in range(0, 121, 2)]
    drain = [(float(t), 4800 - 100 * (t - 120)) for t in range(122, 151, 2)]
    shape = _backlog_shape(climb + drain, scheduled=120, sending=150, drain=20.0, rate=120, turns=14_400)
    assert shape["bounded"] is False
    assert shape["second_half_slope_per_s"] == pytest.approx(40, rel=0.01)
    assert shape["max_pending"] == 4800
    # Stored while sending: what was sent less what was still pending at the last retain.
    assert shape["pending_at_end_of_sending"] == 1800
    assert shape["processed_per_s"] == pytest.approx((14_400 - 1800) / 150)
    assert shape["sent_per_s"] == pytest.approx(96)


def test_a_backlog_that_holds_is_bounded() -> None:
    series = [(float(t), 20 + (t % 4)) for t in range(0, 601, 2)]
    shape = _backlog_shape(series, scheduled=600, sending=600.5, drain=1.0, rate=27, turns=16_200)
    assert shape["bounded"] is True
    assert shape["processed_per_s"] == pytest.approx((16_200 - shape["pending_at_end_of_sending"]) / 600.5)


def test_the_maximum_comes_from_either_bench() -> None:
    assert measured_maximum({"backlog": {"processed_per_s": 78.5}, "facts_per_s": 3.0}) == 78.5
    assert measured_maximum({"facts_per_s": 43.3}) == 43.3
