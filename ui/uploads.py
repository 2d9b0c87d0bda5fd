"""Uploaded files as the library reads them: saved under their own name in a temporary folder, and
named in every message as the user knows them (``photos.zip/images/a.png``), never by the server's
temporary copy (``/tmp/backdrop-upload-…/photos.zip/images/a.png``).

:func:`saved_upload` is the one place a page saves an ``st.file_uploader`` file to disk; a
:class:`~analytics.exceptions.BackdropError` raised while it is open leaves with the temporary
folder taken out of its message. Text that outlives the error (an import's rejected files and
their reasons) goes through :func:`as_uploaded` while the copy's path is known.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from analytics.exceptions import BackdropError

UPLOAD_PREFIX = "backdrop-upload-"  # of the temporary folders (removed when the upload is done with)
_NO_NAME = "upload"  # the file name of an upload whose own name is no file name ('', '.', '..')


def upload_name(upload) -> str:
    """The file name an upload is saved and shown under: the last part of its own name."""
    name = Path(str(upload.name).replace("\\", "/")).name
    return name if name not in ("", ".", "..") else _NO_NAME


@contextmanager
def saved_upload(upload) -> Iterator[Path]:
    """An ``st.file_uploader`` file saved under :func:`upload_name` in a temporary folder (removed after).

    Raises
    ------
    BackdropError
        Whatever the body raises, its message naming the upload instead of the temporary copy
        (same class and traceback; only the text changes).
    """
    with tempfile.TemporaryDirectory(prefix=UPLOAD_PREFIX) as folder:
        path = Path(folder) / upload_name(upload)
        path.write_bytes(upload.getvalue())
        try:
            yield path
        except BackdropError as err:
            shown = as_uploaded(str(err), path)
            err.args = (shown,)
            if str(err) != shown:  # a class that keeps its text elsewhere (ImportError's msg): a new one of its class
                raise type(err)(shown) from err
            raise


def as_uploaded(text: str, *saved: Path) -> str:
    """``text`` with the temporary folder of each saved upload taken out of its paths.

    ``/tmp/backdrop-upload-x/photos.zip/images/a.png`` reads ``photos.zip/images/a.png``; the folder
    alone (no file after it) reads ``the upload``.
    """
    for path in saved:
        for folder in dict.fromkeys((str(path.parent), str(path.parent.resolve()))):  # /tmp may be a link (macOS: /private/tmp)
            text = text.replace(folder + os.sep, "").replace(folder, "the upload")
    return text
