"""The choices and defaults of the stages that ``python -m analytics`` offers, defined once here.

Building the command line's parser (``--help`` of every subcommand) reads these names and imports no
stage, hence no torch, pandas or scipy: standard library only, nothing else of :mod:`analytics`. Each
stage imports its names from here and re-exports them (:data:`analytics.variance.PRESETS`, ...), so
there is one definition. A registry of classes or functions stays in its stage; the names of its
entries are given here in the registry's order, and ``tests/analytics/test_cli_startup.py`` checks
that both agree.
"""

from __future__ import annotations

# --- analytics.data: target layouts and label spaces ---------------------------------------------
#: The folder layouts of :func:`analytics.data.read_targets`.
LAYOUTS = ("folder", "bgchallenge", "cutouts")
VOC = "voc"  # Pascal VOC instance masks (analytics.data.voc), found by layout_root like the folder layouts
COCO = "coco"
#: The layouts of instance masks, imported through one core (:mod:`analytics.data.instances`): COCO
#: (:func:`analytics.data.coco.read_coco`) and Pascal VOC (:func:`analytics.data.voc.read_voc`).
INSTANCE_LAYOUTS = (COCO, VOC)
#: Every target layout a user picks from: the folder layouts of :func:`analytics.data.read_targets`,
#: then the instance layouts.
TARGET_LAYOUTS = (*LAYOUTS, *INSTANCE_LAYOUTS)
#: An instance import (COCO, VOC) skips instances below this share of their image (``--min-area``).
DEFAULT_MIN_AREA = 0.01
#: The smallest share of its image a target's object may cover (0.2 %; an instance import's smaller
#: ``min_area`` lowers it): :data:`analytics.data.images.MIN_MASK_SHARE`.
MIN_MASK_SHARE = 0.002
#: An instance import (COCO, VOC) of more targets than this is refused before any image is decoded
#: (``--max-instances``, ``$BACKDROP_MAX_INSTANCES``): each target takes 0.25 MB of disk at 256 px.
MAX_INSTANCES = 10_000
MAX_INSTANCES_ENV_VAR = "BACKDROP_MAX_INSTANCES"
#: Most photos of one import that get a proposed (GrabCut) mask: the proposals wait for review in
#: memory (0.25 MB each at 256 px, and about a second of GrabCut each); later mask-less photos are rejected.
MAX_PROPOSALS = 200
# IN-9 (Xiao et al., "Noise or Signal", 2020): the 9 super-classes, in the order of their output index
# (their WordNet synsets: analytics.data.label_spaces.IN9_SYNSETS).
IN9_CLASSES = ("dog", "bird", "vehicle", "reptile", "carnivore", "insect", "instrument", "primate", "fish")

# --- analytics.judging and analytics.team ---------------------------------------------------------
LABELS: tuple[str, ...] = ("invariant", "borderline", "variant")
"""The labels, ordered from least to most background reliance."""
ROLES = ("admin", "analyst", "annotator", "viewer")

# --- analytics.keywords and analytics.models --------------------------------------------------------
#: ``vocabulary`` options of :class:`analytics.keywords.ClassifierPatchBackend`: ``scene``
#: (:data:`analytics.keywords.classifier_patch.SCENE_CLASSES`), ``all`` (every output), ``auto``
#: (``scene`` for an ImageNet-1k label space, else ``all``).
VOCABULARIES = ("auto", "scene", "all")
#: The resize filters a user may name for a timm or ONNX model (PIL's; ``add-model --interpolation``,
#: the Models page), timm's default first; ``'area'`` is Backdrop's own resize, not a model's.
RESIZE_FILTERS = ("bicubic", "bilinear", "nearest", "lanczos", "box", "hamming")
#: ImageNet normalisation of [0, 1] pixels: :data:`IMAGENET_MEAN` and ``IMAGENET_STD``.
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

# --- analytics.runs: signals ------------------------------------------------------------------------
#: The signals of a run (``run_images`` columns), in display order, with their labels. ``max_prob`` is
#: the authors' "confidence" (the largest softmax probability, whatever the class).
SIGNALS: dict[str, str] = {
    "true_prob": "True-class probability",
    "max_prob": "Max probability (confidence)",
    "emb_topk_mean": "Embedding: top-k (by foreground) mean",
    "emb_max": "Embedding: max",
    "emb_mean": "Embedding: mean",
}
#: The authors' embedding signals (their code, not the paper): statistics of the last convolutional map
#: (:mod:`analytics.models.conv_map`). Offered beside :data:`SIGNALS`, never in their place: the
#: assessor, the Judge page and the colour scales read :data:`SIGNALS` alone.
CONV_SIGNALS: dict[str, str] = {
    "conv_max": "Last conv map (authors'): max",
    "conv_max_mean": "Last conv map (authors'): mean of channel maxima",
}
#: Every signal a matrix can be built from.
MATRIX_SIGNALS: dict[str, str] = {**SIGNALS, **CONV_SIGNALS}

# --- analytics.variance: matrix settings ------------------------------------------------------------
#: The paper's three interpolants (Appendix B2, Table 3) as ``name: (window, sigma)`` in cells; all use K = 32.
PRESETS: dict[str, tuple[int, float]] = {"fine": (32, 2.0), "medium": (16, 5.0), "smooth": (32, 10.0)}
#: Cells per axis. The paper gives its kernel sizes in pixels of the matrix image; on 128 cells the
#: widest window (32) spans a quarter of each axis (+-0.125 d_max) and sigma 10 is 0.078 d_max, so
#: every preset is local (on 32 cells the window covered the whole matrix and blurred failure bands).
DEFAULT_MATRIX_GRID = 128
#: Number of nearest points averaged into u(e).
DEFAULT_K = 32
#: Shapes of the kernel window, the default first: the paper's circle (Appendix D: "an RBF defines a
#: circular area in 2D"; diameter ``window`` cells), or a square of side ``window`` (Backdrop's
#: reading before issue 41: separable, so its sums are matrix products, and faster).
WINDOW_SHAPES = ("circle", "square")

# --- analytics.ontology: mining and expansion -------------------------------------------------------
#: The names of :data:`analytics.ontology.ALGORITHMS`.
ALGORITHM_NAMES = ("apriori", "fpgrowth")
DEFAULT_ALGORITHM = "fpgrowth"
DEFAULT_MIN_SUPPORT = 0.005
DEFAULT_MIN_CONFIDENCE = 0.1
DEFAULT_MAX_LEN = 2
DEFAULT_MAXITS = 5

# --- analytics.suites: sampling and realism ---------------------------------------------------------
#: The names of :data:`analytics.suites.SAMPLERS`, in its order.
SAMPLER_NAMES = ("random", "nearest", "interval", "keyword", "ontology")
#: The names of :data:`analytics.suites.REALISM_SCORERS`, in its order.
REALISM_SCORER_NAMES = ("seam-harmony",)
DEFAULT_REALISM = "seam-harmony"
DEFAULT_REALISM_THRESHOLD = 0.25

# --- analytics.zoo: the model zoo ---------------------------------------------------------------------
DEFAULT_BACKBONE = "efficientnet-lite0"
DEFAULT_STRENGTHS = (0.0, 0.25, 0.5, 0.75, 1.0)
DEFAULT_ZOO_SEEDS = (0, 1, 2)
DEFAULT_HIDDEN = 128
DEFAULT_TEMPERATURES = (0.25, 1.0, 4.0)
