"""streamsafe's caching allocator as PyTorch's CUDA allocator (docs/pytorch.md, "The allocator").

torch.cuda.memory.CUDAPluggableAllocator loads libstreamsafe_torch_alloc.so (a C ABI over the
CUDA runtime, no libtorch). Under a pluggable allocator torch's own statistics, snapshots and
memory pools raise torch's generic error; use_allocator() puts errors in their place that name
the feature and what to use instead, and patch_memory_apis() makes the statistics work again.
"""

import contextlib
import ctypes
import inspect
import os
import pathlib

LIBRARY_NAME = "libstreamsafe_torch_alloc.so"
LIBRARY_ENV = "STREAMSAFE_TORCH_ALLOC_LIB"
ABI_VERSION = 1

__all__ = [
    "AllocatorError",
    "UnsupportedFeatureError",
    "use_allocator",
    "allocator_in_use",
    "memory_stats",
    "memory_stats_as_nested_dict",
    "memory_allocated",
    "max_memory_allocated",
    "memory_reserved",
    "max_memory_reserved",
    "reset_peak_memory_stats",
    "memory_summary",
    "empty_cache",
    "patch_memory_apis",
    "unpatch_memory_apis",
]


class AllocatorError(RuntimeError):
    """use_allocator() cannot install streamsafe's allocator, or a call into it failed."""


class UnsupportedFeatureError(AllocatorError):
    """A PyTorch feature that does not work with a pluggable allocator was used."""


# --- the shared library -------------------------------------------------------------------------


class _Stat(ctypes.Structure):
    _fields_ = [("key", ctypes.c_char_p), ("value", ctypes.c_int64)]


def library_candidates():
    """Where the library is looked for, in order: $STREAMSAFE_TORCH_ALLOC_LIB, next to the
    package (an installed tree: <prefix>/lib/pythonX/site-packages/streamsafe and <prefix>/lib),
    then the build trees of a source checkout (build/*/python/torch_alloc)."""
    candidates = []
    if os.environ.get(LIBRARY_ENV):
        candidates.append(pathlib.Path(os.environ[LIBRARY_ENV]))
    package = pathlib.Path(__file__).resolve().parent.parent
    candidates += [package / LIBRARY_NAME, package / "lib" / LIBRARY_NAME]
    candidates += [parent / LIBRARY_NAME for parent in package.parents if parent.name == "lib"][:1]
    checkout = package.parent.parent
    candidates += sorted(checkout.glob("build/*/python/torch_alloc/" + LIBRARY_NAME))
    return candidates


def find_library():
    candidates = library_candidates()
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise AllocatorError(
        f"{LIBRARY_NAME} not found (looked at: {', '.join(map(str, candidates))}); build streamsafe with "
        f"-DSTREAMSAFE_CUDA=ON, or set {LIBRARY_ENV} to the library's path"
    )


class _Library:
    """The C ABI through ctypes (streamsafe_torch_alloc.h)."""

    def __init__(self, path):
        self.path = pathlib.Path(path)
        try:
            self._lib = ctypes.CDLL(str(self.path))
        except OSError as error:
            raise AllocatorError(f"cannot load {self.path}: {error}") from error
        lib = self._lib
        lib.streamsafe_torch_abi_version.restype = ctypes.c_int
        version = lib.streamsafe_torch_abi_version()
        if version != ABI_VERSION:
            raise AllocatorError(f"{self.path} has C ABI version {version}; this package needs {ABI_VERSION}")
        lib.streamsafe_torch_configure.argtypes = [ctypes.c_char_p]
        lib.streamsafe_torch_stats.argtypes = [ctypes.c_int, ctypes.POINTER(_Stat), ctypes.c_size_t]
        lib.streamsafe_torch_stats.restype = ctypes.c_size_t
        lib.streamsafe_torch_reset_peak_stats.argtypes = [ctypes.c_int]
        lib.streamsafe_torch_deferred_frees.restype = ctypes.c_size_t
        lib.streamsafe_torch_last_error.restype = ctypes.c_char_p

    def address(self, symbol):
        """The address of a C function, as torch's set_*_fn calls take it."""
        return ctypes.cast(getattr(self._lib, symbol), ctypes.c_void_p).value

    def _check(self, status, call):
        if status != 0:
            raise AllocatorError(f"{call}: {self._lib.streamsafe_torch_last_error().decode()}")

    def configure(self, conf):
        self._check(self._lib.streamsafe_torch_configure(conf.encode()), f"options '{conf}'")

    def stats(self, device):
        count = self._lib.streamsafe_torch_stats(device, None, 0)
        entries = (_Stat * count)()
        filled = self._lib.streamsafe_torch_stats(device, entries, count)
        if filled == 0:
            raise AllocatorError(f"memory_stats(cuda:{device}): {self._lib.streamsafe_torch_last_error().decode()}")
        return {entry.key.decode(): entry.value for entry in entries}

    def reset_peak_stats(self, device):
        self._check(self._lib.streamsafe_torch_reset_peak_stats(device), f"reset_peak_memory_stats(cuda:{device})")

    def empty_cache(self):
        self._lib.streamsafe_torch_empty_cache()

    def deferred_frees(self):
        return self._lib.streamsafe_torch_deferred_frees()


# --- options ------------------------------------------------------------------------------------


def options_string(options):
    """use_allocator's keyword arguments in the STREAMSAFE_ALLOC_CONF syntax: keys as in
    docs/allocator.md, sizes as ints (bytes) or strings with KiB/MiB/GiB, switches as bools."""
    items = []
    for key, value in options.items():
        if isinstance(value, bool):
            value = "on" if value else "off"
        text = str(value)
        if any(c in text for c in ",:") or not text:
            raise AllocatorError(f"allocator option {key}={value!r}: a value may not be empty or hold ',' or ':'")
        items.append(f"{key}:{text}")
    return ",".join(items)


# --- patching torch -----------------------------------------------------------------------------


class _Patches:
    """Attributes replaced on torch's modules, restorable in reverse order."""

    def __init__(self):
        self._saved = []

    _INHERITED = object()

    def replace(self, owner, name, value):
        if not hasattr(owner, name):
            return False
        # The attribute itself (a descriptor stays a descriptor), or a mark that it was inherited.
        original = vars(owner).get(name, self._INHERITED)
        self._saved.append((owner, name, original))
        setattr(owner, name, value)
        return True

    def restore(self):
        while self._saved:
            owner, name, original = self._saved.pop()
            if original is self._INHERITED:
                delattr(owner, name)
            else:
                setattr(owner, name, original)


class _State:
    def __init__(self):
        self.library = None
        self.options = None
        self.pluggable = None
        self.record_stream_wired = False
        self.empty_cache_wired = False
        self.guards = _Patches()
        self.memory_patches = None


_state = _State()


def _raiser(feature, instead):
    def unsupported(*args, **kwargs):
        raise UnsupportedFeatureError(
            f"{feature} does not work with streamsafe's allocator (a pluggable allocator in PyTorch); {instead}"
        )

    return unsupported


_STATS_HINT = "use streamsafe.torch.memory_stats(), or call streamsafe.torch.patch_memory_apis() once"

# torch.cuda re-exports most of torch.cuda.memory's functions, so both names are guarded (the
# statistics: those patch_memory_apis replaces, see _PATCHED). The deprecated aliases
# (memory_cached, reset_max_memory_allocated, ...) call those through torch.cuda.memory's
# globals, so they follow the guards and the patch without their own.
# (attribute, the feature as the error names it, what to do instead)
_UNSUPPORTED = [
    ("memory_snapshot", "memory snapshots (torch.cuda.memory_snapshot)", "use the allocator's own snapshot in C++"),
    ("_snapshot", "memory snapshots (torch.cuda.memory._snapshot)", "use the allocator's own snapshot in C++"),
    ("_record_memory_history", "memory history (torch.cuda.memory._record_memory_history)",
     "set history:<entries> in the allocator options instead"),
    ("_dump_snapshot", "memory snapshots (torch.cuda.memory._dump_snapshot)", "use the allocator's own snapshot in C++"),
    ("MemPool", "torch.cuda.MemPool", "allocate from the default pool"),
    ("use_mem_pool", "torch.cuda.use_mem_pool", "allocate from the default pool"),
    ("get_per_process_memory_fraction", "torch.cuda.get_per_process_memory_fraction", "there is no memory fraction"),
    ("reset_accumulated_memory_stats", "torch.cuda.reset_accumulated_memory_stats",
     "the totals cannot be reset; use reset_peak_memory_stats() for peaks"),
]


def _guard_modules(torch):
    return [torch.cuda, torch.cuda.memory]


def _install_guards(torch):
    guards = _state.guards
    for module in _guard_modules(torch):
        for name in _PATCHED:
            guards.replace(module, name, _raiser(f"torch.cuda.{name}", _STATS_HINT))
        for name, feature, instead in _UNSUPPORTED:
            guards.replace(module, name, _raiser(feature, instead))
    ipc = _raiser("sharing CUDA tensors between processes (CUDA IPC)", "copy them to the host, or share from a "
                  "process that uses PyTorch's allocator")
    for storage in ("UntypedStorage", "_UntypedStorage"):
        if hasattr(torch, storage):
            guards.replace(getattr(torch, storage), "_share_cuda_", ipc)
    _guard_cudnn_benchmark(torch, guards)


def _guard_cudnn_benchmark(torch, guards):
    """cudnn.benchmark asks the allocator for its largest free block (cacheInfo), which a
    pluggable allocator does not answer: setting it to True raises here, at the setting line."""
    cudnn = getattr(torch.backends, "cudnn", None)
    # getattr_static: torch's ContextProp answers the flag's value to a plain getattr on the class.
    prop = inspect.getattr_static(type(cudnn), "benchmark", None) if cudnn is not None else None
    if prop is None or not hasattr(prop, "__set__"):
        return
    refuse = _raiser("torch.backends.cudnn.benchmark", "leave it False (cuDNN picks its algorithms by heuristics)")

    class _Guarded:
        def __get__(self, obj, owner=None):
            return prop.__get__(obj, owner)

        def __set__(self, obj, value):
            if value:
                refuse()
            prop.__set__(obj, value)

    if cudnn.benchmark:
        refuse()
    guards.replace(type(cudnn), "benchmark", _Guarded())


# --- install ------------------------------------------------------------------------------------


def _wire(native, setter, address):
    fn = getattr(native, setter, None)
    if fn is None:
        return False
    fn(address)
    return True


def use_allocator(**options):
    """Makes streamsafe's caching allocator PyTorch's CUDA allocator for this process.

    Call it before anything initializes CUDA (the first CUDA tensor, torch.cuda.current_device(),
    ...): torch cannot swap an allocator that has served memory. Options are those of
    STREAMSAFE_ALLOC_CONF (docs/allocator.md), e.g. use_allocator(expandable_growth="settle",
    repeat_plan=False), over the environment variable's. Calling it again
    with the same options does nothing; with others it raises. Returns the library path.
    """
    import torch

    conf = options_string(options)
    if _state.library is not None:
        if conf != _state.options:
            raise AllocatorError(f"streamsafe's allocator is already in use with options '{_state.options}'")
        return _state.library.path
    memory = torch.cuda.memory
    if not hasattr(memory, "CUDAPluggableAllocator") or not hasattr(memory, "change_current_allocator"):
        raise AllocatorError(
            f"PyTorch {torch.__version__} has no torch.cuda.memory.CUDAPluggableAllocator (PyTorch 2.0 or later)"
        )
    if torch.cuda.is_initialized():
        raise AllocatorError(
            "CUDA is already initialized in this process, so PyTorch's allocator can no longer be replaced: call "
            "streamsafe.torch.use_allocator() before the first CUDA tensor or torch.cuda call"
        )
    library = _load_library(find_library())
    library.configure(conf)
    pluggable = memory.CUDAPluggableAllocator(str(library.path), "streamsafe_torch_malloc", "streamsafe_torch_free")
    native = pluggable.allocator()
    # Without it x.record_stream(s) does nothing at all under a pluggable allocator.
    if not _wire(native, "set_record_stream_fn", library.address("streamsafe_torch_record_stream")):
        raise AllocatorError(
            f"PyTorch {torch.__version__} cannot pass record_stream to a pluggable allocator (no "
            "set_record_stream_fn): tensor.record_stream(s) would silently do nothing, and memory used on a "
            "second stream could be reused while it still reads it"
        )
    empty_cache_wired = _wire(native, "set_reset_fn", library.address("streamsafe_torch_empty_cache"))
    memory.change_current_allocator(pluggable)
    _state.library, _state.options, _state.pluggable = library, conf, pluggable
    _state.record_stream_wired, _state.empty_cache_wired = True, empty_cache_wired
    _install_guards(torch)
    if not empty_cache_wired:
        _state.guards.replace(torch.cuda, "empty_cache", empty_cache)
        _state.guards.replace(memory, "empty_cache", empty_cache)
    return library.path


def _load_library(path):
    return _Library(path)


def allocator_in_use():
    """True once use_allocator() has installed the allocator."""
    return _state.library is not None


def _library():
    if _state.library is None:
        raise AllocatorError("streamsafe's allocator is not in use: call streamsafe.torch.use_allocator() first")
    return _state.library


# --- statistics ---------------------------------------------------------------------------------


def _device_index(device):
    if device is None:
        import torch

        return torch.cuda.current_device()
    if isinstance(device, int):
        return device
    index = getattr(device, "index", None)
    if index is None and isinstance(device, str):
        import torch

        index = torch.device(device).index
    if index is None:
        import torch

        return torch.cuda.current_device()
    return index


def memory_stats(device=None):
    """Statistics of streamsafe's allocator for `device` under torch.cuda.memory_stats' key names
    ("allocated_bytes.all.current", "reserved_bytes.all.peak", "num_alloc_retries", ...), sorted
    by key. Only the ".all" figures: the allocator does not split small and large pools as torch does."""
    stats = _library().stats(_device_index(device))
    return dict(sorted(stats.items()))


def memory_allocated(device=None):
    return memory_stats(device)["allocated_bytes.all.current"]


def max_memory_allocated(device=None):
    return memory_stats(device)["allocated_bytes.all.peak"]


def memory_reserved(device=None):
    return memory_stats(device)["reserved_bytes.all.current"]


def max_memory_reserved(device=None):
    return memory_stats(device)["reserved_bytes.all.peak"]


def memory_stats_as_nested_dict(device=None):
    """memory_stats() as torch nests it: {"allocated_bytes": {"all": {"current": ...}}, ...}."""
    nested = {}
    for key, value in memory_stats(device).items():
        *path, leaf = key.split(".")
        node = nested
        for part in path:
            node = node.setdefault(part, {})
        node[leaf] = value
    return nested


def reset_peak_memory_stats(device=None):
    _library().reset_peak_stats(_device_index(device))


def empty_cache():
    """Waits for pending frees and returns every free cached segment to the device."""
    _library().empty_cache()


def _mib(value):
    return f"{value / (1 << 20):,.1f} MiB"


def memory_summary(device=None, abbreviated=False):
    """A table of the main figures, in the spirit of torch.cuda.memory_summary."""
    index = _device_index(device)
    stats = memory_stats(index)
    rows = [("Allocated memory", "allocated_bytes", _mib), ("Active memory", "active_bytes", _mib),
            ("Requested memory", "requested_bytes", _mib), ("Reserved memory", "reserved_bytes", _mib),
            ("Allocations", "allocation", str), ("Active allocs", "active", str), ("Segments", "segment", str)]
    if abbreviated:
        rows = rows[:4]
    lines = [f"streamsafe allocator, cuda:{index}", f"{'':20}{'current':>16}{'peak':>16}{'allocated':>18}{'freed':>18}"]
    for title, key, show in rows:
        cells = "".join(f"{show(stats[f'{key}.all.{field}']):>{width}}"
                        for field, width in (("current", 16), ("peak", 16), ("allocated", 18), ("freed", 18)))
        lines.append(f"{title:20}{cells}")
    lines.append(f"retries {stats['num_alloc_retries']}, OOMs {stats['num_ooms']}, "
                 f"device allocations {stats['num_device_alloc']}, device frees {stats['num_device_free']}")
    return "\n".join(lines) + "\n"


_PATCHED = {
    "memory_stats": memory_stats,
    "memory_stats_as_nested_dict": memory_stats_as_nested_dict,
    "memory_allocated": memory_allocated,
    "max_memory_allocated": max_memory_allocated,
    "memory_reserved": memory_reserved,
    "max_memory_reserved": max_memory_reserved,
    "reset_peak_memory_stats": reset_peak_memory_stats,
    "memory_summary": memory_summary,
}


def patch_memory_apis():
    """Makes torch.cuda.memory_stats, memory_stats_as_nested_dict, memory_allocated,
    max_memory_allocated, memory_reserved, max_memory_reserved, reset_peak_memory_stats and
    memory_summary (and the deprecated aliases that call them) answer from streamsafe's allocator, so existing memory monitors keep working. Usable as a context manager; otherwise
    unpatch_memory_apis() restores what was there."""
    import torch

    _library()
    if _state.memory_patches is None:
        patches = _Patches()
        for module in _guard_modules(torch):
            for name, replacement in _PATCHED.items():
                patches.replace(module, name, replacement)
        _state.memory_patches = patches
    return _Unpatch()


class _Unpatch(contextlib.AbstractContextManager):
    def __exit__(self, *exc):
        unpatch_memory_apis()
        return False


def unpatch_memory_apis():
    if _state.memory_patches is not None:
        _state.memory_patches.restore()
        _state.memory_patches = None


def _reset_for_tests():
    """Forgets the installed allocator and restores what use_allocator patched (tests only: a
    real process cannot take its allocator back)."""
    global _state
    unpatch_memory_apis()
    _state.guards.restore()
    _state = _State()
