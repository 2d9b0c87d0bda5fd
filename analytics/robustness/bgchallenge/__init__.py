"""The Backgrounds Challenge (Xiao et al., "Noise or Signal: The Role of Image Backgrounds in Object
Recognition", 2020) on Backdrop's targets or a downloaded IN-9 release.

- :mod:`.variants`: the eight variants (Original, Only-BG-B, Only-BG-T, No-FG, Only-FG, Mixed-Same,
  Mixed-Rand, Mixed-Next) from any targets with masks, with seeded pairings and provenance;
- :mod:`.evaluation`: a registered model on generated variants or on a release's folders, cached per chunk;
- :mod:`.metrics`: accuracy per variant and class, BG-Gap, Mixed-Same − Mixed-Next, per-image categories;
- :mod:`.adversarial`: the search for backgrounds that flip each foreground's prediction.
"""

from .adversarial import AdversarialResult, prediction_matrix, search_backgrounds
from .evaluation import evaluate_release, evaluate_variants, read_release, workspace_data
from .metrics import CATEGORIES, category_counts, gaps, image_categories, per_class_accuracy, summary, variant_accuracy
from .variants import VARIANT_NAMES, VARIANTS, ChallengeData, VariantPlan, challenge_data, only_bg_t, plan_variant, render

__all__ = [
    "AdversarialResult",
    "CATEGORIES",
    "ChallengeData",
    "VARIANTS",
    "VARIANT_NAMES",
    "VariantPlan",
    "category_counts",
    "challenge_data",
    "evaluate_release",
    "evaluate_variants",
    "gaps",
    "image_categories",
    "only_bg_t",
    "per_class_accuracy",
    "plan_variant",
    "prediction_matrix",
    "read_release",
    "render",
    "search_backgrounds",
    "summary",
    "variant_accuracy",
    "workspace_data",
]
