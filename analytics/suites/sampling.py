"""Background samplers (Liao & Chen §4.2.1; docs/method.md, 'Background sampling') and the realism scorers they consult.

Every sampler chooses, for each target, up to ``n`` distinct backgrounds of a pool. They share one
call shape, ``SAMPLERS[name]().sample(target_ids, pool_ids, n=..., seed=..., context=...)``, and one
core: the pool is split into ordered *subspaces* (a distance bin, the carriers of a keyword ...);
the sampler first takes one background for each of as many distinct subspaces as the pool allows
(at most ``n``, best-ranked first), then cycles through them, taking from each the first candidate,
in the subspace's order, that is not yet taken for this target and passes the realism threshold,
until ``n`` are found or every subspace is exhausted. Keyword subspaces overlap (a background
carries several keywords), so the first round is a matching: a keyword whose only backgrounds were
taken by another keyword that had alternatives gets one of them, and the other keyword moves on.
A target with at least ``n`` keywords whose carriers allow it thus gets ``n`` distinct keywords.

=========  ================================================================  ==================
name       subspaces (in cycling order)                                       candidate order
=========  ================================================================  ==================
random     the whole pool                                                     random
nearest    the whole pool                                                     proxy distance, ascending
interval   ``n`` equal-width bins of proxy distance between its min and max   random inside a bin
keyword    one per *detected* keyword (level 0), ranked by score              random
ontology   one per keyword of the ontology expansion, ranked by level then    random
           aggregated weight (the paper's method)
=========  ================================================================  ==================

Never the same background twice for a target. Randomness comes from one generator per target,
seeded by ``(seed, target id)``: the same seed gives the same suite, and adding a target does not
change the others' backgrounds.

**Too few backgrounds.** ``n`` larger than the pool is an error for every method (a suite would
need duplicates). The keyword methods top up by default: once their keyword subspaces are used up
they fill the rest from the remaining pool in random order, with ``keyword=''`` and ``level=-1``
marking those rows (and a warning counting them); with ``top_up=False`` the target keeps a smaller
suite and a warning. When the realism threshold rejects so many candidates that fewer than ``n``
pass, the rejected candidates with the highest realism scores fill the suite (each keeps the
subspace it was rejected from), flagged ``below_realism=True``, and a warning names the target:
every target of a suite gets ``n`` backgrounds, so runs compare like with like, and the analyst
sees which composites are the least plausible ones.

**Proxy distances.** ``nearest`` and ``interval`` rank the whole pool for every target; computing
every composite (targets x pool x models) is too slow on a CPU, so they rank by a cheap proxy given
in the context (see :func:`analytics.suites.proxy_distances`), and the exact composite distance
is computed afterwards for the chosen backgrounds only (:func:`analytics.suites.build_suite`).
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import cv2
import numpy as np

from analytics._validation import check_image_batch, check_mask_batch, check_positive_int
from analytics.exceptions import InvalidInputError


@dataclass(frozen=True)
class SampledBackground:
    """One chosen background of a target's suite.

    ``position`` runs 1..n in the order the sampler chose (position 0 is the original image).
    ``keyword`` / ``level`` record the subspace it came from ('' / -1 for distance-based methods
    and top-up rows); ``distance_proxy`` is the proxy distance used for ranking (NaN when the
    context had none); ``below_realism`` marks a background that failed the realism bar and was
    taken only because too few passed it.
    """

    target_id: str
    position: int
    background_id: str
    keyword: str = ""
    level: int = -1
    distance_proxy: float = float("nan")
    below_realism: bool = False


@dataclass(frozen=True)
class RankedKeyword:
    """A keyword of a target with its expansion level (0 = detected) and ranking weight."""

    keyword: str
    level: int
    weight: float


@dataclass(frozen=True)
class SamplingContext:
    """What the samplers read, aligned with the ``target_ids`` / ``pool_ids`` of the call.

    Attributes
    ----------
    proxy_distances : ndarray of shape (n_targets, n_pool), float64, or None
        Proxy semantic distance of each target to each pool background (``nearest``, ``interval``).
    target_keywords : sequence of sequence of RankedKeyword, length n_targets, or None
        Each target's keywords, already ranked (level, then weight); level 0 = detected
        (``keyword`` uses level 0 only, ``ontology`` all levels).
    background_keywords : dict of str to ndarray of shape (n_carriers,), int64, or None
        Keyword -> indices into the pool of the backgrounds carrying it (present in their keyword
        table).
    realism : callable (target index, pool index) -> float, or None
        Realism score of the composite of a target on a pool background; None accepts all.
    realism_threshold : float, default=0.0
        A candidate passes when its realism score is >= this value.
    realism_reference : callable (target index) -> float, or None
        The score of the target on its own original scene. When given, a candidate also passes
        when it scores at least that: an object whose outline contrasts with any scene (a white
        ball, a black bull) is not held to a bar that its own photo fails.
    """

    proxy_distances: np.ndarray | None = None
    target_keywords: Sequence[Sequence[RankedKeyword]] | None = None
    background_keywords: dict[str, np.ndarray] | None = None
    realism: Callable[[int, int], float] | None = None
    realism_threshold: float = 0.0
    realism_reference: Callable[[int], float] | None = None


@dataclass(frozen=True)
class SamplingResult:
    """The chosen backgrounds (grouped by target, positions 1..k) and the warnings raised."""

    items: list[SampledBackground]
    warnings: list[str] = field(default_factory=list)


@dataclass
class _Subspace:
    """Candidates (pool indices) of one bin or keyword, in the order they are tried."""

    candidates: list[int]
    keyword: str = ""
    level: int = -1


class Sampler(ABC):
    """Base of every sampler: validation, the per-target generator and the cycling core.

    Subclasses define ``name``, what they need from the context, and :meth:`_subspaces`.
    """

    name: ClassVar[str]
    needs_distances: ClassVar[bool] = False
    needs_keywords: ClassVar[bool] = False
    needs_ontology: ClassVar[bool] = False

    def sample(
        self,
        target_ids: Sequence[str],
        pool_ids: Sequence[str],
        *,
        n: int,
        seed: int,
        context: SamplingContext,
    ) -> SamplingResult:
        """Choose up to ``n`` distinct backgrounds from ``pool_ids`` for every target.

        Parameters
        ----------
        target_ids : sequence of str, length n_targets
        pool_ids : sequence of str, length n_pool
            Background ids, unique.
        n : int
            Backgrounds per target; at most ``n_pool``.
        seed : int
            Non-negative; the same seed gives the same result.
        context : SamplingContext
            Must hold what the sampler needs (``needs_distances`` / ``needs_keywords``).

        Returns
        -------
        SamplingResult
            Items grouped by target in the order of ``target_ids``; warnings for targets that got
            fewer than ``n`` or were topped up.

        Raises
        ------
        InvalidInputError
            ``n`` exceeds the pool, ids are duplicated, or the context lacks what is needed.
        """
        self._check(target_ids, pool_ids, n, seed, context)
        items: list[SampledBackground] = []
        notes: list[str] = []
        proxy = context.proxy_distances
        for i, target_id in enumerate(target_ids):
            chosen = self._sample_target(i, target_id, n, seed, context, len(pool_ids), notes)
            items += [
                SampledBackground(
                    target_id, position, pool_ids[j], space.keyword, space.level,
                    float(proxy[i, j]) if proxy is not None else float("nan"), below,
                )
                for position, (j, space, below) in enumerate(chosen, start=1)
            ]
        return SamplingResult(items, notes)

    def _sample_target(self, i, target_id, n, seed, context, n_pool, notes) -> list[tuple[int, _Subspace, bool]]:
        """Up to ``n`` (pool index, subspace, below realism) picks for target ``i``; warnings go to ``notes``."""
        rng = _target_rng(seed, target_id)
        accept, tried, rejected = _acceptor(i, context), set(), {}
        chosen = _fill(self._subspaces(i, rng, context, n_pool, n), n, accept, tried, rejected)
        fallback = self._fallback(rng, n_pool) if len(chosen) < n else None
        if fallback is not None:
            extra = _fill([fallback], n - len(chosen), accept, tried, rejected)
            if extra:
                notes.append(
                    f"target {target_id!r}: its keywords reached {len(chosen)} backgrounds; {len(extra)} random "
                    "backgrounds topped the suite up (keyword '', level -1)"
                )
            chosen += extra
        if len(chosen) < n and rejected:
            best = sorted(rejected, key=lambda j: (-context.realism(i, j), j))[: n - len(chosen)]
            notes.append(
                f"target {target_id!r}: {len(chosen)} of {n} backgrounds pass the realism threshold "
                f"{context.realism_threshold}; the {len(best)} best-scoring of the rejected ones fill the suite "
                "(below_realism=True)"
            )
            chosen += [(j, rejected[j], True) for j in best]
        if len(chosen) < n:
            notes.append(
                f"target {target_id!r}: {len(chosen)} of {n} backgrounds (the realism threshold "
                f"{context.realism_threshold} or the subspaces left no more candidates)"
            )
        return chosen

    @abstractmethod
    def _subspaces(self, i: int, rng: np.random.Generator, context: SamplingContext, n_pool: int, n: int) -> list[_Subspace]:
        """The ordered subspaces of target ``i`` (trusted input)."""

    def _fallback(self, rng: np.random.Generator, n_pool: int) -> _Subspace | None:
        """Where to look once the subspaces are exhausted before ``n``; None: nowhere."""
        return None

    def _check(self, target_ids, pool_ids, n, seed, context) -> None:
        check_positive_int(n, "n")
        check_positive_int(seed, "seed", minimum=0)
        if len(set(pool_ids)) != len(pool_ids):
            raise InvalidInputError("pool_ids must be unique; remove the duplicated background ids")
        if len(set(target_ids)) != len(target_ids):
            raise InvalidInputError("target_ids must be unique; remove the duplicated target ids")
        if n > len(pool_ids):
            raise InvalidInputError(
                f"n={n} backgrounds per target exceeds the pool of {len(pool_ids)} backgrounds; a suite never "
                "repeats a background, so lower n or add backgrounds to the workspace"
            )
        shape = (len(target_ids), len(pool_ids))
        if self.needs_distances:
            proxy = context.proxy_distances
            if proxy is None or np.shape(proxy) != shape:
                got = None if proxy is None else np.shape(proxy)
                raise InvalidInputError(
                    f"sampler {self.name!r} needs context.proxy_distances of shape (n_targets, n_pool) = {shape}; got {got}"
                )
            if not np.isfinite(proxy).all():
                raise InvalidInputError("context.proxy_distances holds NaN or infinite values; recompute the embeddings")
        if self.needs_keywords:
            if context.target_keywords is None or context.background_keywords is None:
                raise InvalidInputError(
                    f"sampler {self.name!r} needs context.target_keywords and context.background_keywords; "
                    "compute keyword tables for the targets and the pool first"
                )
            if len(context.target_keywords) != len(target_ids):
                raise InvalidInputError(
                    f"context.target_keywords has {len(context.target_keywords)} entries for {len(target_ids)} targets"
                )


class RandomSampler(Sampler):
    """Uniformly random backgrounds (the baseline)."""

    name = "random"

    def _subspaces(self, i, rng, context, n_pool, n):
        return [_Subspace(rng.permutation(n_pool).tolist())]


class NearestSampler(Sampler):
    """The ``n`` backgrounds closest to the target by proxy distance (top-K nearest)."""

    name = "nearest"
    needs_distances = True

    def _subspaces(self, i, rng, context, n_pool, n):
        return [_Subspace(np.argsort(context.proxy_distances[i], kind="stable").tolist())]


class IntervalSampler(Sampler):
    """One background per equal-width proxy-distance bin between the target's min and max distance.

    ``n`` bins span [min, max] of the target's proxy distances to the pool; bins are visited from
    near to far, one random member each, cycling over the non-empty bins until ``n`` are found.
    """

    name = "interval"
    needs_distances = True

    def _subspaces(self, i, rng, context, n_pool, n):
        distances = np.asarray(context.proxy_distances[i], dtype=np.float64)
        n_bins = n  # one scene per bin: the bin count is the suite size
        low, high = distances.min(), distances.max()
        width = (high - low) / n_bins if high > low else 1.0
        bins = np.minimum(((distances - low) / width).astype(int), n_bins - 1)
        return [_Subspace(rng.permutation(np.flatnonzero(bins == b)).tolist()) for b in range(n_bins)]


class KeywordSampler(Sampler):
    """One background per detected keyword of the target, cycling through the keywords.

    A background carries a keyword when the keyword is present in the background's keyword table.

    Parameters
    ----------
    top_up : bool, default=True
        When the keyword subspaces are exhausted before ``n``, fill the rest from the remaining pool
        in random order (rows with ``keyword=''``, ``level=-1``) and warn; False leaves the target
        with a smaller suite (and a warning).
    """

    name = "keyword"
    needs_keywords = True
    max_level: ClassVar[int | None] = 0

    def __init__(self, *, top_up: bool = True) -> None:
        self.top_up = bool(top_up)

    def _subspaces(self, i, rng, context, n_pool, n):
        carriers = context.background_keywords
        return [
            _Subspace(rng.permutation(carriers.get(k.keyword, np.empty(0, int))).tolist(), k.keyword, k.level)
            for k in context.target_keywords[i]
            if self.max_level is None or k.level <= self.max_level
        ]

    def _fallback(self, rng, n_pool):
        return _Subspace(rng.permutation(n_pool).tolist()) if self.top_up else None


class OntologySampler(KeywordSampler):
    """The paper's method: one background per keyword of the ontology expansion OL_x, keywords ranked
    by level, then aggregated weight, cycling until ``n`` are found."""

    name = "ontology"
    needs_ontology = True
    max_level = None


SAMPLERS: dict[str, type[Sampler]] = {cls.name: cls for cls in (RandomSampler, NearestSampler, IntervalSampler, KeywordSampler, OntologySampler)}


def _fill(
    subspaces: list[_Subspace], n: int, accept: Callable[[int], bool], tried: set[int], rejected: dict[int, _Subspace]
) -> list[tuple[int, _Subspace, bool]]:
    """Up to ``n`` picks: first one per subspace for as many distinct subspaces as the pool allows
    (:func:`_distinct`), then cycling through the subspaces (:func:`_cycle`) for the rest.

    ``tried`` (pool indices already taken or rejected for this target) is updated in place: a
    rejected candidate is never retried (it may sit in several keyword subspaces) and a taken one
    never repeats; ``rejected`` maps each rejected candidate to the subspace that offered it.
    Picks are ``(index, subspace, False)``.
    """
    chosen = _distinct(subspaces, n, accept, tried, rejected)
    return chosen + _cycle(subspaces, n - len(chosen), accept, tried, rejected)


def _distinct(
    subspaces: list[_Subspace], n: int, accept: Callable[[int], bool], tried: set[int], rejected: dict[int, _Subspace]
) -> list[tuple[int, _Subspace, bool]]:
    """One accepted candidate for each of as many subspaces as possible (at most ``n``), in rank order.

    A bipartite matching of subspaces to candidates, grown in rank order by augmenting paths: a
    subspace takes its first free accepted candidate; when all of its accepted candidates are taken,
    a subspace that holds one moves to another of its own if it can. Overlapping keyword subspaces
    (a background carrying several keywords) thus never cost a keyword its only background while
    another keyword had alternatives, and the kept subspaces are the best-ranked such set. For
    disjoint subspaces (bins, one pool) this is exactly "the first accepted candidate of each".
    Picks are listed in rank order.
    """
    owner: dict[int, int] = {}  # pool index -> subspace holding it
    pick: dict[int, int] = {}  # subspace -> pool index

    def take_free(s: int) -> bool:
        """Give subspace ``s`` its first candidate that nobody holds, not tried before, and accepted."""
        for j in subspaces[s].candidates:
            if j in owner or j in tried:
                continue
            if accept(j):
                owner[j], pick[s] = s, j
                return True
            tried.add(j)
            rejected[j] = subspaces[s]
        return False

    def augment(s: int, visited: set[int]) -> bool:
        if take_free(s):
            return True
        for j in subspaces[s].candidates:
            holder = owner.get(j)
            if holder is not None and holder not in visited:
                visited.add(holder)
                if augment(holder, visited):
                    owner[j], pick[s] = s, j
                    return True
        return False

    for s in range(len(subspaces)):
        if len(pick) >= n:
            break
        augment(s, {s})
    tried.update(owner)
    return [(pick[s], subspaces[s], False) for s in sorted(pick)]


def _cycle(
    subspaces: list[_Subspace], n: int, accept: Callable[[int], bool], tried: set[int], rejected: dict[int, _Subspace]
) -> list[tuple[int, _Subspace, bool]]:
    """Cycle through ``subspaces`` taking the first untried, accepted candidate of each, until ``n``.

    A subspace whose candidates are all tried drops out; ``tried`` and ``rejected`` as in :func:`_fill`.
    """
    chosen: list[tuple[int, _Subspace, bool]] = []
    cursors = [0] * len(subspaces)
    active = list(range(len(subspaces)))
    while len(chosen) < n and active:
        still = []
        for s in active:
            space = subspaces[s]
            while len(chosen) < n and cursors[s] < len(space.candidates):
                j = space.candidates[cursors[s]]
                cursors[s] += 1
                if j in tried:
                    continue
                tried.add(j)
                if accept(j):
                    chosen.append((j, space, False))
                    break
                rejected[j] = space
            if cursors[s] < len(space.candidates):
                still.append(s)
        active = still
    return chosen


def _acceptor(i: int, context: SamplingContext) -> Callable[[int], bool]:
    if context.realism is None:
        return lambda j: True
    bar = context.realism_threshold
    if context.realism_reference is not None:
        bar = min(bar, context.realism_reference(i))
    return lambda j: context.realism(i, j) >= bar


def _target_rng(seed: int, target_id: str) -> np.random.Generator:
    """A generator for one target: independent of the other targets and stable across runs."""
    key = int.from_bytes(hashlib.sha256(target_id.encode()).digest()[:8], "little")
    return np.random.default_rng([int(seed), key])


# -- realism ---------------------------------------------------------------------------------
class RealismScorer(ABC):
    """Scores how plausible the composite of an object on a background looks, in [0, 1].

    The paper uses DreamSim (no weights exist offline); any scorer with this interface plugs in.
    """

    name: ClassVar[str]
    higher_is_better: ClassVar[bool] = True

    @abstractmethod
    def score(self, images: np.ndarray, masks: np.ndarray, backgrounds: np.ndarray) -> np.ndarray:
        """Realism of pasting each object onto its background.

        Parameters
        ----------
        images : ndarray of shape (n, height, width, 3), uint8
            Target images.
        masks : ndarray of shape (n, height, width), bool
            Object masks (True = object).
        backgrounds : ndarray of shape (n, height, width, 3), uint8
            One candidate background per target image.

        Returns
        -------
        scores : ndarray of shape (n,), float64 in [0, 1]
        """

    def for_target(self, image: np.ndarray, mask: np.ndarray) -> Callable[[np.ndarray], float]:
        """A scorer of one target's composites: background (height, width, 3), uint8 -> realism.

        A sampler tries tens of backgrounds per target; a scorer whose target-side work is costly
        does it here once (:class:`SeamHarmony` its erode / dilate and Lab moments). This default
        scores each background through :meth:`score`.

        Parameters
        ----------
        image : ndarray of shape (height, width, 3), uint8
        mask : ndarray of shape (height, width), bool
        """
        images, masks = np.asarray(image)[None], np.asarray(mask)[None]
        return lambda background: float(self.score(images, masks, np.asarray(background)[None])[0])


class SeamHarmony(RealismScorer):
    """Colour and luminance agreement across the object's outline in the composite.

    What it measures, exactly: in CIE Lab (OpenCV scale: L in [0, 100], a and b in about
    [-127, 127]) it compares the object's inner border band (object pixels within ``band`` px of
    the outline) with the new background's outer ring (background pixels within ``band`` px of the
    outline, i.e. the scene right around the paste location)::

        D = (|mean L_in - mean L_out| + ||mean ab_in - mean ab_out||_2 + |std L_in - std L_out|) / 100
        score = max(0, 1 - D)

    A composite whose object is much brighter/darker, differently tinted or differently textured
    (luminance contrast) than the scene it lands in scores low: the seam shows. It is a cheap
    low-level harmony heuristic (in the spirit of colour-compatibility realism measures, Lalonde &
    Efros 2007), not a semantic plausibility judgment: a fish on a sunny road can score high.

    Parameters
    ----------
    band : int or None, default=None
        Width of the band and ring in px; None uses 6 % of the image side (at least 2 px).
    """

    name = "seam-harmony"

    def __init__(self, *, band: int | None = None) -> None:
        self.band = None if band is None else check_positive_int(band, "band")

    def score(self, images, masks, backgrounds):
        images = check_image_batch(images)
        backgrounds = check_image_batch(backgrounds, "backgrounds")
        if backgrounds.shape != images.shape:
            raise InvalidInputError(f"backgrounds must have the images' shape {images.shape}; got {backgrounds.shape}")
        masks = check_mask_batch(masks, images.shape[:3]) > 0.5
        return np.array([self._seam(image, mask)(background) for image, mask, background in zip(images, masks, backgrounds)], np.float64)

    def for_target(self, image, mask):
        images = check_image_batch(np.asarray(image)[None])
        seam = self._seam(images[0], check_mask_batch(np.asarray(mask)[None], images.shape[:3])[0] > 0.5)

        def scored(background: np.ndarray) -> float:
            background = np.asarray(background)
            if background.shape != images.shape[1:]:
                raise InvalidInputError(f"a background must have the target's shape {images.shape[1:]}; got {background.shape}")
            return seam(background)

        return scored

    def _seam(self, image: np.ndarray, mask: np.ndarray) -> Callable[[np.ndarray], float]:
        """The score of ``image`` / ``mask`` (trusted) on any background: the band, ring and the
        object's Lab moments are computed here, once; each background costs its ring's Lab only."""
        band = self.band or max(2, round(0.06 * min(image.shape[:2])))
        kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * band + 1, 2 * band + 1))
        hard = mask.astype(np.uint8)
        inner = mask & ~cv2.erode(hard, kernel, borderType=cv2.BORDER_REPLICATE).astype(bool)
        outer = cv2.dilate(hard, kernel).astype(bool) & ~mask
        if not inner.any() or not outer.any():
            return lambda background: 1.0  # no seam to judge (empty or full mask)
        inside = _lab_moments(image[inner])
        return lambda background: max(0.0, 1.0 - _moment_gap(inside, _lab_moments(background[outer])) / 100.0)


def _lab_moments(pixels: np.ndarray) -> tuple[np.ndarray, float]:
    """Mean Lab and std of L of a pixel set of shape (k, 3), uint8 RGB (see :class:`SeamHarmony`)."""
    lab = cv2.cvtColor(pixels.reshape(-1, 1, 3).astype(np.float32) / 255.0, cv2.COLOR_RGB2Lab).reshape(-1, 3)
    return lab.mean(0), lab[:, 0].std()


def _moment_gap(inside: tuple[np.ndarray, float], outside: tuple[np.ndarray, float]) -> float:
    """The Lab moment gap D x 100 of :class:`SeamHarmony` between two :func:`_lab_moments`."""
    (mean_in, std_in), (mean_out, std_out) = inside, outside
    return float(abs(mean_in[0] - mean_out[0]) + np.linalg.norm(mean_in[1:] - mean_out[1:]) + abs(std_in - std_out))


REALISM_SCORERS: dict[str, type[RealismScorer]] = {SeamHarmony.name: SeamHarmony}
