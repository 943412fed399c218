"""Every input knows the sorted names of the other files beside it (a chat's attachments)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from flows.core import ingest
from flows.core.ingest import InputRef
from models.settings import Settings

_NAMES = st.lists(st.tuples(st.sampled_from(["", "a", "a/b", "c"]), st.sampled_from(["x.txt", "y.jpg", "Z", "é"])),
                  max_size=12)


@given(_NAMES)
def test_siblings_are_the_other_names_of_the_folder(entries):
    refs = [InputRef(f"k{i}", f"{folder}/{base}" if folder else base, "p") for i, (folder, base) in enumerate(entries)]
    got = ingest._with_siblings(refs)
    for ref, (folder, base) in zip(got, entries, strict=True):
        beside = sorted(b for f, b in entries if f == folder and b != base)
        assert ref.siblings == tuple(beside)


def test_the_inputs_of_a_folder_share_one_tuple_of_names(tmp_path):
    """A folder of n files costs n names, not n tuples of n - 1 (the run's memory would grow with the
    square of the folder: 800 MB of pointers for a folder of 10,000 chats)."""
    for i in range(300):
        (tmp_path / f"chat-{i:03}.txt").write_text(f"User: hello {i}\n")
    refs = ingest.discover([tmp_path], Settings())
    assert len(refs) == 300
    assert len({id(r.folder) for r in refs}) == 1
    assert sum(len(r.folder) for r in {id(r.folder): r for r in refs}.values()) == 300
    assert refs[7].siblings == tuple(f"chat-{i:03}.txt" for i in range(300) if i != 7)
