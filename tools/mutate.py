"""Mutation testing: seed one-line bugs into the modules that decide correctness, run the
tests that cover each, and report the mutants that survive.

    python tools/mutate.py --list                        # the modules and their tests
    python tools/mutate.py protocol/state.py --show      # the mutants, without running
    python tools/mutate.py protocol/state.py             # run them all, report survivors
    python tools/mutate.py sbp_geometry.py --budget 300 --json out/sbp.json
    python tools/mutate.py actors/inbound.py --ids 12,40 # rerun some mutants
    python tools/mutate.py --seeded                      # issue 20's hand-seeded bugs
    python tools/mutate.py --c kinds.h --budget 1200     # the compiled core's C headers

Each mutant (``tools/mutants.py``) is written into a private copy of ``src/actorflow``
that ``PYTHONPATH`` puts ahead of the installed package (worker processes inherit it);
the module's tests run once per mutant, one mutant at a time, under ``nice``, with ``-x``
and a time bound (a mutant whose tests run past it counts as killed: it hangs).  A mutant
is *killed* when a test fails, *survives* when they all pass.  Mutants listed in
``tools/equivalent_mutants.txt`` (with why they cannot change behaviour) are reported
apart and left out of the score.  ``--budget`` stops starting mutants after that many
seconds; the report says how many did not run.

On a box shared with other test runs, give the runs a private ``/dev/shm`` (the leak
fixture counts shared-memory segments): ``bash /work/notes/run-tests.sh`` style, e.g.
``unshare -m sh -c 'mount -t tmpfs tmpfs /dev/shm && python tools/mutate.py ...'``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cmutants import build_module, cmutants, including_modules, restamp_others
from mutants import Mutant, mutants
from seeded_bugs import SEEDED

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "src" / "actorflow"
EQUIVALENT = Path(__file__).resolve().parent / "equivalent_mutants.txt"

_PROTOCOL = ["tests/protocol", "tests/plan/test_kind_rules.py", "tests/plan/test_validate.py",
             "tests/actors/test_kind_records.py", "tests/plan/test_multi_job.py",
             "tests/trace/test_summary_replay.py", "tests/actors/test_property_dags.py",
             "tests/plan/test_dry_run.py"]
_KERNELS = ["tests/kernels/test_ops.py", "tests/kernels/test_oracle.py"]
# module (relative to src/actorflow) -> the test files that cover it, fastest first
TESTS: dict[str, list[str]] = {
    "protocol/state.py": _PROTOCOL,
    "protocol/kind_states.py": _PROTOCOL,
    "protocol/kinds.py": _PROTOCOL,
    "protocol/kind_record.py": _PROTOCOL,
    "protocol/mainjob.py": _PROTOCOL,
    "protocol/rules.py": _PROTOCOL,
    "protocol/messages.py": _PROTOCOL,
    "protocol/simulate.py": _PROTOCOL,
    "protocol/unit_core.py": _PROTOCOL,
    "protocol/task.py": _PROTOCOL,
    "sbp_geometry.py": ["tests/test_sbp_geometry.py", "tests/plan/test_boxing_geometry.py",
                        "tests/collective/test_boxing.py"],
    "plan/compiler/boxing.py": ["tests/plan/test_boxing_geometry.py",
                                "tests/plan/test_compile_oracle.py", "tests/plan/test_compile.py"],
    "collective/consistency.py": ["tests/collective/test_consistency.py"],
    "collective/boxing.py": ["tests/collective/test_boxing.py",
                             "tests/collective/test_global_tensors.py"],
    "actors/inbound.py": ["tests/actors/test_inbound.py"],
    "transport/codec.py": ["tests/transport/test_codec.py",
                           "tests/transport/test_transport_parts.py",
                           "tests/transport/test_comm_contract.py"],
    "kernels/ops/elementwise.py": _KERNELS,
    "kernels/ops/linalg.py": _KERNELS,
    "kernels/ops/shape.py": _KERNELS,
    "kernels/ops/parallel.py": _KERNELS,
    "kernels/ops/generators.py": _KERNELS,
    "kernels/ops/assign.py": _KERNELS,
    "kernels/ops/model_io.py": [*_KERNELS, "tests/test_checkpoint.py"],
    "kernels/ops/_infer.py": _KERNELS,
    "kernels/ops/activation.py": _KERNELS,
    "kernels/ops/compare.py": _KERNELS,
    "kernels/ops/reduce.py": _KERNELS,
    "kernels/ops/nn_ops.py": _KERNELS,
    "kernels/ops/batched.py": _KERNELS,
    "kernels/ops/index.py": _KERNELS,
    "kernels/ops/microbatch.py": _KERNELS,
    "kernels/ops/lr_schedule.py": [*_KERNELS, "tests/optim/test_optimizers.py"],
    "eager/deps.py": ["tests/eager/test_deps.py", "tests/eager/test_dependencies.py",
                      "tests/eager/test_submit_one.py"],
}


# compiled core: C header (under src/actorflow/_core) -> the tests that run the native core
_NATIVE = ["tests/protocol", "tests/core/test_differential.py", "tests/core/test_native_loop.py"]
C_TESTS: dict[str, list[str]] = {
    "sm.h": _NATIVE, "kinds.h": _NATIVE, "step.h": _NATIVE, "unit.h": _NATIVE,
    "runplan.h": _NATIVE, "inbox.h": _NATIVE, "record.h": _NATIVE,
    "ring_check.h": ["tests/core/test_ring_check.py", "tests/core/test_ring_contract.py"],
}


@dataclass
class Result:
    index: int
    line: int
    scope: str
    what: str
    source_line: str
    mutated_line: str
    outcome: str  # killed | timeout | survived | equivalent
    seconds: float
    why: str = ""  # equivalent: why; killed: the first failing test


@dataclass
class Report:
    module: str
    tests: list[str]
    total: int
    results: list[Result] = field(default_factory=list)
    not_run: int = 0
    baseline_seconds: float = 0.0

    def counts(self) -> dict[str, int]:
        c = {"killed": 0, "timeout": 0, "survived": 0, "equivalent": 0}
        for r in self.results:
            c[r.outcome] += 1
        return c

    def score(self) -> float:
        c = self.counts()
        judged = c["killed"] + c["timeout"] + c["survived"]
        return (c["killed"] + c["timeout"]) / judged if judged else 1.0


def load_equivalent() -> dict[tuple[str, str, str, str], str]:
    """``module | scope | source line (stripped) | what | why`` per line of the file."""
    out: dict[tuple[str, str, str, str], str] = {}
    if not EQUIVALENT.exists():
        return out
    for raw in EQUIVALENT.read_text().splitlines():
        if not raw.strip() or raw.startswith("#"):
            continue
        parts = [p.strip() for p in raw.split(" | ")]
        if len(parts) != 5:
            raise SystemExit(f"{EQUIVALENT}: expected 'module | scope | line | what | why': "
                             f"{raw!r}")
        scope = "" if parts[1] == "-" else parts[1]
        out[(parts[0], scope, parts[2], parts[3])] = parts[4]
    return out


def lookup(equivalent: dict[tuple[str, str, str, str], str], key: tuple[str, str, str, str],
           after: str) -> str | None:
    """Why the mutant is equivalent, or None.  Where one line has two mutants of one kind
    (``0 -> 1`` at two places), the file names one by its mutated line: ``what => line``."""
    module, scope, before, what = key
    return equivalent.get((module, scope, before, f"{what} => {after}"), equivalent.get(key))


def describe(source: str, m: Mutant) -> tuple[str, str]:
    """The original line and the mutated line (first line of each), stripped."""
    before = source.splitlines()[m.line - 1].strip()
    after = m.apply(source).splitlines()[m.line - 1].strip()
    return before, after


class Sandbox:
    """A private copy of ``src/actorflow`` that ``PYTHONPATH`` puts first."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="actorflow-mutate-"))
        shutil.copytree(PKG, self.dir / "actorflow",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        self.env = dict(os.environ)
        self.env["PYTHONPATH"] = os.pathsep.join(
            [str(self.dir), str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
        self.env["PYTHONDONTWRITEBYTECODE"] = "1"

    def write(self, module: str, text: str) -> None:
        (self.dir / "actorflow" / module).write_text(text)

    def check_imported_here(self) -> None:
        out = subprocess.run([sys.executable, "-c", "import actorflow; print(actorflow.__file__)"],
                             env=self.env, capture_output=True, text=True, check=True).stdout
        if not out.strip().startswith(str(self.dir)):
            raise SystemExit(f"the sandbox is not what Python imports ({out.strip()}): "
                             "is actorflow installed some other way than 'pip install -e'?")

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def run_tests(box: Sandbox, tests: list[str], timeout: float, nice: int) -> tuple[str, float, str]:
    """``(outcome, seconds, first failure)``: outcome passed | failed | timeout."""
    cmd = ["nice", "-n", str(nice), sys.executable, "-m", "pytest", "-x", "-q", "-p",
           "no:cacheprovider", "--no-header", "-rfE", "--timeout", str(int(max(timeout, 10))),
           *tests]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, cwd=ROOT, env=box.env, capture_output=True, text=True,
                           timeout=timeout, start_new_session=True)
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - t0, ""
    took = time.monotonic() - t0
    if p.returncode == 0:
        return "passed", took, ""
    first = next((ln for ln in p.stdout.splitlines() if ln.startswith(("FAILED", "ERROR"))),
                 p.stdout.strip().splitlines()[-1] if p.stdout.strip() else p.stderr[-200:])
    return "failed", took, first


def mutate_module(module: str, tests: list[str], *, budget: float, nice: int,
                  ids: set[int] | None, verbose: bool) -> Report:
    path = PKG / module
    source = path.read_text()
    found = mutants(source)
    report = Report(module, tests, len(found))
    equivalent = load_equivalent()
    box = Sandbox()
    try:
        box.check_imported_here()
        outcome, base, first = run_tests(box, tests, 1800, nice)
        if outcome != "passed":
            raise SystemExit(f"{module}: the unmutated tests do not pass ({outcome}: {first})")
        report.baseline_seconds = round(base, 1)
        limit = max(3 * base, base + 30)
        print(f"{module}: {len(found)} mutants; tests {' '.join(tests)} take {base:.1f}s "
              f"unmutated (a mutant gets {limit:.0f}s)", flush=True)
        t_start = time.monotonic()
        for m in found:
            if ids is not None and m.index not in ids:
                continue
            if time.monotonic() - t_start > budget:
                report.not_run += 1
                continue
            before, after = describe(source, m)
            why = lookup(equivalent, (module, m.scope, before, m.what), after)
            box.write(module, m.apply(source))
            try:
                outcome, took, first = run_tests(box, tests, limit, nice)
            finally:
                box.write(module, source)
            verdict = {"failed": "killed", "timeout": "timeout", "passed": "survived"}[outcome]
            if verdict == "survived" and why is not None:
                verdict = "equivalent"
            r = Result(m.index, m.line, m.scope, m.what, before, after, verdict, round(took, 1),
                       why if verdict == "equivalent" else first)
            report.results.append(r)
            if verbose or verdict == "survived":
                print(f"  #{m.index} line {m.line}: {verdict:<10} {m.what}: {after}", flush=True)
    finally:
        box.close()
    return report


def mutate_header(header: str, tests: list[str], *, budget: float, nice: int,
                  ids: set[int] | None, verbose: bool) -> Report:
    """The compiled core: each mutant of ``_core/<header>`` recompiles the extensions that
    include it (``cmutants.build_module``) in the sandbox, then runs ``tests``."""
    path = PKG / "_core" / header
    source = path.read_text()
    found = cmutants(source)
    report = Report(f"_core/{header}", tests, len(found))
    equivalent = load_equivalent()
    box = Sandbox()
    core = box.dir / "actorflow" / "_core"
    modules = including_modules(core, header)
    if not modules:
        raise SystemExit(f"{header}: no built extension includes it (pip install -e . first)")

    def build() -> str:
        for m in modules:
            ok, err = build_module(core, m)
            if not ok:
                return err
        restamp_others(core, modules)  # the header is in their stamp, not in their code
        return ""

    try:
        box.check_imported_here()
        if build():
            raise SystemExit(f"{header}: the unmutated extensions {modules} do not compile")
        env_native = {"ACTORFLOW_CORE": "native"}
        box.env.update(env_native)
        outcome, base, first = run_tests(box, tests, 1800, nice)
        if outcome != "passed":
            raise SystemExit(f"{header}: the unmutated tests do not pass ({outcome}: {first})")
        report.baseline_seconds = round(base, 1)
        limit = max(3 * base, base + 30)
        print(f"_core/{header}: {len(found)} mutants, rebuilding {modules}; tests "
              f"{' '.join(tests)} take {base:.1f}s", flush=True)
        t_start = time.monotonic()
        for m in found:
            if ids is not None and m.index not in ids:
                continue
            if time.monotonic() - t_start > budget:
                report.not_run += 1
                continue
            lines = source.splitlines()
            before = lines[m.line - 1].strip()
            after = m.apply(source).splitlines()[m.line - 1].strip()
            why = lookup(equivalent, (f"_core/{header}", "", before, m.what), after)
            (core / header).write_text(m.apply(source))
            try:
                if build():  # does not compile (e.g. '<' inside a template): not a mutant
                    report.total -= 1
                    continue
                outcome, took, first = run_tests(box, tests, limit, nice)
            finally:
                (core / header).write_text(source)
            verdict = {"failed": "killed", "timeout": "timeout", "passed": "survived"}[outcome]
            if verdict == "survived" and why is not None:
                verdict = "equivalent"
            report.results.append(Result(m.index, m.line, "", m.what, before, after, verdict,
                                         round(took, 1), why or first))
            if verbose or verdict == "survived":
                print(f"  #{m.index} line {m.line}: {verdict:<10} {m.what}: {after}", flush=True)
    finally:
        build()  # the sandbox goes anyway; leave nothing half-built while it does
        box.close()
    return report


def run_seeded(nice: int, modules: list[str]) -> int:
    """Plant each bug of ``seeded_bugs.SEEDED`` (those in ``modules``, if any are named),
    run its tests, say which test caught it."""
    box = Sandbox()
    missed = 0
    try:
        box.check_imported_here()
        for bug in SEEDED:
            if modules and bug.module not in modules:
                continue
            source = (PKG / bug.module).read_text()
            if source.count(bug.old) != 1:
                print(f"STALE  {bug.name}: its line is not in {bug.module} exactly once")
                missed += 1
                continue
            box.write(bug.module, source.replace(bug.old, bug.new))
            try:
                outcome, took, first = run_tests(box, list(bug.tests), 1800, nice)
            finally:
                box.write(bug.module, source)
            if outcome == "passed":
                missed += 1
                print(f"MISSED {bug.name} ({' '.join(bug.tests)} pass, {took:.0f}s)")
            else:
                print(f"caught {bug.name}: {first or outcome}")
    finally:
        box.close()
    return 1 if missed else 0


def print_report(report: Report) -> None:
    c = report.counts()
    judged = c["killed"] + c["timeout"] + c["survived"]
    print(f"{report.module}: {report.score():.0%} killed ({c['killed'] + c['timeout']} of "
          f"{judged}; {c['timeout']} by timeout), {c['equivalent']} equivalent, "
          f"{report.not_run} not run (budget), {report.total} mutants in all")
    for r in report.results:
        if r.outcome == "survived":
            print(f"  SURVIVED #{r.index} line {r.line} in {r.scope or '(module)'} ({r.what}): "
                  f"{r.source_line}")
            print(f"           -> {r.mutated_line}")


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(f"stopped by signal {signum}")  # unwinds: the sandbox is removed


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _terminate)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("modules", nargs="*", help="modules relative to src/actorflow "
                    "(default: all of the map)")
    ap.add_argument("--list", action="store_true", help="print the module -> tests map")
    ap.add_argument("--c", default="", metavar="HEADER",
                    help="mutate a C header of the compiled core (src/actorflow/_core/HEADER)")
    ap.add_argument("--seeded", action="store_true",
                    help="plant issue 20's hand-seeded bugs (tools/seeded_bugs.py) one by one")
    ap.add_argument("--show", action="store_true", help="list the mutants; run nothing")
    ap.add_argument("--budget", type=float, default=3600.0,
                    help="seconds per module after which no mutant starts (default 3600)")
    ap.add_argument("--nice", type=int, default=10, help="niceness of the test runs")
    ap.add_argument("--ids", default="", help="comma-separated mutant numbers to run")
    ap.add_argument("--tests", default="", help="comma-separated test paths instead of the map")
    ap.add_argument("--json", default="", help="write the reports to this file")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every mutant's verdict")
    a = ap.parse_args(argv)
    if a.list:
        for mod, tests in TESTS.items():
            print(f"{mod}: {' '.join(tests)}")
        return 0
    if a.seeded:
        return run_seeded(a.nice, a.modules)
    if a.c:
        tests = a.tests.split(",") if a.tests else C_TESTS.get(a.c)
        if not tests:
            raise SystemExit(f"{a.c}: no tests mapped (give --tests)")
        if a.show:
            source = (PKG / "_core" / a.c).read_text()
            for cm in cmutants(source):
                print(f"_core/{a.c} #{cm.index} line {cm.line} ({cm.what}): "
                      f"{cm.apply(source).splitlines()[cm.line - 1].strip()}")
            return 0
        ids = {int(i) for i in a.ids.split(",")} if a.ids else None
        rep = mutate_header(a.c, tests, budget=a.budget, nice=a.nice, ids=ids,
                            verbose=a.verbose)
        print_report(rep)
        if a.json:
            Path(a.json).write_text(json.dumps([{**asdict(rep), "score": rep.score(),
                                                 "counts": rep.counts()}], indent=1))
        return 1 if rep.counts()["survived"] else 0
    modules = a.modules or list(TESTS)
    unknown = [m for m in modules if not (PKG / m).is_file()]
    if unknown:
        raise SystemExit(f"no such module under src/actorflow: {unknown}")
    if a.show:
        for mod in modules:
            source = (PKG / mod).read_text()
            for m in mutants(source):
                print(f"{mod} #{m.index} line {m.line} in {m.scope or '(module)'} ({m.what}): "
                      f"{describe(source, m)[1]}")
        return 0
    ids = {int(i) for i in a.ids.split(",")} if a.ids else None
    reports = []
    for mod in modules:
        tests = a.tests.split(",") if a.tests else TESTS.get(mod)
        if not tests:
            raise SystemExit(f"{mod}: no tests mapped (give --tests)")
        reports.append(mutate_module(mod, tests, budget=a.budget, nice=a.nice, ids=ids,
                                     verbose=a.verbose))
        print_report(reports[-1])
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps(
            [{**asdict(r), "score": r.score(), "counts": r.counts()} for r in reports], indent=1))
    return 1 if any(r.counts()["survived"] for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
