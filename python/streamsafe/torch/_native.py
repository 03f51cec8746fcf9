"""The sanitizer's native tier: the Session of streamsafe.torch.sanitize with its ops seen in C++.

streamsafe._torch_ops.Engine observes every aten op (an at::RecordFunction callback), computes
its byte ranges and writes from the schema, and feeds the engine with no Python per op; it also
keeps the per-op model the Python Session keeps in Python (the lifetimes the trace's
allocations start, the host buffers a stream touched, the fake stream of the tests). The trace
callbacks, names, reports and fixes stay the Python Session's, on the same engine, so both
sources reach it in host order under the GIL. Report mode only (a RecordFunction callback cannot
raise into the program).
"""

import functools

from streamsafe import _torch_ops
from streamsafe.torch import _ops, _sites
from streamsafe.torch.sanitize import Session, stream_handle


class _Observing:
    """The native counterpart of the dispatch mode: the C++ observer on for the block."""

    def __init__(self, engine):
        self.engine = engine

    def __enter__(self):
        self.engine.observe(True)
        return self

    def __exit__(self, *exc):
        self.engine.observe(False)


class NativeSession(Session):
    tier = "native"

    def _make_engine(self):
        return _torch_ops.Engine(stream_handle=stream_handle, skip_prefixes=list(_sites.SKIP_PREFIXES),
                                 shown=_sites._shown, no_frame=_sites.NO_FRAME, no_kernel=set(_ops._NO_KERNEL))

    def observer(self):
        return _Observing(self.engine)

    @property
    def model_errors(self):
        return self.engine.model_errors

    # The Session's per-op state lives in the engine, where the observer reads and updates it.

    @property
    def _fake_stream(self):
        return self.engine.fake_stream

    @_fake_stream.setter
    def _fake_stream(self, stream):
        self.engine.fake_stream = stream

    @property
    def _in_op(self):
        return self.engine.in_op()

    @_in_op.setter
    def _in_op(self, held):
        self.engine.hold_trace = held

    def _deferrable(self, call, *args):
        if self.engine.in_op():
            self.engine.defer(functools.partial(call, *args))
        else:
            call(*args)

    def _stream(self, sid):
        return self.engine.stream(sid)

    def _access(self, op_name, touched):
        if touched:
            self.engine.access_tensors(op_name, touched)

    def _alloc(self, ptr, size, stream, label):
        self.engine.alloc_lifetime(ptr, size, stream, label)

    def _free(self, ptr):
        if self.engine.is_live(ptr):
            self.engine.free_lifetime(ptr, self._label("free"))

    def _record_stream(self, ptr, sid):
        self.engine.record_lifetime_stream(ptr, self._stream(sid), self._label("record_stream"))

    def use_allocator_lifetimes(self):
        super().use_allocator_lifetimes()
        self.engine.lifetimes_from_allocator = True
        self.engine.clear_pending()

    def on_memory_allocation(self, ptr):
        if not self._lifetimes_from_allocator:
            self.engine.pending_alloc(ptr, self._current_stream(), self._label("alloc"))

    def on_memory_deallocation(self, ptr):
        if not self._lifetimes_from_allocator:
            self.engine.drop_pending(ptr)
            self._free(ptr)
