"""Decoding and canonicalisation (seed 004 §1) and the specific reasons for bad bytes."""

from __future__ import annotations

import codecs

import pytest

from models.errors import IngestError, Reason
from parsers.text import decode, sha256_text
from tests.helpers import read_one


@pytest.mark.parametrize(
    ("data", "encoding"),
    [
        (b"User: hi\r\nAssistant: yo\r\n", "utf-8"),
        (codecs.BOM_UTF8 + b"User: hi\rAssistant: yo\r", "utf-8-bom"),
        (codecs.BOM_UTF16_LE + "User: hi\r\nAssistant: yo\r\n".encode("utf-16-le"), "utf-16-le"),
        (codecs.BOM_UTF16_BE + "User: hi\nAssistant: yo\n".encode("utf-16-be"), "utf-16-be"),
        ("User: hi\nAssistant: yo\n".encode("utf-16-le"), "utf-16-le"),
    ],
)
def test_canonical_text(data, encoding):
    src = decode(data, "a.txt")
    assert src.text.rstrip("\n") == "User: hi\nAssistant: yo"
    assert "\r" not in src.text and not src.text.startswith("\ufeff")
    assert src.encoding == encoding
    assert src.sha256 == sha256_text(src.text)


def test_same_text_same_checksum_whatever_the_line_ends():
    assert decode(b"a: b\r\nc: d", "x").sha256 == decode(b"a: b\nc: d", "y").sha256


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", Reason.EMPTY),
        (b"   \n\n", Reason.EMPTY),
        (b"User: caf\xc3\xa9 in UTF-8, cr\xe8me in Latin-1\n", Reason.UNDECODABLE),  # damaged UTF-8
        (bytes(range(256)) * 20, Reason.UNDECODABLE),
        (b"\x00\x01\x02\x03\x04\x05" * 100 + b"text", Reason.BINARY),
    ],
)
def test_bad_bytes_have_specific_reasons(data, reason):
    with pytest.raises(IngestError) as info:
        decode(data, "bad.bin")
    assert info.value.reason == reason
    assert "bad.bin" in str(info.value)


def _irc_log(damage: bytes) -> bytes:
    lines = [b"--- Log opened Mon Mar 04 09:00:00 2024"]
    lines += [f"09:{i:02d} <nick{i % 3}> message number {i} about the release".encode() for i in range(40)]
    lines[17] = b"09:16 <nick1> the caf" + damage + b" downstairs has coffee again"
    return b"\n".join(lines) + b"\n"


def test_a_few_invalid_bytes_are_replaced_and_noted():
    data = _irc_log(b"\xe9")
    src = decode(data, "dev.log")
    assert src.replaced_count == 1 and src.replaced == (data.index(b"\xe9"),)
    assert "the caf\ufffd downstairs" in src.text
    assert decode(b"User: hi\n", "ok.txt").replaced == ()


def test_an_irc_log_with_one_invalid_byte_reconstructs_every_line():
    from models.settings import Settings
    from parsers import registry
    from validators.accounting import LineIndex, account

    data = _irc_log(b"\xff")
    src = decode(data, "dev.log")
    assert registry.detect(src.text, src.name, threshold=0.5).grammar == "irc"
    grammar = registry.get("irc")
    (session,) = read_one(grammar, src, Settings())
    assert len(session.turns) == 40 == grammar.count_turns(session.raw)
    assert session.turns[16].content == "the caf\ufffd downstairs has coffee again"
    assert account(session, LineIndex(src.text)).clean


def test_mostly_invalid_bytes_are_refused():
    with pytest.raises(IngestError) as info:
        decode(b"ok line\n" + b"\xff\xfe\x80" * 50, "junk.txt")
    assert info.value.reason == Reason.UNDECODABLE and "invalid byte sequences" in str(info.value)


def test_a_legacy_code_page_is_detected_and_recorded_and_utf8_utf16_are_untouched():
    latin = decode("User: café crème\nAssistant: très bien\n".encode("latin-1"), "old.txt")
    assert latin.text == "User: café crème\nAssistant: très bien\n" and latin.encoding == "cp1252"
    assert latin.encoding_guess.startswith("encoding cp1252 detected by charset-normalizer")
    windows = decode("User: “quoted” – 5 €\n".encode("cp1252"), "old.txt")
    assert windows.text == "User: “quoted” – 5 €\n"
    for data, encoding in ((b"User: caf\xc3\xa9\n", "utf-8"), ("User: café\n".encode("utf-16"), "utf-16-le"),
                           ("User: café\n".encode("utf-16-le"), "utf-16-le")):
        source = decode(data, "new.txt")
        assert (source.text, source.encoding, source.encoding_guess) == ("User: café\n", encoding, None)


def test_junk_and_damaged_utf8_still_are_undecodable_and_say_why():
    with pytest.raises(IngestError) as damaged:
        decode(b"User: caf\xc3\xa9 cr\xe8me\n", "mixed.txt")
    assert "holds UTF-8 text" in damaged.value.detail
    with pytest.raises(IngestError) as junk:
        decode(b"<html>" + b"\xc3(" * 400, "junk.html")
    assert junk.value.reason is Reason.UNDECODABLE and "no legacy code page fits" in junk.value.detail
