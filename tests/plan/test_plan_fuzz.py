"""Fuzzer of plan files: 0 crashes, 0 hangs, 0 non-actorflow exceptions, and an accepted
mutant that only renumbers threads/regsts or renames runs with the same numbers.

The seeded campaigns say how many mutants were refused, accepted and run (pinned: a
fuzzer whose mutants all bounce off the decoder, or whose neutral mutants never run,
would otherwise pass while checking nothing; a validation rule that changes moves these
numbers, and the change is reviewed here).  The hypothesis tests explore more shapes
without counting; ``-m slow`` and ``bench/plan_fuzz.py`` run long campaigns.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.plan.plan_fuzz import MUTATION, base_plan, check_mutant, run_plan, seeded_mutations

BASE = base_plan()
DOC = BASE.to_dict()
EXPECTED = run_plan(BASE)

FAST = settings(max_examples=150, deadline=None, derandomize=True,
                suppress_health_check=list(HealthCheck))
LONG = settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))


def _campaign(n: int, seed: int, neutral_only: bool) -> Counter:
    rng = random.Random(seed)
    return Counter(check_mutant(DOC, seeded_mutations(rng, neutral_only), EXPECTED)
                   for _ in range(n))


def test_a_seeded_campaign_refuses_accepts_and_runs_as_many_as_it_did():
    """1000 mutants of any field: each refused with an actorflow error, or accepted (and,
    if its change is neutral, run to the original numbers)."""
    tally = _campaign(1000, seed=20, neutral_only=False)
    assert sum(tally.values()) == 1000
    assert tally == {"rejected": 966, "accepted": 24, "ran": 10}, tally


def test_neutral_mutants_run_to_the_original_numbers_as_many_as_they_did():
    """200 mutants renumbering threads and register_nums: refused (0, -1, 2**31 threads or
    register_nums) or run, giving exactly the original numbers."""
    tally = _campaign(200, seed=21, neutral_only=True)
    assert tally == {"ran": 115, "rejected": 85}, tally


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
