"""Render a generated chat as Takeout's Gemini Apps activity page (MyActivity.html): turns paired into a
prompt entry (its lines split by ``<br>``) and its response (a ``<p>`` per line), newest first, times in
UTC as Takeout writes them."""

import html


def _cell(prompt, when, response):
    title = "<br>".join(html.escape(line) for line in prompt.split("\n"))
    body = "".join(f"<p>{html.escape(line)}</p>" for line in response.split("\n")) if response is not None else ""
    stamp = f"{when:%b} {when.day}, {when.year}, {when.hour % 12 or 12}:{when:%M:%S}\u202f{when:%p} UTC"
    return ('<div class="outer-cell mdl-cell mdl-cell--12-col mdl-shadow--2dp"><div class="mdl-grid">'
            '<div class="header-cell mdl-cell mdl-cell--12-col"><p class="mdl-typography--title">Gemini Apps<br></p>'
            f'</div><div class="content-cell mdl-cell mdl-cell--6-col mdl-typography--body-1">Prompted {title}<br>'
            f'{stamp}<br>{body}</div><div class="content-cell mdl-cell mdl-cell--12-col mdl-typography--caption">'
            '<b>Products:</b><br>&emsp;Gemini Apps<br></div></div></div>')


def render(session):
    turns = session.turns
    cells = [_cell(turns[k].content, turns[k].time, turns[k + 1].content if k + 1 < len(turns) else None)
             for k in range(0, len(turns), 2)]
    page = '<html><head><meta charset="UTF-8"></head><body><div class="mdl-grid">' + "".join(cells[::-1])
    return "MyActivity.html", (page + "</div></body></html>\n").encode()


def expected(session):
    turns = session.turns
    return [("User" if i % 2 == 0 else "Gemini", t.content, turns[i - i % 2].time) for i, t in enumerate(turns)]
