"""The project model: cross-file facts, so one file checked alone is judged like the project.

Each folder of fixtures/projects/ is a small multi-file project of mine (a marker file
at its root). `expected.txt` holds the findings of checking the whole project
(`MPLINT_UPDATE_FIXTURES=1` rewrites it: review the diff). Every file checked alone,
through flake8, and through the stdin path gets exactly the findings the whole run
gives it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mplint.project.index import ProjectIndex
from tests.fixture_cases import FIXTURES, update_requested

PROJECTS = sorted(p for p in (FIXTURES / "projects").iterdir() if p.is_dir())


def _copy(project: Path, tmp_path: Path) -> Path:
    target = tmp_path / project.name
    shutil.copytree(project, target, ignore=shutil.ignore_patterns("expected.txt", ".mplint_cache", "__pycache__"))
    return target


def _findings(cli, root: Path, *paths: str) -> list[str]:
    result = cli(["--no-cache", "--output-format", "json", *paths], cwd=root)
    assert result.exit_code in (0, 1), result.stderr
    return [
        f"{f['filename']}:{f['location']['row']}:{f['location']['column']} {f['code']} {f['message']}"
        for f in json.loads(result.stdout)
    ]


def _sources(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.py"))


@pytest.mark.parametrize("project", PROJECTS, ids=lambda p: p.name)
def test_whole_project_findings(cli, project: Path, tmp_path: Path) -> None:
    root = _copy(project, tmp_path)
    found = _findings(cli, root, ".")
    expected_path = project / "expected.txt"
    if update_requested():
        expected_path.write_text("".join(f"{line}\n" for line in found))
    assert found == expected_path.read_text().splitlines()
    assert not [line for line in found if " MP900 " in line]


@pytest.mark.parametrize("project", PROJECTS, ids=lambda p: p.name)
def test_each_file_alone_gets_what_the_whole_run_gives_it(cli, project: Path, tmp_path: Path) -> None:
    root = _copy(project, tmp_path)
    whole = _findings(cli, root, ".")
    for source in _sources(root):
        alone = _findings(cli, root, source)
        assert alone == [line for line in whole if line.startswith(f"{source}:")], source


@pytest.mark.parametrize("project", PROJECTS, ids=lambda p: p.name)
def test_flake8_gets_what_the_whole_run_gives(cli, project: Path, tmp_path: Path) -> None:
    root = _copy(project, tmp_path)
    whole = sorted(  # flake8 checks Python files only (not notebooks)
        (line.split(":", 3)[0], int(line.split(":")[1]), line.split(" ", 2)[1]) for line in _findings(cli, root, ".")
        if line.split(":", 1)[0].endswith(".py")
    )
    sources = _sources(root)
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--select", "MP", "--format", "%(path)s|%(row)d|%(code)s", *sources],
        cwd=root, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode in (0, 1), proc.stderr
    found = sorted(
        (path.removeprefix("./"), int(row), code) for path, row, code in (l.split("|") for l in proc.stdout.splitlines())
    )
    assert found == whole


def test_stdin_with_a_project_path_is_judged_like_the_file(cli, tmp_path: Path) -> None:
    root = _copy(FIXTURES / "projects" / "policy_from_script", tmp_path)
    data = (root / "trainer" / "layers.py").read_bytes()
    proc = subprocess.run(
        [sys.executable, "-m", "mplint", "check", "--no-cache", "--output-format", "json",
         "--stdin-filename", "trainer/layers.py", "-"],
        cwd=root, input=data, capture_output=True, timeout=120,
    )
    assert [f["code"] for f in json.loads(proc.stdout)] == ["MP301"]


# -- the index itself --------------------------------------------------------------------------

def test_the_index_is_kept_on_disk_and_an_edit_rereads_only_that_file(tmp_path: Path, monkeypatch) -> None:
    root = _copy(FIXTURES / "projects" / "policy_from_script", tmp_path)
    index = ProjectIndex(str(root))
    assert index.context_for(str(root / "trainer" / "layers.py")).mixed_policies()[0] == {"mixed_float16"}
    assert index.save() is None
    read: list[str] = []
    original = ProjectIndex._read

    def counting(self, path):
        read.append(os.path.relpath(path, root))
        return original(self, path)

    monkeypatch.setattr(ProjectIndex, "_read", counting)
    again = ProjectIndex(str(root))
    assert again.context_for(str(root / "trainer" / "layers.py")).mixed_policies()[0] == {"mixed_float16"}
    assert read == []  # sizes and times unchanged: nothing read
    model = root / "trainer" / "model.py"
    model.write_text(model.read_text() + "# edited\n")
    third = ProjectIndex(str(root))
    assert third.context_for(str(root / "trainer" / "layers.py")).mixed_policies()[0] == {"mixed_float16"}
    assert read == ["trainer/model.py"]


def test_a_kept_index_refreshed_from_disk_answers_like_a_fresh_one(tmp_path: Path) -> None:
    """`refresh` (what `mplint server` does between commands): a touched file is not
    read again; an edit that keeps the flow keeps the policy solution; an edit that
    changes it, or a new file, gives what a fresh index gives."""
    root = _copy(FIXTURES / "projects" / "policy_from_script", tmp_path)
    layers = str(root / "trainer" / "layers.py")
    train = root / "train.py"

    def policies(index: ProjectIndex) -> frozenset:
        return index.context_for(layers).mixed_policies()[0]

    index = ProjectIndex(str(root))
    assert policies(index) == {"mixed_float16"}
    solution = index._solve()
    os.utime(train, ns=(1, 1))  # touched, same content
    assert index.refresh() == [] and index._solve() is solution
    train.write_text(train.read_text().replace('"adam"', '"sgd"'))  # same flow, same definitions
    assert index.refresh() == [str(train)] and index._solve() is solution
    assert policies(index) == policies(ProjectIndex(str(root))) == {"mixed_float16"}
    train.write_text(train.read_text().replace("mixed_float16", "float32"))
    assert index.refresh() == [str(train)] and index._solve() is not solution
    assert policies(index) == policies(ProjectIndex(str(root))) == frozenset()
    (root / "extra.py").write_text("x = 1\n")
    assert index.refresh() is None  # the caller builds a new index


def test_a_kept_index_follows_an_edit_of_a_configuration_constant(tmp_path: Path) -> None:
    """The solution read `configs.general.precision` from cfg.py, a module outside it: an
    edit of that value (or of code that sets the attribute) makes `refresh` give what a
    fresh index gives; an edit of something else keeps the solution."""
    root = _copy(FIXTURES / "projects" / "policy_from_a_configuration_object", tmp_path)
    model = str(root / "float32_run" / "modules" / "model.py")
    cfg = root / "float32_run" / "cfg.py"

    def policies(index: ProjectIndex) -> frozenset:
        return index.context_for(model).mixed_policies()[0]

    index = ProjectIndex(str(root))
    assert policies(index) == frozenset()
    solution = index._solve()
    cfg.write_text(cfg.read_text().replace("configs.general.epochs = 5", "configs.general.epochs = 6"))
    assert index.refresh() == [str(cfg)] and index._solve() is solution
    cfg.write_text(cfg.read_text().replace("precision = 32", "precision = 16"))
    assert index.refresh() == [str(cfg)] and index._solve() is not solution
    assert policies(index) == policies(ProjectIndex(str(root))) == {"mixed_float16"}


def test_the_policy_facts_do_not_depend_on_hash_order_or_the_store(tmp_path: Path) -> None:
    """Which modules bring a policy in (and so a file's cache key and messages) is the same
    in every process (string hashing is randomised per process) and whatever the project
    store holds."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "flags.py").write_text(
        "import tensorflow as tf\ndef set_flags():\n    tf.keras.mixed_precision.set_global_policy('mixed_float16')\n")
    (tmp_path / "driver.py").write_text(
        "import tensorflow as tf\nclass Driver:\n    def __init__(self, fp16):\n"
        "        tf.keras.mixed_precision.set_global_policy('mixed_float16' if fp16 else 'float32')\n")
    (tmp_path / "helpers.py").write_text("import tensorflow as tf\ndef helper():\n    return 1\n")
    (tmp_path / "inspect_model.py").write_text(
        "from flags import set_flags\nfrom driver import Driver\nfrom helpers import helper\n"
        "set_flags()\nDriver(True)\nhelper()\n")
    script = ("import sys; from mplint.project.index import ProjectIndex; i = ProjectIndex(sys.argv[1]); "
              "print(i.mixed_policies('inspect_model')); i.save()")
    answers = set()
    for seed in ("0", "1", "2", "3", "4", "5"):
        proc = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True,
                              env=dict(os.environ, PYTHONHASHSEED=seed), check=True)
        answers.add(proc.stdout)
    assert len(answers) == 1, answers
    assert "flags.py" in answers.pop()


def test_files_outside_the_checked_paths_are_read_never_reported_or_fixed(cli, tmp_path: Path) -> None:
    root = _copy(FIXTURES / "projects" / "policy_from_script", tmp_path)
    before = {p: p.read_bytes() for p in root.rglob("*.py")}
    result = cli(["--no-cache", "--fix", "--unsafe-fixes", "--output-format", "json", "trainer/layers.py"], cwd=root)
    assert {f["filename"] for f in json.loads(result.stdout)} <= {"trainer/layers.py"}
    changed = [p for p, data in before.items() if p.read_bytes() != data]
    assert changed == [root / "trainer" / "layers.py"]


def test_awkward_imports_and_broken_files_are_no_crash(tmp_path: Path) -> None:
    root = _copy(FIXTURES / "projects" / "awkward_imports", tmp_path)
    os.symlink(root, root / "loop")  # a symlink loop
    (root / "binary.py").write_bytes(b"\x00\xff\xfe not text")
    index = ProjectIndex(str(root))
    assert index.table("broken") is None and index.summary("broken") is None
    assert index.table("binary") is None
    assert index.context_for(str(root / "b.py")).mixed_policies()[0] == {"mixed_float16"}
    assert "loop" not in {Path(p).parts[len(root.parts)] for p in index.paths}


def test_test_modules_keep_their_policy_to_themselves(tmp_path: Path) -> None:
    root = _copy(FIXTURES / "projects" / "policy_from_script", tmp_path)
    index = ProjectIndex(str(root))
    # tests/test_model.py sets mixed_float16 and calls reference.baseline(): not followed.
    assert index.context_for(str(root / "trainer" / "reference.py")).mixed_policies()[0] == frozenset()


def test_experimental_api_on_tensorflow_before_2_4_is_an_info_without_a_fix(cli, tmp_path: Path) -> None:
    """Where the image is TF 2.3, the experimental API is the only one: the stable API a
    fix would write does not exist there (AttributeError). In the image next to it, TF
    2.8, it is deprecated, not removed: an info, fixed."""
    root = _copy(FIXTURES / "projects" / "target_old_tensorflow_image", tmp_path)
    result = cli(["--no-cache", "--output-format", "json", "."], cwd=root)
    found = {(f["filename"].split("/")[0], f["severity"], f["fix"] is not None) for f in json.loads(result.stdout)}
    assert found == {("segmentation", "info", False), ("detection", "info", True)}


def test_an_importer_that_never_reads_what_it_imports_brings_no_policy(tmp_path: Path) -> None:
    """`from loop import Loop` in a module that sets mixed_float16 carries that policy into
    loop.py only where the module reads `Loop` (calls, subclasses or passes it on)."""
    root = tmp_path / "p"
    shutil.copytree(FIXTURES / "projects" / "unused_import_brings_no_policy", root,
                    ignore=shutil.ignore_patterns("expected.txt"))
    index = ProjectIndex.for_path(str(root / "loop.py"), cache=False)
    assert index.context_for(str(root / "loop.py")).mixed_policies()[0] == frozenset()
    script = root / "keras_search.py"
    script.write_text(script.read_text().replace("model.compile(", "trainer = Loop\nmodel.compile("))
    again = ProjectIndex.for_path(str(root / "loop.py"), cache=False, fresh=True)
    assert again.context_for(str(root / "loop.py")).mixed_policies()[0] == {"mixed_float16"}


def test_a_module_trains_only_for_a_call_in_its_code() -> None:
    """What MP103's trainer search asks of a module: a call to fit / apply_gradients / a
    tape, never a comment or a string; where the module does not parse, the text without
    comments and strings decides. The scan only matches the text (no parse)."""
    from mplint.project.scan import calls_a_trainer, scan_text

    assert calls_a_trainer("model.fit(x, y)\n")
    assert calls_a_trainer("with tf.GradientTape() as tape:\n    pass\n")
    assert calls_a_trainer("estimator.train(input_fn)\n")
    commented = "# then call model.fit(x, y)\ndoc = 'optimizer.apply_gradients(g)'\n"
    assert scan_text(commented, "a.py").training_call and not calls_a_trainer(commented)
    assert not calls_a_trainer("model.predict(x)\nfit = 3\n")
    assert calls_a_trainer("def broken:\nmodel.fit(x)\n")
    assert not calls_a_trainer("def broken:\n# model.fit(x)\n")


def test_keras2_era_code_of_one_module_reaches_every_script(cli, tmp_path: Path) -> None:
    """`optimizers.experimental` in trainers/base.py says the project targets Keras 2: a
    loop that scales the Keras 2 way elsewhere, also in a folder no import can spell, gets
    no Keras 3 advice, not even in the extended tier; without that module it does."""
    root = _copy(FIXTURES / "projects" / "keras2_era_reaches_every_script", tmp_path)

    def codes() -> list[str]:
        result = cli(["--no-cache", "--extended", "--output-format", "json", "."], cwd=root)
        return sorted(f"{f['filename']}:{f['code']}" for f in json.loads(result.stdout))

    assert codes() == []
    index = ProjectIndex(str(root))
    assert index.context_for(str(root / "multi-node-scripts" / "run.py")) is not None
    base = root / "trainers" / "base.py"
    base.write_text(base.read_text().replace("optimizers.experimental.AdamW", "optimizers.AdamW"))
    assert "multi-node-scripts/run.py:MP404" in codes() and "trainers/gan.py:MP404" in codes()


def test_no_keras2_scaling_fix_where_a_flag_may_pick_another_policy(cli, tmp_path: Path) -> None:
    """train.py picks the policy from a flag (float32 by default): `compile` wraps the
    model's optimizer only under mixed_float16, so `get_scaled_loss` in its train_step
    would raise on the default run. The finding stands, without a fix; with the policy
    set unconditionally the fix is offered."""
    root = _copy(FIXTURES / "projects" / "compile_wraps_only_under_a_chosen_policy", tmp_path)
    result = cli(["--no-cache", "--output-format", "json", "model.py"], cwd=root)
    (finding,) = json.loads(result.stdout)
    assert finding["code"] == "MP202" and finding["fix"] is None
    assert 'global_policy().name == "mixed_float16"' in finding["detail"]
    script = root / "train.py"
    script.write_text(script.read_text().replace("set_global_policy(args.precision_policy)",
                                                 'set_global_policy("mixed_float16")'))
    (finding,) = json.loads(cli(["--no-cache", "--output-format", "json", "model.py"], cwd=root).stdout)
    assert finding["fix"] is not None


def test_a_loose_folder_is_its_scripts_and_packages_not_the_tree_below_it(tmp_path: Path) -> None:
    """A script checked where no marker says where the project is (a home or temp folder)
    has that folder as its project: its own files and its packages, not every checkout
    below it (a script in /tmp beside 100k files of other checkouts took minutes)."""
    from mplint.project.layout import project_files, project_root

    loose = tmp_path / "scratch"
    (loose / "helpers").mkdir(parents=True)
    (loose / "helpers" / "__init__.py").write_text("")
    (loose / "helpers" / "layers.py").write_text("x = 1\n")
    (loose / "someone-elses-checkout" / "src").mkdir(parents=True)
    (loose / "someone-elses-checkout" / "src" / "model.py").write_text("x = 1\n")
    (loose / "train.py").write_text("from helpers.layers import x\n")
    assert project_root(str(loose)) == str(loose)
    assert [os.path.relpath(p, loose) for p in project_files(str(loose)).paths] == [
        os.path.join("helpers", "__init__.py"), os.path.join("helpers", "layers.py"), "train.py"]
    (loose / "pyproject.toml").write_text("[project]\nname = 'p'\n")  # a marker: the whole tree is the project
    assert os.path.join("someone-elses-checkout", "src", "model.py") in [
        os.path.relpath(p, loose) for p in project_files(str(loose)).paths]


@pytest.mark.parametrize("override, mixed", [
    ("", False),  # the configuration's value holds: float32
    ("configs.general.precision = 16\n", True),
    ("setattr(configs.general, 'precision', 16)\n", True),
    ("for key, value in overrides.items():\n    setattr(configs.general, key, value)\n", True),
    ("configs.general.update(vars(overrides))\n", True),
    ("setattr(other, name, 16)\n", False),  # another object's attribute
])
def test_a_configuration_attribute_is_a_constant_until_code_sets_it(tmp_path: Path, override: str, mixed: bool) -> None:
    """`configs.general.precision = 32` at a configuration module's top level is the value a
    policy choice reads in another module (`"mixed_float16" if configs.general.precision == 16
    else "float32"`), unless code that can reach the object sets that attribute (or any
    attribute of it) again."""
    shutil.copytree(FIXTURES / "projects" / "policy_from_a_configuration_object", tmp_path / "p",
                    ignore=shutil.ignore_patterns("expected.txt"))
    run = tmp_path / "p" / "float32_run"
    helper = run / "overrides.py"
    helper.write_text("from cfg import configs\n\nother = object()\nname = 'x'\noverrides = {}\n" + override)
    main = run / "main.py"
    main.write_text(main.read_text().replace("from cfg import configs\n", "from cfg import configs\nimport overrides\n"))
    model = str(run / "modules" / "model.py")
    index = ProjectIndex.for_path(model, cache=False, fresh=True)
    assert ("mixed_float16" in index.context_for(model).mixed_policies()[0]) is mixed


def _policy_premise(cli, root: Path, path: str) -> tuple[str, dict]:
    result = cli(["--no-cache", "--extended", "--output-format", "json", path], cwd=root)
    (finding,) = [f for f in json.loads(result.stdout) if f["code"] == "MP201"]
    (premise,) = [p for p in finding["premises"] if p["fact"] == "policy"]
    return finding["tier"], premise


@pytest.mark.parametrize("edit, tier", [
    (None, "extended"),  # config.toml, the only configuration, keeps it off
    (("config.toml", "use_mixed_precision = false", "use_mixed_precision = true"), "default"),
    (("config.toml", "use_mixed_precision = false", 'use_mixed_precision = "${AMP}"'), "default"),  # not read
    (("src/train.py", 'if __name__ == "__main__":',  # the key is also a command-line flag
      'import argparse\nargparse.ArgumentParser().add_argument("--use_mixed_precision")\nif __name__ == "__main__":'),
     "default"),
    (("src/train.py", 'config["training"].get("use_mixed_precision", False)', 'config["training"]["use_mixed_precision"]'),
     "extended"),
    (("src/train.py", 'config["training"].get("use_mixed_precision", False)', "config.training.use_mixed_precision"),
     "extended"),
])
def test_a_policy_that_every_configuration_switches_off_is_latent(cli, tmp_path: Path, edit, tier: str) -> None:
    """train.py sets mixed_float16 only where a configuration key is true, and the
    project's only configuration says false: the trainer's unscaled loop is latent (the
    policy premise is assumed, naming the file and line); a configuration that turns it on,
    a value mplint cannot read, or a command-line flag of that name keeps it manifest."""
    root = _copy(FIXTURES / "projects" / "policy_switched_off_by_its_configuration", tmp_path)
    if edit is not None:
        path, old, new = edit
        text = (root / path).read_text()
        assert old in text
        (root / path).write_text(text.replace(old, new))
    found_tier, premise = _policy_premise(cli, root, ".")
    assert found_tier == tier
    if tier == "extended":
        assert premise["status"] == "assumed" and "config.toml:5" in premise["evidence"], premise
    else:
        assert premise["status"] != "assumed", premise


def test_configuration_values_are_read_from_toml_yaml_json_and_ini_lines(tmp_path: Path) -> None:
    from mplint.project.config_values import configuration_files, configured_values

    (tmp_path / "a.toml").write_text("[train]\namp = false  # off\n# amp = true\n")
    (tmp_path / "b.yaml").write_text("train:\n  - amp: no\n")
    (tmp_path / "c.json").write_text('{\n  "train": {\n    "ampere": true,\n    "amp": false,\n  }\n}\n')
    (tmp_path / "d.ini").write_text("[run]\namp = ${AMP}\n")
    (tmp_path / "pyproject.toml").write_text("[tool.x]\namp = true\n")  # a tool's settings, not the run's
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "e.yaml").write_text("amp: true\n")
    found = configured_values(configuration_files(str(tmp_path)), "amp")
    by_file = {os.path.basename(v.where.rsplit(":", 1)[0]): (v.where.rsplit(":", 1)[1], v.value) for v in found}
    assert by_file == {"a.toml": ("2", False), "b.yaml": ("2", False), "c.json": ("4", False), "d.ini": ("2", None)}
