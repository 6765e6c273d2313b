"""When a project was last changed (its git history), and the TensorFlow of that day.

Code written for Keras 2 whose project never says which TensorFlow it runs on (no pin, no
image, no README line) still ran on *some* TensorFlow: at most the newest one released when
the repository last changed. A training script in a repository last committed in July 2020
ran on TF 2.2 or 2.3, where the experimental mixed-precision API is the only one; telling
its author that the API "was removed" is false where the code runs, and rewriting it to the
stable API breaks it there. Reviewers date such projects the same way (`git log`), so the
date is project evidence like a pin: it bounds the TensorFlow from above. The repository's
last commit that changed code, not the file's: a project maintained in 2024 runs its files
from 2020 on the TensorFlow of 2024, but a README edited in 2022 leaves code of 2020 on
the TensorFlow of 2020 (and a pull request written in October and merged in December was
written for October's TensorFlow).

Read only where a finding asks for the TensorFlow of a Keras 2 file that names none
(`ModuleFacts.tensorflow_target`) and by the findings cache's key: one `git log` per
checkout, and one `git status` per file where that commit predates Keras 3. A file with
uncommitted changes (written now), one outside a git checkout, or a machine without `git`
gives no date.
"""

from __future__ import annotations

import os
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache

from mplint.inputs import run_record

# The first upload of each TensorFlow 2 minor release to PyPI (tensorflow X.Y.0; 2.16.1 for
# 2.16, whose 2.16.0 has no files). A project last committed to on a day ran on the newest one.
TENSORFLOW_RELEASES: tuple[tuple[str, tuple[int, int]], ...] = (
    ("2019-09-30", (2, 0)), ("2020-01-08", (2, 1)), ("2020-05-07", (2, 2)), ("2020-07-27", (2, 3)),
    ("2020-12-14", (2, 4)), ("2021-05-13", (2, 5)), ("2021-08-11", (2, 6)), ("2021-11-04", (2, 7)),
    ("2022-02-02", (2, 8)), ("2022-05-16", (2, 9)), ("2022-09-06", (2, 10)), ("2022-11-18", (2, 11)),
    ("2023-03-22", (2, 12)), ("2023-07-05", (2, 13)), ("2023-09-26", (2, 14)), ("2023-11-14", (2, 15)),
    ("2024-03-08", (2, 16)),
)
_DAYS = [day for day, _ in TENSORFLOW_RELEASES]
KERAS3_TENSORFLOW = (2, 16)  # TensorFlow's first Keras 3 release: a date from then on bounds nothing
_GIT_SECONDS = 5.0


@dataclass(frozen=True)
class LastChange:
    day: str  # "2020-07-25", the committer date of the repository's last commit that changed code
    tensorflow: tuple[int, int]  # the newest TensorFlow 2 released by then

    @property
    def reason(self) -> str:
        major, minor = self.tensorflow
        return f"the repository's code last changed on {self.day} (git), when TensorFlow {major}.{minor} was the newest"


def newest_tensorflow_on(day: str) -> tuple[int, int] | None:
    """The newest TensorFlow 2 released on or before `day` (ISO date), or None before TF 2.0."""
    index = bisect_right(_DAYS, day)
    return TENSORFLOW_RELEASES[index - 1][1] if index else None


def last_change(path: str) -> LastChange | None:
    """When the repository of the file at `path` was last committed to, if that predates
    Keras 3 (TF 2.16) and the file is committed as it is now."""
    folder, name = os.path.split(os.path.abspath(path))
    dated = _before_keras3(folder)
    if dated is None:
        return None  # no history, or maintained since Keras 3: the newest TensorFlow, as without a date
    try:
        state = os.stat(path)
    except OSError:
        return None
    # keyed by the file's state: a long-running server sees an edit as a new question
    return dated if _committed_as_is(folder, name, state.st_mtime_ns, state.st_size) else None


def history_key(folder: str) -> str:
    """What the history says of the TensorFlow of `folder`'s code, for cache keys: the
    newest TensorFlow of the repository's last commit where that predates Keras 3, else
    nothing (a commit to a maintained project changes no finding)."""
    dated = _before_keras3(folder)
    return f"tf{dated.tensorflow[0]}.{dated.tensorflow[1]}" if dated is not None else ""


def _before_keras3(folder: str) -> LastChange | None:
    """The day of the repository's last commit and the newest TensorFlow of that day,
    where it predates Keras 3 (whatever the state of one file)."""
    day = repository_day(folder)
    tensorflow = newest_tensorflow_on(day) if day is not None else None
    return LastChange(day, tensorflow) if day is not None and tensorflow is not None \
        and tensorflow < KERAS3_TENSORFLOW else None


def repository_day(folder: str) -> str | None:
    """The day of the last commit of the git checkout holding `folder`, or None."""
    top = checkout_top(folder)
    if top is None:
        return None
    try:
        git_state = os.stat(os.path.join(top, ".git")).st_mtime_ns  # a commit renames files in `.git`
    except OSError:
        return None
    head = _head(top, git_state)
    return _last_commit_day(top, head) if head is not None else None


@lru_cache(maxsize=256)
def _head(top: str, git_state: int) -> str | None:
    """What the checkout's HEAD names (its commit, or the branch's commit), read from the
    files git keeps it in: the key of what was read of the history. Reading them (not
    only asking git) lets a whole-run record (`mplint.inputs.run_record`) see a commit."""
    git = os.path.join(top, ".git")
    try:
        if os.path.isfile(git):  # a worktree or a submodule: `gitdir: PATH`
            with open(git, encoding="utf-8", errors="replace") as handle:
                git = os.path.join(top, handle.read().strip().removeprefix("gitdir:").strip())
        with open(os.path.join(git, "HEAD"), encoding="utf-8", errors="replace") as handle:
            head = handle.read().strip()
        if not head.startswith("ref:"):
            return head
        ref = os.path.join(git, *head[4:].strip().split("/"))
        name = ref if os.path.isfile(ref) else os.path.join(git, "packed-refs")
        with open(name, encoding="utf-8", errors="replace") as handle:
            return f"{head} {handle.read(65536) if name != ref else handle.read().strip()}"
    except OSError:
        return None


@lru_cache(maxsize=4096)
def checkout_top(folder: str) -> str | None:
    """The folder of the git checkout holding `folder` (a `.git` in it or above it), or
    None; each `.git` probe is recorded for the whole-run record."""
    if run_record.exists(os.path.join(folder, ".git")):
        return folder
    parent = os.path.dirname(folder)
    return None if parent == folder else checkout_top(parent)


# What dates the code: every path but documentation and pictures. A last commit that only
# edits the README, or a merge whose changes were committed earlier (git's history
# simplification follows the parent it matches), says nothing of the TensorFlow the code
# was written for.
_NOT_CODE = ("*.md", "*.rst", "*.markdown", "*.png", "*.jpg", "*.jpeg", "*.gif", "*.svg", "*.pdf",
             "LICENSE*", "CITATION*", "AUTHORS*", "docs/**", "doc/**")
_CODE_PATHSPEC = (".", *(f":(exclude,glob){'' if p.startswith(('docs/', 'doc/')) else '**/'}{p}" for p in _NOT_CODE))


@lru_cache(maxsize=256)
def _last_commit_day(top: str, head: str) -> str | None:
    """The day of the last commit that changed code (not only documentation); the last
    commit's where there is none."""
    return _git(top, "log", "-1", "--format=%cs", "--", *_CODE_PATHSPEC) or _git(top, "log", "-1", "--format=%cs") or None


@lru_cache(maxsize=4096)
def _committed_as_is(folder: str, name: str, mtime_ns: int, size: int) -> bool:
    """The file is tracked and unchanged since its last commit (`--ignored`: an ignored
    file shows too; only a tracked, clean one shows nothing)."""
    return _git(folder, "status", "--porcelain", "--ignored", "--", name) == ""


def forget() -> None:
    """Forget what was read so far (a long-running process, when the project changes)."""
    checkout_top.cache_clear()
    _head.cache_clear()
    _last_commit_day.cache_clear()
    _committed_as_is.cache_clear()


def _git(folder: str, *arguments: str) -> str | None:
    """A git command's output in `folder` (stripped), or None where it fails."""
    import subprocess  # only where a date is asked: not at every start

    environment = dict(os.environ, GIT_OPTIONAL_LOCKS="0", LC_ALL="C")
    try:
        done = subprocess.run(["git", "-C", folder, *arguments], capture_output=True, text=True,
                              timeout=_GIT_SECONDS, env=environment, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None
