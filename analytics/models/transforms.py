"""A model's own image transform (:class:`ImageTransform`): how the library a model comes from turns
an image into the network's input, stored with the model's spec and reproduced by Backdrop.

The sources that bring their own preprocessing (timm, transformers, ONNX) all do the
same four steps on a square image, each library with its own resampling code:

1. resize the image to ``resize`` x ``resize`` pixels with ``interpolation``, as ``resampler`` does it:
   ``'pil'`` (Pillow's ``Image.resize``: timm's eval transform, torchvision ``Resize`` on PIL
   images, transformers' PIL image processors), ``'torchvision'`` (``torchvision.transforms.v2.
   functional.resize`` on uint8 tensors, antialiased: transformers' default image processors) or
   ``'opencv'`` (Backdrop's own :func:`resize_images`, area averaging when shrinking);
2. cut the ``input_size`` square whose top-left corner is ``(crop_offset, crop_offset)``: the centre
   crop (timm ``crop_pct``, a processor's ``crop_size``), no crop when ``resize == input_size``;
3. scale to [0, 1] and 4. normalise with ``mean`` and ``std`` per channel (RGB), in the order of
   floating-point operations the library uses.

The result equals the library's on the same square uint8 image to float32 rounding (the tests check
timm's ``create_transform`` and transformers' ``AutoImageProcessor``). A non-square image is resized
to a square (squashed) first, as :func:`resize_images` does for Backdrop's own preprocessing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import cv2
import numpy as np
import torch
from PIL import Image

from analytics._validation import check_choice
from analytics.exceptions import InvalidInputError

#: Whose resizing code a transform reproduces.
RESAMPLERS = ("pil", "torchvision", "opencv")
#: Interpolations by name (``'area'``: OpenCV's area averaging, the ``'opencv'`` resampler only).
INTERPOLATIONS = ("nearest", "bilinear", "bicubic", "lanczos", "box", "hamming", "area")
_PIL_FILTERS = {
    "nearest": Image.Resampling.NEAREST, "bilinear": Image.Resampling.BILINEAR, "bicubic": Image.Resampling.BICUBIC,
    "lanczos": Image.Resampling.LANCZOS, "box": Image.Resampling.BOX, "hamming": Image.Resampling.HAMMING,
}  # fmt: skip
_CV2_FLAGS = {"nearest": cv2.INTER_NEAREST, "bilinear": cv2.INTER_LINEAR, "bicubic": cv2.INTER_CUBIC, "lanczos": cv2.INTER_LANCZOS4}


@dataclass(frozen=True)
class ImageTransform:
    """Resize, centre crop and normalisation of a model's input (see the module docstring).

    Attributes
    ----------
    mean, std : tuple of 3 float
        Per-channel (RGB) statistics of images scaled to [0, 1].
    resize : int
        Side in pixels the square image is resized to (>= the spec's ``input_size``).
    crop_offset : int, default=0
        Row and column of the crop's top-left corner in the resized image.
    interpolation : str, default='bicubic'
        One of :data:`INTERPOLATIONS`.
    resampler : {'pil', 'torchvision', 'opencv'}, default='pil'
    origin : str, default=''
        Where the values were read (``timm pretrained_cfg of resnet18``, ``preprocessor_config.json``,
        ``mean/std given``): shown beside the model.
    """

    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    resize: int
    crop_offset: int = 0
    interpolation: str = "bicubic"
    resampler: str = "pil"
    origin: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "mean", _three(self.mean, "mean"))
        object.__setattr__(self, "std", _three(self.std, "std"))
        if any(s <= 0 for s in self.std):
            raise InvalidInputError(f"`std` must be three positive numbers (one per RGB channel); got {self.std}")
        check_choice(self.resampler, "resampler", RESAMPLERS)
        check_choice(self.interpolation, "interpolation", INTERPOLATIONS)
        if self.interpolation == "area" and self.resampler != "opencv":
            raise InvalidInputError("`interpolation` 'area' is OpenCV's; the pil and torchvision resamplers have no area mode")
        if not isinstance(self.resize, int) or isinstance(self.resize, bool) or self.resize < 16:
            raise InvalidInputError(f"resize must be a whole number of pixels >= 16; got {self.resize!r}")
        if not isinstance(self.crop_offset, int) or isinstance(self.crop_offset, bool) or self.crop_offset < 0:
            raise InvalidInputError(f"crop_offset must be a whole number >= 0; got {self.crop_offset!r}")

    def check_input_size(self, input_size: int) -> None:
        """Raise :class:`InvalidInputError` unless the crop of ``input_size`` px fits in the resized image."""
        if self.crop_offset + input_size > self.resize:
            raise InvalidInputError(
                f"a crop of {input_size} px at offset {self.crop_offset} does not fit in the image resized to {self.resize} px; "
                "give an `input_size` no larger than the resize (`crop_pct` 1 for no crop)"
            )

    def describe(self, input_size: int) -> str:
        """One line for tables: ``resize 248 bicubic (pil), centre crop 224, mean (…), std (…)``."""
        crop = f", centre crop {input_size}" if self.resize != input_size else ""
        numbers = ", ".join
        return (
            f"resize {self.resize} {self.interpolation} ({self.resampler}){crop}, mean ({numbers(f'{v:g}' for v in self.mean)}), "
            f"std ({numbers(f'{v:g}' for v in self.std)})" + (f"; from {self.origin}" if self.origin else "")
        )

    #: How scoring paths feed this transform, stored with it so that it is part of a model's content
    #: key (run ids and caches): 2 since the transform runs once on the composite at the workspace
    #: size; 1 (not stored) made composites at the input size first. A version-1 run is recomputed.
    PIPELINE = 2

    def to_json(self) -> dict:
        return {
            "mean": list(self.mean), "std": list(self.std), "resize": self.resize, "crop_offset": self.crop_offset,
            "interpolation": self.interpolation, "resampler": self.resampler, "origin": self.origin, "pipeline": self.PIPELINE,
        }  # fmt: skip

    @classmethod
    def from_json(cls, data: Mapping) -> ImageTransform:
        return cls(
            mean=tuple(data["mean"]), std=tuple(data["std"]), resize=int(data["resize"]), crop_offset=int(data.get("crop_offset", 0)),
            interpolation=data.get("interpolation", "bicubic"), resampler=data.get("resampler", "pil"), origin=data.get("origin", ""),
        )  # fmt: skip

    def crop_box(self, input_size: int) -> tuple[float, float]:
        """The part of each side of the image the network sees, as fractions ``(start, end)`` of the side."""
        return self.crop_offset / self.resize, (self.crop_offset + input_size) / self.resize

    def resize_and_crop(self, images: np.ndarray, input_size: int) -> np.ndarray:
        """Steps 1 and 2: the network's pixels, still uint8.

        Parameters
        ----------
        images : ndarray of shape (n, height, width, 3), uint8

        Returns
        -------
        ndarray of shape (n, input_size, input_size, 3), uint8
        """
        resized = self.resize_square(images)
        top = self.crop_offset
        return np.ascontiguousarray(resized[:, top : top + input_size, top : top + input_size])

    def resize_square(self, images: np.ndarray) -> np.ndarray:
        """Step 1 alone: (n, resize, resize, 3) uint8. Images already ``resize`` px square come back
        unchanged (each resampler leaves them as they are), so a caller that resizes a view with this
        has the library's resize run once."""
        if self.resampler == "opencv":
            return _resize_opencv(images, self.resize, self.interpolation)
        if self.resampler == "pil":
            return _resize_pil(images, self.resize, self.interpolation)
        return _resize_torchvision(images, self.resize, self.interpolation)

    def normalise(self, x: torch.Tensor) -> torch.Tensor:
        """Steps 3 and 4 on a batch of shape (n, 3, s, s) holding 0..255 (any dtype): float32."""
        mean = torch.tensor(self.mean, dtype=torch.float32, device=x.device).view(1, 3, 1, 1)
        std = torch.tensor(self.std, dtype=torch.float32, device=x.device).view(1, 3, 1, 1)
        if self.resampler == "torchvision":  # transformers fuses the 1/255 rescale into mean and std
            return (x.float() - mean * (1.0 / (1 / 255))) / (std * (1.0 / (1 / 255)))
        return (x.float().div(255) - mean) / std  # torchvision ToTensor, then Normalize


def _three(values, name: str) -> tuple[float, float, float]:
    try:
        numbers = tuple(float(v) for v in values)
    except (TypeError, ValueError):
        numbers = ()
    if len(numbers) != 3 or not all(np.isfinite(numbers)):
        raise InvalidInputError(f"`{name}` must be three numbers, one per RGB channel (e.g. 0.485,0.456,0.406); got {values!r}")
    return numbers  # type: ignore[return-value]


def _resize_pil(images: np.ndarray, size: int, interpolation: str) -> np.ndarray:
    out = np.empty((len(images), size, size, 3), np.uint8)
    for i, image in enumerate(images):
        out[i] = np.asarray(Image.fromarray(image).resize((size, size), _PIL_FILTERS[interpolation]))
    return out


def _resize_torchvision(images: np.ndarray, size: int, interpolation: str) -> np.ndarray:
    from torchvision.transforms.v2 import InterpolationMode  # imported when a transformers model runs
    from torchvision.transforms.v2 import functional as tvF

    # transformers maps PIL's NEAREST to NEAREST_EXACT (image_utils.pil_torch_interpolation_mapping)
    mode = InterpolationMode.NEAREST_EXACT if interpolation == "nearest" else InterpolationMode(interpolation)
    batch = torch.from_numpy(np.ascontiguousarray(images)).permute(0, 3, 1, 2).contiguous()
    if batch.shape[-2:] != (size, size):
        batch = tvF.resize(batch, [size, size], interpolation=mode, antialias=True)
    return batch.permute(0, 2, 3, 1).numpy()


def _resize_opencv(images: np.ndarray, size: int, interpolation: str) -> np.ndarray:
    if interpolation == "area":
        return resize_images(images, size)
    if interpolation not in _CV2_FLAGS:
        raise InvalidInputError(f"the opencv resampler has no {interpolation!r} interpolation; use one of area, {', '.join(_CV2_FLAGS)}")
    if images.shape[1:3] == (size, size):
        return np.ascontiguousarray(images)
    return np.stack([cv2.resize(image, (size, size), interpolation=_CV2_FLAGS[interpolation]) for image in images])


def resize_images(images: np.ndarray, size: int) -> np.ndarray:
    """Resize square or non-square images to ``size`` x ``size`` (OpenCV area interpolation, which
    averages source pixels and so is antialiased when shrinking).

    Parameters
    ----------
    images : ndarray of shape (n, h, w, 3), uint8
    size : int
        Side in pixels of the output images.

    Returns
    -------
    resized : ndarray of shape (n, size, size, 3), uint8
        The input itself (made C-contiguous) when it already has that size.
    """
    if images.shape[1:3] == (size, size):
        return np.ascontiguousarray(images)
    out = np.empty((len(images), size, size, 3), np.uint8)
    for i, image in enumerate(images):
        shrink = image.shape[0] > size or image.shape[1] > size
        out[i] = cv2.resize(image, (size, size), interpolation=cv2.INTER_AREA if shrink else cv2.INTER_LINEAR)
    return out
