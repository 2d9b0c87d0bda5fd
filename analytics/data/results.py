"""What an import read: the records it accepted, the files it rejected with the reason, and the
entries it skipped by choice (COCO crowd regions, small instances), counted by reason."""

from __future__ import annotations

import os
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Rejected:
    file: str
    reason: str


@dataclass
class ImportResult:
    """What a reader accepted and what it rejected (with reasons).

    accepted : list of Target (``read_targets``) or of Background (``read_backgrounds``)
    rejected : list of Rejected
    proposed : list of Target
        Photos without a mask, each with a GrabCut mask to review before it is stored
        (``read_targets(..., propose_masks=True)``; :mod:`analytics.data.masking`).
    skipped : dict of str to list of str
        Entries left out by choice, by reason (COCO, VOC: crowd regions, small instances; :mod:`analytics.data.instances`).
    """

    accepted: list = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    proposed: list = field(default_factory=list)
    skipped: dict[str, list[str]] = field(default_factory=dict)

    def reject(self, file: str | os.PathLike, reason: str) -> None:
        self.rejected.append(Rejected(str(file), reason))

    def skip_report(self, *, examples: int = 5) -> dict[str, dict]:
        """``{reason: {"count": n, "examples": [the first entries]}}`` of :attr:`skipped` (what the CLI
        prints and the Data page shows)."""
        return {reason: {"count": len(entries), "examples": entries[:examples]} for reason, entries in self.skipped.items()}
