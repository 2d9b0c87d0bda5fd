"""The bring-your-own path from the CLI only (issue 11): a zip of targets whose class is no ImageNet
name, a background folder, the class mapped with ``set-class``, a torchvision checkpoint, keyword
tables from a long CSV keyed by the workspace's image ids, an ontology, an ontology suite, a run and
its matrices. Every step goes through ``analytics.cli.main`` and must exit 0."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import cv2
import numpy as np
import torch

from analytics.cli import main
from analytics.runs import SIGNALS
from analytics.workspace import Workspace

SIZE = 64  # workspace image size: keeps every step small
N_TARGETS, N_BACKGROUNDS = 3, 6
MASCOT_IMAGENET = 852  # tennis ball: what the user maps the class `mascot` to
#: keywords of each target's scene and of each background (co-occurring, so rules link them)
TARGET_KEYWORDS = (("sky", "grass"), ("sky", "tree"), ("water", "sand"))
BACKGROUND_KEYWORDS = (("sky", "grass"), ("sky", "tree"), ("grass", "tree"), ("water", "sand"), ("sand", "sky"), ("water", "grass"))


def cli(capsys, *argv: str) -> dict:
    """Run one command with ``--json``; it must exit 0 and print one JSON object."""
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, f"{argv[0]} exited {code}: {err}"
    return json.loads(out)


def target_zip(folder: Path) -> Path:
    """``images/mascot/*.png`` + ``masks/mascot/*.png`` (a bright disc on noise), zipped."""
    rng = np.random.default_rng(0)
    path = folder / "targets.zip"
    yy, xx = np.mgrid[:80, :80]
    with zipfile.ZipFile(path, "w") as archive:
        for i in range(N_TARGETS):
            image = rng.integers(0, 90, (80, 80, 3), dtype=np.uint8)
            mask = (yy - 40) ** 2 + (xx - 40) ** 2 < 20**2
            image[mask] = (40 * i + 150, 200, 60)
            archive.writestr(f"images/mascot/item{i}.png", cv2.imencode(".png", image)[1].tobytes())
            archive.writestr(f"masks/mascot/item{i}.png", cv2.imencode(".png", mask.astype(np.uint8) * 255)[1].tobytes())
    return path


def background_folder(folder: Path) -> Path:
    rng = np.random.default_rng(1)
    root = folder / "backgrounds"
    root.mkdir()
    for i in range(N_BACKGROUNDS):
        scene = np.clip(rng.integers(0, 255, 3) + rng.integers(-30, 30, (90, 120, 3)), 0, 255).astype(np.uint8)
        cv2.imwrite(str(root / f"scene{i}.jpg"), scene)
    return root


def checkpoint(folder: Path) -> Path:
    """A torchvision shufflenet_v2_x0_5 state dict: random weights, 1000 ImageNet outputs."""
    import torchvision

    with torch.random.fork_rng():
        torch.manual_seed(0)
        network = torchvision.models.shufflenet_v2_x0_5(num_classes=1000)
    path = folder / "mine.pt"
    torch.save(network.state_dict(), path)
    return path


def keyword_csv(workspace: Workspace, folder: Path) -> Path:
    """Long ``image,keyword`` CSV keyed by the workspace's target and background ids."""
    targets = [row["id"] for row in workspace.query("SELECT id FROM targets ORDER BY id")]
    backgrounds = [row["id"] for row in workspace.query("SELECT id FROM backgrounds ORDER BY id")]
    assert (len(targets), len(backgrounds)) == (N_TARGETS, N_BACKGROUNDS)
    rows = [(image, keyword) for images, table in ((targets, TARGET_KEYWORDS), (backgrounds, BACKGROUND_KEYWORDS))
            for image, keywords in zip(images, table) for keyword in keywords]  # fmt: skip
    path = folder / "kw.csv"
    path.write_text("image,keyword\n" + "".join(f"{image},{keyword}\n" for image, keyword in rows))
    return path


def test_own_targets_model_and_keywords_from_the_cli_to_the_matrices(tmp_path, capsys):
    root = tmp_path / "ws"
    Workspace(root).set_meta("image_size", str(SIZE))
    ws = ["--workspace", str(root)]

    added = cli(capsys, "add-targets", *ws, "--path", str(target_zip(tmp_path)), "--layout", "folder")
    assert added["added"] == N_TARGETS and added["unmapped_classes"] == ["mascot"]  # not an ImageNet name
    assert cli(capsys, "add-backgrounds", *ws, "--path", str(background_folder(tmp_path)))["added"] == N_BACKGROUNDS
    mapped = cli(capsys, "set-class", *ws, "--class", "mascot", "--imagenet", str(MASCOT_IMAGENET))
    assert mapped["imagenet"] == [MASCOT_IMAGENET]
    model = cli(capsys, "add-model", *ws, "--name", "mine", "--arch", "shufflenet_v2_x0_5", "--checkpoint", str(checkpoint(tmp_path)),
                "--input-size", str(SIZE))  # fmt: skip
    assert model["name"] == "mine"

    keywords = cli(capsys, "keywords", *ws, "--backend", "precomputed", "--file", str(keyword_csv(Workspace(root), tmp_path)))
    assert set(keywords["tables"]) == {"target", "background"}
    assert keywords["summary"]["target"]["items_without_keywords"] == 0
    ontology = cli(capsys, "ontology", *ws)["ontology"]  # mined from the two tables just built

    suite = cli(capsys, "suite", *ws, "--method", "ontology", "--n", "2", "--distance-model", "mine", "--realism-threshold", "0")
    assert suite["method"] == "ontology" and suite["targets"] == N_TARGETS and suite["per_target"] == 2
    assert suite["topped_up"] == 0  # the ontology's keywords supplied every background
    assert suite["keyword_tables"]["target"]["name"] == keywords["tables"]["target"] and suite["ontology"]["id"] == ontology
    run_id = cli(capsys, "run", *ws, "--model", "mine", "--suite", suite["suite"], "--device", "cpu")["run"]

    matrices = cli(capsys, "matrices", *ws, "--run", run_id, "--out", str(tmp_path / "out"))
    assert len(matrices["matrices"]) == len(SIGNALS)  # one per signal, max probability included
    assert matrices["colour_scale"]["suite"] == suite["suite"] and set(matrices["colour_scale"]["signals"]) == set(matrices["matrices"])
