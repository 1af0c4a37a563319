# The kind table and the build of a unit's C actors from its tasks (the plan is the table).
#
# One row per task type: the C kind (kinds.h) and the Python state class it is the twin of
# (``actors/cores.py`` runs a unit natively only where the kind registry still names that
# class, so a changed reference never runs a stale twin).  Adding a kind: a row here, a row
# in kinds.h, its state in actor.h and its fill-in below.

KIND_CODES = {
    "normal": AF_KIND_NORMAL, "copy_h2d": AF_KIND_NORMAL, "copy_d2h": AF_KIND_NORMAL,
    "comm_net": AF_KIND_NORMAL, "boxing": AF_KIND_NORMAL, "input": AF_KIND_INPUT,
    "source": AF_KIND_SOURCE, "output": AF_KIND_OUTPUT, "tick": AF_KIND_TICK,
    "acc": AF_KIND_ACC, "repeat": AF_KIND_REPEAT, "wait_and_send_ids": AF_KIND_WAIT_IDS,
    "reentrant_lock": AF_KIND_LOCK, "case": AF_KIND_CASE, "esac": AF_KIND_ESAC,
    "callback_tick": AF_KIND_CALLBACK,
}
REFERENCE = {
    AF_KIND_NORMAL: "ActorState", AF_KIND_INPUT: "InputState", AF_KIND_SOURCE: "SourceState",
    AF_KIND_OUTPUT: "OutputState", AF_KIND_TICK: "TickState", AF_KIND_ACC: "AccState",
    AF_KIND_REPEAT: "RepeatState", AF_KIND_WAIT_IDS: "WaitAndSendIdsState",
    AF_KIND_LOCK: "ReentrantLockState", AF_KIND_CASE: "CaseState", AF_KIND_ESAC: "EsacState",
    AF_KIND_CALLBACK: "CallbackTickState",
}


def native_kinds():
    """Task types the compiled core has a state machine for."""
    return frozenset(KIND_CODES)


def reference_of(str task_type):
    """The name of the Python state class the native kind of ``task_type`` mirrors."""
    return REFERENCE[KIND_CODES[task_type]]


cdef void *zalloc(Py_ssize_t n, size_t size) except NULL:
    cdef void *p = calloc(<size_t>(n if n > 0 else 1), size)
    if p == NULL:
        raise MemoryError()
    return p


cdef int build_unit(af_unit *u, list tasks, producer_of, list kinds) except -1:
    cdef Py_ssize_t n = len(tasks)
    u.actors = <af_actor *>zalloc(n, sizeof(af_actor))
    u.labels = <char **>zalloc(n, sizeof(char *))
    u.n = <int32_t>n
    cdef bytes label
    for i in range(n):
        t = tasks[i]
        label = str(t.label).encode("utf-8", "replace")
        u.labels[i] = <char *>zalloc(len(label) + 1, 1)
        for j in range(len(label)):
            u.labels[i][j] = label[j]
        build_actor(&u.actors[i], t, producer_of)
        kinds.append(t.task_type)
    if af_unit_index(u):
        raise MemoryError()
    return 0


cdef int build_actor(af_actor *a, t, producer_of) except -1:
    cdef af_produced *p
    cdef af_consumed *c
    tid = int(t.task_id)
    a.task_id = tid
    code = KIND_CODES.get(t.task_type)
    if code is None:
        raise ProtocolError(f"task {tid} ({t.label}): the compiled core has no state machine "
                            f"for task type '{t.task_type}'")
    a.kind = code
    prods = list(t.produced.values())
    a.prod = <af_produced *>zalloc(len(prods), sizeof(af_produced))
    a.nprod = len(prods)
    for j, d in enumerate(prods):
        p = &a.prod[j]
        af_ring_init(&p.free_q, sizeof(int32_t))
        p.desc = d.regst_desc_id
        rn = int(d.register_num)
        cons = [int(x) for x in d.consumer_task_ids]
        p.register_num = rn
        p.ncons = len(cons)
        p.words = max(1, (len(cons) + 63) // 64)
        p.consumers = <int64_t *>zalloc(len(cons), sizeof(int64_t))
        p.seq = <int64_t *>zalloc(len(cons), sizeof(int64_t))
        p.held = <uint64_t *>zalloc(max(rn, 1) * p.words, sizeof(uint64_t))
        for k, x in enumerate(cons):
            p.consumers[k] = x
        for s in range(rn):
            if af_ring_push(&p.free_q) == NULL:
                raise MemoryError()
            (<int32_t *>af_ring_at(&p.free_q, s))[0] = s
    consumed = list(t.consumed_ids())
    for d in consumed:
        if d not in producer_of:
            raise ProtocolError(f"task {tid}: consumed regst desc {d} has no producer in the "
                                "plan")
    a.cons = <af_consumed *>zalloc(len(consumed), sizeof(af_consumed))
    a.ncons = len(consumed)
    for j, d in enumerate(consumed):
        c = &a.cons[j]
        af_ring_init(&c.ready, sizeof(af_ready))
        c.desc = d
        c.producer = producer_of[d]
    attrs = t.attrs
    if code in (AF_KIND_INPUT, AF_KIND_SOURCE, AF_KIND_WAIT_IDS):
        build_generator(a, t, attrs)
    elif code == AF_KIND_ACC:
        a.k.acc.acc_num = int(attrs.get("acc_num", 1))
        a.k.acc.held = -1
        if a.k.acc.acc_num < 1 or a.ncons != 1 or a.nprod != 1:
            raise ProtocolError(f"task {tid} (acc): needs acc_num >= 1, one consumed and one "
                                "produced regst desc")
    elif code == AF_KIND_REPEAT:
        a.k.rep.repeat_num = int(attrs.get("repeat_num", 1))
        if a.k.rep.repeat_num < 1 or a.ncons != 1 or a.nprod != 1:
            raise ProtocolError(f"task {tid} (repeat): needs repeat_num >= 1, one consumed and "
                                "one produced regst desc")
    elif code == AF_KIND_LOCK:
        build_lock(a, t, attrs, consumed)
    elif code == AF_KIND_CASE:
        build_case(a, t, attrs, prods)
    elif code == AF_KIND_ESAC:
        build_esac(a, t, attrs, consumed)
    return 0


cdef int build_generator(af_actor *a, t, attrs) except -1:
    g = &a.k.gen
    af_ring_init(&g.ids, sizeof(int64_t))
    g.gated = 1 if attrs.get("gated") else 0
    g.is_source = 1 if t.task_type == "source" else 0
    g.budget = AF_NONE if (g.gated and g.is_source) else 0
    v = attrs.get("piece_num")
    g.piece_num = AF_NONE if v is None else int(v)
    if a.kind == AF_KIND_WAIT_IDS:
        g.num_cs = int(attrs.get("num_critical_sections", 0))
        if a.nprod != 1 or a.ncons:
            raise ProtocolError(f"task {a.task_id} (wait_and_send_ids): needs one produced "
                                "regst desc and no consumed ones")
    return 0


cdef int build_lock(af_actor *a, t, attrs, list consumed) except -1:
    lk = &a.k.lock
    index = {d: j for j, d in enumerate(consumed)}
    try:
        lk.start = index[attrs["start_desc"]]
        lk.end = index[attrs["end_desc"]]
    except KeyError as e:
        raise ProtocolError(f"task {a.task_id} (reentrant_lock): attrs start_desc/end_desc must "
                            f"name its consumed regst descs ({e})") from e
    if a.nprod != 1:
        raise ProtocolError(f"task {a.task_id} (reentrant_lock): needs one produced regst desc")
    conflicts = {int(k): {int(x) for x in v} for k, v in attrs.get("conflicts", {}).items()}
    total = sum(len(v) for v in conflicts.values())
    lk.nconf = len(conflicts)
    lk.conf_cs = <int64_t *>zalloc(len(conflicts), sizeof(int64_t))
    lk.conf_off = <int32_t *>zalloc(len(conflicts) + 1, sizeof(int32_t))
    lk.conf_with = <int64_t *>zalloc(total, sizeof(int64_t))
    k = 0
    for j, (cs, with_) in enumerate(conflicts.items()):
        lk.conf_cs[j] = cs
        lk.conf_off[j] = k
        for x in sorted(with_):
            lk.conf_with[k] = x
            k += 1
    lk.conf_off[len(conflicts)] = k
    return 0


cdef int build_case(af_actor *a, t, attrs, list prods) except -1:
    if a.ncons != 1:
        raise ProtocolError(f"task {a.task_id} (case): needs one consumed regst desc")
    out_of = [int(d) for d in attrs.get("cs_descs", [])]
    mine = sorted(d.regst_desc_id for d in prods)
    if sorted(out_of) != mine:
        raise ProtocolError(f"task {a.task_id} (case): attrs cs_descs {out_of} must list its "
                            f"produced regst descs {mine}")
    where = {d.regst_desc_id: j for j, d in enumerate(prods)}
    kc = &a.k.kcase
    kc.out_of = <int32_t *>zalloc(len(out_of), sizeof(int32_t))
    kc.instances = <int64_t *>zalloc(len(out_of), sizeof(int64_t))
    kc.nout = len(out_of)
    for cs, d in enumerate(out_of):
        kc.out_of[cs] = where[d]
    return 0


cdef int build_esac(af_actor *a, t, attrs, list consumed) except -1:
    cs_of = {int(k): int(v) for k, v in attrs.get("cs_of_desc", {}).items()}
    if set(cs_of) != set(consumed) or a.nprod != 1:
        raise ProtocolError(f"task {a.task_id} (esac): attrs cs_of_desc must map each consumed "
                            f"regst desc {sorted(set(consumed))} to a critical section, and it "
                            "produces one regst desc")
    groups = {}
    for d, cs in sorted(cs_of.items()):
        groups.setdefault(cs, []).append(d)
    index = {d: j for j, d in enumerate(consumed)}
    ke = &a.k.esac
    ke.group_cs = <int64_t *>zalloc(len(groups), sizeof(int64_t))
    ke.group_off = <int32_t *>zalloc(len(groups) + 1, sizeof(int32_t))
    ke.group_cons = <int32_t *>zalloc(len(cs_of), sizeof(int32_t))
    ke.ngroups = len(groups)
    k = 0
    for j, (cs, descs) in enumerate(groups.items()):
        ke.group_cs[j] = cs
        ke.group_off[j] = k
        for d in descs:
            ke.group_cons[k] = index[d]
            k += 1
    ke.group_off[len(groups)] = k
    return 0
