"""Every input knows the sorted names of the other files beside it (a chat's attachments)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from flows.core import ingest
from flows.core.ingest import InputRef

_NAMES = st.lists(st.tuples(st.sampled_from(["", "a", "a/b", "c"]), st.sampled_from(["x.txt", "y.jpg", "Z", "é"])),
                  max_size=12)


@given(_NAMES)
def test_siblings_are_the_other_names_of_the_folder(entries):
    refs = [InputRef(f"k{i}", f"{folder}/{base}" if folder else base, "p") for i, (folder, base) in enumerate(entries)]
    got = ingest._with_siblings(refs)
    for ref, (folder, base) in zip(got, entries, strict=True):
        beside = sorted(b for f, b in entries if f == folder and b != base)
        assert ref.siblings == tuple(beside)
