"""The Markdown summary (analytics/gate/summary.py): names from the workspace stay literal in a pull-request comment."""

from __future__ import annotations

from analytics.gate import RuleResult, markdown_summary


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
