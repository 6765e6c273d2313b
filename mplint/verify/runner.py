"""Run the probe in a child interpreter and collect what it says.

The child gets a request file and an events file (JSON lines) in a private temporary
folder; its stdout/stderr (the user's prints, TensorFlow's logs) are read through a
pipe that keeps only the last OUTPUT_TAIL characters. A child that runs past the
timeout is killed with its whole process group. Whatever happened, `verify` returns
a `VerifyResult`: the checks the child finished, or an error saying why it could not.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace

from mplint.verify import DEFAULT_TIMEOUT
from mplint.verify.target import (
    BackendChoice,
    KerasChoice,
    Target,
    TargetError,
    choose_backend,
    choose_keras,
    parse_target,
)

PROBE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "probe")
OUTPUT_TAIL = 4000
CHECK_ORDER = (
    "output-dtype", "variable-dtype", "finite-forward", "float32-agreement",
    "loss-scaling", "gradient-underflow", "training-update", "tensor-cores",
)

# Loads probe/ as a private top-level package from its path, so the child needs nothing
# of mplint's dependencies (and the probe's folder never shadows the user's modules).
BOOTSTRAP = (
    "import importlib.util, sys\n"
    "folder = sys.argv[1]\n"
    "spec = importlib.util.spec_from_file_location('_mplint_verify_probe', folder + '/__init__.py',"
    " submodule_search_locations=[folder])\n"
    "probe = importlib.util.module_from_spec(spec)\n"
    "sys.modules['_mplint_verify_probe'] = probe\n"
    "spec.loader.exec_module(probe)\n"
    "sys.exit(probe.main(sys.argv[2:]))\n"
)


@dataclass(frozen=True)
class VerifyOptions:
    python: str | None = None  # default: this interpreter
    policy: str | None = None  # used when the code sets none; default mixed_float16
    keras: str = "auto"  # "auto", "2" or "3"
    steps: int = 3
    timeout: float = DEFAULT_TIMEOUT
    train_step: str | None = None
    batch_size: int | None = None
    tensor_core_multiple: int | None = None  # default: the project's tensor-core-multiple, else 8
    backend: str = "auto"  # "auto", "tensorflow", "jax" or "torch"
    inputs_file: str | None = None  # --inputs FILE.npz: a real batch instead of synthetic inputs


# The checks a verdict of "ok" needs: when one of them applies but could not be made, the
# result is "not proved" (exit 3), never ok. The others (variable-dtype, gradient-underflow,
# tensor-cores) report a skip but do not decide the verdict.
KEY_CHECKS = frozenset({"output-dtype", "finite-forward", "float32-agreement", "loss-scaling", "training-update"})
EXIT_CODES = {"ok": 0, "failed": 1, "error": 2, "not-proved": 3}
# Worst first, for a run over several files (`check --fix --verify`).
VERDICT_ORDER = ("error", "failed", "not-proved", "ok")


def worst_exit_code(codes) -> int:
    """The exit code of the worst verdict among `codes` (0 when there is none)."""
    by_code = {code: verdict for verdict, code in EXIT_CODES.items()}
    verdicts = [by_code[c] for c in codes]
    return next((EXIT_CODES[v] for v in VERDICT_ORDER if v in verdicts), 0)


@dataclass
class VerifyResult:
    target: str
    checks: list = field(default_factory=list)
    error: dict | None = None
    info: dict = field(default_factory=dict)
    keras_choice: str = ""
    backend_choice: str = ""
    output_tail: str = ""
    duration: float = 0.0

    @property
    def not_proved(self) -> list:
        """The key checks that apply here but could not be made."""
        return [c for c in self.checks if c["status"] == "skip" and c["name"] in KEY_CHECKS]

    @property
    def verdict(self) -> str:
        """"error" (could not run), "failed", "not-proved" (a key check was skipped) or "ok"."""
        if self.error is not None:
            return "error"
        if any(c["status"] == "fail" for c in self.checks):
            return "failed"
        if self.not_proved or not self.checks:
            return "not-proved"
        return "ok"

    @property
    def ok(self) -> bool:
        return self.verdict == "ok"

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def summary(self) -> dict:
        """How many checks were proved (passed), failed, not proved (key checks not made),
        skipped (other checks not made) and not applicable."""
        count = {status: sum(1 for c in self.checks if c["status"] == status) for status in ("pass", "fail", "skip", "n/a")}
        not_proved = [c["name"] for c in self.not_proved]
        return {"proved": count["pass"], "failed": count["fail"], "not_proved": len(not_proved),
                "skipped": count["skip"] - len(not_proved), "not_applicable": count["n/a"],
                "key_not_proved": not_proved}

    def to_json(self) -> dict:
        data = {
            "target": self.target,
            "policy": self.info.get("policy"),
            "keras": self.info.get("keras"),
            "checks": self.checks,
            "ok": self.ok,
            "verdict": self.verdict,
            "summary": self.summary(),
            "error": self.error,
            "entry_point": self.info.get("entry_point"),
            "train_step": self.info.get("train_step"),
            "policy_source": self.info.get("policy_source"),
            "keras_version": self.info.get("keras_version"),
            "keras_choice": self.keras_choice,
            "tensorflow": self.info.get("tensorflow"),
            "backend": self.info.get("backend"),
            "backend_version": self.info.get("backend_version"),
            "backend_choice": self.backend_choice,
            "python": self.info.get("python"),
            "notes": self.info.get("notes", []),
            "duration_s": round(self.duration, 2),
        }
        if self.error is not None:
            data["output_tail"] = self.output_tail
        return data


def verify(text: str, options: VerifyOptions = VerifyOptions(), cwd: str | None = None) -> VerifyResult:
    started = time.monotonic()
    try:
        target = parse_target(text, cwd)
    except TargetError as exc:
        return VerifyResult(text, error={"kind": exc.kind, "message": exc.message, "traceback": None})
    if options.tensor_core_multiple is None:
        options = replace(options, tensor_core_multiple=_configured_multiple(target.path))
    python = options.python or sys.executable
    other_python = options.python is not None and os.path.realpath(python) != os.path.realpath(sys.executable)
    backend = choose_backend(options.backend, target.path)
    if backend.name != "tensorflow":
        if options.keras == "2":
            return VerifyResult(text, error={"kind": "bad-options", "traceback": None, "message":
                                f"--keras 2 runs on TensorFlow only; the {backend.name} backend needs Keras 3 "
                                f"(backend: {backend.reason})"})
        choice = KerasChoice(False, f"Keras 3: the {backend.name} backend")
    else:
        choice = choose_keras(options.keras, target.path, other_python)
    result = _run_child(target, options, python, choice, cwd or os.getcwd(), backend)
    result.keras_choice = choice.reason
    result.backend_choice = backend.reason
    result.duration = time.monotonic() - started
    return result


def _configured_multiple(path: str | None) -> int:
    """`tensor-core-multiple` from the project's mplint configuration (8 if unset or unreadable)."""
    if path is None:
        return 8
    from mplint.inputs.config import ConfigError, ConfigResolver

    try:
        return int(ConfigResolver().for_path(path).tensor_core_multiple)
    except (ConfigError, OSError, ValueError):
        return 8


def _request(target: Target, options: VerifyOptions) -> dict:
    return {
        "display": target.display,
        "kind": target.kind,
        "path": target.path,
        "module": target.module,
        "attribute": target.attribute,
        "policy": options.policy,
        "steps": options.steps,
        "train_step": options.train_step,
        "batch_size": options.batch_size,
        "inputs_file": options.inputs_file,
        "tensor_core_multiple": options.tensor_core_multiple,
    }


def child_environment(choice: KerasChoice, backend: BackendChoice | None = None) -> dict:
    env = dict(os.environ)
    env["KERAS_BACKEND"] = backend.name if backend is not None else "tensorflow"
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # importing the user's module must not write next to it
    if choice.legacy is True:
        env["TF_USE_LEGACY_KERAS"] = "1"
    elif choice.legacy is False:
        env.pop("TF_USE_LEGACY_KERAS", None)
    return env


class _Tail:
    """Reads a pipe to the end, keeping only its last `limit` characters."""

    def __init__(self, stream, limit: int = OUTPUT_TAIL) -> None:
        self._chunks: list[str] = []
        self._size = 0
        self._limit = limit
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream) -> None:
        while True:
            chunk = stream.read(8192)
            if not chunk:
                break
            self._chunks.append(chunk.decode("utf-8", errors="replace"))
            self._size += len(self._chunks[-1])
            while self._size > 2 * self._limit and len(self._chunks) > 1:
                self._size -= len(self._chunks.pop(0))

    def text(self) -> str:
        self._thread.join(timeout=5)
        return "".join(self._chunks)[-self._limit:]


def _kill_group(process: subprocess.Popen) -> None:
    try:
        if hasattr(os, "killpg"):
            os.killpg(process.pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows
            process.kill()
    except (ProcessLookupError, PermissionError):
        pass


def _run_child(target: Target, options: VerifyOptions, python: str, choice: KerasChoice, cwd: str,
               backend: BackendChoice) -> VerifyResult:
    result = VerifyResult(target.display)
    with tempfile.TemporaryDirectory(prefix="mplint-verify-") as folder:
        request_path = os.path.join(folder, "request.json")
        events_path = os.path.join(folder, "events.jsonl")
        with open(request_path, "w", encoding="utf-8") as handle:
            json.dump(_request(target, options), handle)
        open(events_path, "w").close()
        command = [python, "-c", BOOTSTRAP, PROBE_DIR, request_path, events_path]
        try:
            process = subprocess.Popen(
                command, cwd=cwd, env=child_environment(choice, backend), stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
            )
        except OSError as exc:
            result.error = {"kind": "bad-python", "message": f"cannot run --python {python}: {exc.strerror or exc}",
                            "traceback": None}
            return result
        tail = _Tail(process.stdout)
        timed_out = False
        try:
            process.wait(timeout=options.timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            _kill_group(process)  # also ends anything the user's code started
            process.wait()
        result.output_tail = tail.text()
        events = _read_events(events_path)
    _collect(result, events, process.returncode, timed_out, options.timeout, python)
    return result


def _read_events(path: str) -> list:
    events = []
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                try:
                    events.append(json.loads(line))
                except json.JSONDecodeError:
                    continue  # a line cut short by a kill
    except OSError:
        pass
    return events


def _describe_exit(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def _collect(result: VerifyResult, events: list, returncode: int | None, timed_out: bool, timeout: float,
             python: str) -> None:
    stage = "starting"
    done = False
    checks: dict[str, dict] = {}
    for event in events:
        kind = event.get("event")
        if kind == "stage":
            stage = event.get("stage", stage)
        elif kind == "info":
            result.info = {k: v for k, v in event.items() if k != "event"}
        elif kind == "check":
            checks[event["name"]] = {
                "name": event["name"], "status": event["status"], "detail": event["detail"],
                "measured": event.get("measured", {}),
            }
        elif kind == "error" and result.error is None:
            result.error = {"kind": event.get("kind"), "message": event.get("message"),
                            "traceback": event.get("traceback"), "stage": stage}
        elif kind == "done":
            done = True
    result.checks = [checks[n] for n in CHECK_ORDER if n in checks] + [
        c for n, c in checks.items() if n not in CHECK_ORDER
    ]
    if result.error is not None:
        return
    if timed_out:
        result.error = {"kind": "timeout", "message": f"timed out after {timeout:g} s while {stage} "
                        "(use --timeout to allow more)", "traceback": None, "stage": stage}
    elif not done:
        started = bool(events)
        what = (
            f"the child {_describe_exit(returncode)} while {stage}, before finishing"
            + (" (did the code call os._exit() or crash?)" if started and stage != "starting" else "")
            if started else f"{python} {_describe_exit(returncode)} before the verifier started"
        )
        result.error = {"kind": "child-died", "message": what, "traceback": None, "stage": stage}
