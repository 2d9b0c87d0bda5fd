"""The tiny synthetic world: 64 px targets (discs and squares) and backgrounds, tiny TorchScript
networks, a random suite and one-hot keyword tables. The benchmarks build workspaces of any size
from it; the tests' fixtures (``tests/fixtures/workspace.py``, ``models.py``, ``suites.py``) build
the fixed tiny workspace from it, so both describe the same world in one place.

Networks (custom label space ``disc``/``square``, input 64 px, forward returns ``(logits,
embedding)``): :class:`TinyNet` (3x3 conv 3->8 stride 2 + ReLU, global average pool, Linear 8->2)
and :class:`RegionNet` (mean colour of fixed pixel boxes: :data:`CENTRE_BOX` lies inside every
object and away from the blended seam, :data:`CORNER_BOXES` are always background).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

from analytics.data import Background, Target
from analytics.keywords import KeywordTable
from analytics.workspace import Workspace, now

SIZE = 64
CLASSES: dict[str, list[str]] = {"disc": [], "square": []}  # class -> ImageNet wnids (none: a custom label space)
TINY_SUITE = "tiny-suite"
TINY_SUITE_N = 4
CENTRE_BOX = (28, 36, 28, 36)  # rows, cols: inside every tiny object, >= 4 px from its edge
CORNER_BOXES = ((0, 8, 0, 8), (0, 8, 56, 64), (56, 64, 0, 8), (56, 64, 56, 64))  # always background

SUITE_VOCABULARY = ["sky", "tree", "grass", "sea", "sand"]
TARGET_KEYWORDS = {"disc": ["sky"], "square": ["sea"]}
BACKGROUND_KEYWORDS = [
    ["sky", "tree"], ["sky", "tree"], ["sky", "grass"], ["sky", "grass"],
    ["sky", "tree"], ["sea", "sand"], ["sea", "sand"], ["sea", "sand"],
    ["sand"], ["sky", "grass"], ["tree", "grass"], ["sea"],
]  # fmt: skip
TARGET_TABLE = "tiny-targets"
BACKGROUND_TABLE = "tiny-backgrounds"


def make_target(class_name: str, index: int, rng: np.random.Generator) -> Target:
    """A coloured disc or square on a textured background."""
    image = rng.integers(0, 80, (SIZE, SIZE, 3), dtype=np.uint8)
    yy, xx = np.mgrid[:SIZE, :SIZE]
    centre = SIZE // 2 + rng.integers(-4, 5, 2)
    if class_name == "disc":
        mask = (yy - centre[0]) ** 2 + (xx - centre[1]) ** 2 < (SIZE // 4) ** 2
    else:
        mask = (abs(yy - centre[0]) < SIZE // 5) & (abs(xx - centre[1]) < SIZE // 5)
    image[mask] = rng.integers(150, 255, 3, dtype=np.uint8)
    return Target(f"{class_name}/{index}", class_name, image, mask, origin=f"synthetic:{class_name}{index}")


def make_background(index: int, rng: np.random.Generator) -> Background:
    base = rng.integers(0, 255, 3)
    noise = rng.integers(-30, 30, (SIZE, SIZE, 3))
    image = np.clip(base + noise, 0, 255).astype(np.uint8)
    return Background(f"bg{index:02d}", image, origin=f"synthetic:bg{index}")


class TinyNet(nn.Module):
    """3x3 conv (3->8, stride 2) + ReLU, global average pool, Linear(8->2); returns (logits, embedding)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.fc = nn.Linear(8, len(CLASSES))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        embedding = torch.relu(self.conv(x)).mean((2, 3))
        return self.fc(embedding), embedding


class RegionNet(nn.Module):
    """Mean colour of fixed pixel boxes (the embedding, 3 values per box) -> Linear -> 2 logits."""

    def __init__(self, boxes: tuple[tuple[int, int, int, int], ...]) -> None:
        super().__init__()
        self.boxes = boxes
        self.fc = nn.Linear(3 * len(boxes), len(CLASSES))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        embedding = torch.cat([x[:, :, r0:r1, c0:c1].mean((2, 3)) for r0, r1, c0, c1 in self.boxes], dim=1)
        return self.fc(embedding), embedding


def save_torchscript(module: nn.Module, path: Path, *, seed: int = 0) -> Path:
    """Seed ``module``'s weights, trace it on a 64 px batch and save it (global RNG untouched)."""
    with torch.random.fork_rng(), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch 2.14 deprecates TorchScript; users still ship it
        torch.manual_seed(seed)
        for parameter in module.parameters():
            nn.init.normal_(parameter, std=0.5)
        traced = torch.jit.trace(module.eval(), torch.zeros(1, 3, SIZE, SIZE))
    traced.save(str(path))
    return path


def write_labels(path: Path) -> Path:
    path.write_text("\n".join(CLASSES) + "\n")
    return path


def insert_suite(workspace: Workspace, suite_id: str = TINY_SUITE, *, n: int = TINY_SUITE_N, seed: int = 0) -> str:
    """Insert a random suite (n distinct backgrounds per target, random distances) directly into
    ``suites``/``suite_items``."""
    rng = np.random.default_rng(seed)
    targets = [row["id"] for row in workspace.query("SELECT id FROM targets ORDER BY id")]
    backgrounds = [row["id"] for row in workspace.query("SELECT id FROM backgrounds ORDER BY id")]
    with workspace.transaction() as conn:
        conn.execute(
            "INSERT INTO suites(id, method, n, seed, params, created) VALUES (?, 'random', ?, ?, '{}', ?)", (suite_id, n, seed, now())
        )
        rows = []
        for target in targets:
            for position, background in enumerate(rng.choice(backgrounds, n, replace=False), start=1):
                rows.append((suite_id, target, position, str(background), float(rng.uniform(0.05, 1.0))))
        conn.executemany("INSERT INTO suite_items(suite_id, target_id, position, background_id, distance) VALUES (?, ?, ?, ?, ?)", rows)
    return suite_id


def onehot_table(ids: list[str], rows: list[list[str]], labels: list[str] | None = None) -> KeywordTable:
    """A keyword table over :data:`SUITE_VOCABULARY` with scores 0.9 where present, else 0.05."""
    present = np.array([[word in row for word in SUITE_VOCABULARY] for row in rows], dtype=bool)
    return KeywordTable(
        ids=ids,
        vocabulary=list(SUITE_VOCABULARY),
        scores=np.where(present, 0.9, 0.05).astype(np.float32),
        present=present,
        labels=labels,
        backend="precomputed",
        params={"fixture": "suites"},
    )
