"""Images and what is made of them: reading images and masks, target sets and background pools,
classes and label spaces (ImageNet-1k, IN-9), and composites (object pasted on a background).
"""

from analytics._choices import COCO, DEFAULT_MIN_AREA, INSTANCE_LAYOUTS, MAX_INSTANCES, MAX_INSTANCES_ENV_VAR, TARGET_LAYOUTS

from .archives import LAYOUT_PATTERNS, extracted
from .batched_writes import store_backgrounds, store_targets
from .classes import class_target_counts, imagenet_classes, list_class_mappings, resolve_class, search_imagenet, set_class_mapping, targets_stamp
from .compose import (
    Cutout,
    composite,
    foreground_only,
)
from .datasets import MAX_PROPOSALS, Background, Target, image_size, list_backgrounds, list_classes, list_targets, load_backgrounds, load_targets, on_home, paste_cutout, read_backgrounds, source_photo
from .images import MIN_MASK_SHARE, check_mask_share, fit_square, grabcut_mask, is_image_file, read_image, read_image_rgba
from .importing import ImportReport, NothingToImportError, ParameterNames, import_backgrounds, import_targets
from .label_spaces import IN9_CLASSES, ClassMapping, LabelSpace, custom_label_space, imagenet_label_space, in9_label_space, parse_label_space
from .masking import DEFAULT_MARGIN, MAX_MARGIN, propose_mask
from .naming import background_label, crop_id
from .sources import image_sources
from .voc import VOC

__all__ = [
    "Background",
    "ClassMapping",
    "COCO",
    "Cutout",
    "DEFAULT_MIN_AREA",
    "DEFAULT_MARGIN",
    "MAX_MARGIN",
    "extracted",
    "propose_mask",
    "IN9_CLASSES",
    "ImportReport",
    "NothingToImportError",
    "ParameterNames",
    "import_backgrounds",
    "import_targets",
    "INSTANCE_LAYOUTS",
    "LabelSpace",
    "LAYOUT_PATTERNS",
    "MAX_INSTANCES",
    "MAX_INSTANCES_ENV_VAR",
    "MAX_PROPOSALS",
    "MIN_MASK_SHARE",
    "TARGET_LAYOUTS",
    "VOC",
    "Target",
    "background_label",
    "check_mask_share",
    "class_target_counts",
    "composite",
    "crop_id",
    "custom_label_space",
    "fit_square",
    "foreground_only",
    "grabcut_mask",
    "image_size",
    "image_sources",
    "imagenet_classes",
    "imagenet_label_space",
    "in9_label_space",
    "is_image_file",
    "list_backgrounds",
    "list_class_mappings",
    "list_classes",
    "list_targets",
    "load_backgrounds",
    "load_targets",
    "on_home",
    "parse_label_space",
    "paste_cutout",
    "read_backgrounds",
    "read_image",
    "read_image_rgba",
    "resolve_class",
    "search_imagenet",
    "set_class_mapping",
    "source_photo",
    "store_backgrounds",
    "store_targets",
    "targets_stamp",
]
