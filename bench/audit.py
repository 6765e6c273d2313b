"""The real-code precision audit: run mplint on checkouts of public repositories, draw a
stratified sample of its findings, apply the hand-written labels, report precision.

    python bench/audit.py run NAME [REPO_DIR ...]   # findings of this checkout -> bench/audit/runs/NAME.jsonl
    python bench/audit.py sample NAME               # sample; unlabelled sampled findings -> labels.csv (verdict TODO)
    python bench/audit.py report NAME [NAME ...] [--labeller=L]   # L: a labeller, independent, or majority
                                                    # precision per rule of each run's sample; true findings lost;
                                                    # agreement between labellers
    python bench/audit.py blind NAME OUT.csv        # the whole sample without verdicts, for an independent labeller
    python bench/audit.py merge NAME LABELLER IN.csv
                                                    # an independent labeller's verdicts (key,verdict,fix,category,reason)

Without REPO_DIR, `run` checks every folder under $MPLINT_AUDIT_ROOTS (colon-separated;
default /work/corpus:/work/corpus-extra), one repository per folder, with its own
settings. Nothing is fetched and nothing of the repositories is kept here: a run keeps
mplint's findings, and a finding is keyed by repository, path, code and a hash of its
normalised source line (whitespace removed), plus an occurrence number among equal
keys. Keys survive line shifts and reformatting, so the labels (`bench/audit/labels.csv`)
carry over to later runs; a finding whose message changed since it was labelled is
listed for review, and a new finding drawn into the sample is appended unlabelled.

The sample is deterministic: per repository and rule, the first `PER_STRATUM` findings
in the order of the hash of their keys. Precision is true / (true + false); debatable
findings are counted apart (and as not true in the strict figure).
"""

from __future__ import annotations

import collections
import csv
import hashlib
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
AUDIT = os.path.join(HERE, "audit")
RUNS = os.path.join(AUDIT, "runs")
LABELS = os.path.join(AUDIT, "labels.csv")
DEFAULT_ROOTS = "/work/corpus:/work/corpus-extra"
PER_STRATUM = 3
ENGINE_CODES = ("MP000", "MP900")
LABEL_FIELDS = ["key", "repo", "path", "line", "code", "severity", "verdict", "fix", "category", "reason", "message",
                "labeller"]
VERDICTS = ("true", "false", "debatable")
FIX_VERDICTS = ("correct", "wrong", "none")


# -- findings and their keys ------------------------------------------------------------

def _source_line(repo_dir: str, finding: dict) -> str:
    """The finding's first source line (in its notebook cell for notebooks)."""
    path = os.path.join(repo_dir, finding["filename"])
    row = finding["location"]["row"]
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return ""
    if finding.get("cell") is not None:
        try:
            cells = json.loads(text)["cells"]
            source = cells[finding["cell"] - 1].get("source", "")
            text = "".join(source) if isinstance(source, list) else source
        except (ValueError, KeyError, IndexError, TypeError):
            return ""
    lines = text.splitlines()
    return lines[row - 1] if 0 < row <= len(lines) else ""


def snippet_hash(line: str) -> str:
    return hashlib.sha1(re.sub(r"\s+", "", line).encode("utf-8")).hexdigest()[:12]


def keyed(repo: str, repo_dir: str, findings: list[dict]) -> list[dict]:
    """Findings with `repo` and a stable `key` (occurrences numbered by position)."""
    ordered = sorted(findings, key=lambda f: (f["filename"], f.get("cell") or 0, f["location"]["row"],
                                              f["location"]["column"], f["code"]))
    seen: collections.Counter = collections.Counter()
    out = []
    for finding in ordered:
        base = f"{repo}:{finding['filename']}" + (f":cell{finding['cell']}" if finding.get("cell") else "") \
            + f":{finding['code']}:{snippet_hash(_source_line(repo_dir, finding))}"
        seen[base] += 1
        out.append({**finding, "repo": repo, "key": f"{base}:{seen[base]}"})
    return out


def run_mplint(repo_dir: str) -> list[dict]:
    proc = subprocess.run(
        # Both tiers: each finding records its tier, so a report gives the precision of each.
        [sys.executable, "-m", "mplint", "--no-cache", "--output-format", "json", "--exit-zero", "--extended", "."],
        cwd=repo_dir, capture_output=True, text=True,
    )
    if proc.returncode not in (0, 1):  # an internal error or a usage error: never an empty run
        raise SystemExit(f"mplint exited {proc.returncode} in {repo_dir}: {proc.stderr[-2000:]}")
    try:
        return json.loads(proc.stdout or "[]")
    except json.JSONDecodeError:
        raise SystemExit(f"mplint printed no JSON in {repo_dir}: {proc.stderr[-2000:]}")


def repo_dirs(args: list[str]) -> list[str]:
    if args:
        return [os.path.abspath(a) for a in args]
    found = []
    for root in os.environ.get("MPLINT_AUDIT_ROOTS", DEFAULT_ROOTS).split(":"):
        if os.path.isdir(root):
            found += [os.path.join(root, n) for n in sorted(os.listdir(root)) if os.path.isdir(os.path.join(root, n))]
    return found


def run_path(name: str) -> str:
    return os.path.join(RUNS, f"{name}.jsonl")


def load_run(name: str) -> list[dict]:
    with open(run_path(name), encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def command_run(name: str, args: list[str]) -> None:
    os.makedirs(RUNS, exist_ok=True)
    rows = []
    repos = []
    for repo_dir in repo_dirs(args):
        repo = os.path.basename(repo_dir.rstrip("/"))
        repos.append(repo)
        findings = keyed(repo, repo_dir, run_mplint(repo_dir))
        print(f"{repo}: {len(findings)} findings", file=sys.stderr)
        rows += [{k: f[k] for k in ("key", "repo", "filename", "cell", "location", "code", "severity", "message")}
                 | {"fix": f["fix"]["applicability"] if f.get("fix") else None,
                    "tier": f.get("tier", "default"),
                    "premises": [f"{p['fact']}={p['status']}" for p in f.get("premises", ())]} for f in findings]
    with open(run_path(name), "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, sort_keys=True) + "\n")
    with open(repos_path(name), "w", encoding="utf-8") as handle:
        handle.write("".join(f"{repo}\n" for repo in repos))  # what "missing" can be asked of
    print(f"{len(rows)} findings -> {os.path.relpath(run_path(name))}")


def repos_path(name: str) -> str:
    return os.path.join(RUNS, f"{name}.repos")


def run_repos(name: str) -> set[str] | None:
    """The repositories a run checked (None for runs recorded before the list was kept)."""
    if not os.path.exists(repos_path(name)):
        return None
    with open(repos_path(name), encoding="utf-8") as handle:
        return {line.strip() for line in handle if line.strip()}


# -- the sample ---------------------------------------------------------------------------

def sample(findings: list[dict]) -> list[dict]:
    strata: dict[tuple[str, str], list[dict]] = collections.defaultdict(list)
    for f in findings:
        if f["code"] not in ENGINE_CODES:
            strata[(f["repo"], f["code"])].append(f)
    chosen = []
    for stratum in sorted(strata):
        ranked = sorted(strata[stratum], key=lambda f: hashlib.sha1(f["key"].encode()).hexdigest())
        chosen += ranked[:PER_STRATUM]
    return sorted(chosen, key=lambda f: (f["code"], f["key"]))


# -- labels --------------------------------------------------------------------------------

def normalised_message(message: str) -> str:
    """The message without numbers (line numbers, sizes) and spacing."""
    return re.sub(r"\s+", " ", re.sub(r"\d+", "N", message)).strip()


def load_labels() -> list[dict]:
    if not os.path.exists(LABELS):
        return []
    with open(LABELS, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def save_labels(rows: list[dict]) -> None:
    rows = sorted(rows, key=lambda r: (r["code"], r["key"], r["message"], r.get("labeller") or ""))
    with open(LABELS, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=LABEL_FIELDS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def label_for(finding: dict, labels: dict[str, list[dict]], labeller: str | None = None) -> tuple[dict | None, bool]:
    """(label, exact): the label whose message matches the finding's, else the newest
    label of its key (exact False: its message changed since it was labelled). With
    `labeller`, only that labeller's labels count ("" names the developers' own)."""
    rows = labels.get(finding["key"], [])
    if labeller in ("independent", "majority"):  # any independent labeller (not the developers)
        rows = [r for r in rows if r.get("labeller")]
    elif labeller is not None:
        rows = [r for r in rows if (r.get("labeller") or "") == labeller]
    message = normalised_message(finding["message"])
    exact = [row for row in rows if normalised_message(row["message"]) == message]
    if labeller == "majority":
        chosen = _majority(exact)
        return (chosen, True) if chosen is not None else (None, False)
    if exact:
        return exact[0], True
    return (rows[-1], False) if rows else (None, False)


def _majority(rows: list[dict]) -> dict | None:
    """The verdict (and fix verdict) most independent labellers gave one finding; no
    majority (three different verdicts) is debatable."""
    rows = [r for r in rows if r.get("labeller") and r["verdict"] in VERDICTS]
    if not rows:
        return None

    def most(field: str, fallback: str) -> str:
        counted = collections.Counter(r[field] for r in rows).most_common()
        return counted[0][0] if len(counted) == 1 or counted[0][1] > counted[1][1] else fallback

    return {**rows[0], "verdict": most("verdict", "debatable"), "fix": most("fix", "wrong"), "labeller": "majority"}


def by_key(rows: list[dict]) -> dict[str, list[dict]]:
    table: dict[str, list[dict]] = collections.defaultdict(list)
    for row in rows:
        table[row["key"]].append(row)
    return table


def command_sample(name: str) -> None:
    rows = load_labels()
    labels = by_key(rows)
    added = stale = 0
    for f in sample(load_run(name)):
        label, exact = label_for(f, labels)
        if exact:
            continue
        if label is not None:
            stale += 1
            print(f"message changed since labelled ({label['verdict']}): {f['key']}\n  was: {label['message']}\n  now: {f['message']}")
        rows.append({"key": f["key"], "repo": f["repo"], "path": f["filename"] + (f":cell{f['cell']}" if f.get("cell") else ""),
                     "line": f["location"]["row"], "code": f["code"], "severity": f["severity"],
                     "verdict": "TODO", "fix": "", "category": "", "reason": "", "message": f["message"]})
        added += 1
    save_labels(rows)
    print(f"{added} sampled findings to label ({stale} of them relabels after a message change) in {os.path.relpath(LABELS)}")


# -- the report -----------------------------------------------------------------------------

def precision_table(name: str, labels: dict[str, list[dict]], labeller: str | None = None,
                    tier: str | None = None) -> tuple[str, list[str]]:
    """Precision per rule of the run's sample; with `tier`, of its findings in that tier
    only (runs before tiers existed count as default)."""
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    todo = []
    for f in sample(load_run(name)):
        if tier is not None and f.get("tier", "default") != tier:
            continue
        label, exact = label_for(f, labels, labeller)
        if label is None or not exact or label["verdict"] not in VERDICTS:
            todo.append(f["key"])
            counts[f["code"]]["unlabelled"] += 1
            continue
        counts[f["code"]][label["verdict"]] += 1
        if label["fix"] in ("correct", "wrong") and f.get("fix"):  # a fix this run still offers
            counts[f["code"]][f"fix {label['fix']}"] += 1
    lines = [f"| rule | sampled | true | false | debatable | precision | strict | fixes correct / wrong |",
             "|---|---|---|---|---|---|---|---|"]
    total: collections.Counter = collections.Counter()
    for code in sorted(counts):
        c = counts[code]
        total.update(c)
        lines.append(_row(code, c))
    lines.append(_row("**all**", total))
    return "\n".join(lines), todo


def _row(code: str, c: collections.Counter) -> str:
    sampled = c["true"] + c["false"] + c["debatable"] + c["unlabelled"]
    judged = c["true"] + c["false"]
    precision = f"{c['true'] / judged:.2f}" if judged else "-"
    strict = f"{c['true'] / (judged + c['debatable']):.2f}" if judged + c["debatable"] else "-"
    pending = f" ({c['unlabelled']} unlabelled)" if c["unlabelled"] else ""
    return (f"| {code} | {sampled}{pending} | {c['true']} | {c['false']} | {c['debatable']} | {precision} | {strict} "
            f"| {c['fix correct']} / {c['fix wrong']} |")


def command_report(names: list[str], labeller: str | None = None) -> None:
    rows = load_labels()
    labels = by_key(rows)
    for name in names:
        table, todo = precision_table(name, labels, labeller)
        print(f"### {name}" + (f" (labeller: {labeller or 'developers'})" if labeller is not None else "") + f"\n\n{table}\n")
        if todo:
            print(f"{len(todo)} sampled findings without a current label (run `sample {name}`)\n")
        if any("tier" in f for f in load_run(name)):
            for tier in ("default", "extended"):
                table, _ = precision_table(name, labels, labeller, tier)
                print(f"#### {name}, {tier} tier\n\n{table}\n")
            print(_default_share(name, labels, labeller) + "\n")
    last = names[-1]
    _print_agreement(last, labels)
    present = {f["key"] for f in load_run(last)}
    overruled = {r["key"] for r in rows if r.get("labeller") and r["verdict"] in ("false", "debatable")}
    labelled_true = {r["key"] for r in rows if r["verdict"] == "true"}
    checked = run_repos(last)
    lost = sorted(k for k in labelled_true - present - overruled if checked is None or k.split(":", 1)[0] in checked)
    scope = f" (of the {len(checked)} repositories it checked)" if checked is not None else ""
    print(f"true findings (labelled) missing from `{last}`{scope}: {len(lost)}")
    for key in lost:
        print(f"  {key}")
    extended_only = sorted(f["key"] for f in load_run(last)
                           if f.get("tier") == "extended" and f["key"] in labelled_true - overruled)
    print(f"true findings (labelled) of `{last}` in the extended tier only: {len(extended_only)}")
    for key in extended_only:
        print(f"  {key}")
    gone = sorted((labelled_true & overruled) - present)
    if gone:
        print(f"gone from `{last}`, labelled true once but false or debatable by an independent labeller: {len(gone)}")
        for key in gone:
            print(f"  {key}")
    categories = collections.Counter(r["category"] for r in rows if r["verdict"] in ("false", "debatable") and r["category"])
    if categories:
        print("\nfalse/debatable labels by category (all labelled findings):")
        for category, n in sorted(categories.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"  {category}: {n}")


def _default_share(name: str, labels: dict[str, list[dict]], labeller: str | None) -> str:
    """How many of the sample's true findings the default tier keeps (a tier that is
    precise because it is empty is no goal)."""
    true = {"default": 0, "extended": 0}
    for f in sample(load_run(name)):
        label, exact = label_for(f, labels, labeller)
        if label is not None and exact and label["verdict"] == "true":
            true[f.get("tier", "default")] += 1
    total = true["default"] + true["extended"]
    share = f"{true['default'] / total:.2f}" if total else "-"
    return f"default tier's share of the sample's true findings: {true['default']} of {total} ({share})"


def _print_agreement(name: str, labels: dict[str, list[dict]]) -> None:
    """How often labellers who judged the same sampled finding (same message) agree."""
    pairs = agree = 0
    disagreements = []
    for f in sample(load_run(name)):
        message = normalised_message(f["message"])
        verdicts = {}
        for row in labels.get(f["key"], []):
            if normalised_message(row["message"]) == message and row["verdict"] in VERDICTS:
                verdicts[row.get("labeller") or "developers"] = row["verdict"]
        if len(verdicts) < 2:
            continue
        pairs += 1
        if len(set(verdicts.values())) == 1:
            agree += 1
        else:
            disagreements.append((f["key"], verdicts))
    if not pairs:
        return
    print(f"labellers agree on {agree} of {pairs} sampled findings judged by more than one")
    for key, verdicts in disagreements:
        print(f"  {key}: " + ", ".join(f"{who} {verdict}" for who, verdict in sorted(verdicts.items())))
    print()


def command_blind(name: str, out: str) -> None:
    """The sample as a labeller sees it: the findings, no verdicts."""
    fields = ["key", "repo", "path", "line", "code", "severity", "fix", "message"]  # no tier: labels stay blind to it
    drawn = sample(load_run(name))
    with open(out, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        for f in drawn:
            writer.writerow({"key": f["key"], "repo": f["repo"],
                             "path": f["filename"] + (f":cell{f['cell']}" if f.get("cell") else ""),
                             "line": f["location"]["row"], "code": f["code"], "severity": f["severity"],
                             "fix": f["fix"] or "none", "message": f["message"]})
    print(f"{len(drawn)} sampled findings -> {out}")


def command_merge(name: str, labeller: str, path: str) -> None:
    """Adds a labeller's verdicts on findings of run `name` (replacing that labeller's
    earlier label of the same finding and message)."""
    findings = {f["key"]: f for f in load_run(name)}
    rows = load_labels()
    with open(path, newline="", encoding="utf-8") as handle:
        given = list(csv.DictReader(handle))
    added = 0
    for row in given:
        f = findings.get(row["key"])
        verdict = (row.get("verdict") or "").strip().lower()
        if f is None or verdict not in VERDICTS:
            print(f"skipped (unknown key or verdict): {row.get('key')} {verdict}")
            continue
        message = normalised_message(f["message"])
        rows = [r for r in rows if not (r["key"] == f["key"] and (r.get("labeller") or "") == labeller
                                        and normalised_message(r["message"]) == message)]
        fix = (row.get("fix") or "none").strip().lower()
        rows.append({"key": f["key"], "repo": f["repo"], "path": f["filename"] + (f":cell{f['cell']}" if f.get("cell") else ""),
                     "line": f["location"]["row"], "code": f["code"], "severity": f["severity"], "verdict": verdict,
                     "fix": fix if fix in FIX_VERDICTS else "none", "category": (row.get("category") or "").strip(),
                     "reason": (row.get("reason") or "").strip(), "message": f["message"], "labeller": labeller})
        added += 1
    save_labels(rows)
    print(f"{added} labels by {labeller} merged into {os.path.relpath(LABELS)}")


def main(argv: list[str]) -> None:
    if len(argv) < 2 or argv[0] not in ("run", "sample", "report", "blind", "merge"):
        raise SystemExit(__doc__)
    if argv[0] == "run":
        command_run(argv[1], argv[2:])
    elif argv[0] == "sample":
        command_sample(argv[1])
    elif argv[0] == "blind":
        command_blind(argv[1], argv[2])
    elif argv[0] == "merge":
        command_merge(argv[1], argv[2], argv[3])
    else:
        names = [a for a in argv[1:] if not a.startswith("--labeller")]
        labeller = next((a.split("=", 1)[1] for a in argv[1:] if a.startswith("--labeller=")), None)
        command_report(names, labeller)


if __name__ == "__main__":
    main(sys.argv[1:])
