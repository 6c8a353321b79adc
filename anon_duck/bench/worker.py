"""One benchmark repetition in a fresh process: ``python -m anon_duck.bench.worker CASE SCALE``.
Prints one JSON line: the case's figures plus peak RSS of this process."""
from __future__ import annotations

import json
import resource
import sys

from .cases import CASES


def main() -> None:
    name, scale = sys.argv[1], float(sys.argv[2])
    out = CASES[name](scale)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main()
