"""Each rule's precision on code it was never tuned on: the fresh audits, each run before
the fixes its labels led to (bench/README.md, "Every fresh audit before its fixes").

    python bench/rule_precision.py          # the table, and each rule's class by the threshold

This is the figure behind `Rule.precision`, as CodeQL's `@precision` is behind its default
suite. A finding counts where the rule would have put it in the default tier: every
premise proved or inferred, but for the rule's own precision (`rule-precision`), so a rule
already in the extended suite is still measured. Only the audits whose runs carry tiers
count (`fresh11` on); a sampled finding counts once, by its independent labellers'
majority (`audit.py report --labeller=majority`).

A rule with at least `MIN_LABELLED` labelled findings and a precision (true / (true +
false)) below `MEDIUM_BELOW` is "medium": its findings go to the extended tier. Rules
with fewer, or with debatable ones only, keep the class their catalogue entry gives them.
"""

from __future__ import annotations

import collections
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import audit

MIN_LABELLED = 5
MEDIUM_BELOW = 1 / 3  # fewer than one finding in three true
FIRST_TIERED_AUDIT = 11
_FRESH_RUN = re.compile(r"^fresh(\d+)\.jsonl$")
_UNPROVED = ("=assumed", "=conflicting")


def fresh_runs() -> list[str]:
    """The before-fix runs of the fresh audits that carry tiers, oldest first."""
    numbered = []
    for name in os.listdir(audit.RUNS):
        match = _FRESH_RUN.match(name)
        if match and int(match.group(1)) >= FIRST_TIERED_AUDIT:
            numbered.append(int(match.group(1)))
    return [f"fresh{n}" for n in sorted(numbered)]


def would_be_default(finding: dict) -> bool:
    """Whether the finding's premises, all but the rule's own precision, put it in the
    default tier."""
    return not any(p.endswith(_UNPROVED) for p in finding.get("premises", ())
                   if not p.startswith("rule-precision="))


def measured(runs: list[str] | None = None) -> dict[str, collections.Counter]:
    """Per rule code: the majority verdicts (true, false, debatable) of its sampled
    findings that the rule would put in the default tier."""
    labels = audit.by_key(audit.load_labels())
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for name in runs if runs is not None else fresh_runs():
        for finding in audit.sample(audit.load_run(name)):
            if not would_be_default(finding):
                continue
            label, exact = audit.label_for(finding, labels, "majority")
            if label is not None and exact and label["verdict"] in audit.VERDICTS:
                counts[finding["code"]][label["verdict"]] += 1
    return counts


def precision_class(counts: collections.Counter) -> str | None:
    """"medium" or "high" by the measured figures; None with too few to judge."""
    judged = counts["true"] + counts["false"]
    if judged == 0 or judged + counts["debatable"] < MIN_LABELLED:
        return None
    return "medium" if counts["true"] / judged < MEDIUM_BELOW else "high"


def evidence(counts: collections.Counter) -> str:
    """The figures in a few words, as `Rule.precision_evidence` states them."""
    judged = counts["true"] + counts["false"]
    return (f"{counts['true']} of its {judged} judged findings in the fresh audits were true "
            f"({counts['false']} false, {counts['debatable']} debatable)")


def main() -> None:
    runs = fresh_runs()
    print(f"fresh audits {runs[0]} to {runs[-1]}, findings the rule would report by default, majority labels\n")
    print("| rule | true | false | debatable | precision | class by the figures |")
    print("|---|---|---|---|---|---|")
    for code, counts in sorted(measured(runs).items()):
        judged = counts["true"] + counts["false"]
        precision = f"{counts['true'] / judged:.2f}" if judged else "-"
        print(f"| {code} | {counts['true']} | {counts['false']} | {counts['debatable']} | {precision} "
              f"| {precision_class(counts) or 'too few to judge'} |")


if __name__ == "__main__":
    main()
