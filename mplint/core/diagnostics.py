"""What a check produces: findings, their locations and their fixes.

These are plain, picklable values: workers send them to the parent process and the
cache stores them as JSON.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Applicability(str, enum.Enum):
    """How safe a fix is, as in ruff: `--fix` applies SAFE, `--unsafe-fixes` adds UNSAFE."""

    SAFE = "safe"
    UNSAFE = "unsafe"


class FixAvailability(str, enum.Enum):
    """What a rule can offer, for `mplint rule` and the docs."""

    NONE = "none"
    SOMETIMES = "sometimes"
    ALWAYS = "always"


# -- premises: the facts a finding rests on (computed in mplint.facts.premises) ----------

class Status(str, enum.Enum):
    PROVED = "proved"
    INFERRED = "inferred"
    ASSUMED = "assumed"
    CONFLICTING = "conflicting"


DEFAULT_TIER = "default"
EXTENDED_TIER = "extended"

# The facts a finding can rest on, in the order they are shown.
POLICY, TARGET, BACKEND, DTYPE, ROLE, CALL_PATH = "policy", "keras-target", "backend", "dtype", "role", "call-path"
# Which TensorFlow build runs the code: stock (PyPI) or an NVIDIA NGC container, whose own
# switches (TF_ENABLE_AUTO_MIXED_PRECISION) stock TensorFlow does not read.
TENSORFLOW_BUILD = "tensorflow-build"
# That the rule's findings are worth acting on at all, as its audits measured: a rule whose
# labelled findings were seldom true (CodeQL's `@precision medium`) is in the extended suite.
RULE_PRECISION = "rule-precision"
FACTS = (POLICY, TARGET, BACKEND, DTYPE, ROLE, CALL_PATH, RULE_PRECISION)


@dataclass(frozen=True)
class Premise:
    fact: str  # one of FACTS
    value: str  # what mplint takes it to be ("mixed_float16", "keras3", "model output")
    status: Status
    evidence: str  # why, in a few words

    def to_json(self) -> dict[str, Any]:
        return {"fact": self.fact, "value": self.value, "status": self.status.value, "evidence": self.evidence}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Premise":
        return cls(data["fact"], data["value"], Status(data["status"]), data["evidence"])

    def describe(self) -> str:
        return f"{self.fact} {self.value}: {self.status.value} ({self.evidence})"


def tier_of(premises: tuple[Premise, ...]) -> str:
    trusted = (Status.PROVED, Status.INFERRED)
    return DEFAULT_TIER if all(p.status in trusted for p in premises) else EXTENDED_TIER


def all_proved(premises: tuple[Premise, ...]) -> bool:
    return all(p.status is Status.PROVED for p in premises)


def unproved_note(premises: tuple[Premise, ...]) -> str:
    """What a message says about the premises that are not proved (short), or ''."""
    weak = [p for p in premises if p.status in (Status.ASSUMED, Status.CONFLICTING)]
    if not weak:
        return ""
    return "; ".join(f"{p.fact} {p.status.value}: {p.evidence}" for p in weak)


@dataclass(frozen=True, order=True)
class Location:
    row: int  # 1-based
    column: int  # 1-based, in characters

    def to_json(self) -> dict[str, int]:
        return {"row": self.row, "column": self.column}

    @classmethod
    def from_json(cls, data: dict[str, int]) -> "Location":
        return cls(data["row"], data["column"])


@dataclass(frozen=True)
class Edit:
    """Replace the text between two offsets of the analysed text with `content`.

    `start`/`end` are character offsets used to apply the edit; `location`/`end_location`
    are the same place as rows and columns (cell-relative in notebooks) for reporting.
    """

    content: str
    start: int
    end: int
    location: Location
    end_location: Location

    def to_json(self) -> dict[str, Any]:
        return {
            "content": self.content,
            "location": self.location.to_json(),
            "end_location": self.end_location.to_json(),
        }

    def cache_json(self) -> dict[str, Any]:
        return {**self.to_json(), "start": self.start, "end": self.end}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Edit":
        return cls(
            data["content"],
            data["start"],
            data["end"],
            Location.from_json(data["location"]),
            Location.from_json(data["end_location"]),
        )


@dataclass(frozen=True)
class Fix:
    applicability: Applicability
    message: str
    edits: tuple[Edit, ...]
    # Findings whose fixes share a group carry the same edits (the whole group's) and
    # are applied together; the key tells them apart within one file.
    group: str | None = None

    def applies(self, unsafe: bool) -> bool:
        return self.applicability is Applicability.SAFE or unsafe

    def to_json(self) -> dict[str, Any]:
        return {
            "applicability": self.applicability.value,
            "message": self.message,
            "edits": [e.to_json() for e in self.edits],
        }

    def cache_json(self) -> dict[str, Any]:
        return {
            "applicability": self.applicability.value,
            "message": self.message,
            "edits": [e.cache_json() for e in self.edits],
            "group": self.group,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Fix":
        return cls(
            Applicability(data["applicability"]),
            data["message"],
            tuple(Edit.from_json(e) for e in data["edits"]),
            data.get("group"),
        )


@dataclass(frozen=True)
class Finding:
    code: str
    name: str
    message: str
    severity: Severity
    filename: str
    location: Location
    end_location: Location
    fix: Fix | None = None
    cell: int | None = None  # 1-based notebook cell the rows refer to
    # Which rows of the analysed text the finding spans (for `# noqa`); not reported.
    span_rows: tuple[int, int] = field(default=(0, 0), compare=False)
    # The facts the finding rests on, with their status (mplint.facts.premises).
    premises: tuple[Premise, ...] = field(default=(), compare=False)
    # The why behind the one-sentence message: the mechanism, the evidence of each premise
    # that is not proved, why there is no fix. Shown by `-v`, JSON, SARIF and the editor.
    detail: str = field(default="", compare=False)

    @property
    def tier(self) -> str:
        """"default" (every premise proved or inferred) or "extended"."""
        return tier_of(self.premises)

    def sort_key(self) -> tuple:
        return (self.filename, self.cell or 0, self.location, self.code, self.message)

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "severity": self.severity.value,
            "filename": self.filename,
            "location": self.location.to_json(),
            "end_location": self.end_location.to_json(),
            "fix": self.fix.to_json() if self.fix else None,
            "cell": self.cell,
            "tier": self.tier,
            "premises": [p.to_json() for p in self.premises],
            "detail": self.detail,
        }

    def cache_json(self) -> dict[str, Any]:
        data = self.to_json()
        data["fix"] = self.fix.cache_json() if self.fix else None
        data["span_rows"] = list(self.span_rows)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any], filename: str | None = None) -> "Finding":
        return cls(
            code=data["code"],
            name=data["name"],
            message=data["message"],
            severity=Severity(data["severity"]),
            filename=filename if filename is not None else data["filename"],
            location=Location.from_json(data["location"]),
            end_location=Location.from_json(data["end_location"]),
            fix=Fix.from_json(data["fix"]) if data.get("fix") else None,
            cell=data.get("cell"),
            span_rows=tuple(data.get("span_rows", (0, 0))),  # type: ignore[arg-type]
            premises=tuple(Premise.from_json(p) for p in data.get("premises", ())),
            detail=data.get("detail", ""),
        )


# Engine codes: not rules, cannot be selected away or suppressed.
PARSE_ERROR = ("MP000", "unreadable-or-invalid-source")
INTERNAL_ERROR = ("MP900", "internal-error")
