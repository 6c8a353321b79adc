"""The full-domain generalization lattice shared by the lattice-walking methods (`fulldomain`,
`counterfeit`): a node is a level vector, one level per QI hierarchy, walked bottom-up.

The order is fixed (height, then lexicographic in QI declaration order), so "the first node
visited" is a well-defined tie-break; ``children`` lists the nodes one level lower in one QI,
which is what monotone pruning (k-anonymity, h-ceiling) looks at."""
from __future__ import annotations

import itertools
from typing import Sequence

Node = tuple[int, ...]


def bottom_up(heights: Sequence[int]) -> list[Node]:
    """All level vectors with ``0 <= l_i <= heights[i]``, by height then lexicographically."""
    return sorted(itertools.product(*(range(h + 1) for h in heights)), key=lambda v: (sum(v), v))


def children(node: Node) -> list[Node]:
    """The nodes directly below ``node`` (one QI one level less general)."""
    return [node[:j] + (node[j] - 1,) + node[j + 1:] for j in range(len(node)) if node[j] > 0]
