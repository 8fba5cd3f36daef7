"""What of a sleep plan still holds once memories it touches changed (pure).

Sleep plans from a snapshot, without a lock, and applies the plan under the write
lock. A memory edited or forgotten in between keeps its edit, and the changes the
plan ties to it wait for the next sleep: a new memory stands or falls with its
sources, a link with its two ends (a summary quoting an edited text, or a merge
into a forgotten copy, would be wrong), a summary's new text with the values it
stopped quoting. Everything else holds, as if the edit had
come just after the sleep. Planning everything again instead would never finish on
a database where something changes every few seconds.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Mapping

from .consolidation import Plan


def hold_back(plan: Plan, changed: Collection[str], strengths: Mapping[str, float]) -> tuple[Plan, set[str]]:
    """``plan`` without every change tied, through its new memories and links, to a
    memory in ``changed``; and the memories it leaves as they are stored.
    ``strengths``: each memory's stored strength (to count decay apart from
    reinforcement).

    >>> kept, held = hold_back(plan, {"0193..."}, {r.id: r.strength for r in records})
    """
    ties_of: dict[str, list[set[str]]] = defaultdict(list)
    for tie in ties(plan):
        for end in tie:
            ties_of[end].append(tie)
    held, reached = set(changed), list(changed)
    while reached:
        for tie in ties_of.pop(reached.pop(), ()):
            reached.extend(tie - held)
            held |= tie
    kept = Plan(
        updates={memory_id: changes for memory_id, changes in plan.updates.items() if memory_id not in held},
        created=[new for new in plan.created if new.key not in held],
        links=[link for link in plan.links if link.src not in held],  # its ends are held together
        bound=[bound for bound in plan.bound if bound[0] not in held],
    )
    kept.counts = count_changes(kept, strengths)
    return kept, held - {new.key for new in plan.created}


def ties(plan: Plan) -> list[set[str]]:
    """The groups of memories (ids, and new memories' keys) whose changes stand or fall
    together: a new memory with its sources, a link's two ends, a bound group."""
    return ([{new.key, *new.sources} for new in plan.created] + [{link.src, link.dst} for link in plan.links]
            + [set(bound) for bound in plan.bound])


def count_changes(plan: Plan, strengths: Mapping[str, float]) -> Counter[str]:
    """The planner's counts, told again from the changes ``plan`` holds."""
    counts: Counter[str] = Counter()
    for memory_id, changes in plan.updates.items():
        status = changes.get("status")
        if status in ("expired", "superseded"):
            counts[status] += 1
        elif status == "consolidated":  # by a summary, or merged (told apart below)
            counts["summarised"] += 1
        if changes.get("scope") == "global":
            counts["promoted"] += 1
        if "strength" in changes:
            counts["decayed" if changes["strength"] < strengths[memory_id] else "reinforced"] += 1
    counts["merged"] = sum(link.kind == "merges" for link in plan.links)
    counts["summarised"] -= counts["merged"]
    counts["summaries"] = sum(new.kind == "summary" for new in plan.created)
    counts["promoted"] += sum(new.kind == "fact" for new in plan.created)  # shared by several sessions
    return counts
