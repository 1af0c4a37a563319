"""Signature dispatch of actorflow.functional: binding, conversion, and the exact errors."""

from __future__ import annotations

import numpy as np
import pytest

import actorflow as af
import actorflow.functional as F
from actorflow.frontend.signature import FunctionalOp, parse_signature

POW_ERROR = (
    "pow(): received an invalid combination of arguments. The valid signatures are:\n"
    "\t*0: Tensor (Tensor input, Tensor exponent)\n"
    "\t*1: Tensor (Tensor input, Scalar exponent, *, Bool inplace=False)\n"
    "\t*2: Tensor (Tensor input, Scalar exponent)\n"
    "\t*3: Tensor (Scalar base, Tensor exponent)"
)


@pytest.fixture
def job():
    with af.Job("sig") as j:
        yield j


def _last(job):
    return job.spec.ops[-1]


def test_parse_signature_fields():
    s = parse_signature("Tensor (Tensor input, Scalar exponent, *, Bool inplace=False)")
    assert s.returns == "Tensor"
    assert [(p.type, p.name, p.keyword_only) for p in s.params] == [
        ("Tensor", "input", False), ("Scalar", "exponent", False), ("Bool", "inplace", True)]
    assert s.params[2].default is False
    assert s.max_positional == 2
    opt = parse_signature("Tensor (Tensor x, IntList? dim=None)").params[1]
    assert opt.optional and opt.default is None


def test_parse_signature_rejects_unknown_type():
    with pytest.raises(ValueError, match="unknown type 'Tensr'"):
        parse_signature("Tensor (Tensr x)")


def test_pow_dispatches_in_order(job):
    x = af.input("x", (2, 3))
    y = af.input("y", (2, 3))
    F.pow(x, y)
    assert _last(job).op_type == "pow"
    F.pow(x, 2)
    assert (_last(job).op_type, _last(job).attrs["scalar"]) == ("scalar_pow", 2)
    F.pow(x, exponent=0.5)
    assert (_last(job).op_type, _last(job).attrs["scalar"]) == ("scalar_pow", 0.5)
    F.pow(2.0, x)
    assert (_last(job).op_type, _last(job).attrs["scalar"]) == ("scalar_rpow", 2.0)
    F.pow(base=3, exponent=x)
    assert _last(job).op_type == "scalar_rpow"
    F.pow(x, 3, inplace=False)  # keyword-only argument of signature *1
    assert (_last(job).op_type, _last(job).attrs["scalar"]) == ("scalar_pow", 3)
    with pytest.raises(TypeError) as e:
        F.pow(x, 3, False)  # inplace is keyword-only: no signature takes 3 positionals
    assert str(e.value) == POW_ERROR


def test_pow_invalid_combination_lists_every_signature_word_for_word(job):
    x = af.input("x", (2,))
    with pytest.raises(TypeError) as e:
        F.pow("a", x)
    assert str(e.value) == POW_ERROR
    with pytest.raises(TypeError) as e:
        F.pow(1, 2)
    assert str(e.value) == POW_ERROR


def test_relu_names_the_bad_argument_word_for_word(job):
    with pytest.raises(TypeError) as e:
        F.relu(1)
    assert str(e.value) == "relu(): argument 'x' must be tensor, not int"
    x = af.input("x", (2,))
    with pytest.raises(TypeError) as e:
        F.relu(x, inplace="yes")
    assert str(e.value) == "relu(): argument 'inplace' must be Bool, not str"


@pytest.mark.parametrize("call, message", [
    (lambda x: F.relu(), "relu(): missing required argument 'x'"),
    (lambda x: F.relu(x, False, 3), "relu(): takes 2 positional arguments but 3 were given"),
    (lambda x: F.relu(x, y=1), "relu(): got an unexpected keyword argument 'y'"),
    (lambda x: F.relu(x, x=x), "relu(): got multiple values for argument 'x'"),
    (lambda x: F.softmax(x, 1.5), "softmax(): argument 'dim' must be Int, not float"),
    (lambda x: F.matmul(x, x, True),
     "matmul(): takes 2 positional arguments but 3 were given"),
    (lambda x: F.reshape(x, ["a"]), "reshape(): argument 'shape' must be IntList, not list"),
])
def test_single_signature_errors(job, call, message):
    x = af.input("x", (2, 2))
    with pytest.raises(TypeError) as e:
        call(x)
    assert str(e.value) == message


def test_keyword_only_and_defaults(job):
    a = af.input("a", (3, 2))
    b = af.input("b", (3, 4))
    y = F.matmul(a, b, transpose_a=True)
    assert y.shape == (2, 4)
    assert _last(job).attrs == {"transpose_a": True, "transpose_b": False}
    s = F.sum(b)
    assert s.shape == ()
    s = F.sum(b, 1, keepdim=True)
    assert s.shape == (3, 1) and _last(job).attrs == {"axis": [1], "keepdims": True}
    assert F.transpose(b, 0, 1).shape == (4, 3)  # the (Int, Int) signature
    assert F.transpose(b).shape == (4, 3)  # the (IntList? perm=None) signature


def test_scalars_arrays_and_lists_are_converted(job):
    x = af.input("x", (2, 3))
    F.add(x, np.float32(2.5))
    assert (_last(job).op_type, _last(job).attrs["scalar"]) == ("scalar_add", 2.5)
    F.add(x, np.ones((3,), "float32"))
    const, add = job.spec.ops[-2:]
    assert (const.op_type, add.op_type) == ("const_array", "add")
    assert const.attrs["shape"] == [3]
    F.mul(x, [[1, 2, 3], [4, 5, 6]])
    const = job.spec.ops[-2]
    assert const.attrs["value"] == [1, 2, 3, 4, 5, 6]
    with pytest.raises(TypeError, match=r"add\(\): received an invalid combination"):
        F.add(x, "3")


def test_operators_route_through_functional(job):
    x = af.input("x", (2, 2))
    y = af.input("y", (2, 2))
    cases = [
        (lambda: x + y, "add"), (lambda: x - 1, "scalar_sub"), (lambda: 1 - x, "scalar_rsub"),
        (lambda: x * 2, "scalar_mul"), (lambda: 2 * x, "scalar_mul"),
        (lambda: x / y, "div"), (lambda: 1 / x, "scalar_rdiv"), (lambda: x ** 2, "scalar_pow"),
        (lambda: 2 ** x, "scalar_rpow"), (lambda: x @ y, "matmul"), (lambda: -x, "neg"),
        (lambda: x ** y, "pow"),
    ]
    for fn, op_type in cases:
        fn()
        assert _last(job).op_type == op_type
    with pytest.raises(TypeError) as e:
        x @ 3
    assert str(e.value) == "matmul(): argument 'b' must be tensor, not int"


def test_inplace_is_refused_on_lazy_tensors(job):
    x = af.input("x", (2,))
    with pytest.raises(ValueError, match="inplace=True is not supported"):
        F.relu(x, inplace=True)


def test_functional_op_docstring_lists_signatures():
    assert "Tensor (Tensor input, Tensor exponent)" in F.pow.__doc__
    assert F.pow.signatures[3] == "Tensor (Scalar base, Tensor exponent)"
    op = FunctionalOp("twice", [("Tensor (Int n)", lambda n: 2 * n)])
    assert op(4) == 8
    with pytest.raises(TypeError) as e:
        op(True)
    assert str(e.value) == "twice(): argument 'n' must be Int, not bool"
