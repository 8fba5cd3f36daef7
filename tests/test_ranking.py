"""Fusion of the signals, on hand-made scores."""

from __future__ import annotations

import pytest

from mnemosyne.core.ranking import Candidate, above_the_field, fuse

NOW = 1_775_000_000.0


def candidate() -> Candidate:
    return Candidate(importance=0.5, created_at=NOW - 3600)


def test_similarities_are_stretched_between_the_lowest_and_the_best_candidate():
    # Cosines crowd together: divided by the best alone, all three would read 0.8-1.
    scaled = above_the_field([(1, 0.62), (2, 0.55), (3, 0.50)])
    assert scaled[1] == 1.0 and scaled[3] == 0.0
    assert scaled[2] == pytest.approx(0.05 / 0.12)


def test_similarities_stretch_from_the_field_a_deeper_neighbour_sets():
    scaled = above_the_field([(1, 0.62), (2, 0.55), (3, 0.50)], field=0.52)
    assert scaled == pytest.approx({1: 1.0, 2: 0.03 / 0.10, 3: 0.0})  # below the field: 0


def test_a_search_that_saw_every_memory_divides_similarities_by_the_best():
    # Fewer neighbours than asked for: the lowest of a handful is no stranger to the query.
    dense = [(1, 0.62), (2, 0.55), (3, 0.50)]
    ranked = fuse({}, dense, {key: candidate() for key in (1, 2, 3)}, NOW, stretch=False)
    assert {r.key: r.components["dense"] for r in ranked} == pytest.approx({1: 1.0, 2: 0.55 / 0.62, 3: 0.50 / 0.62})


def test_tied_similarities_count_fully_unless_they_are_not_positive():
    assert above_the_field([(1, 0.4), (2, 0.4)]) == {1: 1.0, 2: 1.0}
    assert above_the_field([(1, -0.2)]) == {}
    assert above_the_field([]) == {}


def test_the_least_similar_memory_found_by_meaning_is_ranked_last_not_dropped():
    ranked = fuse({}, [(1, 0.62), (2, 0.45)], {1: candidate(), 2: candidate()}, NOW)
    assert [r.key for r in ranked] == [1, 2]
    assert ranked[1].components["dense"] == 0.0


def test_a_memory_found_by_meaning_alone_must_be_close():
    ranked = fuse({}, [(1, 0.62), (2, 0.1)], {1: candidate(), 2: candidate()}, NOW)
    assert [r.key for r in ranked] == [1]


def test_below_the_floor_only_the_closest_by_meaning_is_a_result_and_only_if_it_stands_out():
    def results(hits: list[tuple[int, float]]) -> list[int]:
        return [r.key for r in fuse({}, hits, {key: candidate() for key, _ in hits}, NOW)]

    # A question and its answer in other words: the closest, clear of the rest.
    assert results([(1, 0.27), (2, 0.2), (3, 0.12)]) == [1]
    # The closest of several about as close: no result.
    assert results([(1, 0.27), (2, 0.25), (3, 0.12)]) == []
    # Nothing close enough, however clear.
    assert results([(1, 0.22), (2, 0.08)]) == []
    # Below a close one, a second is no result.
    assert results([(1, 0.62), (2, 0.27)]) == [1]


def test_words_and_meaning_together_beat_either_alone():
    lexical = {"content": [(1, 8.0), (2, 7.5)], "context": [(1, 8.0), (2, 7.5)]}
    dense = [(2, 0.70), (3, 0.72), (1, 0.40)]
    ranked = fuse(lexical, dense, {key: candidate() for key in (1, 2, 3)}, NOW)
    assert [r.key for r in ranked] == [2, 1, 3]


def test_a_memory_found_by_its_neighbours_words_alone_must_be_like_them():
    # Memory 2 holds no query word; its window does (memory 1's). Its window is close
    # to the query, by memory 1: it is a result only if it means what its neighbours do.
    lexical = {"content": [(1, 8.0)], "context": [(1, 8.0), (2, 6.0)]}
    dense, window = [(1, 0.5), (2, 0.1)], [(1, 0.5), (2, 0.35)]

    def results(coherence: dict[int, float]) -> list[int]:
        candidates = {1: candidate(), 2: candidate()}
        return [r.key for r in fuse(lexical, dense, candidates, NOW, dense_window=window, coherence=coherence)]

    assert results({1: 0.6, 2: 0.45}) == [1, 2]  # a turn of the same conversation
    assert results({1: 0.05, 2: 0.05}) == [1]  # a fact stored beside it
    assert results({}) == [1, 2]  # no neighbours' vectors to judge by
