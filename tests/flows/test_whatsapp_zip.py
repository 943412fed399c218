"""A WhatsApp export zip (chat text plus media): ingest lists every file's siblings, and each
attachment the chat references is recorded as present or missing."""

from __future__ import annotations

import zipfile

from flows.core import ingest
from models.settings import Settings
from parsers import registry
from parsers.text import decode
from tests.helpers import read_one

CHAT = (
    "\u200e[14/01/2023, 09:12:03] Trip Crew: \u200eMessages and calls are end-to-end encrypted.\n"
    "[14/01/2023, 09:13:44] Marta Díaz: Photos from the ferry\n"
    "\u200e[14/01/2023, 09:13:50] Marta Díaz: \u200e<attached: 00000004-PHOTO-2023-01-14-09-13-50.jpg>\n"
    "\u200e[14/01/2023, 09:14:02] Marta Díaz: \u200e<attached: 00000005-PHOTO-2023-01-14-09-14-02.jpg>\n"
    "[14/01/2023, 09:20:10] Jonas Berg: Nice! Here is the ticket\n"
    "\u200e[14/01/2023, 09:20:31] Jonas Berg: \u200e<attached: 00000006-ferry-ticket.pdf>\n"
)


def _zip(path, members):
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)


def test_zip_members_get_their_siblings_and_attachments_are_checked(tmp_path):
    archive = tmp_path / "WhatsApp Chat - Trip Crew.zip"
    _zip(archive, {"_chat.txt": CHAT.encode(), "00000004-PHOTO-2023-01-14-09-13-50.jpg": b"\xff\xd8jpeg",
                   "00000006-ferry-ticket.pdf": b"%PDF-1.4"})
    refs = {r.name.rsplit("/", 1)[-1]: r for r in ingest.discover([archive], Settings())}
    chat = refs["_chat.txt"]
    assert chat.siblings == ("00000004-PHOTO-2023-01-14-09-13-50.jpg", "00000006-ferry-ticket.pdf")
    source = decode(ingest.read(chat), chat.name)
    from dataclasses import replace

    source = replace(source, siblings=chat.siblings)
    assert registry.detect(source.text, source.name, threshold=0.5).grammar == "whatsapp"
    (session,) = read_one(registry.get("whatsapp"), source)
    attached = [(t.extra["attachment"], t.extra["attachmentPresent"]) for t in session.turns
                if t.extra and "attachment" in t.extra]
    assert attached == [("00000004-PHOTO-2023-01-14-09-13-50.jpg", True),
                        ("00000005-PHOTO-2023-01-14-09-14-02.jpg", False), ("00000006-ferry-ticket.pdf", True)]
    assert session.meta["attachments"] == {"referenced": 3, "present": 2, "checked": True,
                                           "missing": ["00000005-PHOTO-2023-01-14-09-14-02.jpg"]}
    assert any("not beside it: 00000005-PHOTO" in w for w in session.warnings)
    assert session.title == "Trip Crew"


def test_folder_files_get_the_other_names_of_their_folder(tmp_path):
    folder = tmp_path / "WhatsApp Chat with Ana"
    folder.mkdir()
    (folder / "WhatsApp Chat with Ana.txt").write_text("12/01/2023, 10:00 - Ana: IMG-20230112-WA0001.jpg"
                                                      " (file attached)\n", encoding="utf-8")
    (folder / "IMG-20230112-WA0001.jpg").write_bytes(b"\xff\xd8")
    (tmp_path / "elsewhere.txt").write_text("User: hi\n", encoding="utf-8")
    refs = {r.name.rsplit("/", 1)[-1]: r for r in ingest.discover([tmp_path], Settings())}
    assert refs["WhatsApp Chat with Ana.txt"].siblings == ("IMG-20230112-WA0001.jpg",)
    assert refs["elsewhere.txt"].siblings == ()
