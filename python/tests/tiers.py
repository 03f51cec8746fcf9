"""The sanitizer's tiers the tests run under, and what each hands the engine per op.

`accesses(tier, program)` runs `program` under sanitize(tier=...) on a fake stream and returns
[(op, stream, sorted [(ptr, bytes, is_write)])] as the engine received them: the Python tier's
through a recording wrapper around its engine, the native tier's from the engine's own record."""

import torch_or_skip  # noqa: F401

import streamsafe.torch as sst
from streamsafe.torch.sanitize import native_tier_available

TIERS = ("python", "native") if native_tier_available() else ("python",)
FAKE_STREAM = 303


class RecordingEngine:
    """The Python tier's engine, keeping each op's ranges as the native engine keeps them."""

    def __init__(self, engine):
        self._engine = engine
        self._ops = {}
        self.recorded = []

    def label(self, op, loc=""):
        label = self._engine.label(op, loc)
        self._ops[label] = op
        return label

    def op(self, stream, ranges, label):
        self.recorded.append((self._ops[label], stream, list(ranges)))
        return self._engine.op(stream, ranges, label)

    def host_op(self, ranges, label):
        self.recorded.append((self._ops[label], None, list(ranges)))
        return self._engine.host_op(ranges, label)

    def __getattr__(self, name):
        return getattr(self._engine, name)


def accesses(tier, program, stream=FAKE_STREAM):
    with sst.sanitize(tier=tier) as session:
        if tier == "python":
            session.engine = RecordingEngine(session.engine)
        else:
            session.engine.record_accesses = True
        with session._on_stream(stream):
            program()
        recorded = session.engine.recorded
    return [(op, sid, sorted(ranges)) for op, sid, ranges in recorded]


def skip_unless_built(case, tier):
    if tier not in TIERS:
        case.skipTest("the native tier (streamsafe._torch_ops) is not built")
