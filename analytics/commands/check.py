"""``check``: the release gate. A candidate model against a policy file (and the last release), in any CI.

Exit status 0 when every rule holds, 1 when a rule fails or has nothing to measure (an error
verdict), 2 when the input is bad (one line on stderr naming the file or value and the fix; nothing
saved is changed). Writes ``junit.xml``,
``summary.md`` and ``report.html`` into ``--out`` and prints the Markdown summary (``--json``: the
results as one JSON object). ``--checkpoint`` registers the candidate first, with the checks of
``add-model``. See :mod:`analytics.gate`.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

from ._options import ProgressBar, add_device_option, add_json_option, add_workspace_option, open_workspace
from .models import add_registration_options, register_from_args

EXIT_RULE_FAILED = 1


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``check`` subcommand."""

    parser = subparsers.add_parser("check", help="release gate: check a model against a policy and a baseline (exit 0 pass, 1 fail, 2 bad input)")
    parser.add_argument("--model", required=True, help="the candidate: a registered model, or the name to register --checkpoint under")
    parser.add_argument("--policy", required=True, metavar="FILE.toml", help="the policy (see examples/policy.toml)")
    parser.add_argument("--baseline", default=None, metavar="MODEL", help="the last release, a registered model ([baseline] rules need it)")
    parser.add_argument("--suite", default=None, help="suite id, label or name (default: the policy's [suite])")
    parser.add_argument("--out", default="backdrop-check", metavar="DIR", help="folder for junit.xml, summary.md, report.html (default backdrop-check)")
    parser.add_argument("--no-report", action="store_true", help="skip the HTML report")
    add_device_option(parser)
    parser.add_argument("--batch-size", type=int, default=32, help="images per forward pass (default 32)")
    registration = parser.add_argument_group("registering the candidate on the fly (as add-model)")
    add_registration_options(registration, arch_required=False)
    add_workspace_option(parser)
    add_json_option(parser)
    parser.set_defaults(handler=run_check)


class StageLines:
    """One line on stderr as each stage of a check starts, with the time so far: also in CI, where
    there is no terminal for the bar (a cold check on the demo printed nothing for 27 minutes).
    Without a terminal, a step that runs on also prints its count every :attr:`EVERY` seconds."""

    #: Seconds between a step's count lines when there is no terminal for the bar (a cold step, the
    #: runs above all, takes minutes: CI's log must show it advancing).
    EVERY = 20.0

    def __init__(self, steps: dict[str, str], *, counts: bool | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.started = self.last = clock()
        self.steps = steps  # analytics.gate.STEPS: what each step does
        self.step: str | None = None
        self.counts = not sys.stderr.isatty() if counts is None else counts  # on a terminal the bar counts

    def __call__(self, done: int, total: int, step: str = "") -> None:
        if step != self.step:
            self.step = step
            self._line(self.steps.get(step, step))
        elif self.counts and total and self.clock() - self.last >= self.EVERY:
            self._line(f"  {step or 'step'}: {done} of {total}")

    def _line(self, text: str) -> None:
        self.last = self.clock()
        print(f"[backdrop check] {self._elapsed()} {text}", file=sys.stderr, flush=True)

    def end(self) -> None:
        print(f"[backdrop check] {self._elapsed()} done", file=sys.stderr, flush=True)

    def _elapsed(self) -> str:
        seconds = int(self.clock() - self.started)
        return f"{seconds // 60:d}:{seconds % 60:02d}"


#: How the gate's messages name the check's parameters here (:class:`analytics._validation.ParameterNames`).
FLAGS = {"baseline": "--baseline", "suite_id": "--suite", "out": "--out"}


def run_check(args: argparse.Namespace) -> int:
    """Run the check; print the summary (or JSON) and return the exit status."""
    from analytics._validation import ParameterNames
    from analytics.exceptions import InvalidInputError
    from analytics.gate import STEPS, check, load_policy, preflight
    from analytics.workspace import to_json

    policy = load_policy(args.policy)  # a bad policy stops here, before anything is registered or run
    workspace = open_workspace(args)
    registering = bool(args.checkpoint or args.arch or args.source)
    if registering and not (args.arch or args.source):
        raise InvalidInputError("--checkpoint needs --arch (torchscript, onnx, a torchvision architecture, timm:NAME or transformers) or --source, as add-model")
    names = ParameterNames(FLAGS)
    preflight(workspace, policy, args.model, baseline=args.baseline, suite_id=args.suite, out=args.out, registered=not registering, names=names)
    if registering:
        register_from_args(workspace, args.model, args, flag="--model")
    stages = StageLines(STEPS)
    with ProgressBar("check", unit="img", terminal_only=True) as bar:
        def progress(done: int, total: int, step: str = "", /) -> None:  # a line per stage, and the bar
            stages(done, total, step)
            bar(done, total)

        result = check(
            workspace, policy, args.model, out=args.out, baseline=args.baseline, suite_id=args.suite, report=not args.no_report,
            device=args.device, batch_size=args.batch_size, progress=progress, names=names,
        )  # fmt: skip
    stages.end()
    print(to_json(result.to_dict()) if args.json else result.summary, end="" if not args.json else "\n")
    return 0 if result.passed else EXIT_RULE_FAILED
