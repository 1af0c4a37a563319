"""``.ci/run``: the README's two commands verbatim, and every stage run even when one before
it failed (``.ci/stages.sh``), the script failing at the end with the list of failed stages."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / ".ci" / "run"


def test_ci_runs_the_readmes_two_commands_verbatim():
    block = re.search(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert block is not None
    commands = block.group(1).strip().splitlines()
    assert len(commands) == 2
    lines = RUN.read_text().splitlines()
    for command in commands:
        assert command in lines, command


def test_ci_does_not_stop_at_the_first_failure():
    text = RUN.read_text()
    assert not re.search(r"^\s*set -\w*e", text, re.M)  # set -e would end it at the first
    assert text.rstrip().endswith("finish")
    assert subprocess.run(["bash", "-n", str(RUN)], capture_output=True).returncode == 0


def _stages(body: str) -> subprocess.CompletedProcess:
    script = f"set -uo pipefail\n. {ROOT / '.ci' / 'stages.sh'}\n{body}\n"
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)


def test_every_stage_runs_and_the_failed_ones_are_named_at_the_end():
    r = _stages("stage one true\n"
                "stage two sh -c 'echo ran two; exit 3'\n"
                "stage 'three, after a failure' sh -c 'echo ran three'\n"
                "sh -c 'exit 5'; record 'four (in this shell)' $?\n"
                "stage five env X=1 sh -c 'echo ran five $X'\n"
                "finish")
    assert r.returncode == 1
    assert r.stdout.split("\n")[:3] == ["ran two", "ran three", "ran five 1"]
    assert r.stderr.splitlines()[-3:] == ["CI: 2 stage(s) failed:", "CI:   - two (exit 3)",
                                          "CI:   - four (in this shell) (exit 5)"]
    assert "CI: passed: three, after a failure" in r.stderr


def test_all_stages_passing_pass():
    r = _stages("stage one true\nrecord two 0\nfinish")
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines()[-1] == "CI: every stage passed"
