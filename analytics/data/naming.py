"""Background ids and the words a person reads for them.

A photo cut into several square crops gives one background per crop, with the id
``<photo>@<top>,<left>,<side>`` (a photo used whole keeps its file name as id). Ids stay the stable
key in the workspace; pages, the report and the CLI show :func:`background_label` instead.
"""

from __future__ import annotations

import re

_CROP_ID = re.compile(r"^(?P<photo>.+)@(?P<top>\d+),(?P<left>\d+),(?P<side>\d+)$")


def crop_id(photo: str, top: int, left: int, side: int) -> str:
    """The id of the square crop of ``photo`` whose top-left corner is at (``top``, ``left``), ``side`` px wide."""
    return f"{photo}@{int(top)},{int(left)},{int(side)}"


def background_label(background_id: str) -> str:
    """A background as plain words: ``ColorfulCups, 742 px crop at top 64, left 30`` for a crop
    (:func:`crop_id`), the id itself for anything else (a photo used whole, an imported id).

    Example
    -------
    >>> background_label("ColorfulCups@64,30,742")
    'ColorfulCups, 742 px crop at top 64, left 30'
    >>> background_label("beach")
    'beach'
    """
    found = _CROP_ID.match(background_id)
    if found is None:
        return background_id
    return f"{found['photo']}, {found['side']} px crop at top {found['top']}, left {found['left']}"
