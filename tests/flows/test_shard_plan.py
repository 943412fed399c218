"""How a run's inputs are cut into shard tasks: every input once, in key order, within the limits, and in
waves that keep every worker busy to their end."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from flows.core.ingest import InputRef
from flows.pipeline import plan_shards
from models.settings import Settings


def _refs(sizes: list[int]) -> list[InputRef]:
    return [InputRef(f"in/{i:05d}", f"{i:05d}", "p", size=size) for i, size in enumerate(sizes)]


@given(sizes=st.lists(st.integers(0, 5_000), min_size=1, max_size=300), workers=st.integers(1, 4),
       files=st.integers(1, 50), limit=st.integers(1, 20_000))
def test_every_input_once_in_order_within_the_limits(sizes, workers, files, limit):
    refs = _refs(sizes)
    shards = plan_shards(refs, Settings(workers=workers, shard_files=files, shard_bytes=limit))
    assert [r for shard in shards for r in shard] == refs
    for shard in shards:
        assert shard and len(shard) <= files
        assert len(shard) == 1 or sum(r.size for r in shard) <= limit


def test_many_small_files_make_even_shards_in_whole_waves():
    """10,010 small files, two workers, 2,000 files a shard at most: six shards of about 1,670 files, not five
    of 2,000 and a sixth of 10 that leaves a worker idle through the last wave."""
    refs = _refs([3_000] * 10_010)
    shards = plan_shards(refs, Settings(workers=2, shard_files=2000))
    assert len(shards) == 6
    assert max(map(len, shards)) - min(map(len, shards)) <= 1


def test_a_large_input_among_small_ones_is_a_shard_of_its_own_and_the_rest_share_the_other_shards():
    refs = _refs([2_000] * 400 + [50_000_000] + [2_000] * 400)
    shards = plan_shards(refs, Settings(workers=2))
    assert len(shards) % 2 == 0 and [refs[400]] in shards
    assert min(len(s) for s in shards if s != [refs[400]]) >= 50  # no shard of a few small files beside it


def test_one_input_is_one_shard():
    assert plan_shards(_refs([10]), Settings(workers=4)) == [_refs([10])]
