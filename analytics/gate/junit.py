"""The gate's results as a JUnit XML file: the format every CI system shows natively.

One ``<testsuite>`` with one ``<testcase>`` per rule (``classname`` ``backdrop.check``, ``name`` the
policy key); a failing rule holds a ``<failure>`` whose ``message`` has the measured value and the
limit, with the details (e.g. the keywords that got worse) as its text; a rule with nothing to
measure holds an ``<error>`` (type ``NothingToMeasure``) whose message names the missing step, counted
in ``errors``, not ``failures``; a passing rule has its line in ``<system-out>``. Written with
:mod:`xml.etree.ElementTree`, so names are escaped.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from .rules import RuleResult

CLASSNAME = "backdrop.check"


def junit_xml(results: Sequence[RuleResult], *, title: str, properties: dict[str, str], seconds: float, timestamp: str) -> str:
    """The JUnit document of ``results``.

    Parameters
    ----------
    results : sequence of RuleResult
    title : str
        The test suite's name (e.g. ``backdrop check: MODEL on SUITE``).
    properties : dict of str to str
        Recorded as ``<property>`` elements (candidate, baseline, suite, policy ...).
    seconds : float
        Wall time of the whole check (the suite's ``time``; cases get 0, their work is shared).
    timestamp : str
        ISO 8601 time of the check.
    """
    failures, errors = sum(r.outcome == "fail" for r in results), sum(r.outcome == "error" for r in results)
    counts = {"tests": str(len(results)), "failures": str(failures), "errors": str(errors)}
    root = ET.Element("testsuites", {"name": "backdrop check", **counts, "time": f"{seconds:.3f}"})
    suite = ET.SubElement(root, "testsuite", {"name": title, **counts, "skipped": "0", "time": f"{seconds:.3f}", "timestamp": timestamp})
    listed = ET.SubElement(suite, "properties")
    for key, value in properties.items():
        ET.SubElement(listed, "property", name=key, value=str(value))
    for result in results:
        case = ET.SubElement(suite, "testcase", classname=CLASSNAME, name=result.name, time="0")
        if result.passed:
            ET.SubElement(case, "system-out").text = result.message
        else:
            kind, label = ("error", "NothingToMeasure") if result.error else ("failure", "RuleFailed")
            failure = ET.SubElement(case, kind, message=result.message, type=label)
            failure.text = "\n".join([result.message, *result.details])
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
