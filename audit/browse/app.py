"""The browser's routes: every page server-rendered (Jinja2), each with a JSON twin (``?format=json``).

Stable URLs, shareable in an audit finding:

- ``/sessions?q=&platform=&status=&coverage=&grammar=&run=&since=&until=&sort=&order=&page=``
- ``/session/<output path>?page=``: a document as people read it, with its provenance
- ``/diff/<output path>?a=<rev>&b=<rev>``: two revisions of a document, as a unified diff
- ``/source/<sha256>?lines=a-b`` or ``?pointer=/json/pointer``: the source span an interaction came from
- ``/runs``, ``/runs/<run id>``, ``/runs/<run id>/report``, ``/quarantine/<run id>/<source key>``
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from models.errors import AuditError, Reason
from models.settings import Settings

from ..ledger import ledger_path_for
from .data import TURNS_PAGE, Archive, Filters, jsonable

TEMPLATES = Jinja2Templates(directory=str(Path(__file__).with_name("templates")))
TEMPLATES.env.filters["q"] = lambda value: quote(str(value), safe="/")
TEMPLATES.env.filters["ts"] = lambda v: v.strftime("%Y-%m-%d %H:%M:%SZ") if hasattr(v, "strftime") else (v or "")


def create_app(out_root: Path, settings: Settings | None = None, *, prefect_ui: str | None = None) -> Starlette:
    """The application over ``out_root`` (read-only). ``prefect_ui``: the Prefect UI's base URL for
    flow-run links (none without it: the runs show the flow run's id)."""
    archive = Archive(out_root, ledger_path_for(out_root, settings or Settings()))
    pages = Pages(archive, prefect_ui or None)
    routes = [
        Route("/", lambda _r: RedirectResponse("/sessions")),
        Route("/sessions", pages.sessions),
        Route("/session/{rel:path}", pages.session),
        Route("/diff/{rel:path}", pages.diff),
        Route("/source/{sha}", pages.source),
        Route("/runs", pages.runs),
        Route("/runs/{run_id}", pages.run),
        Route("/runs/{run_id}/report", pages.report),
        Route("/quarantine/{run_id}/{key:path}", pages.quarantined),
    ]
    app = Starlette(routes=routes, exception_handlers={AuditError: _refused})
    app.state.archive = archive
    return app


def _refused(request: Request, exc: AuditError) -> Response:
    code = 404 if exc.reason == Reason.NOT_FOUND else 400
    if request.query_params.get("format") == "json":
        return JSONResponse({"error": exc.reason.value, "detail": exc.detail}, status_code=code)
    return TEMPLATES.TemplateResponse(request, "error.html", {"error": exc}, status_code=code)


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value not in (None, "") else default
    except ValueError:
        raise AuditError(Reason.QUERY, f"not a number: {value!r}") from None


class Pages:
    """Each page: the data as a dict, rendered by its template or returned as JSON."""

    def __init__(self, archive: Archive, prefect_ui: str | None) -> None:
        self.archive = archive
        self.prefect_ui = prefect_ui

    @staticmethod
    def _answer(request: Request, template: str, data: dict[str, Any]) -> Response:
        if request.query_params.get("format") == "json":
            return JSONResponse(jsonable({k: v for k, v in data.items() if not k.startswith("_")}))
        return TEMPLATES.TemplateResponse(request, template, data)

    def sessions(self, request: Request) -> Response:
        filters = Filters.of(dict(request.query_params))
        listing = self.archive.sessions(filters)
        return self._answer(request, "sessions.html", {
            "total": listing.total, "page": filters.page, "pages": listing.pages, "filters": filters.params(),
            "sessions": listing.rows, "facets": listing.facets,
            "_link": lambda **change: "/sessions?" + urlencode(filters.params(**change)), "_filters": filters})

    def session(self, request: Request) -> Response:
        rel = request.path_params["rel"]
        doc = self.archive.document(rel)
        arts = doc["artifacts"]
        log, hist, perf = arts["ByggLogg"], arts["Chatthistorik"], arts["ai_protocol_performance"]
        everything = hist["interactions"]
        pages = max(1, -(-len(everything) // TURNS_PAGE))
        page = min(max(1, _int(request.query_params.get("page"), 1)), pages)
        shown = everything[(page - 1) * TURNS_PAGE: page * TURNS_PAGE]
        source_sha = log["source"]["sha256"]
        return self._answer(request, "session.html", {
            "output_path": rel, "row": self.archive.session_row(rel), "session_id": doc["sessionId"],
            "created_at": doc["createdAt"], "title": hist.get("title"), "session_key": log.get("sessionKey"),
            "source": log["source"], "grammar": log["grammar"], "coverage": hist.get("coverage") or "full",
            "coverage_reason": hist.get("coverageReason"), "gate": perf.get("gate", {}),
            "accounting": perf.get("sourceAccounting"), "declared_regions": log.get("declaredRegions", []),
            "redactions": {"total": perf["redactions"].get("total", 0), "by_type": perf["redactions"].get("byType", {}),
                           "places": log.get("redactions", [])},
            "snapshots": log.get("snapshots") or [], "session_record": log.get("sessionRecord", {}),
            "warnings": log.get("warnings", []), "assumptions": log.get("assumptions", []),
            "revisions": self.archive.revisions(rel), "page": page, "pages": pages,
            "interactions": [{**it, "provenance": _provenance(it, source_sha)} for it in shown],
            "interaction_count": len(everything)})

    def diff(self, request: Request) -> Response:
        rel = request.path_params["rel"]
        revs = self.archive.revisions(rel)
        if not revs:
            raise AuditError(Reason.NOT_FOUND, f"{rel} has no revisions")
        b = _int(request.query_params.get("b"), revs[-1]["rev"])
        a = _int(request.query_params.get("a"), revs[-2]["rev"] if len(revs) > 1 else b)
        messages, lines = self.archive.diff(rel, a, b)
        return self._answer(request, "diff.html", {"output_path": rel, "a": a, "b": b, "revisions": revs,
                                                    "messages": messages,
                                                    "diff": [{"kind": k, "line": t} for k, t in lines]})

    def source(self, request: Request) -> Response:
        lines = request.query_params.get("lines")
        span = None
        if lines:
            lo, _, hi = lines.partition("-")
            span = (_int(lo, 1), _int(hi or lo, 1))
        view = self.archive.source(request.path_params["sha"], span, request.query_params.get("pointer"))
        return self._answer(request, "source.html", view)

    def runs(self, request: Request) -> Response:
        runs = self.archive.runs()
        return self._answer(request, "runs.html", {"runs": [{**r, "prefect": self._flow_link(r)} for r in runs]})

    def run(self, request: Request) -> Response:
        run = self.archive.run(request.path_params["run_id"])
        return self._answer(request, "run.html", {**run, "prefect": self._flow_link(run)})

    def report(self, request: Request) -> Response:
        """The run's one-page report (``reconstruct report``), linking into these pages."""
        from ..report import ReportError, figures, render

        with self.archive.ledger() as ledger:
            try:
                fig = figures(self.archive.out_root, ledger, request.path_params["run_id"])
            except ReportError as exc:
                raise AuditError(Reason.NOT_FOUND, str(exc)) from exc
        if request.query_params.get("format") == "json":
            return JSONResponse(jsonable(fig))
        return HTMLResponse(render(fig, browse=""))

    def quarantined(self, request: Request) -> Response:
        return self._answer(request, "quarantined.html",
                            self.archive.quarantined(request.path_params["run_id"], request.path_params["key"]))

    def _flow_link(self, run: dict[str, Any]) -> str | None:
        flow_run = run.get("prefect_flow_run_id")
        return f"{self.prefect_ui.rstrip('/')}/runs/flow-run/{flow_run}" if flow_run and self.prefect_ui else None


def _provenance(interaction: dict[str, Any], document_sha: str) -> dict[str, Any]:
    """Where an interaction came from, and the link that shows it."""
    span = interaction.get("source") or {}
    sha = span.get("sha256") or document_sha
    query = {}
    if span.get("lines"):
        query["lines"] = f"{span['lines'][0]}-{span['lines'][1]}"
    if span.get("pointer") is not None:
        query["pointer"] = span["pointer"]
    where = (f"lines {query['lines']}" if "lines" in query else "") + (f" {span['pointer']}" if "pointer" in query
                                                                        else "")
    return {"sha256": sha, "where": where.strip() or "the whole source", "part": span.get("part"),
            "link": f"/source/{sha}" + ("?" + urlencode(query) if query else "")}
