"""Grouping duplicates until another pass would group nothing more (pure).

Being a repeat is not transitive. Of "reminder: X", "X", "X fyi", "reminder: X fyi",
written in this order, the last says the first again and the third the second, but
the second does not say the first again (it drops a word). One pass may so make two
groups, each merging into its global copy (the third, the last), and the next pass,
seeing only what the first left, merges those two: the last says the third again.
Sleep must leave nothing for the next sleep to merge, so its groups are settled
here: what they leave is grouped as the next pass would group it, and the groups
whose survivors meet are joined, until none do. Each round joins two or more of
what is left into one, so it ends; and the joined groups are what later passes
would have merged, summed once over all their members.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")


def settle(
    items: Sequence[T],
    group: Callable[[Sequence[T], Sequence[bool]], list[list[int]]],
    survivor: Callable[[list[T]], T],
    order: Callable[[T], Any],
) -> list[list[T]]:
    """Groups of ``items`` (given in ``order``) that leave nothing to group again.

    ``group(items, new)`` groups items as one pass does (indices, groups of two or
    more): each group is anchored on its first item, and an item left in no group
    repeats none of the items left before it. Of two items not ``new`` neither
    repeats the other, so ``group`` need compare only pairs with a new item.
    ``survivor`` is what a group leaves for the next pass, which sees the survivors
    and the items in no group, in ``order``; two items in one place (the same
    ``order``) are one item to ``group``. The groups are returned in ``order`` of
    their first members, and each group's members in ``order``.

    >>> settle(records, group, survivor, order=lambda m: (m.created_at, m.id))
    [[Record(id='m0000', ...), Record(id='m0003', ...)], ...]
    """
    # Each group (indices of items), with the item the last pass anchored it on.
    groups = [(sorted(g), items[min(g)]) for g in group(items, [True] * len(items))]
    while True:
        # What each group leaves, and whether it is new: not the item the last pass
        # anchored the group on (in sleep: a global copy said after the group's first
        # member, or a new shared memory).
        left: list[tuple[T, list[int], bool]] = []
        for members, anchor in groups:
            kept = survivor([items[i] for i in members])
            left.append((kept, members, order(kept) != order(anchor)))
        if not any(new for _, _, new in left):
            break  # what is left is what the last pass left, none of which repeats another
        grouped = {i for members, _ in groups for i in members}
        left += [(item, [i], False) for i, item in enumerate(items) if i not in grouped]
        left.sort(key=lambda entry: order(entry[0]))
        again = group([kept for kept, _, _ in left], [new for _, _, new in left])
        joined = {k for g in again for k in g}
        groups = [(members, kept) for k, (kept, members, _) in enumerate(left) if k not in joined and len(members) > 1]
        groups += [(sorted(i for k in g for i in left[k][1]), left[min(g)][0]) for g in again]
    return [[items[i] for i in members] for members, _ in sorted(groups, key=lambda entry: entry[0])]
