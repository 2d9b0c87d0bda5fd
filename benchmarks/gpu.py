"""The CUDA path end to end on one GPU, against the model's plain forward rate; prints one JSON object.

    python -m benchmarks.gpu [--targets 400] [--n 32] [--batch-size 256] [--pool 2000] [--quick] [--device cuda]

Every figure comes from the library's own paths on a synthetic workspace
(``benchmarks/inference.py``'s textures with disc masks, 256 px) with EfficientNet-Lite0 and -Lite1:

- ``forward``: Lite0's :meth:`LoadedModel.run_batch` on a ready batch already on the device (float16
  autocast, channels-last), images/s; ``forward_conv`` with the last-conv-map statistics too.
- ``feed``: :func:`analytics.inference.iter_composites` alone at 224 px (the CPU side that feeds the
  model: decoding, compositing on every core), fresh and from a filled composite cache.
- ``suite``: :func:`analytics.inference.run_models` end to end (composites, model, rows written),
  fresh and with a filled cache; ``*_vs_forward`` over ``forward`` (goal >= 0.8 on a GPU, issue 28);
  ``*_vs_forward_conv`` over ``forward_conv``, the pass a run really makes (it stores the
  last-conv-map statistics too).
- ``keywords`` / ``screening``: :func:`analytics.keywords.compute_keywords` over the pool and
  :func:`analytics.suites.screen_pool` afresh, views/s against Lite0's forward rate at the keyword
  batch size (each image is 1 + 3 x 3 views).
- ``repository``: :func:`analytics.repository.run_repository` over Lite0, Lite1 and ``--heads``
  heads on Lite0; every model must finish.
- ``back_off``: with all but ``--free-mib`` of the device's memory taken by another allocation, a
  Lite1 run at ``--oom-batch`` images per batch must halve its way down and store the same rows as an
  unhindered run (predictions equal, largest difference of the true-class probability reported);
  with all the memory taken, the repository must record the model as failed with a reason that
  names the memory, and the other model still finishes.
- ``saliency``: every attribution method (``benchmarks/saliency.py``), seconds per image, and the CLI's
  ``saliency`` command on the workspace's targets.
- ``cli_run``: ``python -m analytics run --device cuda`` in a subprocess, as a user types it.
- ``engine_phases``: where a cached suite run's time goes, in seconds: planning, model loading,
  waiting for the composite stream, preprocessing + forward pass, the batch's signals on the device
  (these three on the engine's forward thread), its rows (``wait``: of which waiting for the
  device) and storing them (on the caller's thread, beside the forward passes: the phases overlap,
  so ``other``, the total less the phases, can be negative); first as the engine runs (the device's work overlaps the host's: a large ``wait``
  means the device is the bottleneck), then with the device synchronised around each forward
  pass (``synchronised``: what each phase costs alone); then the engine's Python functions by own
  time (cProfile).

- ``rows_check``: the rows a run stored on the device (batches overlapped: one batch's signals
  copied to the host while the next runs) against a plain loop over the same composites (model,
  softmax, read at once): same predictions, largest differences of the stored probabilities and
  embedding statistics.
- ``paste``: the device paste alone (:func:`analytics.inference.device_blend.paste_on_device`) on
  one batch of 224 px backgrounds over 8 disc targets, per pass size (``device_blend.CHUNK``):
  composites/s with the device synchronised, the host's seconds to queue the batch (the call
  returns before the device is done: a queue time near the total means the host's kernel
  launches, not the device, bound the paste) and the device memory the passes took. In a fresh run
  this device time is spent beside the model's forward passes.
- ``feed_threads``: the fresh composite feed of the 50-target suite on 1, 2, 4, 8 and every core (how
  compositing scales with threads), pasted on the threads and pasted on the device (the threads then
  only stack backgrounds; ``feed`` and ``suite`` paste on the device as the engine does there).

``--sections a,b`` runs only those sections (the composite cache is filled when one needs it).

``--quick`` shrinks every size to check that the script runs (``--device cpu`` to try it without a
GPU; the back-off section needs CUDA and is skipped then).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import pstats
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analytics.data import Background, Cutout, list_classes, store_backgrounds
from analytics.inference import (
    CompositeCache,
    backoff,
    compositing_threads,
    cpu_count,
    device_blend,
    engine,
    iter_composites,
    prefetch_for,
    run_models,
    stored_suite_images,
    target_classes,
    used_classes,
    with_foreground,
)
from analytics.keywords import ClassifierPatchBackend, compute_keywords
from analytics.models import load_model, register_efficientnet_lite, register_head
from analytics.repository import create_repository, run_repository
from analytics.suites import screen_pool
from analytics.workspace import Workspace
from benchmarks import saliency as saliency_benchmark
from benchmarks._patches import patched
from benchmarks.inference import MODEL, N_BACKGROUNDS, _texture, build_workspace

LITE1 = "efficientnet-lite1"
GOAL = 0.8
VIEWS = 1 + 3 * 3


def _synchronised(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(call: Callable[[], object], count: int, device: torch.device) -> float:
    """``count`` per second of ``call()`` (the device synchronised before the clock stops)."""
    start = time.perf_counter()
    call()
    _synchronised(device)
    return count / (time.perf_counter() - start)


def forward_rate(workspace: Workspace, model_name: str, batch_size: int, n_batches: int, device: torch.device, conv: bool = False) -> float:
    """Images/s of the model alone on a ready batch already on the device."""
    model = load_model(workspace, model_name, device=device)
    side = model.spec.input_size
    batch = model.preprocess(np.random.default_rng(1).integers(0, 256, (batch_size, side, side, 3), dtype=np.uint8))
    for _ in range(3):  # warm-up: cuDNN's algorithm search, the allocator
        model.run_batch(batch, conv_stats=conv)
    _synchronised(device)

    def run() -> None:
        for _ in range(n_batches):
            model.run_batch(batch, conv_stats=conv)

    return timed(run, batch_size * n_batches, device)


def suite_images(workspace: Workspace, suite_id: str) -> int:
    return workspace.query_one("SELECT COUNT(*) + COUNT(DISTINCT target_id) AS n FROM suite_items WHERE suite_id = ?", (suite_id,))["n"]


def feed_rate(workspace: Workspace, suite_id: str, batch_size: int, size: int, device: torch.device, composites: CompositeCache | None) -> float:
    """Images/s of the composites alone, as the engine asks for them (on an accelerator: pasted there)."""
    jobs, _ = stored_suite_images(workspace, suite_id)
    jobs = with_foreground(jobs)
    prefetch = prefetch_for(device)
    stream = iter_composites(
        workspace, jobs, batch_size=batch_size, size=size, prefetch=prefetch, threads=compositing_threads(device, prefetch),
        composites=composites, suite_id=suite_id, page_locked=device.type == "cuda", blend_on=None if device.type == "cpu" else device,
    )  # fmt: skip
    return timed(lambda: sum(len(images) for _, images in stream), len(jobs), device)


def clear_runs(workspace: Workspace, suite_id: str) -> None:
    with workspace.transaction() as conn:  # an earlier run would be resumed (i.e. skipped)
        conn.execute("DELETE FROM runs WHERE suite_id = ?", (suite_id,))


def suite_rate(workspace: Workspace, models: list[str], suite_id: str, batch_size: int, device: torch.device, composites=None) -> float:
    clear_runs(workspace, suite_id)
    return timed(
        lambda: run_models(workspace, models, suite_id, device=device, batch_size=batch_size, composites=composites),
        suite_images(workspace, suite_id), device,
    )  # fmt: skip


def stored_rows(workspace: Workspace, run_id: str) -> dict[tuple[str, int], tuple[str, float]]:
    rows = workspace.query("SELECT target_id, position, predicted, true_prob FROM run_images WHERE run_id = ?", (run_id,))
    return {(r["target_id"], r["position"]): (r["predicted"], r["true_prob"]) for r in rows}


@contextlib.contextmanager
def memory_taken(free_bytes: int, device: torch.device):
    """Hold all but about ``free_bytes`` of the device's memory in one allocation of this process."""
    torch.cuda.empty_cache()
    free, _ = torch.cuda.mem_get_info(device)
    size = max(free - free_bytes, 0)
    hogs = []
    while size > 0 and not hogs:
        try:
            hogs.append(torch.empty(size, dtype=torch.uint8, device=device))
        except torch.cuda.OutOfMemoryError:
            size -= 64 << 20
    while free_bytes == 0:  # all of it: then MiB by MiB until nothing is left
        try:
            hogs.append(torch.empty(1 << 20, dtype=torch.uint8, device=device))
            size += 1 << 20
        except torch.cuda.OutOfMemoryError:
            break
    try:
        yield size
    finally:
        hogs.clear()
        torch.cuda.empty_cache()


def back_off(workspace: Workspace, suite_id: str, args, device: torch.device) -> dict:
    """The out-of-memory back-off, with real out-of-memory errors (see the module's docstring)."""
    clear_runs(workspace, suite_id)
    (plain,) = run_models(workspace, [LITE1], suite_id, device=device, batch_size=64)
    expected = stored_rows(workspace, plain)
    clear_runs(workspace, suite_id)
    sizes: list[int] = []
    shrink = backoff.BackOff._shrink

    def recorded(self, err) -> None:  # the engine keeps its batch size to itself; note each halving
        shrink(self, err)
        sizes.append(self.batch_size)

    backoff.BackOff._shrink = recorded
    try:
        with memory_taken(args.free_mib << 20, device) as taken:
            start = time.perf_counter()
            (squeezed,) = run_models(workspace, [LITE1], suite_id, device=device, batch_size=args.oom_batch)
            seconds = time.perf_counter() - start
    finally:
        backoff.BackOff._shrink = shrink
    got = stored_rows(workspace, squeezed)
    same_keys = got.keys() == expected.keys()
    result = {
        "taken_gib": round(taken / 2**30, 2),
        "free_mib": args.free_mib,
        "asked_batch": args.oom_batch,
        "halvings": sizes,
        "seconds": round(seconds, 2),
        "rows": len(got),
        "same_images": same_keys,
        "same_predictions": same_keys and all(got[k][0] == expected[k][0] for k in got),
        "max_true_prob_difference": max(abs(got[k][1] - expected[k][1]) for k in got) if same_keys else None,
    }
    # Nothing left at all: the repository records the model as failed and goes on with the next.
    clear_runs(workspace, suite_id)
    create_repository(workspace, "squeezed", [LITE1])
    with memory_taken(0, device):
        report = run_repository(workspace, "squeezed", suite_id, device=device, batch_size=args.oom_batch)
    result["no_memory_failed"] = report["failed"]
    create_repository(workspace, "squeezed", [MODEL])  # adding to it: memory is back, the next model runs
    report = run_repository(workspace, "squeezed", suite_id, device=device, batch_size=args.batch_size)
    result["after_memory_back_done"] = report["done"]
    return result


class _PhaseClock:
    """Seconds per phase of one engine call, measured by wrapping the engine's own functions
    (``sync``: the device synchronised around each forward pass)."""

    def __init__(self, device: torch.device, sync: bool) -> None:
        self.device, self.sync = device, sync
        self.seconds = dict.fromkeys(("plan", "load_model", "stream", "forward", "signals", "rows", "store"), 0.0)
        self.seconds["wait"] = 0.0  # inside "rows"

    def timed(self, phase: str, call: Callable, sync: bool = False) -> Callable:
        def wrapper(*args, **kwargs):
            if sync:
                _synchronised(self.device)
            start = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                if sync:
                    _synchronised(self.device)
                self.seconds[phase] += time.perf_counter() - start

        return wrapper

    def stream(self, make: Callable) -> Callable:
        def wrapper(*args, **kwargs):
            iterator = make(*args, **kwargs)
            while True:
                start = time.perf_counter()
                try:
                    item = next(iterator)
                except StopIteration:
                    return
                finally:
                    self.seconds["stream"] += time.perf_counter() - start
                yield item

        return wrapper

    @contextlib.contextmanager
    def installed(self):
        patches = {
            (engine, "plan_runs"): self.timed("plan", engine.plan_runs),
            (engine, "load_model"): self.timed("load_model", engine.load_model),
            (engine, "iter_composites"): self.stream(engine.iter_composites),
            (backoff.BackOff, "__call__"): self.timed("forward", backoff.BackOff.__call__, sync=self.sync),
            (engine.BatchSignals, "compute"): staticmethod(self.timed("signals", engine.BatchSignals.compute)),
            (engine.BatchSignals, "rows"): self.timed("rows", engine.BatchSignals.rows),
            (torch.cuda.Event, "synchronize"): self.timed("wait", torch.cuda.Event.synchronize),
            (engine.RowWriter, "add"): self.timed("store", engine.RowWriter.add),
            (engine.RowWriter, "commit"): self.timed("store", engine.RowWriter.commit),
        }
        with patched(patches):
            yield self


def engine_phases(workspace: Workspace, suite_id: str, batch_size: int, device: torch.device, composites: CompositeCache) -> dict:
    """Where a cached suite run's time goes (see the module's docstring)."""
    result: dict = {"images": suite_images(workspace, suite_id)}
    for sync in (False, True):
        clear_runs(workspace, suite_id)
        clock = _PhaseClock(device, sync)
        with clock.installed():
            start = time.perf_counter()
            run_models(workspace, [MODEL], suite_id, device=device, batch_size=batch_size, composites=composites)
            total = time.perf_counter() - start
        phases = {"total": total, **clock.seconds}
        phases["other"] = total - sum(v for k, v in clock.seconds.items() if k != "wait")
        result["synchronised" if sync else "overlapped"] = {k: round(v, 4) for k, v in phases.items()}
    clear_runs(workspace, suite_id)
    profile = cProfile.Profile()
    profile.enable()
    run_models(workspace, [MODEL], suite_id, device=device, batch_size=batch_size, composites=composites)
    profile.disable()
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(25)
    result["profile_tottime"] = [line.strip() for line in text.getvalue().splitlines() if line.strip()][-26:]
    return result


def rows_check(workspace: Workspace, suite_id: str, batch_size: int, device: torch.device) -> dict:
    """The engine's stored rows against a plain, synchronous loop (see the module's docstring)."""
    clear_runs(workspace, suite_id)
    (run_id,) = run_models(workspace, [MODEL], suite_id, device=device, batch_size=batch_size)
    stored = {
        (r["target_id"], r["position"]): r
        for r in workspace.query("SELECT target_id, position, predicted, true_prob, max_prob, emb_max, emb_mean FROM run_images WHERE run_id = ?", (run_id,))
    }  # fmt: skip
    model = load_model(workspace, MODEL, device=device)
    jobs, _ = stored_suite_images(workspace, suite_id)
    classes = used_classes(workspace, target_classes(workspace, {job.target_id for job in jobs}).values())
    outputs = model.spec.label_space.class_outputs(classes)["obj"]
    worst = dict.fromkeys(("true_prob", "max_prob", "emb_max", "emb_mean"), 0.0)
    same = 0
    for batch_jobs, images in iter_composites(workspace, with_foreground(jobs), batch_size=batch_size, size=model.spec.composite_size):
        logits, embedding = model.run_batch(model.preprocess(images))
        probabilities, embedding = torch.softmax(logits.float(), dim=1).cpu().numpy(), embedding.float().cpu().numpy()
        for i, job in enumerate(batch_jobs):
            if job.foreground:
                continue
            row = stored[(job.target_id, job.position)]
            same += row["predicted"] == model.spec.label_space.names[probabilities[i].argmax()]
            expected = {"true_prob": probabilities[i, outputs].sum(), "max_prob": probabilities[i].max(), "emb_max": embedding[i].max(), "emb_mean": embedding[i].mean()}
            worst = {k: max(v, abs(float(expected[k]) - row[k])) for k, v in worst.items()}
    return {"rows": len(stored), "same_predictions": same, "largest_differences": worst}


def feed_threads(workspace: Workspace, suite_id: str, batch_size: int, device: torch.device) -> dict:
    """Fresh composites per second on 1, 2, 4, 8 and every core (no composite cache): pasted on the
    threads, and pasted on ``device`` with the threads stacking the backgrounds."""
    jobs = with_foreground(stored_suite_images(workspace, suite_id)[0])
    rates: dict[str, dict[str, float]] = {"on_threads": {}, "on_device": {}}
    for threads in sorted({1, 2, 4, 8, cpu_count()}):
        for where, blend_on in (("on_threads", None), ("on_device", device)):
            stream = iter_composites(
                workspace, jobs, batch_size=batch_size, size=224, prefetch=prefetch_for(device), threads=threads,
                page_locked=device.type == "cuda", blend_on=blend_on,
            )  # fmt: skip
            rates[where][str(threads)] = timed(lambda stream=stream: sum(len(images) for _, images in stream), len(jobs), device)
    return rates


def paste(batch_size: int, device: torch.device, repeats: int) -> dict:
    """The device paste of one ``batch_size`` batch at 224 px, per pass size: composites/s, the host's
    seconds to queue it, and the device memory the passes took (MiB above what was allocated)."""
    rng, side = np.random.default_rng(3), 224
    cutouts = []
    for k in range(8):
        mask = np.zeros((side, side), np.float32)
        cv2.circle(mask, (side // 2, side // 2 + 4 * k), side // 3, 1.0, -1)
        cutouts.append(device_blend.DeviceCutout.of(Cutout(rng.integers(0, 256, (side, side, 3), np.uint8), mask), device))
    which = rng.integers(0, len(cutouts), batch_size).tolist()
    backgrounds = torch.from_numpy(rng.integers(0, 256, (batch_size, side, side, 3), np.uint8)).to(device)
    figures = {}
    for chunk in sorted({32, 64, 128, 256, device_blend.CHUNK}):
        with patched({(device_blend, "CHUNK"): chunk}):
            device_blend.paste_on_device(cutouts, which, backgrounds)  # warm-up: the allocator
            _synchronised(device)
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(device)
            allocated = torch.cuda.memory_allocated(device) if device.type == "cuda" else 0
            start = time.perf_counter()
            for _ in range(repeats):
                device_blend.paste_on_device(cutouts, which, backgrounds)
            queued = time.perf_counter() - start
            _synchronised(device)
            seconds = time.perf_counter() - start
            peak = (torch.cuda.max_memory_allocated(device) - allocated) / 2**20 if device.type == "cuda" else None
            figures[str(chunk)] = {"images_per_s": batch_size * repeats / seconds, "queue_seconds_per_batch": queued / repeats, "peak_mib": peak}
    return figures


def add_pool(workspace: Workspace, count: int) -> None:
    """``count`` more synthetic backgrounds (the keyword and screening passes read the pool)."""
    rng = np.random.default_rng(7)
    for start in range(0, count, 500):
        store_backgrounds(
            workspace, [Background(f"pool{i:05d}", _texture(rng), origin="synthetic") for i in range(start, min(count, start + 500))]
        )


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, default=400)
    parser.add_argument("--n", type=int, default=32, help="backgrounds per target (default 32)")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--pool", type=int, default=2000, help="extra backgrounds for the keyword and screening passes")
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--oom-batch", type=int, default=2048)
    parser.add_argument("--free-mib", type=int, default=1536)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: check the script runs, timings mean little")
    parser.add_argument("--sections", default=None, help="comma-separated sections to run (default: all)")
    args = parser.parse_args(argv)
    wanted = None if args.sections is None else set(args.sections.split(","))
    if args.quick:
        args.targets, args.n, args.batch_size, args.pool, args.heads = 4, 4, 16, 16, 2
    device = torch.device(args.device)
    result: dict = {"torch": torch.__version__, "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"}
    result.update(targets=args.targets, n=args.n, batch_size=args.batch_size)

    def section(name: str, call: Callable[[], object]) -> None:
        if wanted is not None and name not in wanted:
            return
        start = time.perf_counter()
        try:
            result[name] = call()
        except Exception as err:  # noqa: BLE001 - one broken section must not hide the others' figures
            result[name] = {"error": f"{type(err).__name__}: {err}"}
        reserved = f", {torch.cuda.memory_reserved(device) / 2**30:.2f} GiB reserved" if device.type == "cuda" else ""
        print(f"[{time.perf_counter() - start:7.1f} s{reserved}] {name}: {json.dumps(result[name], default=str)[:300]}", file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="backdrop-gpu-") as folder:
        start = time.perf_counter()
        workspace = build_workspace(Path(folder) / "ws", args.targets, args.n)
        register_efficientnet_lite(workspace, 1)
        add_pool(workspace, args.pool)
        result["workspace_seconds"] = round(time.perf_counter() - start, 1)
        suite, small = f"s{args.targets}", f"s{min(50, args.targets)}"
        n_batches = 4 if args.quick else 40
        section("forward", lambda: forward_rate(workspace, MODEL, args.batch_size, n_batches, device))
        section("forward_conv", lambda: forward_rate(workspace, MODEL, args.batch_size, n_batches, device, conv=True))
        section("forward_lite1", lambda: forward_rate(workspace, LITE1, args.batch_size, n_batches, device))
        with CompositeCache(workspace) as composites:
            section("feed", lambda: feed_rate(workspace, suite, args.batch_size, 224, device, None))
            if wanted is None or wanted & {"feed_cached", "suite_cached", "engine_phases"}:
                suite_rate(workspace, [MODEL], suite, args.batch_size, device, composites)  # fills the cache (untimed)
            section("feed_cached", lambda: feed_rate(workspace, suite, args.batch_size, 224, device, composites))
            section("suite", lambda: suite_rate(workspace, [MODEL], suite, args.batch_size, device))
            section("suite_cached", lambda: suite_rate(workspace, [MODEL], suite, args.batch_size, device, composites))
            section("engine_phases", lambda: engine_phases(workspace, suite, args.batch_size, device, composites))
        section("rows_check", lambda: rows_check(workspace, small, args.batch_size, device))
        section("feed_threads", lambda: feed_threads(workspace, small, args.batch_size, device))
        section("paste", lambda: paste(args.batch_size, device, 2 if args.quick else 20))
        for name in ("suite", "suite_cached", "feed", "feed_cached"):
            if isinstance(result.get(name), float) and isinstance(result.get("forward"), float):
                result[f"{name}_vs_forward"] = result[name] / result["forward"]
            if name.startswith("suite") and isinstance(result.get(name), float) and isinstance(result.get("forward_conv"), float):
                result[f"{name}_vs_forward_conv"] = result[name] / result["forward_conv"]  # the pass a run makes: it stores the conv-map statistics too

        def keywords() -> dict:
            model = load_model(workspace, MODEL, device=device)
            backend = ClassifierPatchBackend(model, batch_size=args.batch_size, exclude_classes=list_classes(workspace))
            views = (N_BACKGROUNDS + args.pool) * VIEWS
            rates = {"keywords_views_per_s": timed(
                lambda: compute_keywords(workspace, backend=backend, item_kind="background", batch_size=args.batch_size), views, device
            )}  # fmt: skip
            with workspace.transaction() as conn:  # a cached screening would be reused
                conn.execute("DELETE FROM cache WHERE key LIKE 'screening/%'")
            rates["screening_views_per_s"] = timed(lambda: screen_pool(workspace, model=MODEL, batch_size=args.batch_size, device=str(device)), views, device)
            forward = result["forward"] if isinstance(result.get("forward"), float) else float("nan")
            rates.update({f"{k[: -len('_views_per_s')]}_vs_forward": v / forward for k, v in list(rates.items())})
            return rates

        section("keywords", keywords)

        def repository() -> dict:
            rng = np.random.default_rng(0)
            heads = [f"head-{i:03d}" for i in range(args.heads)]
            for name in heads:
                register_head(
                    workspace, name, backbone=MODEL, weight=rng.normal(0, 0.1, (2, 128)), bias=np.zeros(2),
                    hidden=(rng.normal(0, 0.03, (128, 1280)), np.zeros(128)), class_names=("obj", "other"),
                )  # fmt: skip
            create_repository(workspace, "all", [MODEL, LITE1, *heads])
            clear_runs(workspace, suite)
            start = time.perf_counter()
            report = run_repository(workspace, "all", suite, device=str(device), batch_size=args.batch_size)
            seconds = time.perf_counter() - start
            models = 2 + args.heads
            return {
                "models": models, "seconds": round(seconds, 2), "done": len(report["done"]), "failed": report["failed"],
                "model_images_per_s": models * suite_images(workspace, suite) / seconds,
            }  # fmt: skip

        section("repository", repository)

        def saliency() -> dict:
            argv = ["--device", str(device), "--images", "2" if args.quick else "8", "--repeats", "1" if args.quick else "2"]
            with contextlib.redirect_stdout(io.StringIO()):
                figures = saliency_benchmark.main(argv)
            return figures["seconds_per_image"]

        section("saliency_seconds_per_image", saliency)

        def cli(*command: str) -> dict:
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "analytics", *command, "--workspace", str(workspace.root), "--device", str(device), "--json"],
                capture_output=True, text=True, check=False, cwd=Path(__file__).resolve().parent.parent,
            )  # fmt: skip
            return {"rc": done.returncode, "seconds": round(time.perf_counter() - start, 1), "out": done.stdout[-400:], "err": done.stderr[-600:]}

        if device.type == "cuda":  # what this process's allocator keeps would be missing to the CLI's processes
            torch.cuda.empty_cache()
        clear_runs(workspace, small)
        section("cli_run", lambda: cli("run", "--model", LITE1, "--suite", small, "--batch-size", str(args.batch_size)))
        section("cli_saliency", lambda: cli("saliency", "--model", MODEL, "--method", "gradcam", "--targets", "8"))
        if device.type == "cuda":  # last: on the H100 the memory it takes stayed reserved in this process (cause not found)
            section("back_off", lambda: back_off(workspace, small, args, device))
    result["goal_vs_forward"] = GOAL
    print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in result.items()}, default=str))
    return result


if __name__ == "__main__":
    main()
