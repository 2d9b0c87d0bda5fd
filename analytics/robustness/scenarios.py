"""XIMAGENET-12 scenarios: mask-driven changes of a target's background (or of its object) and the
models' per-image predictions under each (Li et al., "XIMAGENET-12: an explainable AI benchmark
dataset for model robustness evaluation", §2.1; parameters from the authors' code where the paper
names only the OpenCV function). The statistics (accuracy tables, robustness score, Table 1's
regression) are :mod:`analytics.robustness.scenario_stats`.

Every scenario keeps the object's pixels exactly and changes the background, except ``blur_object``,
which does the opposite. All take ``(image, mask, *, rng, backgrounds)`` so that :data:`SCENARIOS` is one
uniform registry; scenarios without randomness ignore ``rng``, and only ``random_background`` reads
``backgrounds``. The unmodified image is the baseline scenario :data:`ORIGINAL` (the paper's
"original image" intercept), always evaluated.

Where the paper leaves a choice, a named constant below states it.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence

import cv2
import numpy as np
import pandas as pd

from analytics._progress import Progress
from analytics._validation import check_choice, check_image_batch, check_mask_batch, check_positive_int
from analytics.data import composite, list_backgrounds, list_class_mappings, list_targets, load_backgrounds, load_targets
from analytics.exceptions import InvalidInputError
from analytics.models import get_model_spec, load_model
from analytics.suites import own_photo_backgrounds
from analytics.team import require_permission
from analytics.workspace import Workspace, content_id, model_keys

ORIGINAL = "original"

#: Gaussian kernel of the background blur and of the unsharp mask (the authors' ``Color_image.py``: ``(9, 9)``).
BLUR_KERNEL = (9, 9)
#: ``Color_image.py`` calls ``cv2.GaussianBlur(img, (9, 9), cv2.BORDER_DEFAULT)``: the third
#: positional argument is sigmaX, so the flag's value (4) is the standard deviation it used.
BLUR_SIGMA = float(cv2.BORDER_DEFAULT)
#: The object blur is another script of theirs (``utils.blur(..., method='object')``):
#: ``cv2.GaussianBlur(image, (15, 15), 3)`` over the image, kept on the object's pixels.
OBJECT_BLUR_KERNEL = (15, 15)
OBJECT_BLUR_SIGMA = 3.0
#: Unsharp mask of the brightness scenario: ``cv2.addWeighted(image, 1.5, blur, 0.9, 1.9)`` as in the
#: paper's code (weights summing to 2.4: it brightens as well as sharpens).
BRIGHTNESS_WEIGHTS = (1.5, 0.9, 1.9)
#: OpenCV hue ranges (0..179, half-degrees) of the single-channel scenarios. The background's hue is
#: set to one value drawn uniformly from the range (saturation and value kept); red first picks one
#: of its two ranges with equal odds. The code's red upper bound 180 lies outside OpenCV's hue
#: range (it wraps to 0); 179 is used. Grey pixels (saturation 0) stay grey, as in the paper's code.
HUE_RANGES: Mapping[str, tuple[tuple[int, int], ...]] = {
    "image_r": ((0, 29), (150, 179)),
    "image_g": ((30, 89),),
    "image_b": ((90, 149),),
}
#: Rainbow: the background's hue is rotated by a shift drawn uniformly from 0..90 (OpenCV units),
#: modulo 180. The authors' code adds the shift to the uint8 hue before its ``% 180``, so a sum past
#: 255 wraps first (shifts above 76): those pixels land 76 hue steps from the intended rotation (up
#: to 117 RGB levels on about 3 % of pixels). Backdrop keeps the rotation the paper describes.
RAINBOW_MAX_SHIFT = 90
#: How the transparent (RGBA) image reaches an RGB classifier: alpha-composited over this matte.
#: The authors' file keeps the original RGB under alpha 0 (``utils.convert_to_transparent_v2``), so
#: a loader that drops alpha (PIL ``convert("RGB")``, Keras ``load_img`` as in their ``train.py``)
#: sees the original image and the scenario would repeat the baseline. Compositing is what alpha
#: means; over black it equals ``segmented_image``, so white, how viewers show transparency, gives
#: the scenario a background of its own.
TRANSPARENT_MATTE = (255, 255, 255)


# -- the scenarios ------------------------------------------------------------------------------
def _keep_object(image: np.ndarray, mask: np.ndarray, changed: np.ndarray) -> np.ndarray:
    """``changed`` on the background, ``image`` on the object."""
    out = changed.copy()
    out[mask] = image[mask]
    return out


def _blur(image: np.ndarray) -> np.ndarray:
    return cv2.GaussianBlur(image, BLUR_KERNEL, BLUR_SIGMA)


def _with_hue(image: np.ndarray, hue: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``image`` with its HSV hue channel replaced by ``hue(old_hue)`` (uint8, 0..179)."""
    hsv = cv2.cvtColor(image, cv2.COLOR_RGB2HSV)
    hsv[..., 0] = hue(hsv[..., 0])
    return cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB)


def image_grey(image: np.ndarray, mask: np.ndarray, *, rng: np.random.Generator, backgrounds: np.ndarray | None = None) -> np.ndarray:
    """Background in greyscale (R = G = B = OpenCV luma), object in colour.

    A scenario function (:data:`SCENARIOS`): (h, w, 3) uint8 image, (h, w) bool mask -> (h, w, 3) uint8.
    """
    grey = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
    return _keep_object(image, mask, np.repeat(grey[..., None], 3, axis=2))


def _single_hue(name: str) -> Callable[..., np.ndarray]:
    ranges = HUE_RANGES[name]

    def scenario(image: np.ndarray, mask: np.ndarray, *, rng: np.random.Generator, backgrounds: np.ndarray | None = None) -> np.ndarray:
        low, high = ranges[int(rng.integers(len(ranges)))]
        value = int(rng.integers(low, high + 1))
        return _keep_object(image, mask, _with_hue(image, lambda h: np.full_like(h, value)))

    scenario.__name__ = name
    scenario.__doc__ = f"""Background hue set to one value drawn from {' or '.join(f'{a}..{b}' for a, b in ranges)} (OpenCV hue).

    Parameters
    ----------
    image : ndarray of shape (h, w, 3), uint8
    mask : ndarray of shape (h, w), bool
        True on the object.
    rng : numpy.random.Generator
        Draws the hue.
    backgrounds
        Unused.

    Returns
    -------
    ndarray of shape (h, w, 3), uint8
    """
    return scenario


def image_rainbow(image: np.ndarray, mask: np.ndarray, *, rng: np.random.Generator, backgrounds: np.ndarray | None = None) -> np.ndarray:
    """Background hue rotated by a shift drawn from 0..:data:`RAINBOW_MAX_SHIFT` (mod 180).

    Parameters
    ----------
    image : ndarray of shape (h, w, 3), uint8
    mask : ndarray of shape (h, w), bool
        True on the object.
    rng : numpy.random.Generator
        Draws the shift.
    backgrounds
        Unused.

    Returns
    -------
    ndarray of shape (h, w, 3), uint8
    """
    shift = int(rng.integers(RAINBOW_MAX_SHIFT + 1))
    return _keep_object(image, mask, _with_hue(image, lambda h: ((h.astype(np.int16) + shift) % 180).astype(np.uint8)))


def image_bright(image: np.ndarray, mask: np.ndarray, *, rng: np.random.Generator, backgrounds: np.ndarray | None = None) -> np.ndarray:
    """Background through the paper's unsharp mask ``addWeighted(x, 1.5, blur(x), 0.9, 1.9)``.

    A scenario function (:data:`SCENARIOS`): (h, w, 3) uint8 image, (h, w) bool mask -> (h, w, 3) uint8.
    """
    alpha, beta, gamma = BRIGHTNESS_WEIGHTS
    return _keep_object(image, mask, cv2.addWeighted(image, alpha, _blur(image), beta, gamma))


def blur_background(image: np.ndarray, mask: np.ndarray, *, rng: np.random.Generator, backgrounds: np.ndarray | None = None) -> np.ndarray:
    """Background Gaussian-blurred (:data:`BLUR_KERNEL`, σ :data:`BLUR_SIGMA`), object sharp.

    A scenario function (:data:`SCENARIOS`): (h, w, 3) uint8 image, (h, w) bool mask -> (h, w, 3) uint8.
    """
    return _keep_object(image, mask, _blur(image))


def blur_object(image: np.ndarray, mask: np.ndarray, *, rng: np.random.Generator, backgrounds: np.ndarray | None = None) -> np.ndarray:
    """Object Gaussian-blurred (:data:`OBJECT_BLUR_KERNEL`, σ :data:`OBJECT_BLUR_SIGMA`), background untouched.

    A scenario function (:data:`SCENARIOS`): (h, w, 3) uint8 image, (h, w) bool mask -> (h, w, 3) uint8.
    """
    out = image.copy()
    out[mask] = cv2.GaussianBlur(image, OBJECT_BLUR_KERNEL, OBJECT_BLUR_SIGMA)[mask]
    return out


def segmented_rgba(image: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The paper's segmented image: (r, g, b, 255) on the object, (0, 0, 0, 255) elsewhere.

    Parameters
    ----------
    image : ndarray of shape (h, w, 3), uint8
    mask : ndarray of shape (h, w), bool

    Returns
    -------
    ndarray of shape (h, w, 4), uint8
    """
    out = np.zeros((*image.shape[:2], 4), np.uint8)
    out[mask, :3] = image[mask]
    out[..., 3] = 255
    return out


def transparent_rgba(image: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The authors' transparent image: the original (r, g, b) everywhere, alpha 255 on the object and 0 elsewhere.

    Parameters
    ----------
    image : ndarray of shape (h, w, 3), uint8
    mask : ndarray of shape (h, w), bool

    Returns
    -------
    ndarray of shape (h, w, 4), uint8
    """
    out = np.empty((*image.shape[:2], 4), np.uint8)
    out[..., :3] = image
    out[..., 3] = np.where(mask, 255, 0)
    return out


def flatten_rgba(rgba: np.ndarray, matte: tuple[int, int, int]) -> np.ndarray:
    """Alpha-composite an RGBA image over a constant ``matte`` colour.

    Parameters
    ----------
    rgba : ndarray of shape (h, w, 4), uint8
    matte : (r, g, b) of int in 0..255

    Returns
    -------
    ndarray of shape (h, w, 3), uint8
    """
    alpha = rgba[..., 3:].astype(np.float32) / 255.0
    out = rgba[..., :3] * alpha + np.asarray(matte, np.float32) * (1.0 - alpha)
    return np.rint(out).astype(np.uint8)


def segmented_image(image: np.ndarray, mask: np.ndarray, *, rng: np.random.Generator, backgrounds: np.ndarray | None = None) -> np.ndarray:
    """The object on black: :func:`segmented_rgba` without its (all-opaque) alpha channel.

    A scenario function (:data:`SCENARIOS`): (h, w, 3) uint8 image, (h, w) bool mask -> (h, w, 3) uint8.
    """
    return segmented_rgba(image, mask)[..., :3]


def transparent_image(image: np.ndarray, mask: np.ndarray, *, rng: np.random.Generator, backgrounds: np.ndarray | None = None) -> np.ndarray:
    """:func:`transparent_rgba` as an RGB classifier sees it: over :data:`TRANSPARENT_MATTE`.

    A scenario function (:data:`SCENARIOS`): (h, w, 3) uint8 image, (h, w) bool mask -> (h, w, 3) uint8.
    """
    return flatten_rgba(transparent_rgba(image, mask), TRANSPARENT_MATTE)


def random_background(image: np.ndarray, mask: np.ndarray, *, rng: np.random.Generator, backgrounds: np.ndarray | None = None) -> np.ndarray:
    """The object on a real background drawn from ``backgrounds``: its pixels exact, the seam blended outside it.

    The authors' script adds the segmented image onto a shuffled real photo with ``addWeighted``
    (weights 1 and 1, saturating), which brightens the object by the photo under it; Backdrop pastes
    with :func:`analytics.data.compose.composite` (Eq. 1 + seam blending, as suites do) and then
    restores every object pixel, so only the band outside the mask is blended.

    Parameters
    ----------
    image : ndarray of shape (h, w, 3), uint8
    mask : ndarray of shape (h, w), bool
        True on the object.
    rng : numpy.random.Generator
        Picks the background.
    backgrounds : ndarray of shape (n, h, w, 3), uint8, or a sequence of n such images
        The candidates (in evaluations: the workspace's pool less crops of the target's own photo,
        loaded only when drawn).

    Returns
    -------
    ndarray of shape (h, w, 3), uint8

    Raises
    ------
    InvalidInputError
        No candidate background.
    """
    if backgrounds is None or len(backgrounds) == 0:
        raise InvalidInputError("random_background needs at least one background; add backgrounds on the Data page")
    chosen = backgrounds[int(rng.integers(len(backgrounds)))]
    return _keep_object(image, mask, composite(image[None], mask[None], chosen[None])[0])


#: Scenario name (the paper's, lower case) -> function ``(image, mask, *, rng, backgrounds) -> image``:
#: image ndarray of shape (h, w, 3), uint8; mask (h, w), bool, True on the object; rng a numpy
#: Generator and backgrounds (k, h, w, 3) uint8 (used only where a scenario draws them); the result
#: (h, w, 3), uint8, the object's pixels unchanged.
SCENARIOS: dict[str, Callable[..., np.ndarray]] = {
    "blur_background": blur_background,
    "blur_object": blur_object,
    "image_grey": image_grey,
    "image_r": _single_hue("image_r"),
    "image_g": _single_hue("image_g"),
    "image_b": _single_hue("image_b"),
    "image_rainbow": image_rainbow,
    "image_bright": image_bright,
    "segmented_image": segmented_image,
    "transparent_image": transparent_image,
    "random_background": random_background,
}
#: The eight scenarios of the paper's Table 3, whose robustness scores it reports (rainbow, brightness
#: and transparent are §2.1 scenarios it does not score): the default set of the robustness score.
TABLE3_SCENARIOS = ("blur_background", "blur_object", "image_g", "image_b", "image_grey", "image_r", "random_background", "segmented_image")
#: Named scenario sets: Table 3's eight (the default for the robustness score) or all eleven.
SCENARIO_SETS: dict[str, tuple[str, ...]] = {"table3": TABLE3_SCENARIOS, "all": tuple(SCENARIOS)}
DEFAULT_SCENARIO_SET = "table3"
#: Scenarios that draw a background from the workspace's pool.
NEEDS_POOL = frozenset({"random_background"})
#: Scenarios that use the seed (the others' cached predictions serve every seed).
SEEDED = frozenset({*HUE_RANGES, "image_rainbow", "random_background"})
#: What each scenario's output depends on besides the image, mask and seed (part of cache keys).
SCENARIO_PARAMS: dict[str, dict] = {
    "blur_background": {"kernel": BLUR_KERNEL, "sigma": BLUR_SIGMA},
    "blur_object": {"kernel": OBJECT_BLUR_KERNEL, "sigma": OBJECT_BLUR_SIGMA},
    "image_grey": {},
    **{name: {"hue_ranges": ranges} for name, ranges in HUE_RANGES.items()},
    "image_rainbow": {"max_shift": RAINBOW_MAX_SHIFT},
    "image_bright": {"weights": BRIGHTNESS_WEIGHTS, "kernel": BLUR_KERNEL, "sigma": BLUR_SIGMA},
    "segmented_image": {"fill": (0, 0, 0)},
    "transparent_image": {"matte": TRANSPARENT_MATTE},
    "random_background": {"blend": "laplacian-pyramid", "object": "exact"},
    ORIGINAL: {},
}


def _scenario_rng(seed: int, scenario: str, target: str) -> np.random.Generator:
    """The generator of one (scenario, target): independent of order and of which others run."""
    return np.random.default_rng([seed, zlib.crc32(scenario.encode()), zlib.crc32(target.encode())])


def apply_scenario(
    name: str, image: np.ndarray, mask: np.ndarray, *, seed: int = 0, target: str = "", backgrounds: np.ndarray | None = None
) -> np.ndarray:
    """One scenario (or :data:`ORIGINAL`) on one target, deterministic given ``seed`` and ``target``.

    Parameters
    ----------
    name : str
        A key of :data:`SCENARIOS` or ``"original"``.
    image : ndarray of shape (h, w, 3), uint8
    mask : ndarray of shape (h, w), bool
        True on the object.
    seed : int, default=0
    target : str, default=""
        The target's id: with ``seed`` and ``name`` it seeds the scenario's random draws.
    backgrounds : ndarray of shape (n, h, w, 3), uint8, optional
        Candidate backgrounds (``random_background`` only).

    Returns
    -------
    ndarray of shape (h, w, 3), uint8
    """
    check_choice(name, "scenario", [ORIGINAL, *SCENARIOS])
    image = check_image_batch(np.asarray(image)[None], "image")[0]
    mask = check_mask_batch(np.asarray(mask)[None], (1, *image.shape[:2]), "mask")[0] > 0.5
    if name == ORIGINAL:
        return image.copy()
    if backgrounds is not None:
        backgrounds = check_image_batch(np.asarray(backgrounds), "backgrounds")
        if backgrounds.shape[1:3] != image.shape[:2]:
            raise InvalidInputError(f"backgrounds must be {image.shape[0]}x{image.shape[1]} like the image; got {backgrounds.shape[1]}x{backgrounds.shape[2]}")
    return SCENARIOS[name](image, mask, rng=_scenario_rng(seed, name, target), backgrounds=backgrounds)


# -- evaluation over a workspace ------------------------------------------------------------------
#: Columns of :func:`evaluate_scenarios`' predictions (one row per model, scenario and target).
SCENARIO_PREDICTION_COLUMNS = ["model", "scenario", "target", "class", "predicted", "true_prob", "correct"]
#: Bumped when a scenario's pixels change in a way its parameters do not show (invalidates caches).
CACHE_VERSION = 1


class _Pool:
    """The workspace's backgrounds a target may use, loaded only when drawn (a sequence of images)."""

    def __init__(self, workspace: Workspace, ids: Sequence[str], loaded: dict[str, np.ndarray]) -> None:
        self.workspace, self.ids, self.loaded = workspace, list(ids), loaded

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, index: int) -> np.ndarray:
        background = self.ids[index]
        if background not in self.loaded:
            self.loaded[background] = load_backgrounds(self.workspace, [background])[0]
        return self.loaded[background]


def _pools(workspace: Workspace, target_ids: Sequence[str]) -> tuple[dict[str, _Pool], list]:
    """Per target: the pool less crops of its own photo; and the pool's (id, hash) rows for cache keys."""
    rows = list_backgrounds(workspace)
    ids = rows["id"].tolist()
    own = own_photo_backgrounds(workspace, target_ids, ids)
    loaded: dict[str, np.ndarray] = {}
    pools = {target: _Pool(workspace, [b for b in ids if b not in own[target]], loaded) for target in target_ids}
    return pools, rows[["id", "image_hash"]].values.tolist()


def scenario_examples(workspace: Workspace, target: str, *, scenarios: Sequence[str] | None = None, seed: int = 0) -> dict[str, np.ndarray]:
    """One target under each scenario, exactly as :func:`evaluate_scenarios` feeds it to the models.

    Parameters
    ----------
    workspace : Workspace
    target : str
        A target id.
    scenarios : sequence of str, optional
        Default: every scenario of :data:`SCENARIOS`; the original always comes first.
    seed : int, default=0

    Returns
    -------
    examples : dict of str to ndarray of shape (size, size, 3), uint8
    """
    order = _scenario_list(scenarios)
    images, masks = load_targets(workspace, [target])
    pools = _pools(workspace, [target])[0] if NEEDS_POOL & set(order) else {}
    return {name: _scenario_image(name, images[0], masks[0], target, seed, pools.get(target)) for name in order}


def _scenario_list(scenarios: Sequence[str] | None) -> list[str]:
    chosen = list(SCENARIOS) if scenarios is None else list(dict.fromkeys(scenarios))
    for name in chosen:
        check_choice(name, "scenario", [ORIGINAL, *SCENARIOS])
    return [ORIGINAL, *(name for name in chosen if name != ORIGINAL)]


def _scenario_image(name: str, image: np.ndarray, mask: np.ndarray, target: str, seed: int, pool: _Pool | None) -> np.ndarray:
    if name == ORIGINAL:
        return image
    if name in NEEDS_POOL and not pool:
        raise InvalidInputError(f"target {target!r} has no background to use for {name} (the pool is empty or holds only crops of its own photo); add backgrounds on the Data page")
    return SCENARIOS[name](image, mask, rng=_scenario_rng(seed, name, target), backgrounds=pool)


def evaluate_scenarios(
    workspace: Workspace,
    models: Sequence[str],
    *,
    scenarios: Sequence[str] | None = None,
    seed: int = 0,
    batch_size: int = 32,
    device: str | None = None,
    progress: Progress | None = None,
) -> pd.DataFrame:
    """Per-image predictions of ``models`` on every target under the original and each scenario.

    Each target's class mapping decides correctness, as in runs (a prediction is correct when it is
    one of the outputs that count as the class). Results are cached in the workspace per (model,
    scenario), keyed by the model's content key, the scenario's parameters, the seed, the targets
    and (for ``random_background``) the pool, so a repeat is instant and an interrupted evaluation
    resumes at the first (model, scenario) not yet cached.

    Parameters
    ----------
    workspace : Workspace
    models : sequence of str
        Registered model names.
    scenarios : sequence of str, optional
        Keys of :data:`SCENARIOS`; default all. The original is always evaluated (the baseline).
    seed : int, default=0
        Seeds the random scenarios (hue, rainbow shift, background drawn), per target.
    batch_size : int, default=32
    device : str, optional
        ``None``: CUDA when available, else CPU.
    progress : callable (done, total) -> None, optional
        Called with images done so far (cached ones count at once) out of all.

    Returns
    -------
    predictions : DataFrame
        One row per (model, scenario, target), columns :data:`SCENARIO_PREDICTION_COLUMNS`: model, scenario,
        target, class (str), predicted (str: output name), true_prob (float64, summed probability of
        the class's outputs), correct (bool).

    Raises
    ------
    PermissionDeniedError
        The workspace's actor may not run models.
    InvalidInputError
        No models, an unknown scenario, no targets, a class the model cannot output, or an empty
        pool for ``random_background``.
    NotFoundError
        A model is not registered.
    """
    require_permission(workspace, "run_models")  # runs the models and writes cache rows
    names = list(dict.fromkeys(models))
    if not names:
        raise InvalidInputError("models must name at least one registered model; got none")
    order = _scenario_list(scenarios)
    check_positive_int(batch_size, "batch_size")
    check_positive_int(seed, "seed", minimum=0)
    targets = list_targets(workspace)
    if targets.empty:
        raise InvalidInputError(f"workspace {workspace.root} has no targets; add targets on the Data page")
    specs = {name: get_model_spec(workspace, name) for name in names}
    keys = model_keys(workspace).keys
    mappings = {name: value for name, value in list_class_mappings(workspace).items() if name in set(targets["class_name"])}
    ids = targets["id"].tolist()
    pools, pool_rows = _pools(workspace, ids) if NEEDS_POOL & set(order) else ({}, [])
    target_rows = targets[["id", "class_name", "image_hash", "mask_hash", "origin"]].values.tolist()
    counter = _Counter(len(names) * len(order) * len(ids), progress)
    source: list = []  # images and masks, loaded on the first miss
    frames = []
    for name in names:
        spec = specs[name]
        outputs = spec.label_space.class_outputs(mappings)
        wanted = [outputs[c] for c in targets["class_name"]]
        model = None
        for scenario in order:
            key = "scenarios/" + content_id(
                CACHE_VERSION, keys[name], outputs, scenario, SCENARIO_PARAMS[scenario], seed if scenario in SEEDED else None,
                target_rows, pool_rows if scenario in NEEDS_POOL else None,
            )
            values = workspace.cache_get(key)
            if values is None:
                source = source or list(load_targets(workspace, ids))
                model = model or load_model(workspace, name, device=device)
                values = _predict(model, source, ids, scenario, seed, pools, wanted, batch_size, counter)
                workspace.cache_put(key, values)
            else:
                counter.add(len(ids))
            frames.append(pd.DataFrame({
                "model": name,
                "scenario": scenario,
                "target": ids,
                "class": targets["class_name"].to_numpy(),
                "predicted": [spec.label_space.names[int(i)] for i in values[:, 2]],
                "true_prob": values[:, 1],
                "correct": values[:, 0].astype(bool),
            }))
    return pd.concat(frames, ignore_index=True)[SCENARIO_PREDICTION_COLUMNS]


class _Counter:
    def __init__(self, total: int, progress: Progress | None) -> None:
        self.done, self.total, self.progress = 0, total, progress

    def add(self, n: int) -> None:
        self.done += n
        if self.progress is not None:
            self.progress(self.done, self.total)


def _predict(model, source: list, ids: list[str], scenario: str, seed: int, pools: dict, wanted: list[list[int]], batch_size: int, counter: _Counter) -> np.ndarray:
    """(n, 3) float64 per target: correct, true-class probability, predicted output index."""
    import torch

    images, masks = source
    values = np.empty((len(ids), 3))
    for start in range(0, len(ids), batch_size):
        stop = min(start + batch_size, len(ids))
        batch = np.stack([_scenario_image(scenario, images[i], masks[i], ids[i], seed, pools.get(ids[i])) for i in range(start, stop)])
        logits, _ = model.run_batch(model.preprocess(batch))
        probabilities = torch.softmax(logits.float(), dim=1).cpu().numpy()
        for offset, probs in enumerate(probabilities):
            outputs = wanted[start + offset]
            values[start + offset] = (int(probs.argmax()) in outputs, probs[outputs].sum(), probs.argmax())
        counter.add(stop - start)
    return values
