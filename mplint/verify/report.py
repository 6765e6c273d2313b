"""Render a VerifyResult as text (for people) or JSON (for tools)."""

from __future__ import annotations

import json
import re
import textwrap

from mplint.verify.runner import VerifyResult

_STATUS = {"pass": "pass", "fail": "FAIL", "skip": "skip", "n/a": "n/a"}
# TensorFlow's start-up chatter, left out of the output shown with an error.
_TF_NOISE = re.compile(r"^([IWE]\d{4} \d\d:\d\d:\d\d|WARNING: All log messages before absl|To enable the following instructions)")


def _user_output(tail: str, lines: int = 15) -> list:
    kept = [line for line in tail.strip().splitlines() if not _TF_NOISE.match(line)]
    return kept[-lines:]


def render_json(result: VerifyResult) -> str:
    return json.dumps(result.to_json(), indent=2, default=str) + "\n"


def _header(result: VerifyResult) -> str:
    info = result.info
    if not info:
        return f"mplint verify {result.target}"
    parts = [f"mplint verify {result.target}"]
    if info.get("entry_point"):
        parts[0] += f" ({info['entry_point']})"
    parts.append(f"policy {info.get('policy')} ({info.get('policy_source')})")
    parts.append(f"Keras {info.get('keras_version')} ({result.keras_choice})")
    backend = info.get("backend") or "tensorflow"
    if backend == "tensorflow":
        parts.append(f"TensorFlow {info.get('tensorflow')}")
    else:
        parts.append(f"backend {backend} {info.get('backend_version')} ({result.backend_choice})")
    if info.get("train_step"):
        parts.append(f"custom loop {info['train_step']}")
    return "\n  ".join(parts)


def render_text(result: VerifyResult) -> str:
    lines = [_header(result)]
    for note in result.info.get("notes", []):
        lines.append(f"  note: {note}")
    width = max((len(c["name"]) for c in result.checks), default=0)
    for check in result.checks:
        prefix = f"  {_STATUS.get(check['status'], check['status'])}  {check['name']:{width}}  "
        wrapped = textwrap.wrap(check["detail"], width=max(100 - len(prefix), 40)) or [""]
        lines.append(prefix + wrapped[0])
        lines.extend(" " * len(prefix) + more for more in wrapped[1:])
    error = result.error
    if error is not None:
        lines.append(f"error ({error['kind']}): {error['message']}")
        if error.get("traceback"):
            lines.extend("  " + line for line in error["traceback"].splitlines())
        elif error["kind"] in ("child-died", "timeout", "internal", "bad-python") and _user_output(result.output_tail):
            lines.append("  last output:")
            lines.extend("    " + line for line in _user_output(result.output_tail))
        lines.append("result: could not verify (exit 2)")
    else:
        lines.append(_summary_line(result))
        lines.append(_result_line(result))
    return "\n".join(lines) + "\n"


def _summary_line(result: VerifyResult) -> str:
    summary = result.summary()
    skipped = f", {summary['skipped']} skipped (not key)" if summary["skipped"] else ""
    return (f"summary: {summary['proved']} proved, {summary['failed']} failed, {summary['not_proved']} not proved"
            f"{skipped}, {summary['not_applicable']} not applicable")


def _result_line(result: VerifyResult) -> str:
    verdict = result.verdict
    if verdict == "failed":
        failed = [c["name"] for c in result.checks if c["status"] == "fail"]
        return f"result: {len(failed)} of {len(result.checks)} checks failed: {', '.join(failed)} (exit 1)"
    if verdict == "not-proved":
        if not result.checks:
            return "result: not proved: no check ran (exit 3)"
        names = ", ".join(c["name"] for c in result.not_proved)
        return f"result: not proved: {names} could not be made (see above) (exit 3)"
    return "result: ok (every applicable check passed)"


def render(result: VerifyResult, output_format: str) -> str:
    return render_json(result) if output_format == "json" else render_text(result)
