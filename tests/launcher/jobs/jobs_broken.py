"""A multi-job file whose eval job fails on its first piece (a variable file is missing)."""

import numpy as np

import actorflow as af


def build_jobs(machines):
    P = af.placement("cpu", ranks=list(range(machines)))
    with af.Job("update") as up:
        w = af.variable("w", (4,), placement=P)
        w.add_(af.input("x", (4,), placement=P))
    with af.Job("eval") as ev:
        b = af.variable("b", (4,), init="file", path="/nonexistent/actorflow-b.npy",
                        placement=P)
        af.output("y", af.variable("w", (4,), placement=P) + b)
    return [up, ev]


def drive(session):
    session.run("update", {"x": np.ones(4, np.float32)})
    return session.run("eval")
