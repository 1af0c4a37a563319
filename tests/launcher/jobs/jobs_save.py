"""A multi-job file whose drive saves a checkpoint (directory from $ACTORFLOW_TEST_CKPT)."""

import os

import numpy as np

import actorflow as af


def build_jobs(machines):
    P = af.placement("cpu", ranks=list(range(machines)))
    with af.Job("update") as up:
        w = af.variable("w", (4, 3), placement=P, sbp=af.sbp.split(0))
        w.add_(af.input("x", (4, 3), placement=P, sbp=af.sbp.split(0)))
    with af.Job("read") as rd:
        af.output("w", af.variable("w", (4, 3), placement=P, sbp=af.sbp.split(0)))
    return [up, rd]


def drive(session):
    session.run("update", {"x": np.arange(12, dtype=np.float32).reshape(4, 3)})
    session.save(os.environ["ACTORFLOW_TEST_CKPT"])
    return {"w": session.run("read")}
