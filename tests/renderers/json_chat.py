"""Render a generated chat as one of the JSON chat exports, by the number of turns: Google Chat Takeout
(``messages.json``, the narrow no-break space before AM/PM), a Matrix/Element export, or a Microsoft
Teams Graph API page (newest first, as the API lists a chat)."""

from datetime import UTC

import orjson


def _google(turns):
    def when(t):
        hour = t.time.hour % 12 or 12
        return (f"{t.time:%A, %B} {t.time.day}, {t.time.year} at {hour}:{t.time:%M:%S}\u202f"
                f"{'PM' if t.time.hour >= 12 else 'AM'} UTC")
    messages = [{"creator": {"name": t.speaker, "email": "", "user_type": "Human"}, "created_date": when(t),
                 "text": t.content, "topic_id": f"t{i}", "message_id": f"g/t{i}/m{i}"} for i, t in enumerate(turns)]
    return "Google Chat/Groups/Space AAAAgen/messages.json", {"messages": messages}


def _ms(t):
    return int(t.time.replace(tzinfo=UTC).timestamp()) * 1000


def _matrix(turns):
    events = [{"type": "m.room.message", "sender": t.speaker, "content": {"msgtype": "m.text", "body": t.content},
               "origin_server_ts": _ms(t), "event_id": f"$e{i}", "room_id": "!gen:example.org"}
              for i, t in enumerate(turns)]
    return "export.json", {"room_name": "Generated", "room_creator": "x", "topic": "", "export_date": "01/01/2030",
                           "exported_by": "x", "messages": events}


def _teams(turns):
    values = [{"id": str(_ms(t)), "messageType": "message", "createdDateTime": f"{t.time:%Y-%m-%dT%H:%M:%S}.000Z",
               "from": {"application": None, "device": None, "user": {"id": f"u{i}", "displayName": t.speaker}},
               "body": {"contentType": "text", "content": t.content}, "chatId": "19:gen@thread.v2"}
              for i, t in enumerate(turns)]
    return "messages.json", {"@odata.context": "x", "@odata.count": len(values), "value": values[::-1]}


def render(session):
    name, doc = (_google, _matrix, _teams)[len(session.turns) % 3](session.turns)
    return name, orjson.dumps(doc, option=orjson.OPT_INDENT_2)
