"""The release gate's policy: a small TOML file, read with :mod:`tomllib` and checked key by key.

Sections (every key optional, at least one rule; ``examples/policy.toml`` documents each):

``[suite]``
    ``id`` of a saved suite, or a recipe for :func:`analytics.suites.build_suite` (``method``,
    ``n``, ``seed``, ``realism_threshold``): the same recipe gives back the same saved suite.
``[rules]`` (the candidate alone; :data:`RULE_KEYS`)
    ``worst_case_accuracy_min``, ``accuracy_drop_max``, ``bg_gap_max``, ``mixed_rand_accuracy_min``,
    ``robustness_score_min``, ``assessor_not_variant``, ``assessor_variant_probability_max``,
    ``keyword_error_rate_below`` (with ``keyword_min_composites``).
``[baseline]`` (candidate against the baseline model; :data:`BASELINE_KEYS`)
    ``*_margin``: how much worse than the baseline the candidate may be; ``alpha``: the level of
    McNemar's test on paired outcomes (a worsening fails only when it is also significant);
    ``keyword_min_composites``.
``[settings]`` (:data:`SETTING_KEYS`)
    seeds and forms of the neighbouring benchmarks, the assessor's labels.

Every bad key or value is one :class:`InvalidInputError` naming the file, the section, the key, the
value and the fix; unknown keys suggest the nearest known one.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analytics._install import project_file
from analytics.exceptions import InvalidInputError

#: The example policy, every key documented: ``examples/policy.toml`` of a checkout, shipped inside the
#: wheel too. Its ``[baseline]`` rules need a baseline model (``check(..., baseline=...)``).
EXAMPLE_POLICY = project_file("examples/policy.toml")
#: The largest policy file :func:`parse_policy_bytes` reads (an upload on the Gate page; examples/policy.toml has under 5 kB).
MAX_POLICY_MB = 1
MAX_POLICY_BYTES = MAX_POLICY_MB * 2**20

# key -> (kind, example): kind 'fraction' = number in [0, 1], 'score' = any finite number,
# 'gap' = number in [-1, 1] (a difference of accuracies), 'margin' = number in [0, 1], 'count' = integer >= 1, 'seed' = integer >= 0, 'bool', or a tuple of choices.
RULE_KEYS: dict[str, tuple[Any, str]] = {
    "worst_case_accuracy_min": ("fraction", "0.5"),
    "accuracy_drop_max": ("fraction", "0.2"),
    "bg_gap_max": ("gap", "0.15"),
    "mixed_rand_accuracy_min": ("fraction", "0.6"),
    "robustness_score_min": ("score", "0.5"),
    "assessor_not_variant": ("bool", "true"),
    "assessor_variant_probability_max": ("fraction", "0.5"),
    "keyword_error_rate_below": ("fraction", "0.6"),
    "keyword_min_composites": ("count", "10"),
}
BASELINE_KEYS: dict[str, tuple[Any, str]] = {
    "accuracy_margin": ("margin", "0.02"),
    "worst_case_accuracy_margin": ("margin", "0.05"),
    "mixed_rand_accuracy_margin": ("margin", "0.05"),
    "bg_gap_margin": ("margin", "0.05"),
    "robustness_score_margin": ("margin", "0.05"),
    "keyword_error_rate_margin": ("margin", "0.1"),
    "keyword_min_composites": ("count", "10"),
    "alpha": ("fraction", "0.05"),
}
SETTING_KEYS: dict[str, tuple[Any, str]] = {
    "challenge_seed": ("seed", "0"),
    "challenge_blend": ("bool", "false"),
    "scenario_seed": ("seed", "0"),
    "robustness_form": (("paper", "table3"), '"paper"'),
    "assessor_labels": (("human", "construction"), '"human"'),
}
SUITE_KEYS: dict[str, tuple[Any, str]] = {
    "id": ("text", '"my-suite"'),
    "method": (("random", "nearest", "interval", "keyword", "ontology"), '"random"'),
    "n": ("count", "16"),
    "seed": ("seed", "0"),
    "realism_threshold": ("fraction", "0.25"),
}
_SECTIONS = {"suite": SUITE_KEYS, "rules": RULE_KEYS, "baseline": BASELINE_KEYS, "settings": SETTING_KEYS}
#: Keys that only qualify another key (they are no rule of their own).
_QUALIFIERS = {"keyword_min_composites", "alpha"}
DEFAULT_MIN_COMPOSITES, DEFAULT_ALPHA = 10, 0.05


@dataclass(frozen=True)
class SuiteRecipe:
    """``[suite]``: a saved suite's ``id``, or ``method`` / ``n`` / ``seed`` / ``realism_threshold`` to build (or find) one."""

    id: str | None = None
    method: str | None = None
    n: int = 32
    seed: int = 0
    realism_threshold: float | None = None


@dataclass(frozen=True)
class Policy:
    """A checked policy file.

    Attributes
    ----------
    path : str
        The file (named in every message).
    suite : SuiteRecipe
    rules : dict of str to float or bool
        ``[rules]`` as given, without ``keyword_min_composites``.
    baseline : dict of str to float
        ``[baseline]`` margins as given, without ``alpha`` / ``keyword_min_composites``.
    settings : dict of str to Any
        ``[settings]`` with defaults filled in.
    keyword_min_composites, baseline_min_composites : int
    alpha : float
    text : str
        The file's text as read (what a ``gate`` job is given, so the job checks what was read).
    """

    path: str
    suite: SuiteRecipe = SuiteRecipe()
    rules: dict[str, Any] = field(default_factory=dict)
    baseline: dict[str, float] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    keyword_min_composites: int = DEFAULT_MIN_COMPOSITES
    baseline_min_composites: int = DEFAULT_MIN_COMPOSITES
    alpha: float = DEFAULT_ALPHA
    text: str = field(default="", repr=False)

    @property
    def rule_names(self) -> list[str]:
        """Every rule, candidate rules first, baseline rules prefixed ``baseline.``."""
        return [*self.rules, *(f"baseline.{key}" for key in self.baseline)]


def load_policy(path: str | os.PathLike) -> Policy:
    """Read and check a policy file (module notes); :class:`InvalidInputError` on the first bad key or value."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        raise InvalidInputError(f"policy {path}: cannot read it ({reason}); pass a TOML file such as examples/policy.toml") from error
    return parse_policy(text, str(path))


def parse_policy(text: str, path: str = "policy") -> Policy:
    """:func:`load_policy` on the text of a file named ``path``."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise InvalidInputError(f"{path}: not valid TOML ({error}); see examples/policy.toml") from error
    for section, value in data.items():
        if section not in _SECTIONS:
            raise InvalidInputError(f"{path}: unknown section [{section}]{_nearest(section, _SECTIONS)}; sections are {_listing(_SECTIONS)}")
        if not isinstance(value, dict):
            raise InvalidInputError(f"{path}: {section} must be a table ([{section}] followed by key = value lines); got {value!r}")
    checked = {name: {key: _check(path, name, key, value, keys) for key, value in data.get(name, {}).items()} for name, keys in _SECTIONS.items()}
    rules, baseline, suite = checked["rules"], checked["baseline"], checked["suite"]
    if "keyword_min_composites" in rules and "keyword_error_rate_below" not in rules:
        raise InvalidInputError(f"{path}: [rules] keyword_min_composites needs keyword_error_rate_below (e.g. keyword_error_rate_below = 0.6) or remove it")
    if "keyword_min_composites" in baseline and "keyword_error_rate_margin" not in baseline:
        raise InvalidInputError(f"{path}: [baseline] keyword_min_composites needs keyword_error_rate_margin (e.g. keyword_error_rate_margin = 0.1) or remove it")
    if "id" in suite and len(suite) > 1:
        raise InvalidInputError(f"{path}: [suite] gives id and a recipe ({', '.join(k for k in suite if k != 'id')}); keep one of them")
    if suite and "id" not in suite and "method" not in suite:
        raise InvalidInputError(f"{path}: [suite] recipe needs method (e.g. method = \"random\") or an id of a saved suite")
    own = {key: value for key, value in rules.items() if key not in _QUALIFIERS}
    margins = {key: value for key, value in baseline.items() if key not in _QUALIFIERS}
    if not own and not margins:
        raise InvalidInputError(f"{path}: no rule; add one under [rules] (e.g. worst_case_accuracy_min = 0.5) or [baseline] (e.g. accuracy_margin = 0.02)")
    settings = {"challenge_seed": 0, "challenge_blend": False, "scenario_seed": 0, "robustness_form": "paper", "assessor_labels": "human", **checked["settings"]}
    return Policy(
        path=path, suite=SuiteRecipe(**suite), rules=own, baseline=margins, settings=settings,
        keyword_min_composites=rules.get("keyword_min_composites", DEFAULT_MIN_COMPOSITES),
        baseline_min_composites=baseline.get("keyword_min_composites", DEFAULT_MIN_COMPOSITES),
        alpha=baseline.get("alpha", DEFAULT_ALPHA), text=text,
    )  # fmt: skip


def parse_policy_bytes(data: bytes, name: str = "policy") -> Policy:
    """:func:`parse_policy` on the bytes of a file named ``name`` (an upload): refused in one line
    above :data:`MAX_POLICY_BYTES` or when it is not UTF-8 text, before it is parsed."""
    if len(data) > MAX_POLICY_BYTES:
        raise InvalidInputError(
            f"{name}: {len(data):,} bytes; a policy file may have at most {MAX_POLICY_BYTES:,} ({MAX_POLICY_MB} MB); see examples/policy.toml"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInputError(f"{name}: not UTF-8 text; save the policy as a UTF-8 TOML file such as examples/policy.toml") from None
    return parse_policy(text, name)


def policy_toml(
    *, suite: Mapping[str, Any] | None = None, rules: Mapping[str, Any] | None = None, baseline: Mapping[str, Any] | None = None,
    settings: Mapping[str, Any] | None = None,
) -> str:  # fmt: skip
    """The text of a policy file with these sections (``key -> value``; empty ones left out), in the
    order of examples/policy.toml: what the Gate page shows and offers for the rules edited there.
    Keys and values are written as given; :func:`parse_policy` checks them.

    Parameters
    ----------
    suite, rules, baseline, settings : mapping of str to bool, int, float, str or None, optional
        ``[suite]``, ``[rules]``, ``[baseline]`` and ``[settings]``; a key whose value is None is left out.

    Returns
    -------
    str
        TOML, one ``key = value`` line per key, with a first comment line.
    """
    lines = ["# A Backdrop release gate policy (python -m analytics check --policy FILE); examples/policy.toml documents every key."]
    for section, values in (("suite", suite), ("rules", rules), ("baseline", baseline), ("settings", settings)):
        given = {key: value for key, value in (values or {}).items() if value is not None}
        if given:
            lines += ["", f"[{section}]", *(f"{key} = {_toml_value(value)}" for key, value in given.items())]
    return "\n".join(lines) + "\n"


def _check(path: str, section: str, key: str, value: Any, keys: dict[str, tuple[Any, str]]) -> Any:
    if key not in keys:
        raise InvalidInputError(f"{path}: unknown key {key!r} in [{section}]{_nearest(key, keys)}; keys there are {_listing(keys)}")
    kind, example = keys[key]
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    ok = {
        "fraction": number and 0 <= value <= 1,
        "score": number and math.isfinite(value),
        "gap": number and -1 <= value <= 1,
        "margin": number and 0 <= value <= 1,
        "count": isinstance(value, int) and not isinstance(value, bool) and value >= 1,
        "seed": isinstance(value, int) and not isinstance(value, bool) and value >= 0,
        "bool": isinstance(value, bool),
        "text": isinstance(value, str) and value.strip() != "",
    }.get(kind) if isinstance(kind, str) else value in kind
    if not ok:
        wanted = {
            "fraction": "a number in [0, 1]", "score": "a finite number", "gap": "a number in [-1, 1]", "margin": "a number in [0, 1]", "count": "an integer >= 1",
            "seed": "an integer >= 0", "bool": "true or false", "text": "a non-empty string",
        }.get(kind) if isinstance(kind, str) else f"one of {', '.join(map(repr, kind))}"  # fmt: skip
        raise InvalidInputError(f"{path}: [{section}] {key} = {_toml(value)} must be {wanted}; e.g. {key} = {example}")
    return float(value) if kind in ("fraction", "score", "gap", "margin") else value


def _nearest(word: str, known) -> str:
    close = difflib.get_close_matches(word, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _listing(known) -> str:
    return ", ".join(known)


def _toml_value(value: Any) -> str:
    """``value`` as TOML: true / false, an integer, a float (``repr``: ``0.05``, ``1.0``, ``inf``), a basic string."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ("nan" if math.isnan(value) else "inf" if value > 0 else "-inf")
    return json.dumps(str(value), ensure_ascii=False).replace("\x7f", "\\u007f")  # a JSON string is a TOML basic string, once DEL is escaped too


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value)
    return str(value)
