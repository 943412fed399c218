"""Each session's encoded interactions as the batch encoder wrote them before it joined them in polars
(``normalizers.table._encode``): the batch's lines written out as a CSV of one unquoted column and
sliced per session; kept as the oracle the product must agree with, byte for byte."""

from __future__ import annotations

import io

import orjson
import polars as pl

from normalizers.keys import KEY_MESSAGES
from normalizers.table import SessionColumns, _line, _Speaker


def encode(frame: pl.DataFrame, speakers: dict[str, _Speaker], out: list[SessionColumns]) -> None:
    """Each session's body, characters and opening messages, as ``_encode`` made them."""
    keys = list(speakers)
    frame = frame.with_columns(spk=pl.col("key").replace_strict(keys, [speakers[k].piece for k in keys]),
                               raw=pl.col("key").replace_strict(keys, [speakers[k].raw for k in keys]))
    last = pl.col("session") != pl.col("session").shift(-1, fill_value=-1)
    lines = frame.select("session", "kind", _line()).with_columns(
        piece=pl.when(last).then(pl.col("line")).otherwise(pl.col("line") + ","))
    buffer = io.BytesIO()
    lines.select("piece").write_csv(buffer, include_header=False, quote_style="never")
    data = buffer.getbuffer()
    per = (lines.with_columns(end=(pl.col("piece").str.len_bytes() + 1).cum_sum(),
                              chars=frame["content"].str.len_chars())
           .group_by("session", maintain_order=True)
           .agg(pl.col("end").last(), (pl.col("end").first() - pl.col("piece").first().str.len_bytes() - 1)
                .alias("start"), pl.col("chars").sum(),
                pl.col("line").filter(pl.col("kind") != "system").head(KEY_MESSAGES).alias("first")))
    for s, end, start, chars, first in per.iter_rows():
        out[s].body = b"\n" + bytes(data[start:end - 1])
        out[s].characters = int(chars)
        out[s].summary.open_with(orjson.loads(line) for line in first)
