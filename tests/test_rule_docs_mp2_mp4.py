"""Rule metadata and docs of the loss-scaling (MP2xx) and migration (MP4xx) families,
and the pre-filter letting their files through."""

from __future__ import annotations

import pytest

from mplint.core.codes import RULES
from mplint.engine.prefilter import needs_parse
from mplint.catalogue.registry import rule_class
from mplint.catalogue.rule import REQUIRED_SECTIONS

CODES = sorted(c for c, (_, family) in RULES.items() if family in ("loss_scaling", "migration"))


@pytest.mark.parametrize("code", CODES)
def test_docs_have_every_section_with_content(code):
    sections = rule_class(code).doc_sections()
    assert list(sections) == list(REQUIRED_SECTIONS)
    assert all(text.strip() for text in sections.values())
    assert "```python" in sections["Example"] and "```python" in sections["Use instead"]


@pytest.mark.parametrize(
    "text",
    [
        "scaled = self.optimizer.get_scaled_loss(loss)",
        "grads = opt.get_unscaled_gradients(grads)",
        "loss = self.optimizer.scale_loss(loss)",
    ],
)
def test_loss_scale_optimizer_methods_are_parsed(text):
    assert needs_parse(text)


def test_a_variable_named_scaled_loss_alone_is_not_a_reason_to_parse():
    assert not needs_parse("scaled_loss = 2 * loss\nprint(scaled_loss)\n")
