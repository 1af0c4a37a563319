"""The process-wide Env is torn down at interpreter exit without hanging: pending work is
finished, and a kernel that never returns cannot hold the exit (a subprocess each, with
the test's scheduler)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

PENDING = textwrap.dedent("""
    import atexit
    def report():  # registered before the Env exists, so it runs after its teardown
        from actorflow.eager.env import current_env
        print("env after exit:", current_env())
        print("done", counters["instructions_done"], "of", counters["instructions_issued"])
    atexit.register(report)
    import actorflow as af
    from actorflow.eager import get_vm
    from actorflow.frontend.dispatch import op_expr
    x = af.randn(200, 200, seed=1)
    for _ in range(20):
        x = x @ x * 0.01
    y = op_expr("sleep", ("in",))({"in": x}, {"ms": 300.0})
    counters = get_vm().counters()  # the same dict object is read again in report()
    import actorflow.eager.vm as vm_mod
    orig = vm_mod.VirtualMachine.shutdown
    def shutdown(self, timeout):
        problems = orig(self, timeout)
        counters.update(self.counters())
        return problems
    vm_mod.VirtualMachine.shutdown = shutdown
    print("issued; exiting")
""")

HUNG = textwrap.dedent("""
    import actorflow as af
    from actorflow.frontend.dispatch import op_expr
    y = op_expr("sleep", ("in",))({"in": af.tensor([1.0])}, {"ms": 600000.0})
    print("issued a kernel that sleeps 10 minutes; exiting")
""")


def _run(code: str, scheduler: str, timeout_env: str = "10") -> subprocess.CompletedProcess:
    env = {"ACTORFLOW_EAGER_EXIT_TIMEOUT": timeout_env, "PATH": "/usr/bin:/bin",
           "ACTORFLOW_EAGER_SCHEDULER": scheduler}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env=env)


def test_exit_with_pending_work_finishes_it_and_does_not_hang(scheduler):
    r = _run(PENDING, scheduler)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[0] == "issued; exiting"
    assert out[1] == "env after exit: None"
    done, issued = out[2].split()[1], out[2].split()[3]
    assert done == issued and int(issued) >= 22
    assert r.stderr == ""


def test_exit_with_a_kernel_that_never_returns_is_bounded_and_says_why(scheduler):
    r = _run(HUNG, scheduler, timeout_env="1")
    assert r.returncode == 0, r.stderr
    assert "issued a kernel that sleeps" in r.stdout
    assert "actorflow eager (exit): waited 1s for af.sync()" in r.stderr
    assert "'sleep'" in r.stderr
    assert "did not stop within 1s" in r.stderr


FORK = textwrap.dedent("""
    import os
    import actorflow as af
    from actorflow.frontend.dispatch import op_expr
    x = af.ones(3) * 2.0
    x.numpy()
    slow = op_expr("sleep", ("in",))({"in": x}, {"ms": 300.0})  # pending at the fork
    pid = os.fork()
    if pid == 0:  # the child: a VM of its own; the parent's finished tensors keep values
        y = (af.ones(3) + 1.0).numpy().tolist()
        z = (x + 1.0).numpy().tolist()
        try:
            slow.numpy()
            msg = "no error"
        except af.errors.UsageError as e:
            msg = str(e)
        print("child", y, z, flush=True)
        print(msg, flush=True)
        os._exit(0)
    os.waitpid(pid, 0)
    print("parent", (x + 1.0).numpy().tolist(), slow.numpy().tolist())
""")


def test_a_forked_child_gets_its_own_vm(scheduler):
    r = _run(FORK, scheduler)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "child [2.0, 2.0, 2.0] [3.0, 3.0, 3.0]"
    assert "'sleep'" in lines[1] and "cannot finish here: its VM belongs to the parent " \
        "process (this one was forked), and it was still pending then" in lines[1]
    assert lines[2] == "parent [3.0, 3.0, 3.0] [2.0, 2.0, 2.0]"
