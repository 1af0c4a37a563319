"""A job file whose build_plan raises: every worker must hear why, quickly."""


def build_plan(machines: int = 1):
    raise ValueError("this job is broken")
