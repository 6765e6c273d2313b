"""Every rule documents itself in ruff's sections and matches the catalogue."""

from __future__ import annotations

import pytest

from mplint.core.codes import RULES
from mplint.core.diagnostics import FixAvailability, Severity
from mplint.catalogue.registry import rule_class
from mplint.catalogue.rule import REQUIRED_SECTIONS


@pytest.mark.parametrize("code", sorted(RULES))
def test_rule_metadata_and_docs(code):
    rule = rule_class(code)
    assert rule.code == code and rule.name == RULES[code][0]
    assert isinstance(rule.severity, Severity) and isinstance(rule.fix_availability, FixAvailability)
    sections = rule.doc_sections()
    for section in REQUIRED_SECTIONS:
        assert sections.get(section), f"{code}: missing or empty '## {section}'"
    assert "```python" in sections["Example"] and "```python" in sections["Use instead"]
    assert rule.summary()


@pytest.mark.parametrize("code", sorted(RULES))
def test_doc_examples_behave(code):
    """The Example must fire the rule and Use instead must not (when given a policy)."""
    from mplint.inputs.config import FileSettings
    from mplint.engine.engine import lint
    from mplint.inputs.source import decode_python

    rule = rule_class(code)
    sections = rule.doc_sections()

    def snippet(section: str) -> str:
        body = sections[section]
        return body.split("```python", 1)[1].split("```", 1)[0]

    example = snippet("Example")
    # Snippets may leave the policy to the surrounding program; Keras-2-only rules
    # (MP203) document Keras 2 code.
    for target in ("keras3", "keras2"):
        for assumed in (None, "mixed_float16"):
            # a rule in the extended suite reports only there
            settings = FileSettings(codes=frozenset({code}), target=target, assumed_policy=assumed,
                                    extended=rule.precision != "high")
            fired = lint(decode_python("example.py", example.encode()), settings, "example.py")
            if [f for f in fired if f.code == code]:
                break
        else:
            continue
        break
    assert [f for f in fired if f.code == code], f"{code}: the documented Example does not fire"
    fixed = lint(decode_python("use.py", snippet("Use instead").encode()), settings, "use.py")
    assert not [f for f in fixed if f.code == code], f"{code}: the documented 'Use instead' still fires"
