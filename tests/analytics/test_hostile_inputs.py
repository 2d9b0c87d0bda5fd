"""Issue 48, "no uploaded or named file takes the server down": every hostile file of the issue goes
through the library call the server makes for it, in a child process under a memory limit, and the
same child then answers a normal import and registration (the next page load).

How the limit is set: the child (``python -m tests.analytics.test_hostile_inputs``, a plain
``subprocess``) first imports what a server has imported once its pages ran (the data readers, the
model registry, torch, ONNX Runtime, transformers), then sets ``RLIMIT_AS`` to its own address space
at that moment plus :data:`HEADROOM` (2 GiB). ``RLIMIT_AS`` and not a fixed number: torch, ONNX
Runtime and their thread pools reserve about 4 GB of address space they never touch, which a fixed
2-3 GiB limit would refuse before any file is read; relative to the reserved space, the limit leaves
the child 2 GiB of real allocations, so a reader that allocates what a file claims (a 32 GiB tensor,
an 8 GiB sparse file read whole) fails at once with a ``MemoryError`` instead of swapping or waking
the OOM killer, and the test sees it. ``RLIMIT_AS`` rather than ``RLIMIT_DATA``: it also counts the
file-backed and shared mappings a reader could make. Peak memory per file is measured apart from the
limit, as the rise of the resident peak (``VmHWM``, reset before each file through
``/proc/self/clear_refs``) over the resident size before it.

Each hostile file must end as one :class:`~analytics.exceptions.BackdropError` line (no traceback,
no ``MemoryError``, no temporary folder of the server) naming the file or the value, with a bounded
peak, the child exiting normally; a file that a reader takes in part (a pool with one bad photo)
ends with that photo listed as rejected. One page check (``AppTest``, in process: the refusals come
before any allocation) uploads a hostile COCO export on the Data page, then runs the page again and
imports a good one.
"""

from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import sys
import traceback
import zipfile
import zlib
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2]
HEADROOM = 2 << 30  # bytes of address space the child may allocate beyond what its imports reserved
SPARSE = 8 << 30  # the size of each sparse file: far past every limit and past HEADROOM
PEAK = 300 << 20  # the largest rise of the resident peak a refused file may cause
NO_USER = "~nosuchuser-backdrop"
CHILD_TIMEOUT_S = 150


# -- hostile files, written by the parent ------------------------------------------------------------------
def _png_header(width: int, height: int) -> bytes:
    """A PNG whose IHDR declares ``width`` x ``height`` RGB pixels, with a few bytes of image data."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")


def _jpeg_header(width: int, height: int) -> bytes:
    """A baseline JPEG whose frame header (SOF0) declares ``width`` x ``height`` pixels, with no image data."""
    sof = struct.pack(">BHHB", 8, height, width, 3) + b"".join(bytes([c, 0x11, 0]) for c in (1, 2, 3))
    sos = struct.pack(">B", 3) + b"".join(bytes([c, 0]) for c in (1, 2, 3)) + bytes([0, 63, 0])
    return b"\xff\xd8" + b"\xff\xc0" + struct.pack(">H", len(sof) + 2) + sof + b"\xff\xda" + struct.pack(">H", len(sos) + 2) + sos + b"\xff\xd9"


def _sparse(path: Path, head: bytes = b"", size: int = SPARSE) -> Path:
    """``head`` followed by a hole of zeros up to ``size`` bytes: nothing written, nothing on disk."""
    with path.open("wb") as file:
        file.write(head)
        file.truncate(size)
    return path


def _coco(root: Path):
    from tests.fixtures.coco import write_coco_export

    return write_coco_export(root)


def _good_png(path: Path, side: int = 8) -> Path:
    import cv2
    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    image = np.random.default_rng(side).integers(0, 255, (side, side, 3), dtype=np.uint8)
    path.write_bytes(cv2.imencode(".png", image)[1].tobytes())
    return path


def _onnx(path: Path, *, reshape_to: list[int] | None = None, allocate: int | None = None, allocate_at_run: int | None = None) -> Path:
    """A tiny graph: pixels n x 3 x 16 x 16 -> mean per channel -> logits n x 3. ``reshape_to``: the
    means reshaped to a shape that does not hold them (fails at run time); ``allocate``: plus the sum
    of a constant of that many floats (4 bytes each), added to the logits; ``allocate_at_run``: the
    same, its count computed from the pixels (``allocate_at_run`` + the largest pixel, rounded toward
    zero), so that only the run knows the size."""
    import onnx

    helper, tensor = onnx.helper, onnx.TensorProto
    nodes = [helper.make_node("ReduceMean", ["pixels"], ["means"], axes=[2, 3], keepdims=0)]
    initializers = []
    last = "means"
    if reshape_to is not None:
        nodes.append(helper.make_node("Reshape", ["means", "shape"], ["reshaped"]))
        initializers.append(helper.make_tensor("shape", tensor.INT64, [len(reshape_to)], reshape_to))
        last = "reshaped"
    if allocate is not None:
        nodes += [
            helper.make_node("ConstantOfShape", ["big_shape"], ["big"], value=helper.make_tensor("one", tensor.FLOAT, [1], [1.0])),
            helper.make_node("ReduceSum", ["big"], ["total"], keepdims=1),
            helper.make_node("Add", [last, "total"], ["added"]),
        ]
        initializers.append(helper.make_tensor("big_shape", tensor.INT64, [1], [allocate]))
        last = "added"
    if allocate_at_run is not None:
        nodes += [
            helper.make_node("ReduceMax", ["pixels"], ["brightest"], keepdims=0),
            helper.make_node("Add", ["brightest", "run_count"], ["count"]),
            helper.make_node("Cast", ["count"], ["count_int"], to=tensor.INT64),
            helper.make_node("Reshape", ["count_int", "one_axis"], ["run_shape"]),
            helper.make_node("ConstantOfShape", ["run_shape"], ["run_big"], value=helper.make_tensor("one", tensor.FLOAT, [1], [1.0])),
            helper.make_node("ReduceSum", ["run_big"], ["run_total"], keepdims=1),
            helper.make_node("Add", [last, "run_total"], ["run_added"]),
        ]
        initializers += [helper.make_tensor("run_count", tensor.FLOAT, [], [float(allocate_at_run)]), helper.make_tensor("one_axis", tensor.INT64, [1], [1])]
        last = "run_added"
    nodes.append(helper.make_node("Identity", [last], ["logits"]))
    graph = helper.make_graph(
        nodes, "tiny", [helper.make_tensor_value_info("pixels", tensor.FLOAT, ["n", 3, 16, 16])],
        [helper.make_tensor_value_info("logits", tensor.FLOAT, ["n", 3])], initializer=initializers,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def _vit(folder: Path) -> Path:
    from tests.analytics.models.test_transformers import save_vit

    return save_vit(folder)


def _safetensors(header: bytes, length: int | None = None) -> bytes:
    return struct.pack("<Q", len(header) if length is None else length) + header + bytes(4)


def _zip_claiming(path: Path, member_size: int) -> Path:
    """A zip of one small PNG whose central directory says it unpacks to ``member_size`` bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("images/a.png", _png_header(8, 8))
    data = bytearray(buffer.getvalue())
    central = data.rfind(b"PK\x01\x02")
    struct.pack_into("<I", data, central + 24, member_size)  # uncompressed size in the central directory
    path.write_bytes(bytes(data))
    return path


def _zip_lying(path: Path) -> Path:
    """A zip bomb: 64 MiB of zeros deflated to 64 KiB, its headers claiming 100 bytes."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    deflated = compressor.compress(b"\0" * (64 << 20)) + compressor.flush()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("images/a.png", b"\0" * 100)
    data = bytearray(buffer.getvalue())
    local_end = 30 + len("images/a.png")
    central = data.rfind(b"PK\x01\x02")
    old = struct.unpack_from("<I", data, 18)[0]  # the compressed size in the local header
    rebuilt = data[:local_end] + deflated + data[local_end + old :]
    shift = len(deflated) - old
    struct.pack_into("<I", rebuilt, 18, len(deflated))
    central += shift
    struct.pack_into("<I", rebuilt, central + 20, len(deflated))
    end = rebuilt.rfind(b"PK\x05\x06")
    struct.pack_into("<I", rebuilt, end + 16, struct.unpack_from("<I", rebuilt, end + 16)[0] + shift)
    path.write_bytes(bytes(rebuilt))
    return path


def hostile_cases(root: Path) -> list[dict]:
    """Every hostile file of issue 48, as ``{"name", "entry", "args", "expect"}``: the call the server
    makes (see :func:`_call`), its arguments, and the words its one-line error must hold."""
    import numpy as np

    cases: list[dict] = []

    def case(name: str, entry: str, expect: str, **args) -> None:
        cases.append({"name": name, "entry": entry, "expect": expect, "args": {k: str(v) if isinstance(v, Path) else v for k, v in args.items()}})

    # COCO: a polygon on an image declaring a 20,000,000-pixel side (the file is 60x40) ...
    export = _coco(root / "declared")
    export.rewrite(lambda d: _declare(d, 20_000_000))
    case("coco huge declared side", "coco", "is 60x40 pixels but the JSON declares 20000000x20000000", annotations=export.annotations, images=export.images)
    # ... and an image file whose own header declares it, as the JSON does
    export = _coco(root / "header")
    (export.images / "a.png").write_bytes(_png_header(2_000_000, 2_000_000))
    export.rewrite(lambda d: _declare(d, 2_000_000))
    case("coco image header of 4e12 pixels", "coco", "past the limit of", annotations=export.annotations, images=export.images)
    # 40,000 instances, every instance asked for
    export = _coco(root / "many")
    polygon = [10, 8, 30, 8, 30, 32, 10, 32]
    export.rewrite(lambda d: d.update(annotations=[{"id": i, "image_id": 1, "category_id": 1, "segmentation": [polygon], "iscrowd": 0} for i in range(1, 40_001)]))
    case("coco 40,000 instances, every one", "coco", "40000 instances to import, past the limit of 10000 targets per import",
         annotations=export.annotations, images=export.images, all_instances=True)  # fmt: skip
    # COCO JSON nested 10^5 deep; over the size limit (sparse: nothing read)
    export = _coco(root / "deep")
    export.annotations.write_text("[" * 100_000 + "]" * 100_000)
    case("coco JSON nested 10^5 deep", "coco", "COCO JSON file nested too deeply to read", annotations=export.annotations, images=export.images)
    export = _coco(root / "sparse")
    _sparse(export.annotations, b"{")
    case("coco JSON of 8 GiB (sparse)", "coco", "COCO JSON file is 8192.0 MiB (8589934592 bytes), past the limit of 128.0 MiB", annotations=export.annotations, images=export.images)
    # an ImageNet map over the JSON limit (import_targets reads it first)
    export = _coco(root / "map")
    case("ImageNet map JSON of 8 GiB (sparse)", "coco", "JSON file is 8192.0 MiB", annotations=export.annotations, images=export.images,
         imagenet_map=_sparse(root / "map.json", b"{"))  # fmt: skip
    # the images of an import as a zip bomb: one claiming 3 GiB, one claiming 100 bytes that inflates to 64 MiB
    export = _coco(root / "bomb")
    case("zip claiming 3 GiB", "coco", "the zip unpacks to 3072 MiB, over the limit of 2048 MiB", annotations=export.annotations, images=_zip_claiming(root / "claims.zip", 3 << 30))
    case("zip bomb lying about its size", "backgrounds", "bomb.zip/images/a.png: not a readable image", path=_zip_lying(root / "bomb.zip"))
    # VOC: a split that is a path
    from tests.analytics.data.test_voc import write_voc

    voc = write_voc(root / "VOCdevkit" / "VOC2012")
    case("VOC split ../../etc/passwd", "voc", "split '../../etc/passwd' refused: a split is a name", path=voc.root, split="../../etc/passwd")
    (voc.root / "ImageSets" / "Segmentation").mkdir(parents=True, exist_ok=True)
    _sparse(voc.root / "ImageSets" / "Segmentation" / "big.txt", b"2007_000001\n")
    case("VOC split file of 8 GiB (sparse)", "voc", "big.txt: the split file is 8192.0 MiB", path=voc.root, split="big")
    # a path field naming the home of no user
    case("path ~nosuchuser/x", "server path", f"server path '{NO_USER}/x': '{NO_USER}' names no home folder on this machine", path=f"{NO_USER}/x")
    # images whose header claims huge sides, and one that holds gigabytes behind a small header
    case("PNG header of 4e12 pixels", "read_image", "past the limit of 64000000 pixels", path=_write(root / "huge.png", _png_header(2_000_000, 2_000_000)))
    case("JPEG header of 65000x65000", "read_image", "past the limit of 64000000 pixels", path=_write(root / "huge.jpg", _jpeg_header(65_000, 65_000)))
    case("PNG of 8x8 pixels in 8 GiB (sparse)", "read_image", "the file is 8192.0 MiB, more than an image of 8x8 pixels takes",
         path=_sparse(root / "padded.png", _good_png(root / "small.png").read_bytes()))  # fmt: skip
    challenge = root / "bgchallenge"
    _good_png(challenge / "original" / "val" / "01_dog" / "n00_0.png", 64)
    mask = challenge / "fg_mask" / "val" / "01_dog" / "n00_0.npy"
    mask.parent.mkdir(parents=True)
    with mask.open("wb") as file:  # the header alone: 10^10 values claimed, none written
        np.lib.format.write_array_header_1_0(file, {"descr": "|b1", "fortran_order": False, "shape": (100_000, 100_000)})
    case(".npy mask claiming 100000x100000", "targets", "the .npy mask's header claims shape (100000, 100000)", path=challenge, layout="bgchallenge")
    pool = root / "pool"
    _good_png(pool / "good.png", 300)
    _write(pool / "huge.png", _png_header(2_000_000, 2_000_000))
    case("a pool holding a PNG of 4e12 pixels", "backgrounds", "rejected huge.png: ", path=pool)
    # models: ONNX failing at run time, or claiming 32 GiB; safetensors claiming a huge header or tensor; config.json nested 10^5 deep
    labels = _write(root / "labels.txt", b"a\nb\nc\n")
    case("ONNX failing at run time", "onnx", "ONNX Runtime failed running it on a batch of shape", checkpoint=_onnx(root / "reshape.onnx", reshape_to=[7, 5]), labels=labels)
    # refused from its inferred shapes before any session runs (MAX_ONNX_TENSOR_BYTES), not by the allocation failing under the limit
    case("ONNX allocating 32 GiB", "onnx", "tensor 'big' of shape 8589934592 takes 32768.0 MiB", checkpoint=_onnx(root / "big.onnx", allocate=8 << 30), labels=labels)
    # its size computed from the pixels, unknown before the run: refused inside ONNX Runtime by the capped arena (max_onnx_memory_bytes) as the check run asks for it
    case("ONNX allocating 40 GiB as it runs", "onnx", "ONNX Runtime asked for 40960.0 MiB in a ConstantOfShape node, more than the",
         checkpoint=_onnx(root / "grows.onnx", allocate_at_run=10 << 30), labels=labels)  # fmt: skip
    case("labels file of 8 GiB (sparse)", "onnx", "labels.big.txt: the label file is 8192.0 MiB", checkpoint=_onnx(root / "fine.onnx"), labels=_sparse(root / "labels.big.txt", b"a\n"))
    vit = _vit(root / "vit")
    for name, damage in {
        "safetensors header length 2**62": lambda f: (f / "model.safetensors").write_bytes(_safetensors(b"{}", length=2**62)),
        "safetensors tensor of 2**62 floats": lambda f: (f / "model.safetensors").write_bytes(
            _safetensors(json.dumps({"weight": {"dtype": "F32", "shape": [2**31, 2**31], "data_offsets": [0, 4]}}).encode())
        ),
        "config.json nested 10^5 deep": lambda f: (f / "config.json").write_text("[" * 100_000 + "]" * 100_000),
        "config.json of 8 GiB (sparse)": lambda f: _sparse(f / "config.json", b"{"),
    }.items():
        folder = root / name.replace(" ", "_").replace("*", "")
        _copy_tree(vit, folder)
        damage(folder)
        expect = {"s": "not a readable safetensors file", "c": "config.json: "}[name[0]]
        case(name, "transformers", expect, checkpoint=folder)
    return cases


def _declare(data: dict, side: int) -> None:
    """Image 1 (a.png, 60x40) declared ``side`` x ``side``, its polygons kept (inside the declared
    size) and its RLE region dropped (its size would be refused first, for not matching the entry)."""
    data["images"][0].update(width=side, height=side)
    data["annotations"] = [a for a in data["annotations"] if a["image_id"] != 1 or isinstance(a["segmentation"], list)]


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _copy_tree(source: Path, destination: Path) -> None:
    import shutil

    shutil.copytree(source, destination)


# -- the child: a server under a memory limit --------------------------------------------------------------
def _status(field: str) -> int:
    """A ``/proc/self/status`` field in bytes (``VmSize``, ``VmRSS``, ``VmHWM``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


def _call(workspace, entry: str, args: dict):
    """The library call the server makes for ``entry`` (the Data page's import form, the Models page's form)."""
    from analytics._choices import IMAGENET_MEAN, IMAGENET_STD
    from analytics.data import custom_label_space, import_backgrounds, import_targets, read_image
    from analytics.models import add_model
    from analytics.team.paths import resolve_server_path

    if entry == "coco":
        return import_targets(workspace, layout="coco", **args)
    if entry == "targets":
        return import_targets(workspace, **args)
    if entry == "voc":
        return import_targets(workspace, layout="voc", **args)
    if entry == "backgrounds":
        report = import_backgrounds(workspace, args["path"])
        return "; ".join(f"rejected {Path(r.file).name}: {r.reason}" for r in report.rejected) + f" (added {report.added})"
    if entry == "server path":
        return import_targets(workspace, resolve_server_path(workspace, args["path"]), layout="folder")
    if entry == "read_image":
        return read_image(args["path"]).shape
    if entry == "onnx":
        return add_model(workspace, "onnx", "m", checkpoint=args["checkpoint"], label_space=custom_label_space(args["labels"]), mean=IMAGENET_MEAN, std=IMAGENET_STD)
    if entry == "transformers":
        return add_model(workspace, "transformers", "hf", checkpoint=args["checkpoint"])
    raise AssertionError(entry)


def child_main(cases_path: str, out_path: str) -> None:
    """Run every case of ``cases_path`` under the memory limit, then a normal import and
    registration; write ``{"limit", "results", "next"}`` to ``out_path`` after each step."""
    import resource

    import onnxruntime  # noqa: F401 - what a server has imported once its pages ran
    import torch  # noqa: F401
    import transformers  # noqa: F401

    import analytics.models.libraries  # noqa: F401
    import analytics.models.onnx_source  # noqa: F401
    import analytics.models.transformers_source  # noqa: F401
    from analytics.data import import_targets, list_backgrounds, list_targets
    from analytics.exceptions import BackdropError
    from analytics.models import list_models
    from analytics.workspace import Workspace

    spec = json.loads(Path(cases_path).read_text())
    workspace = Workspace(Path(spec["workspace"]))
    limit = _status("VmSize") + HEADROOM
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    out: dict = {"limit": limit, "results": [], "next": None}

    def save() -> None:
        Path(out_path).write_text(json.dumps(out))

    for case in spec["cases"]:
        print(f"hostile: {case['name']}", file=sys.stderr, flush=True)
        try:
            Path("/proc/self/clear_refs").write_text("5")  # VmHWM back to VmRSS
            measured = True
        except OSError:  # a kernel or container that does not allow it: the peak goes unmeasured
            measured = False
        before = _status("VmRSS")
        result = {"name": case["name"]}
        try:
            result["value"] = str(_call(workspace, case["entry"], case["args"]))
        except BackdropError as err:
            result["error"] = str(err)
        except BaseException as err:  # noqa: BLE001 - MemoryError, RecursionError, a bug: the test reports it
            result["crash"] = "".join(traceback.format_exception(err))[-3000:]
        result["peak"] = _status("VmHWM") - before if measured else None
        out["results"].append(result)
        save()
    # the next page load: a normal import and a registration in the same process
    print("hostile: the next page load", file=sys.stderr, flush=True)
    targets = import_targets(workspace, layout="coco", annotations=spec["good"]["annotations"], images=spec["good"]["images"])
    model = _call(workspace, "onnx", {"checkpoint": spec["good"]["checkpoint"], "labels": spec["good"]["labels"]})
    out["next"] = {"added": targets.added, "targets": len(list_targets(workspace)), "backgrounds": len(list_backgrounds(workspace)),
                   "models": [m.name for m in list_models(workspace)], "model": model.name}  # fmt: skip
    save()


# -- the tests ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory) -> dict:
    """Write the hostile files and run them all in one child under the memory limit (the imports of
    torch and transformers are paid once); ``{"cases", "out", "returncode", "stderr"}``."""
    root = tmp_path_factory.mktemp("hostile")
    cases = hostile_cases(root / "files")
    good = _coco(root / "good")
    checkpoint, labels = _onnx(root / "good.onnx"), _write(root / "good.txt", b"a\nb\nc\n")
    spec = {"workspace": str(root / "ws"), "cases": cases,
            "good": {"annotations": str(good.annotations), "images": str(good.images), "checkpoint": str(checkpoint), "labels": str(labels)}}  # fmt: skip
    (root / "cases.json").write_text(json.dumps(spec))
    out = root / "out.json"
    env = {**os.environ, "PYTHONPATH": str(PROJECT), "OMP_NUM_THREADS": "1", "BACKDROP_WORKSPACE": str(root / "ws")}
    done = subprocess.run([sys.executable, "-m", "tests.analytics.test_hostile_inputs", str(root / "cases.json"), str(out)],
                          cwd=PROJECT, env=env, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)  # fmt: skip
    results = json.loads(out.read_text()) if out.is_file() else {"limit": None, "results": [], "next": None}
    return {"cases": {c["name"]: c for c in cases}, "out": results, "returncode": done.returncode, "stderr": done.stderr}


CASE_NAMES = [
    "coco huge declared side",
    "coco image header of 4e12 pixels",
    "coco 40,000 instances, every one",
    "coco JSON nested 10^5 deep",
    "coco JSON of 8 GiB (sparse)",
    "ImageNet map JSON of 8 GiB (sparse)",
    "zip claiming 3 GiB",
    "zip bomb lying about its size",
    "VOC split ../../etc/passwd",
    "VOC split file of 8 GiB (sparse)",
    "path ~nosuchuser/x",
    "PNG header of 4e12 pixels",
    "JPEG header of 65000x65000",
    "PNG of 8x8 pixels in 8 GiB (sparse)",
    ".npy mask claiming 100000x100000",
    "a pool holding a PNG of 4e12 pixels",
    "ONNX failing at run time",
    "ONNX allocating 32 GiB",
    "ONNX allocating 40 GiB as it runs",
    "labels file of 8 GiB (sparse)",
    "safetensors header length 2**62",
    "safetensors tensor of 2**62 floats",
    "config.json nested 10^5 deep",
    "config.json of 8 GiB (sparse)",
]


LINUX_ONLY = pytest.mark.skipif(sys.platform != "linux", reason="the child reads /proc/self/status and sets RLIMIT_AS: Linux only")


@LINUX_ONLY
def test_the_child_survives_every_file_and_answers_the_next_load(hostile_run):
    assert hostile_run["returncode"] == 0, hostile_run["stderr"][-3000:]  # no signal, no traceback out of the child
    assert [r["name"] for r in hostile_run["out"]["results"]] == CASE_NAMES == list(hostile_run["cases"])
    after = hostile_run["out"]["next"]
    # the refused files stored nothing; the pool's good photo is the one background added
    assert after == {"added": 3, "targets": 3, "backgrounds": 1, "models": ["m"], "model": "m"}


@LINUX_ONLY
@pytest.mark.parametrize("name", CASE_NAMES)
def test_each_hostile_file_is_one_line_within_bounded_memory(hostile_run, name):
    results = {r["name"]: r for r in hostile_run["out"]["results"]}
    assert name in results, f"the child died before or during {name!r}: {hostile_run['stderr'][-2000:]}"
    result, case = results[name], hostile_run["cases"][name]
    assert "crash" not in result, result["crash"]
    message = result.get("error", result.get("value", ""))
    assert case["expect"] in message, message
    assert "\n" not in message and "Traceback" not in message and "backdrop-import-" not in message and "backdrop-upload-" not in message
    if "error" in result and case["entry"] != "server path":  # the file (or folder) it read is named
        named = [Path(v).name if k != "split" else v for k, v in case["args"].items() if isinstance(v, str)]
        assert any(n in message for n in named), (named, message)
    assert result["peak"] is None or result["peak"] < PEAK, f"{name}: the resident peak rose {result['peak'] / 2**20:.0f} MiB"


def test_a_hostile_upload_on_the_data_page_leaves_the_next_run_answering(tiny_workspace, tmp_path, app_runner):
    """The Data page: a COCO upload declaring a 20,000,000-pixel side is one error; the page runs
    again without an exception and then imports a good upload."""
    from analytics.data import list_targets
    from tests.fixtures.app import as_shown

    def upload(app, export):
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for path in export.images.iterdir():
                archive.write(path, f"images/{path.name}")
        app.file_uploader(key="data.import_coco.upload").set_value(("instances.json", export.annotations.read_bytes(), "application/json")).run()
        app.file_uploader(key="data.import_source.upload").set_value(("export.zip", buffer.getvalue(), "application/zip")).run()
        return app.button(key="data.import_go").click().run()

    hostile, good = _coco(tmp_path / "hostile"), _coco(tmp_path / "good")
    hostile.rewrite(lambda d: _declare(d, 20_000_000))
    before = list_targets(tiny_workspace)
    app = app_runner("pages/1_Data.py", tiny_workspace)
    app.radio(key="data.import_kind").set_value("Target set")
    app.selectbox(key="data.import_layout").set_value("coco").run()
    app.radio(key="data.import_from").set_value("Uploaded zip").run()
    app = upload(app, hostile)
    assert not app.exception, app.exception
    (error,) = [as_shown(e.value) for e in app.error]
    assert error.startswith("instances.json: annotation 1: image export.zip/images/a.png is 60x40 pixels but the JSON declares 20000000x20000000"), error
    assert "/tmp" not in error and "backdrop-upload" not in error
    assert list_targets(tiny_workspace).equals(before)
    app = app.run()  # the next page run
    assert not app.exception, app.exception
    app = upload(app, good)
    assert not app.exception and not app.error, [e.value for e in app.error]
    assert len(list_targets(tiny_workspace)) == len(before) + 3


if __name__ == "__main__":
    child_main(*sys.argv[1:3])
