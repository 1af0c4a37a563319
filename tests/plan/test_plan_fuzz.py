"""Hypothesis fuzzer of plan files: 0 crashes, 0 hangs, 0 non-actorflow exceptions, and an
accepted mutant that only renumbers threads/regsts or renames runs with the same numbers.

The CI run is bounded (a few hundred mutants); ``-m slow`` and ``bench/plan_fuzz.py`` run
long campaigns with the same checks.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.plan.plan_fuzz import MUTATION, base_plan, check_mutant, run_plan

BASE = base_plan()
DOC = BASE.to_dict()
EXPECTED = run_plan(BASE)

FAST = settings(max_examples=150, deadline=None, derandomize=True,
                suppress_health_check=list(HealthCheck))
LONG = settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))


@FAST
@given(st.lists(MUTATION, min_size=1, max_size=3))
def test_plan_mutants_load_and_validate_cleanly(mutations):
    check_mutant(DOC, mutations)


@FAST
@given(st.lists(st.tuples(st.integers(0, 10**6), st.just("neutral"),
                          st.sampled_from([1, 2, 3, 7, 65536, 0, -1, 2**31])), min_size=1,
                max_size=2))
def test_neutral_mutants_that_pass_compute_the_same_numbers(mutations):
    """Threads and register_nums renumbered: if the plan is accepted it must run the same."""
    check_mutant(DOC, mutations, EXPECTED)


@pytest.mark.slow
@LONG
@given(st.lists(MUTATION, min_size=1, max_size=4))
def test_long_campaign(mutations):
    check_mutant(DOC, mutations, EXPECTED)
