"""Uploads (:mod:`ui.uploads`): saved under their own name, and every message of what reads them
names the uploaded file as the user knows it, never the server's temporary copy."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from analytics._choices import IMAGENET_MEAN, IMAGENET_STD
from analytics.data import custom_label_space
from analytics.exceptions import InvalidInputError, MissingDependencyError, NotFoundError
from analytics.models.libraries import register_onnx
from analytics.workspace import Workspace
from ui.uploads import UPLOAD_PREFIX, as_uploaded, saved_upload, upload_name


@dataclass
class Upload:
    """What ``st.file_uploader`` hands a page: a name and the bytes."""

    name: str
    data: bytes = b"bytes"

    def getvalue(self) -> bytes:
        return self.data


def test_an_upload_is_saved_under_its_own_name_and_removed_after():
    with saved_upload(Upload("C:\\Users\\me\\photos.zip")) as path:
        assert path.name == "photos.zip" and path.read_bytes() == b"bytes" and path.parent.name.startswith(UPLOAD_PREFIX)
    assert not path.exists()
    assert [upload_name(Upload(name)) for name in ("..", ".", "", "a/b.png")] == ["upload", "upload", "upload", "b.png"]


@pytest.mark.parametrize("kind", [InvalidInputError, NotFoundError, MissingDependencyError])
def test_an_error_inside_names_the_upload_not_the_temporary_copy(kind):
    with pytest.raises(kind) as caught, saved_upload(Upload("photos.zip")) as path:
        raise kind(f"{path / 'images' / 'a.png'}: not a readable image; in {path.parent} ({str(path)!r})")
    assert str(caught.value) == "photos.zip/images/a.png: not a readable image; in the upload ('photos.zip')"


def test_as_uploaded_takes_out_each_saved_uploads_folder(tmp_path):
    first, second = tmp_path / f"{UPLOAD_PREFIX}1" / "instances.json", tmp_path / f"{UPLOAD_PREFIX}2" / "images.zip"
    assert as_uploaded(f"{first}: annotation 2 names {second}/x.png", first, second) == "instances.json: annotation 2 names images.zip/x.png"


def test_a_model_upload_that_fails_to_run_is_named_by_its_upload_name(tmp_path):
    """The Models page registers an upload inside :func:`saved_upload`: the ONNX run error names broken.onnx."""
    from tests.analytics.models.test_onnx import _reshaping

    (tmp_path / "l.txt").write_text("a\nb\nc\n")
    graph = _reshaping(tmp_path / "graph.onnx", [7, 5]).read_bytes()
    labels = custom_label_space(tmp_path / "l.txt")
    with pytest.raises(InvalidInputError) as caught, saved_upload(Upload("broken.onnx", graph)) as path:
        register_onnx(Workspace(tmp_path / "ws"), "m", checkpoint=path, label_space=labels, mean=IMAGENET_MEAN, std=IMAGENET_STD)
    assert str(caught.value).startswith("broken.onnx (model 'm'): ONNX Runtime failed running it on a batch of shape 1x3x16x16 (Fail: ")
    assert UPLOAD_PREFIX not in str(caught.value) and str(Path(path).parent) not in str(caught.value)
