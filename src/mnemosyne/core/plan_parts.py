"""A sleep plan cut into parts that each commit on their own (pure).

Applying a whole plan in one transaction held the write lock for 5.9 s at 50k
memories (17 s at 200k), while other writers wait for at most their busy timeout.
Each part is applied in its own short transaction instead, and a writer gets in
between. A part never cuts what stands or falls together (see
:func:`mnemosyne.core.hold_back.ties`): after any part, every memory is either as it
was or fully merged, summarised or superseded, with its links.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from .consolidation import Plan
from .hold_back import ties


def split_plan(plan: Plan, rows_per_part: int) -> list[Plan]:
    """``plan`` in parts of about ``rows_per_part`` changed rows (updates, new
    memories, links) each, in the plan's order; a group tied together larger than
    that is a part of its own. An empty plan is one empty part.

    >>> [len(part.updates) for part in split_plan(plan, 1000)]
    [1000, 1000, 412]
    """
    if rows_per_part < 1:
        raise ValueError(f"rows_per_part must be >= 1, got {rows_per_part!r}")
    group_of = _groups(plan)
    members: dict[str, Plan] = defaultdict(Plan)  # each group's changes, in the plan's order
    for memory_id, changes in plan.updates.items():
        members[group_of(memory_id)].updates[memory_id] = changes
    for new in plan.created:
        members[group_of(new.key)].created.append(new)
    for link in plan.links:
        members[group_of(link.src)].links.append(link)
    for bound in plan.bound:
        members[group_of(bound[0])].bound.append(bound)
    parts = [Plan()]
    for group in members.values():
        if _rows(parts[-1]) and _rows(parts[-1]) + _rows(group) > rows_per_part:
            parts.append(Plan())
        part = parts[-1]
        part.updates.update(group.updates)
        part.created.extend(group.created)
        part.links.extend(group.links)
        part.bound.extend(group.bound)
    return parts


def _rows(plan: Plan) -> int:
    return len(plan.updates) + len(plan.created) + len(plan.links)


def _groups(plan: Plan) -> Callable[[str], str]:
    """A function naming each memory's group: the memories tied together, transitively."""
    parent: dict[str, str] = {}

    def find(item: str) -> str:
        root = parent.setdefault(item, item)
        while root != parent[root]:
            root = parent[root]
        while item != root:  # shorten the path for the next look-up
            parent[item], item = root, parent[item]
        return root

    for tie in ties(plan):
        first, *rest = tie
        for other in rest:
            parent[find(other)] = find(first)
    return find
