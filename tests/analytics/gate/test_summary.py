"""The Markdown summary (analytics/gate/summary.py): names from the workspace stay literal in a pull-request comment;
an error verdict (nothing to measure) fails in the summary, the JUnit file, the verdict table and its figure."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import pytest

from analytics.figures import verdict_figure
from analytics.gate import RuleResult, verdict_table
from analytics.gate.junit import junit_xml
from analytics.gate.summary import markdown_summary


def test_names_are_code_spans_and_cells_keep_the_table_intact():
    results = [
        RuleResult("worst_case_accuracy_min", True, 0.8, 0.5, "worst-case accuracy 0.800 >= 0.500 (minimum)"),
        RuleResult("baseline.keyword_error_rate_margin", False, 0.3, 0.1, "1 of 2 keywords got worse: sky|sea", ("sky: error rate 0.1 -> 0.4 *x*",)),
    ]
    text = markdown_summary(results, candidate="a`b|c", baseline="**bold**", suite_id="s", policy="p.toml", report=None)
    lines = text.splitlines()
    assert lines[0] == "### Backdrop check FAILED: 1 of 2 rules"
    assert "Candidate ``a`b\\|c`` against baseline `**bold**` on suite `s`" in lines[2]
    rows = [line for line in lines if line.startswith("| `")]
    assert len(rows) == 2 and all(row.count(" | ") == 4 for row in rows)  # an escaped pipe splits no cell
    assert rows[1].endswith("| 1 of 2 keywords got worse: sky\\|sea |")
    assert "- sky: error rate 0.1 -\\> 0.4 \\*x\\*" in lines and "**baseline.keyword\\_error\\_rate\\_margin**:" in lines


def test_an_error_is_failing_everywhere_and_never_a_pass():
    results = [
        RuleResult("worst_case_accuracy_min", True, 0.8, 0.5, "worst-case accuracy 0.800 >= 0.500 (minimum)"),
        RuleResult("keyword_error_rate_below", False, math.nan, 0.6, "nothing to measure: build a keyword table", error=True),
    ]
    assert [r.outcome for r in results] == ["pass", "error"]
    with pytest.raises(ValueError, match="cannot pass"):
        RuleResult("keyword_error_rate_below", True, math.nan, 0.6, "?", error=True)
    text = markdown_summary(results, candidate="c", baseline=None, suite_id="s", policy="p.toml", report=None)
    assert text.startswith("### Backdrop check FAILED: 1 of 2 rules (1 with nothing to measure)") and "| **ERROR** |" in text
    suite = ET.fromstring(junit_xml(results, title="t", properties={}, seconds=1.0, timestamp="now")).find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("2", "0", "1")
    assert suite.find("testcase[@name='keyword_error_rate_below']/error").get("message") == results[1].message
    table = verdict_table(results)
    assert list(table["result"]) == ["pass", "error"] and list(table["passed"]) == [True, False]
    figure = verdict_figure(table)
    assert list(figure.data[0].cells.values[1]) == ["pass", "ERROR"]
    assert figure.layout.title.text == "Backdrop check FAILED: 1 of 2 rules (1 with nothing to measure)"
