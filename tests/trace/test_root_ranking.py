"""Which actor why-stuck names as the root, on plain states (no runtime): an actor that gave
no state is the root rather than the neighbours that wait for it; an act in flight
outranks it; a silent actor nobody waits for is no stall; the root carries its place."""

from __future__ import annotations

from actorflow.trace.whystuck import analyze, analyze_dumps


def _task(label: str, machine: int, thrd: int, op: str, produced: dict, consumed: list) -> dict:
    return {"label": label, "machine_id": machine, "thrd_id": thrd, "op_types": [op],
            "produced": {d: {"register_num": 1, "consumers": c} for d, c in produced.items()},
            "consumed": consumed}


# a (m0) -> desc 10 -> b (m1) -> desc 20 -> c (m1)
TASKS = {
    1: _task("a", 0, 0, "relu", {10: [2]}, []),
    2: _task("b", 1, 0, "sleep", {20: [3]}, [10]),
    3: _task("c", 1, 1, "relu", {}, [20]),
}
BASE = {"status": "running", "inflight": 0, "queued": {}, "outputs_held": [],
        "inputs_empty": [], "outputs_full": []}


def _a_waits_on_b() -> dict:
    """a is a source with pieces left to make, every slot of desc 10 held by b."""
    return {**BASE, "task_id": 1, "budget": 6, "pieces_made": 3, "closed": True,
            "outputs_full": [{"regst_desc_id": 10, "held_by": [2]}]}


def test_actor_that_gave_no_state_is_the_root_not_its_neighbours():
    # b's unit is frozen: its state is missing; a waits for b's slot, c for b's READY
    states = [_a_waits_on_b(), {**BASE, "task_id": 3, "inputs_empty": [20]}]
    rep = analyze(states, TASKS)
    assert rep.pending and rep.roots[0] == 2
    assert rep.sentence.startswith(
        "root: task 2 (b) gave no state: its unit did not answer (its process is stopped, "
        "or stuck outside its actors) [task 2 runs on machine 1, unit m1-t0, op sleep]")
    assert rep.root == {"task": 2, "label": "b", "machine": 1, "thrd": 0, "unit": "m1-t0",
                        "op_types": ["sleep"]}
    assert "task 2 (b) [no answer]: gave no state" in "\n".join(rep.lines)


def test_act_in_flight_outranks_a_silent_actor():
    # c is inside its kernel; b gave no state and a waits on b: the act in flight is the
    # positive evidence (a unit merely slow to answer a dump also looks silent)
    states = [_a_waits_on_b(),
              {**BASE, "task_id": 3, "inflight": 1, "inflight_pieces": [4]}]
    rep = analyze(states, TASKS)
    assert rep.roots[:2] == [3, 2]
    assert rep.sentence.startswith("root: task 3 (c) is inside its kernel on piece 4 [task 3 "
                                   "runs on machine 1, unit m1-t1, op relu]")


def test_silent_actor_nobody_waits_for_is_not_a_stall():
    states = [{**BASE, "task_id": 1}, {**BASE, "task_id": 3}]  # both idle, b silent
    rep = analyze(states, TASKS)
    assert not rep.pending and rep.sentence.startswith("nothing is stuck")


def test_one_machine_alone_names_a_remote_holder_the_merge_names_the_root():
    m0 = {"pid": 1, "tasks": {1: TASKS[1]}, "states": [_a_waits_on_b()]}
    m1 = {"pid": 2, "tasks": {2: TASKS[2], 3: TASKS[3]}, "states": [
        {**BASE, "task_id": 2, "inflight": 1, "inflight_pieces": [2], "queued": {10: 1}},
        {**BASE, "task_id": 3, "inputs_empty": [20]}]}
    alone = analyze_dumps([m0])
    assert alone.remote and alone.roots == [1]
    assert "task 2 is on another machine: merge every machine's dump" in alone.sentence
    both = [analyze_dumps(order) for order in ([m0, m1], [m1, m0])]
    assert [r.roots[0] for r in both] == [2, 2] and not both[0].remote
    assert both[0].sentence == both[1].sentence
    assert both[0].root is not None and both[0].root["machine"] == 1
    assert "; 2 actors wait on it" in both[0].sentence


def test_dumps_of_different_moments_do_not_make_a_lost_message_or_a_deadlock():
    """a (m0) waits for a slot of desc 10 held by b (m1); m1's dump, taken earlier, shows b
    holding nothing and waiting for a's READY, while c runs a kernel: in one dump that
    would be a lost ACK in a cycle; across two dumps a message may have been on its way."""
    m0 = {"pid": 1, "tasks": {1: TASKS[1]}, "states": [_a_waits_on_b()]}
    m1 = {"pid": 2, "tasks": {2: TASKS[2], 3: TASKS[3]}, "states": [
        {**BASE, "task_id": 2, "inputs_empty": [10]},
        {**BASE, "task_id": 3, "inflight": 1, "inflight_pieces": [1]}]}
    one = analyze(m0["states"] + m1["states"], TASKS)  # as if one process dumped it all
    assert one.cycle == [1, 2] and "a message between them was lost" in one.sentence
    merged = analyze_dumps([m0, m1])
    assert merged.cycle == [] and not any(w.lost for ws in merged.waits.values() for w in ws)
    assert merged.roots[0] == 3 and merged.root is not None and merged.root["machine"] == 1
