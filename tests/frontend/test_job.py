"""Jobs traced from Python: inputs, variables, outputs, settings, and errors at the traced line."""

from __future__ import annotations

import numpy as np
import pytest

import actorflow as af
import actorflow.functional as F
from actorflow.errors import CompileError

P2 = af.placement("cpu", ranks=[0, 1])


def test_context_manager_and_decorator_build_the_same_graph():
    with af.Job("a", pieces=3) as a:
        x = af.input("x", (4, 3))
        w = af.variable("w", (3, 2), init="normal", seed=1)
        af.output("y", F.relu(x @ w))

    @af.job(pieces=3)
    def b():
        x = af.input("x", (4, 3))
        w = af.variable("w", (3, 2), init="normal", seed=1)
        return {"y": F.relu(x @ w)}

    assert [o.to_dict() for o in a.spec.ops] == [o.to_dict() for o in b.spec.ops]
    assert b.name == "b" and b.spec.num_pieces == 3
    assert a.inputs == ["x"] and a.outputs == ["y"]


def test_tensor_shapes_dtypes_and_placements_are_tracked():
    with af.Job("t"):
        x = af.input("x", (8, 4), "float64", placement=P2, sbp=af.sbp.split(0))
        assert (x.shape, x.dtype, x.placement, x.sbp) == ((8, 4), "float64", P2, af.sbp.split(0))
        y = (x.T @ x).sum(dim=0)
        assert (y.shape, y.dtype, y.placement, y.ndim) == ((4,), "float64", P2, 1)
        z = y.to_global(af.placement("cpu", ranks=[3]), af.sbp.broadcast)
        assert z.placement.ranks == (3,)
        r = F.reshape(x, [2, -1]).softmax(1)
        assert r.shape == (2, 16)


def test_shape_mismatch_names_the_op_and_both_shapes():
    with af.Job("bad"):
        a = af.input("a", (4, 3))
        b = af.input("b", (5, 2))
        with pytest.raises(CompileError) as e:
            a @ b
        assert "op 'matmul0' (matmul)" in str(e.value)
        assert "(4, 3)" in str(e.value) and "(5, 2)" in str(e.value)
        with pytest.raises(CompileError) as e:
            F.add(a, b)
        assert "op 'add0' (add)" in str(e.value)
        assert "(4, 3) and (5, 2) cannot be broadcast" in str(e.value)


def test_compiler_also_names_op_and_shapes_for_a_spec_built_by_hand():
    from actorflow.plan.compiler import JobSpec, LogicalOp, compile_job

    spec = JobSpec("hand", [
        LogicalOp("a", "input", attrs={"shape": [2, 3], "dtype": "float32"}),
        LogicalOp("b", "input", attrs={"shape": [4, 2], "dtype": "float32"}),
        LogicalOp("mm", "matmul", {"a": "a", "b": "b"}),
    ])
    with pytest.raises(CompileError, match=r"job 'hand': op 'mm' \(matmul\).*\(2, 3\).*\(4, 2\)"):
        compile_job(spec)
    spec.ops[2].inputs["b"] = "nope"
    with pytest.raises(CompileError, match="input 'b' names 'nope', which is not an earlier op"):
        compile_job(spec)


def test_names_must_be_unique_and_tensors_from_one_job():
    with af.Job("j1"):
        x = af.input("x", (2,))
        with pytest.raises(ValueError, match="name 'x' is used twice"):
            af.variable("x", (2,))
    with af.Job("j2"), pytest.raises(CompileError,
                                     match="reads tensor 'x' of job 'j1' while job 'j2' is"):
        F.relu(x) + af.input("y", (2,))
    with pytest.raises(CompileError, match="no job is being traced"):
        af.input("z", (2,))


def test_variable_init_errors():
    with af.Job("v"):
        with pytest.raises(ValueError, match="init must be one of zeros, constant, normal"):
            af.variable("a", (2,), init="ones")
        with pytest.raises(ValueError, match="init='file' needs path="):
            af.variable("b", (2,), init="file")


def test_variables_from_npy_and_seed_are_readable_after_the_run(tmp_path):
    value = np.arange(12, dtype="float32").reshape(4, 3)
    np.save(tmp_path / "w.npy", value)
    with af.Job("vars", pieces=3) as job:
        x = af.random_input("x", (6, 4), seed=9, placement=P2, sbp=af.sbp.split(0))
        w = af.variable("w", (4, 3), path=tmp_path / "w.npy", placement=P2,
                        sbp=af.sbp.split(1))
        v = af.variable("v", (3,), init="normal", seed=4, std=0.5)
        af.output("y", x @ w + v)
        af.output("w", w)
        af.output("v", v)
    plan = af.compile(job, machines=2)
    assert plan.job.variables == ["w", "v"]
    with af.Session(plan) as s:
        out = s.run_to_end()
    vv = (np.random.default_rng(4).standard_normal(3) * 0.5).astype("float32")
    for i, y in enumerate(out["y"]):
        x = np.random.default_rng([9, i]).standard_normal((6, 4)).astype("float32")
        np.testing.assert_allclose(y, x @ value + vv, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(out["w"][-1], value)
    np.testing.assert_array_equal(out["v"][-1], vv)
    assert len(out["w"]) == 3  # the variable acted once per piece


def test_client_fed_inputs_and_per_op_register_num():
    with af.Job("fed", register_num=3) as job:
        x = af.input("x", (4, 2), placement=P2, sbp=af.sbp.split(0))
        with job.settings(register_num=1):
            y = F.exp(x)
        af.output("y", y * 2)
    plan = af.compile(job, machines=2, merge=False)
    nums = {e.kernel.op_type: d.register_num for t in plan.tasks for e in t.exec_sequence
            for d in t.produced.values() if d.regst_desc_id == e.outputs["out"].regst_desc_id}
    assert nums["exp"] == 1 and nums["scalar_mul"] == 3
    xs = [np.random.default_rng(i).standard_normal((4, 2)).astype("float32") for i in range(4)]
    with af.Session(plan) as s:
        ys = list(s.run_many({"x": x} for x in xs))
    for x, y in zip(xs, ys):
        np.testing.assert_allclose(y, np.exp(x) * 2, rtol=1e-6)


def test_job_returning_a_tuple_or_a_tensor():
    @af.job
    def one():
        return F.relu(af.input("x", (2,)))

    @af.job
    def two():
        x = af.input("x", (2,))
        return x + 1, x - 1

    assert one.outputs == ["out"] and two.outputs == ["out0", "out1"]
    with pytest.raises(TypeError, match=r"af\.compile expects a Job"):
        af.compile(object())


def test_read_variable_assembles_the_parts_from_the_actors(tmp_path):
    value = np.random.default_rng(0).standard_normal((5, 4)).astype("float32")
    np.save(tmp_path / "w.npy", value)
    p3 = af.placement("cpu", ranks=[0, 1, 2])
    with af.Job("readvar", pieces=2) as job:
        x = af.random_input("x", (2, 5), seed=1, placement=p3)
        w = af.variable("w", (5, 4), path=tmp_path / "w.npy", placement=p3, sbp=af.sbp.split(0))
        b = af.variable("b", (4,), init="normal", seed=3, placement=p3, sbp=af.sbp.split(0))
        af.output("y", x @ w + b)
    plan = af.compile(job, machines=3)
    s = af.Session(plan)
    with pytest.raises(af.errors.UsageError, match="has no value yet"):
        af.read_variable(s, "w")
    s.run_to_end()
    np.testing.assert_array_equal(af.read_variable(s, "w"), value)  # 2 + 2 + 1 rows
    b = np.random.default_rng(3).standard_normal(4).astype("float32")
    np.testing.assert_array_equal(af.read_variable(s, "b"), b)
    with pytest.raises(af.errors.UsageError, match=r"no variable 'z' \(variables: \['w', 'b'\]\)"):
        af.read_variable(s, "z")
