"""Word search: intersected rarest word first, with the same answer as one subquery per word."""

from __future__ import annotations

import duckdb
from hypothesis import given, settings
from hypothesis import strategies as st

from audit import search

WORDS = ("agent", "7", "deploy", "zanzibar", "cache", "x")
PATHS = tuple(f"sessions/p/k{i}/s{i}.json" for i in range(12))


class Index:
    """A ``terms`` table in DuckDB, and every statement run over it."""

    def __init__(self, rows: set[tuple[str, str]]) -> None:
        self.con = duckdb.connect(":memory:")
        self.con.execute("CREATE TABLE terms (term VARCHAR, output_path VARCHAR)")
        if rows:
            self.con.executemany("INSERT INTO terms VALUES (?, ?)", sorted(rows))
        self.statements: list[tuple[str, list]] = []

    def run(self, sql: str, args: list) -> list[dict]:
        self.statements.append((sql, args))
        cursor = self.con.execute(sql, args)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def naive(index: Index, q: str) -> list[str] | None:
    """One subquery per word, in the query's order: the plan the search had before."""
    wanted = search.words(q)
    if not wanted:
        return None
    where = " AND ".join(["output_path IN (SELECT output_path FROM terms WHERE term = ?)"] * len(wanted))
    rows = index.run(f"SELECT DISTINCT output_path FROM terms WHERE {where} ORDER BY output_path", wanted)
    return [r["output_path"] for r in rows]


@settings(max_examples=150, deadline=None)
@given(rows=st.sets(st.tuples(st.sampled_from(WORDS), st.sampled_from(PATHS)), max_size=60),
       query=st.lists(st.sampled_from((*WORDS, "absent", "AGENT", "Deploy!", " ")), max_size=5).map(" ".join))
def test_rarest_first_plan_finds_what_the_naive_plan_finds(rows, query):
    index = Index(rows)
    assert search.matching(index.run, query) == naive(index, query)


def test_the_rarest_word_is_looked_up_first_and_the_common_one_only_among_its_documents():
    rows = {("agent", p) for p in PATHS} | {("7", PATHS[3]), ("7", PATHS[5]), ("deploy", PATHS[5])}
    index = Index(rows)
    assert search.matching(index.run, "Agent 7 deploy") == [PATHS[5]]
    lookups = [args for sql, args in index.statements if "count(*)" not in sql]
    assert lookups == [["deploy"], ["7", [PATHS[5]]], ["agent", [PATHS[5]]]]


def test_a_word_no_document_holds_ends_the_search_before_any_lookup():
    index = Index({("agent", p) for p in PATHS})
    assert search.matching(index.run, "agent nowhere") == []
    assert len(index.statements) == 1  # the frequencies only
    assert search.Plan.of({"agent": 12, "7": 2}, ["agent", "7"]).order == ("7", "agent")
    assert search.matching(index.run, "?!") is None  # no word: no search
