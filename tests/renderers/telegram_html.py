"""Render a generated chat as a Telegram Desktop messages.html page: one tag per line, a date separator per
day, runs of one author's messages joined (no from_name), line breaks as <br>."""

from html import escape


def _message(i, t, joined):
    out = [f'     <div class="message default clearfix{" joined" if joined else ""}" id="message{i + 1}">', ""]
    if not joined:
        out += ['      <div class="pull_left userpic_wrap">', '       <div class="userpic userpic1">',
                '        <div class="initials">', escape(t.speaker[:1]), "        </div>", "       </div>",
                "      </div>"]
    stamp = t.time.strftime("%d.%m.%Y %H:%M:%S") + " UTC+00:00"
    out += ['      <div class="body">', f'       <div class="pull_right date details" title="{stamp}">',
            t.time.strftime("%H:%M"), "       </div>"]
    if not joined:
        out += ['       <div class="from_name">', escape(t.speaker), "       </div>"]
    text = "<br>".join(escape(line) for line in t.content.split("\n"))
    return [*out, '       <div class="text">', text, "       </div>", "      </div>", "     </div>", ""]


def render(session):
    lines = ["<!DOCTYPE html>", "<html>", " <head>", '  <meta charset="utf-8"/>', "<title>Exported Data</title>",
             " </head>", " <body>", '  <div class="page_wrap">', '   <div class="page_header">',
             '    <div class="text bold">', "Generated", "    </div>", "   </div>", '   <div class="history">', ""]
    day = None
    previous = None
    for i, t in enumerate(session.turns):
        if t.time.date() != day:
            day = t.time.date()
            lines += [f'     <div class="message service" id="message-{i + 1}">', '      <div class="body details">',
                      t.time.strftime("%d %B %Y"), "      </div>", "     </div>", ""]
            previous = None
        lines += _message(i, t, joined=t.speaker == previous)
        previous = t.speaker
    lines += ["   </div>", "  </div>", " </body>", "</html>", ""]
    return "messages.html", "\n".join(lines).encode()
