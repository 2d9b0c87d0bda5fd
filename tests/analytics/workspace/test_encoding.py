"""The CSV rule of exports: formulas neutralised (OWASP CSV injection), numbers and plain text untouched."""

from __future__ import annotations

import csv
import io

import numpy as np
import pandas as pd
import pytest

from analytics.workspace import to_csv
from analytics.workspace.encoding import FORMULA_PREFIXES, neutralise_formula


def read_back(text: str) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)


@pytest.mark.parametrize("prefix", ["=", "+", "-", "@", "\t", "\r"])
def test_each_dangerous_prefix_gets_a_quote(prefix):
    assert prefix in FORMULA_PREFIXES
    text = prefix + "HYPERLINK(\"http://evil\", \"x\")"
    assert neutralise_formula(text) == "'" + text
    frame = pd.DataFrame({"note": [text]})
    assert read_back(to_csv(frame))["note"].tolist() == ["'" + text]


@pytest.mark.parametrize("dtype", [object, "str", "string", "category"])
def test_every_text_dtype_is_neutralised(dtype):
    frame = pd.DataFrame({"note": pd.Series(["=1+1", "fine", None], dtype=dtype)})
    assert read_back(to_csv(frame))["note"].tolist() == ["'=1+1", "fine", ""]


def test_numbers_and_ordinary_text_are_untouched():
    frame = pd.DataFrame(
        {
            "value": [-0.5, 1.25, np.nan],
            "count": np.array([-3, 0, 7], dtype=np.int64),
            "flag": [True, False, True],
            "mixed": [-2, "-2", "a-b"],  # an int in an object column stays a number; the string gets the quote
            "text": ["plain text", "a = b", "e-mail@example.org"],  # only the first character counts
        }
    )
    original = frame.copy()
    text = to_csv(frame)
    assert text.splitlines() == [
        "value,count,flag,mixed,text",
        "-0.5,-3,True,-2,plain text",
        "1.25,0,False,'-2,a = b",
        ",7,True,a-b,e-mail@example.org",
    ]
    pd.testing.assert_frame_equal(frame, original)  # the input is not modified
    assert to_csv(frame) == frame.to_csv(index=False).replace("False,-2,", "False,'-2,")  # otherwise pandas' CSV


def test_labels_paths_buffers_and_the_index(tmp_path):
    frame = pd.DataFrame({"=sum": ["x"], "ok": ["@me"]}, index=pd.Index(["+1"], name="id"))
    assert to_csv(frame).splitlines() == ["'=sum,ok", "x,'@me"]
    assert to_csv(frame, index=True).splitlines() == ["id,'=sum,ok", "'+1,x,'@me"]
    path = tmp_path / "out.csv"
    assert to_csv(frame, path) is None and path.read_text() == to_csv(frame)
    buffer = io.StringIO()
    assert to_csv(frame, buffer) is None and buffer.getvalue() == to_csv(frame)


@pytest.mark.parametrize("dtype", [object, "str", "category"])
def test_a_carriage_return_anywhere_is_quoted_and_read_back_exactly(dtype, tmp_path):
    """A lone ``\\r`` went unquoted (Python's CSV writer quotes only the line terminator's characters) and
    split its row; ``\\r\\n`` must come back as ``\\r\\n``, not ``\\n``."""
    notes = ["x\ry", "a\r\nb", "p\nq", "\r", 'say "hi"\r', "plain"]
    frame = pd.DataFrame({"note": notes, "n": range(len(notes))}).astype({"note": dtype})
    text = to_csv(frame)
    assert text.endswith("\r\n") and '"x\ry"' in text
    rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    assert [row[0] for row in rows[1:]] == ["x\ry", "a\r\nb", "p\nq", "'\r", 'say "hi"\r', "plain"]  # a leading \r is a formula prefix
    assert read_back(text)["note"].tolist()[:3] == notes[:3]
    path = tmp_path / "notes.csv"
    to_csv(frame.set_index("note"), path, index=True)  # the index's labels count too
    with open(path, encoding="utf-8", newline="") as handle:
        assert [row[0] for row in csv.reader(handle, strict=True)][1:3] == ["x\ry", "a\r\nb"]
    # a table without a carriage return is written as before
    assert to_csv(pd.DataFrame({"note": ["p\nq", "plain"]})) == 'note\n"p\nq"\nplain\n'
