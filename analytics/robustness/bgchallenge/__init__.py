"""The Backgrounds Challenge (Xiao et al., "Noise or Signal: The Role of Image Backgrounds in Object
Recognition", 2020) on Backdrop's targets or a downloaded IN-9 release.

- :mod:`.variants`: the eight variants (Original, Only-BG-B, Only-BG-T, No-FG, Only-FG, Mixed-Same,
  Mixed-Rand, Mixed-Next) from any targets with masks, with seeded pairings and provenance;
- :mod:`.evaluation`: a registered model on generated variants or on a release's folders, cached per chunk;
- :mod:`.metrics`: accuracy per variant and class, BG-Gap, Mixed-Same − Mixed-Next, per-image categories;
- :mod:`.adversarial`: the search for backgrounds that flip each foreground's prediction.
"""

from .adversarial import AdversarialResult, prediction_matrix, score_search, search_backgrounds
from .evaluation import Release, evaluate_release, evaluate_variants, model_class_outputs, read_release, release_data, workspace_data
from .metrics import CATEGORIES, CHALLENGE_PREDICTION_COLUMNS, category_counts, gaps, image_categories, per_class_accuracy, summary, variant_accuracy
from .variants import (
    MIXED,
    VARIANT_NAMES,
    VARIANTS,
    ChallengeData,
    VariantPlan,
    bounding_boxes,
    challenge_data,
    no_fg,
    only_bg_b,
    only_bg_t,
    only_fg,
    pair_backgrounds,
    paste,
    plan_variant,
    render,
)

__all__ = [
    "AdversarialResult", "CATEGORIES", "ChallengeData", "MIXED", "CHALLENGE_PREDICTION_COLUMNS", "Release", "VARIANTS", "VARIANT_NAMES",
    "VariantPlan", "bounding_boxes", "category_counts", "challenge_data", "model_class_outputs", "evaluate_release", "evaluate_variants",
    "gaps", "image_categories", "no_fg", "only_bg_b", "only_bg_t", "only_fg", "pair_backgrounds", "paste", "per_class_accuracy",
    "plan_variant", "prediction_matrix", "read_release", "release_data", "render", "score_search", "search_backgrounds", "summary",
    "variant_accuracy", "workspace_data",
]  # fmt: skip
