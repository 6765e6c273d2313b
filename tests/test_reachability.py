"""Branches that never run (mplint.facts.reachability): constants of the code, and
attributes set once from a constructor parameter that every construction gives the
same truth."""

from __future__ import annotations

import textwrap

import libcst as cst

from mplint.facts.module import ModuleFacts
from mplint.facts.reachability import never_runs


def _marked(source: str) -> dict[str, str | None]:
    """never_runs for each call `mark("name")` of the source."""
    text = textwrap.dedent(source)
    facts = ModuleFacts(cst.parse_module(text), text, "/nonexistent/example.py")
    return {call.args[0].value.evaluated_value: never_runs(facts, call)
            for call in facts.index.nodes(cst.Call)
            if isinstance(call.func, cst.Name) and call.func.value == "mark"}


TRAINER = textwrap.dedent("""
    class Trainer:
        def __init__(self, amp):
            self.amp = amp

        def step(self):
            if self.amp:
                mark("on")
            else:
                mark("off")
            if not self.amp:
                mark("not on")
            mark("always")
""")


def test_every_construction_gives_the_same_truth() -> None:
    found = _marked(TRAINER + "\nTrainer(True).step()\nTrainer(amp=1).step()\n")
    assert found["on"] is None and found["always"] is None
    assert "gives `amp` True" in found["off"] and found["not on"] is not None


def test_constructions_that_disagree_or_are_not_seen_say_nothing() -> None:
    assert not any(_marked(TRAINER + "\nTrainer(True)\nTrainer(False)\n").values())
    assert not any(_marked(TRAINER + "\nimport sys\nTrainer(len(sys.argv) > 1)\n").values())
    assert not any(_marked(TRAINER + "\nfactory = Trainer\nTrainer(True)\n").values())
    assert not any(_marked(TRAINER).values())  # nobody builds it here: other code may


def test_an_attribute_set_again_elsewhere_says_nothing() -> None:
    source = TRAINER + "\nt = Trainer(True)\nt.amp = False\n"
    assert not any(_marked(source).values())


def test_a_subclass_that_hands_the_flag_on() -> None:
    subclass = "\nclass Fast(Trainer):\n    def __init__(self, amp=False):\n        super().__init__(amp=amp)\n"
    assert _marked(TRAINER + subclass + "\nFast(amp=True)\n")["off"] is not None
    assert not any(_marked(TRAINER + subclass + "\nFast(amp=True)\nFast()\n").values())
    bare = "\nclass Fast(Trainer):\n    pass\n"
    assert not any(_marked(TRAINER + bare + "\nTrainer(True)\nFast(False)\n").values())


def test_constants_of_the_code() -> None:
    found = _marked("""
        DEBUG = False
        if DEBUG:
            mark("debug")
        else:
            mark("release")
    """)
    assert found["debug"] is not None and found["release"] is None
