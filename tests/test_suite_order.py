"""The suite's own ordering (``conftest._slow_first_in_each_chunk``): every test is run once,
and each test process's first share of the collection starts with its slow tests."""

from __future__ import annotations

import pytest
from conftest import _slow_first_in_each_chunk


class _Item:
    def __init__(self, name: str, slow: bool) -> None:
        self.name, self.slow = name, slow

    def get_closest_marker(self, name: str):  # noqa: ANN201
        return object() if name == "slow" and self.slow else None


@pytest.mark.parametrize("workers", [1, 2, 3, 4])
def test_slow_tests_are_dealt_to_the_front_of_every_chunk(workers: int) -> None:
    items = [_Item(f"t{i}", slow=i % 7 in (3, 5)) for i in range(101)]
    ordered = _slow_first_in_each_chunk(items, workers)
    assert sorted(i.name for i in ordered) == sorted(i.name for i in items)  # each once
    slow = [i for i in items if i.slow]
    start, remaining = 0, len(items)
    for chunk in range(workers):  # the shares xdist's work stealing hands out first
        size = remaining // (workers - chunk)
        remaining -= size
        share = ordered[start : start + size]
        start += size
        dealt = slow[chunk::workers]
        assert share[: len(dealt)] == dealt  # its slow tests first, in file order
        assert not any(i.slow for i in share[len(dealt) :])


def test_more_slow_tests_than_a_share_keeps_every_test() -> None:
    items = [_Item(f"t{i}", slow=i < 9) for i in range(10)]
    ordered = _slow_first_in_each_chunk(items, 3)
    assert sorted(i.name for i in ordered) == sorted(i.name for i in items)
