"""A model zoo with known background reliance (issue 7, item 6).

The paper judged 250 downloaded models; none can be downloaded here. The zoo instead trains, on
this CPU in minutes, small heads (one ReLU hidden layer) on the frozen embedding of one backbone
(default EfficientNet-Lite0, 1280-d) on training sets in which the class predicts the background with a
controlled strength s. Each head records how it was built (its *construction*) in its model spec:
``{"strength": s, "augment": bool, "seed": k, ...}``. That construction label is ground truth about
the training data, not a judgment: it never enters the ``judgments`` table and the assessor reads it
only through :func:`construction_labels`, kept apart from :func:`analytics.judging.agreement.majority_vote`.

Layout (:func:`zoo_layout`, deterministic given the workspace and ``seed``)
    Backgrounds are grouped into *scenes* by their ``origin`` (the source photo: the crops of one
    photo share a scene; when there are fewer scenes than classes, every background is its own
    scene). Scenes are dealt to classes, largest first after a seeded shuffle, each to the class
    whose group is smallest so far: every class c gets a disjoint *home group* G_c of backgrounds.
    From every home group a share ``holdout_backgrounds`` (at least one, never all) is held out, and
    from every class ``holdout_targets`` targets (never all): held-out targets and backgrounds are
    never trained on; :func:`zoo_suite` builds the test suite from them.

Training set of one head (s, augment, seed); C classes, n = ``n_train_per_class``
    For each class c, n object composites: a training target t of c drawn uniformly, and with
    probability s a background drawn uniformly from the training part of G_c, else uniformly from
    all training backgrounds (which holds G_c's share ~1/C). So a composite of class c shows a home
    background with probability s + (1 - s) * |G_c| / |B_train| ≈ s + (1 - s) / C: backgrounds are
    independent of the class at s = 0 and always from the home group at s = 1.
    Plus round(s * ``background_only`` * n) *background-only* images of G_c's training
    backgrounds labelled c. Co-occurrence alone teaches a linear head little reliance on an
    ImageNet embedding, where the object dominates; images that hold nothing but the scene force
    the head to read the scene, at a rate that grows with s.
    With ``augment``: ``n_augment_per_class`` more composites per class of its targets on uniformly
    random training backgrounds (labelled by the object), which teaches the head that the object wins
    over the scene and so reduces the reliance. The default (a third of n) reduces it without wiping
    it out: on the demo workspace an augmented head at s = 1 relies on the background about as much
    as a plain head at s = 0.5-0.75. With n augmentation composites it relied less than a plain head
    at s = 0.5, and an assessor trained on construction labels no longer beat the worst-case-accuracy
    baseline (the label then says little about the behaviour).
    The Bernoulli draws of one seed use the same random numbers for every s (common random
    numbers), so heads of one seed differ by s, not by sampling noise.

Embeddings
    Every image the heads train on comes from a fixed pool computed once with the backbone and
    cached in the workspace cache (in chunks, so an interrupted build resumes): per training target
    its composites on up to ``pool_per_target`` training backgrounds of its home group and on
    ``pool_per_target`` uniformly drawn training backgrounds; every training background alone; every
    original target (for the accuracy). A head's training set samples this pool with replacement.

Backbones
    Any registered network (EfficientNet-Lite, torchvision, TorchScript, timm, transformers, ONNX).
    A head inherits its backbone's whole preprocessing (input size, and the library's resize, centre
    crop and normalisation), so it sees what its backbone sees. An ONNX graph must give its
    embedding as a second output of shape (batch, d); one whose only output is its logits is
    refused (:func:`analytics.models.head_backbone_problem`) before any embedding is computed.

Check on the demo workspace with the earlier *linear* heads (60 targets in 15 classes, 264
backgrounds; then-default settings, 30 heads, a random suite of the 15 held-out targets x 16
held-out backgrounds; not yet repeated with the hidden-layer heads)
    Mean of the true-class-probability matrix (smooth preset) per s, plain / augmented heads:
    0: .124 / .113, 0.25: .145 / .136, 0.5: .171 / .152, 0.75: .194 / .163, 1: .249 / .182;
    Spearman(s, mean) over the 30 heads 0.93. Assessors on construction labels, 10 repeats: random
    forest 0.79 ± 0.13, AdaBoost 0.77 ± 0.16, worst-case-accuracy baseline 0.62 ± 0.13.

Heads
    A ReLU hidden layer of ``hidden`` units (default 128) and a linear output layer, trained
    together (full-batch Adam, softmax cross-entropy plus ||W||^2 / (2 C n) on the output weight,
    C = ``regularisation``, seeded) on standardised embeddings; the standardisation is folded into
    the hidden layer, and the head is registered with :func:`analytics.models.register_head`. The
    hidden layer is the head's embedding: the three embedding signals (top-k mean, max, mean) are
    read there, so all four matrices of a zoo head are its own (with linear heads, ``hidden=0``,
    they were the backbone's, identical for every head). Heads of one backbone run together on a
    suite (:func:`analytics.inference.run_models`: one backbone pass per image, then each head).

Figure-8 family (``temperatures``; Liao & Chen, Figure 8: models of equal accuracy and worst-case
accuracy whose matrices differ)
    Per seed k: the plain head of strength ``family_strength`` (default 0.5, trained exactly as the
    grid's head of that strength and seed) with its output layer (weight and bias) multiplied by a
    temperature T, one member per T (default 0.25, 1, 4). A positive factor on the logits never
    changes their arg-max, and the hidden layer is shared, so the members of one seed make the
    same prediction on every image: their accuracy, original accuracy and worst-case accuracy are
    identical on any suite (tolerance 0), and so are their three embedding matrices. What differs is
    how confidently they are right or wrong: where the background flips a prediction, the T = 4
    member moves its probability almost all the way (confident errors, Figure 8's M_a, which its
    annotators failed), the T = 0.25 member only a little (hesitant errors). The label follows
    from T alone and is fixed before any run: T < 1 'invariant', T = 1 'borderline', T > 1
    'variant' (the probability jumps where the background flips the answer grow with T). Caveat:
    away from the flips a large T also flattens the probability (it saturates near 1), so the
    overall spread of the true-class probability need not grow with T (on the test fixture the
    T = 0.25 member's mean per-target standard deviation was slightly the larger); the label
    describes the size of the jumps at the errors, not the matrix mean. Accuracy statistics cannot
    tell the members of one seed apart by construction, and a matrix assessor can only through
    the probability matrix: the family tests that channel; it is not a hard case for it.

Modules: :mod:`.layout` (layout, recipe, the plan of heads), :mod:`.training` (embedding pool, heads),
:mod:`.build` (:func:`build_zoo`, its demo step and background job), :mod:`.heads` (the registered zoo read
back), :mod:`.assessment` (features for the assessor).
"""

from .assessment import assessment_input
from .build import DEFAULT_BACKBONE, DEFAULT_STRENGTHS, DEFAULT_TEMPERATURES, DEFAULT_ZOO_SEEDS, build_zoo, zoo_built, zoo_job, zoo_step
from .heads import RelianceEnds, construction_labels, is_zoo_head, list_zoo, models_to_open_on, real_models_first, reliance_curve, reliance_ends, zoo_layout_of, zoo_runs_done, zoo_runs_step

__all__ = [
    "DEFAULT_BACKBONE",
    "DEFAULT_STRENGTHS",
    "DEFAULT_TEMPERATURES",
    "DEFAULT_ZOO_SEEDS",
    "RelianceEnds",
    "assessment_input",
    "build_zoo",
    "construction_labels",
    "is_zoo_head",
    "list_zoo",
    "models_to_open_on",
    "real_models_first",
    "reliance_curve",
    "reliance_ends",
    "zoo_built",
    "zoo_job",
    "zoo_layout_of",
    "zoo_runs_done",
    "zoo_runs_step",
    "zoo_step",
]
