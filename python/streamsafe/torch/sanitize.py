"""streamsafe.torch.sanitize: streamsafe's hazard engine (docs/hazards.md) on a PyTorch program.

Two sources feed one engine, in the order the host issues them:
  - a TorchDispatchMode sees every aten op with its tensors: the op's bytes (streamsafe.torch.
    _ranges) and which of them it writes (its schema, streamsafe.torch._ops) go to the engine as
    one packed call on the current stream of the op's device, or on the host when every tensor
    is on the CPU (only bytes some stream touched are followed there: pinned buffers);
  - torch's GPU trace callbacks: event record and wait, stream, event and device syncs, and the
    caching allocator's allocations and frees. Trace calls made inside an op (a blocking copy's
    sync) are replayed after the op's own access, which is when they happen on the device.
Lifetimes: an allocation callback only gives a pointer; the lifetime starts at the first op that
touches a storage starting there, on that op's stream (the caching allocator allocates on the
current stream), with the storage's size. The free callback ends it, with the record_stream
calls seen (aten.record_stream) in its release point: this is PyTorch's native reuse rule (a
block goes back to its stream's pool at the free; with record_stream on s it is reused only once
s's work at the free is done). Under streamsafe's allocator the lifetimes come from the
allocator instead (Session.use_allocator_lifetimes, allocator_alloc/free/record_stream), which
also sees record_stream calls made from C++.

Threads: one session is driven by the thread that runs the program's ops; the GIL serializes
the callbacks. Not seen: kernels launched outside aten (custom extensions, Triton; declare them
with annotate), CUDA graphs replayed, NCCL's internal streams, Event.query()/Stream.query().
"""

import atexit
import contextlib
import os
import sys

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from streamsafe._engine import Engine, UsageError
from streamsafe.torch import _fix, _ops, _ranges, _sites


class HazardError(RuntimeError):
    """Raised under mode="raise" at the first hazard; `.hazard` is the finding."""

    def __init__(self, hazard):
        super().__init__(str(hazard))
        self.hazard = hazard


class OpRef:
    """One side of a finding: the op, its stream ('host' for the host) and the user's file:line."""

    __slots__ = ("op", "stream", "loc", "line", "role")

    def __init__(self, ref):
        self.op, self.stream, self.loc = ref["op"], ref["stream"], ref["loc"]
        self.line, self.role = ref["line"], ref["role"]

    def __repr__(self):
        return f"{self.op} ({self.role}) on {self.stream} at {self.loc}"


class Hazard:
    """A finding: `kind` as the engine names it, `first` (earlier op), `second` (where it was
    found), `fix` (what to add, in PyTorch terms), `count` (times found between these sites)."""

    def __init__(self, found):
        self.kind = found["kind"]
        self.first = OpRef(found["first"])
        self.second = OpRef(found["second"])
        self.fix = _fix.fix_text(found)
        self.count = found["count"]
        self.range = found["range"]

    def __str__(self):
        first, second = self.first, self.second
        return (f"streamsafe: {self.kind}: `{first.op}` ({first.role}) on {first.stream} at {first.loc}, "
                f"then `{second.op}` ({second.role}) on {second.stream} at {second.loc}; "
                f"{self.range[1]} bytes at {self.range[0]:#x}, seen {self.count} time(s)\n"
                f"  fix: {self.fix}")

    __repr__ = __str__


class Session:
    """The handle `sanitize()` yields: the engine, the model of lifetimes, and the findings."""

    def __init__(self, mode="report"):
        if mode not in ("report", "raise"):
            raise ValueError(f"sanitize(mode={mode!r}): mode is 'report' or 'raise'")
        self.mode = mode
        self.engine = self._make_engine()
        self._model_errors = 0
        self._labels = {}
        self._streams = {}
        self._pending_allocs = {}  # ptr -> (stream, label) of allocations no op touched yet
        self._live = set()
        self._host_shared = set()
        self._lifetimes_from_allocator = False
        self._fake_stream = None
        self._in_op = False
        self._deferred = []
        self._unraised = None

    tier = "python"

    def _make_engine(self):
        return Engine()

    def observer(self):
        """What feeds this session the program's ops (a context manager): a dispatch mode."""
        return _Mode(self)

    @property
    def model_errors(self):
        """Lifetimes the callbacks could not pair (see docs/pytorch.md)."""
        return self._model_errors

    # -- findings ---------------------------------------------------------------------------

    @property
    def hazards(self):
        """The findings so far (informational kinds excluded: see `notes`), counts up to date."""
        return [Hazard(h) for h in self.engine.hazards() if not h["informational"]]

    @property
    def notes(self):
        """Informational findings: waits on never-recorded events, redundant waits."""
        return [Hazard(h) for h in self.engine.hazards() if h["informational"]]

    def report(self, file=None):
        for hazard in self.hazards:
            print(hazard, file=file or sys.stderr)

    def _found(self, count):
        if not count:
            return
        new = [h for h in self.engine.take_hazards() if not h["informational"]]
        if new and self.mode == "raise" and self._unraised is None:
            self._unraised = HazardError(Hazard(new[0]))

    def _raise_pending(self):
        if self._unraised is not None:
            error, self._unraised = self._unraised, None
            raise error

    # -- names and call sites ----------------------------------------------------------------

    def name_stream(self, stream, name):
        """Names `stream` (a torch.cuda.Stream or a stream id) in reports and fixes."""
        sid = _stream_id(stream)
        self._streams[sid] = name
        self.engine.name_stream(sid, name)

    def _stream(self, sid):
        if sid not in self._streams:
            name = "default" if sid == 0 else f"s{len(self._streams) + 1}"
            self._streams[sid] = name
            self.engine.name_stream(sid, name)
        return sid

    def _label(self, op_name):
        loc = _sites.user_site()
        key = (op_name, loc)
        label = self._labels.get(key)
        if label is None:
            label = self._labels[key] = self.engine.label(op_name, loc)
        return label

    # -- ops ---------------------------------------------------------------------------------

    def on_op(self, func, args, kwargs, result):
        """One aten op that ran: its bytes go to the engine, then the trace calls it made."""
        sig = _ops.signature(func)
        try:
            if sig.name == "aten::record_stream":
                self._record_stream_op(args)
            elif not sig.skip:
                self._access(sig.name, _ops.accesses(sig, args, kwargs, result))
        finally:
            self._replay()
        self._raise_pending()

    def _access(self, op_name, touched):
        if not touched:
            return
        stream = self._op_stream(touched)
        if stream is None:
            if not self._host_shared:
                return
            ranges = [(p, n, w) for t, w in touched if _ranges.storage_base(t) in self._host_shared
                      for p, n in _ranges.byte_ranges(t)]
            if ranges:
                self._found(self.engine.host_op(ranges, self._label(op_name)))
            return
        label = self._label(op_name)
        ranges = []
        for tensor, is_write in touched:
            if self._pending_allocs:
                self._start_lifetime(tensor)
            if not tensor.is_cuda:
                if self._fake_stream is None and not tensor.is_pinned():
                    continue  # a copy with pageable memory is done with it when it returns
                self._host_shared.add(_ranges.storage_base(tensor))
            ranges.extend((p, n, is_write) for p, n in _ranges.byte_ranges(tensor))
        self._found(self.engine.op(stream, ranges, label))

    def _op_stream(self, touched):
        if self._fake_stream is not None:
            return self._fake_stream
        for tensor, _ in touched:
            if tensor.is_cuda:
                return self._stream(_current_raw_stream(tensor.get_device()))
        return None

    def annotate(self, reads=(), writes=(), stream=None, name="annotate"):
        """Declares an op the sanitizer cannot see (a custom kernel): it reads `reads` and writes
        `writes` (tensors) on `stream` (default: the current stream of their device)."""
        touched = [(t, False) for t in reads] + [(t, True) for t in writes]
        if stream is not None:
            with self._on_stream(_stream_id(stream)):
                self._access(name, touched)
        else:
            self._access(name, touched)
        self._raise_pending()

    @contextlib.contextmanager
    def _on_stream(self, sid):
        """Test hook (and annotate's): ops inside run on stream `sid`, CPU tensors included."""
        saved, self._fake_stream = self._fake_stream, self._stream(sid)
        try:
            yield
        finally:
            self._fake_stream = saved

    # -- lifetimes ---------------------------------------------------------------------------

    def _start_lifetime(self, tensor):
        base = _ranges.storage_base(tensor)
        pending = self._pending_allocs.pop(base, None)
        if pending is not None:
            self._alloc(base, _ranges.storage_of(tensor)[1], *pending)

    def _alloc(self, ptr, size, stream, label):
        try:
            self._found(self.engine.alloc(ptr, size, stream, label))
            self._live.add(ptr)
        except UsageError:
            self._model_errors += 1

    def _free(self, ptr):
        if ptr in self._live:
            self._live.discard(ptr)
            self._found(self.engine.free(ptr, self._label("free")))

    def _record_stream(self, ptr, sid):
        try:
            self.engine.record_stream(ptr, self._stream(sid), self._label("record_stream"))
        except UsageError:
            pass  # not a lifetime the sanitizer saw start: nothing to extend

    def _record_stream_op(self, args):
        if not self._lifetimes_from_allocator:
            self._record_stream(_ranges.storage_base(args[0]), _stream_id(args[1]))

    def record_stream(self, tensor, stream):
        """tensor.record_stream(stream) as the sanitizer sees it (test hook: any stream id)."""
        self._record_stream(_ranges.storage_base(tensor), _stream_id(stream))

    def use_allocator_lifetimes(self):
        """Lifetimes come from streamsafe's allocator from now on (allocator_* below): the trace's
        allocation callbacks and aten.record_stream are ignored."""
        self._lifetimes_from_allocator = True
        self._pending_allocs.clear()

    def allocator_alloc(self, ptr, size, stream):
        self._alloc(ptr, size, self._stream(stream), self._label("alloc"))

    def allocator_free(self, ptr):
        self._free(ptr)

    def allocator_record_stream(self, ptr, stream):
        self._record_stream(ptr, stream)

    # -- trace callbacks (torch.cuda._gpu_trace; tests call them with fake ids) ---------------

    def _deferrable(self, call, *args):
        if self._in_op:
            self._deferred.append((call, args))
        else:
            call(*args)

    def _replay(self):
        deferred, self._deferred = self._deferred, []
        for call, args in deferred:
            call(*args)

    def on_memory_allocation(self, ptr):
        # The caching allocator allocates on the current stream; the size comes with the first
        # op that touches the storage (the callback gives only the pointer).
        if not self._lifetimes_from_allocator:
            self._pending_allocs[ptr] = (self._current_stream(), self._label("alloc"))

    def on_memory_deallocation(self, ptr):
        if not self._lifetimes_from_allocator:
            self._pending_allocs.pop(ptr, None)
            self._free(ptr)

    def _current_stream(self):
        if self._fake_stream is not None:
            return self._fake_stream
        return self._stream(_current_raw_stream(torch.cuda.current_device()))

    def on_event_record(self, event, stream):
        self._deferrable(self._event_record, event, stream)

    def on_event_wait(self, event, stream):
        self._deferrable(self._event_wait, event, stream)

    def on_stream_synchronization(self, stream):
        self._deferrable(self._stream_sync, stream)

    def on_event_synchronization(self, event):
        self._deferrable(self._event_sync, event)

    def on_device_synchronization(self):
        self._deferrable(self._device_sync)

    def on_event_deletion(self, event):
        self._deferrable(self._event_destroy, event)

    def _event_record(self, event, stream):
        self._found(self.engine.event_record(event, self._stream(stream), self._label("event_record")))

    def _event_wait(self, event, stream):
        self._found(self.engine.stream_wait_event(self._stream(stream), event, self._label("wait_event")))

    def _stream_sync(self, stream):
        self._found(self.engine.stream_sync(self._stream(stream), self._label("stream_synchronize")))

    def _event_sync(self, event):
        self._found(self.engine.event_sync(event, self._label("event_synchronize")))

    def _device_sync(self):
        self._found(self.engine.device_sync(self._label("device_synchronize")))

    def _event_destroy(self, event):
        self.engine.event_destroy(event, self._label("event_destroy"))


def _current_raw_stream(device):
    """The current stream's handle on `device` (the raw call where torch has it: no Stream object)."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw(device)
    return torch.cuda.current_stream(device).cuda_stream


def _stream_id(stream):
    """The CUDA stream handle of a torch.cuda.Stream, a torch.Stream or an int."""
    if isinstance(stream, int):
        return stream
    handle = getattr(stream, "cuda_stream", None)
    if handle is not None:
        return handle
    return stream_handle(stream.stream_id, stream.device_index, stream.device_type)


def stream_handle(stream_id, device_index, device_type):
    """The CUDA stream handle of the c10 stream (stream_id, device_index, device_type)."""
    return torch.cuda.Stream(stream_id=stream_id, device_index=device_index,
                             device_type=device_type).cuda_stream


class _Mode(TorchDispatchMode):
    def __init__(self, session):
        super().__init__()
        self.session = session

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        session = self.session
        session._in_op = True
        try:
            result = func(*args, **kwargs)
        finally:
            session._in_op = False
        session.on_op(func, args, kwargs, result)
        return result


# -- the trace: torch's callbacks cannot be removed, so they are installed once and forward to
#    the active session, if any.

_active = None
_trace_installed = False
_TRACE = ("event_creation", "event_deletion", "event_record", "event_wait", "memory_allocation",
          "memory_deallocation", "stream_creation", "device_synchronization",
          "stream_synchronization", "event_synchronization")


def active_session():
    """The session sanitizing now, or None (for an allocator feeding lifetimes)."""
    return _active


def _forward(name):
    def callback(*args):
        handler = getattr(_active, "on_" + name, None)
        if handler is not None:
            handler(*args)
    return callback


def _install_trace():
    global _trace_installed
    if _trace_installed:
        return
    try:
        import torch.cuda._gpu_trace as trace  # torch >= 2.0
        prefix, activate = "register_callback_for_", getattr(torch._C, "_activate_gpu_trace", None)
    except ImportError:
        import torch.utils._cuda_trace as trace  # torch 1.13
        prefix, activate = "register_callback_for_cuda_", getattr(torch._C, "_activate_cuda_trace", None)
    for name in _TRACE:
        getattr(trace, prefix + name)(_forward(name))
    if activate is not None:
        activate()
    _trace_installed = True


TIERS = ("auto", "native", "python")


def native_tier_available():
    """Whether the native tier (streamsafe._torch_ops, built against libtorch) is importable."""
    try:
        import streamsafe._torch_ops  # noqa: F401
    except ImportError:
        return False
    return True


def _session_class(mode, tier):
    """The Session class for `tier` (None: $STREAMSAFE_TORCH_SANITIZER_TIER, else auto); auto
    picks native when it is built and mode is 'report'."""
    if tier is None:
        tier = os.environ.get("STREAMSAFE_TORCH_SANITIZER_TIER", "auto")
    if tier not in TIERS:
        raise ValueError(f"sanitize(tier={tier!r}): tier is one of {', '.join(TIERS)}")
    if tier == "python" or (tier == "auto" and (mode != "report" or not native_tier_available())):
        return Session
    if mode != "report":
        raise ValueError("sanitize(tier='native'): the native tier reports (mode='report'); "
                         "mode='raise' needs tier='python' (or 'auto')")
    if not native_tier_available():
        raise RuntimeError("sanitize(tier='native'): streamsafe._torch_ops is not built (libtorch was "
                           "not found at configure time; see docs/pytorch.md)")
    from streamsafe.torch._native import NativeSession
    return NativeSession


def _start(mode, tier=None):
    global _active
    if _active is not None:
        raise RuntimeError("streamsafe.torch.sanitize: a session is already active (sessions do not nest)")
    session_class = _session_class(mode, tier)
    _install_trace()
    session = session_class(mode)
    _active = session
    dispatch = session.observer()
    dispatch.__enter__()
    return session, dispatch


def _stop(dispatch):
    global _active
    dispatch.__exit__(None, None, None)
    _active = None


@contextlib.contextmanager
def sanitize(mode="report", tier=None):
    """Sanitizes the ops of the block: yields the Session (`.hazards`); mode="raise" raises
    HazardError at the first hazard (after the op that made it ran).

    tier: "python" sees ops with a dispatch mode; "native" with a C++ op observer
    (streamsafe._torch_ops, when built), same findings at a lower cost per op, report mode only;
    "auto" picks native when it is built and mode is "report"; None (the default) reads
    $STREAMSAFE_TORCH_SANITIZER_TIER, else auto."""
    session, dispatch = _start(mode, tier)
    try:
        yield session
        session._raise_pending()
    finally:
        _stop(dispatch)


def annotate(reads=(), writes=(), stream=None, name="annotate"):
    """Declares work the sanitizer cannot see (see Session.annotate); a no-op when not active."""
    if _active is not None:
        _active.annotate(reads, writes, stream, name)


def _from_environment():
    """STREAMSAFE_TORCH_SANITIZER=1: sanitize the whole program, print the reports at exit."""
    if os.environ.get("STREAMSAFE_TORCH_SANITIZER", "") not in ("1", "report"):
        return
    session, dispatch = _start("report")

    def at_exit():
        _stop(dispatch)
        session.report()
        print(f"streamsafe: {len(session.hazards)} hazard(s)", file=sys.stderr)
    atexit.register(at_exit)
