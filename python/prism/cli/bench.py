"""``prism bench attention``: run the attention benchmark (benches/attention)."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def bench_main(args: Sequence[str]) -> int:
    sys.stderr.write("prism: error: bench is not available yet\n")
    return 2
