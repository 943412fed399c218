"""The report speaks of its run: the documents it wrote, its quarantined inputs named, links into browse."""

from __future__ import annotations

import re

from starlette.testclient import TestClient

from audit.browse.app import create_app
from audit.ledger import Ledger
from audit.report import figures, render


def _figures(out, run_id=None):
    ledger = Ledger(out / "ledger.sqlite", read_only=True)
    try:
        return figures(out, ledger, run_id)
    finally:
        ledger.close()


def test_formats_count_the_documents_of_the_run_not_the_root(audited):
    fig = _figures(audited)  # the second run rewrote the chat only; the IRC document is the first run's
    assert fig["formats"] == {"transcript": 1} and fig["written"] == {"documents": 1, "turns": 4}
    assert fig["archive"]["documents"] == 2
    assert "1 documents this run wrote and that are still current, of 2 under OUT/sessions" in render(fig)


def test_quarantined_inputs_are_named_with_reasons_and_detail(audited):
    html = render(_figures(audited))
    row = re.search(r'<tr><th scope="row" data-figure="quarantined" data-key="in/broken.json">(.*?)</tr>', html)
    assert row and "in/broken.json" in row[1] and "binary" in row[1] and "control bytes" in row[1]


def test_chart_labels_are_not_cut(audited):
    html = render(_figures(audited))
    for x, label in re.findall(r'<text x="(\d+)" y="\d+" text-anchor="end" font-size="13">([^<]+)</text>', html):
        assert int(x) >= 8 * len(label), label  # 13px text: about 7.2px a character, drawn leftwards from x
    assert "sessions with unaccounted source</text>" in html


def test_links_into_browse(audited):
    fig = _figures(audited)
    run_id = fig["run"]["run_id"]
    html = render(fig, browse="http://127.0.0.1:8765")
    assert f'href="http://127.0.0.1:8765/quarantine/{run_id}/in/broken.json"' in html
    assert f'href="http://127.0.0.1:8765/sessions?run={run_id}"' in html
    assert "127.0.0.1:8765" not in render(fig)
    served = TestClient(create_app(audited)).get(f"/runs/{run_id}/report")
    assert served.status_code == 200 and f'href="/runs/{run_id}"' in served.text
