"""Render a generated chat as a VK archive page (messages/<peer>/messages0.html, windows-1251): newest
message first, one ``div.item`` per message; the first speaker is the archive's owner (``Вы``). Characters
windows-1251 lacks are written as character references, as a browser's page would."""

MONTHS = ("янв", "фев", "мар", "апр", "мая", "июн", "июл", "авг", "сен", "окт", "ноя", "дек")
HEAD = ('<!DOCTYPE html>\n<html>\n<head>\n<meta http-equiv="Content-Type" content="text/html; charset=windows-1251">'
        '\n</head>\n<body>\n<div class="ui_crumb">Сообщения</div><div class="ui_crumb">Generated</div>\n')


def _item(n, t, me):
    who = "Вы" if t.speaker == me else f'<a href="https://vk.com/id{100 + n}">{t.speaker}</a>'
    when = f"{t.time.day} {MONTHS[t.time.month - 1]} {t.time.year} в {t.time.hour}:{t.time:%M:%S}"
    body = "<br>".join(t.content.split("\n"))
    return (f'<div class="item">\n<div class="item__main"><div class="message" data-id="{n}">\n'
            f'<div class="message__header">{who}, {when}</div>\n<div>{body}<div class="kludges"></div></div>\n'
            '</div></div>\n</div>\n')


def render(session):
    me = session.turns[0].speaker
    items = [_item(n, t, me) for n, t in enumerate(session.turns)]
    page = HEAD + "".join(reversed(items)) + "</body>\n</html>\n"
    return "messages/2000000001/messages0.html", page.encode("cp1251", errors="xmlcharrefreplace")


def expected(session):
    me = session.turns[0].speaker
    return [("Вы" if t.speaker == me else t.speaker, t.content, t.time) for t in session.turns]
