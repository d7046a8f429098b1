"""``search_files`` against the pure-Python oracle on generated trees
(hypothesis), and ``list_files`` ordering."""

from __future__ import annotations

import os
import shutil
import tempfile

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.oracles import search as oracle

from prism import _native as native

names = st.text(alphabet="abcd_", min_size=1, max_size=6)
lines = st.lists(st.text(alphabet="abc xyz.*", max_size=12), max_size=12)
trees = st.dictionaries(
    st.lists(names, min_size=1, max_size=3).map(lambda parts: "/".join(parts) + ".txt"),
    st.one_of(lines.map(lambda ls: "\n".join(ls) + ("\n" if ls else "")), st.just("ab\0c")),
    max_size=8,
)


def build(tree: dict[str, str]) -> str:
    root = tempfile.mkdtemp(prefix="prism-search-")
    for rel, text in tree.items():
        path = os.path.join(root, rel)
        if any(
            os.path.isfile(os.path.join(root, *rel.split("/")[:i]))
            for i in range(1, rel.count("/") + 1)
        ):
            continue  # a file already sits where this path needs a directory
        if os.path.isdir(path):
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write(text)
    return root


@settings(max_examples=60, deadline=None)
@given(
    trees,
    st.sampled_from(["a", "b c", "x.", "z*", "a+b", "^c", "y$"]),
    st.booleans(),
    st.integers(1, 4),
    st.integers(1, 10),
)
def test_search_matches_the_oracle(
    tree: dict[str, str], pattern: str, literal: bool, per_file: int, total: int
) -> None:
    root = build(tree)
    try:
        got = native.search_files(
            root, pattern, literal=literal, max_per_file=per_file, max_total=total
        )
        want = oracle.search_files(
            root, pattern, literal=literal, max_per_file=per_file, max_total=total
        )
        assert got == want
    finally:
        shutil.rmtree(root)


def test_list_files_is_newest_first_then_by_path(tmp_path: object) -> None:
    root = str(tmp_path)
    for name, stamp in (("b.py", 10), ("a.py", 10), ("c.py", 20)):
        path = os.path.join(root, name)
        with open(path, "w") as handle:
            handle.write("x")
        os.utime(path, (stamp, stamp))
    got = native.list_files(root, ["*.py"], max=2)
    assert [f[0] for f in got["files"]] == ["c.py", "a.py"]
    assert got["total"] == 3 and got["truncated"] is True
