"""streamsafe.torch's allocator without a GPU: the ctypes binding against the C ABI built on a sim
device ($STREAMSAFE_TORCH_ALLOC_SIM_LIB), and use_allocator's wiring into torch with torch's
pluggable-allocator classes replaced by fakes (Debian's torch 1.13 is CPU-only and has none)."""

import ctypes
import os
import types
import unittest
from unittest import mock

try:
    import torch
except ImportError:  # the tests that need it skip
    torch = None

from streamsafe.torch import _allocator as alloc

SIM_LIB = os.environ.get("STREAMSAFE_TORCH_ALLOC_SIM_LIB")
PRODUCER = ctypes.c_void_p(0x1000)  # a fake cudaStream_t: the sim library adopts any handle

TORCH_KEYS = {f"{stat}.all.{field}"
              for stat in ("allocated_bytes", "active_bytes", "requested_bytes", "reserved_bytes", "allocation",
                           "active", "segment")
              for field in ("current", "peak", "allocated", "freed")} | {
    "num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc", "num_device_free"}


def sim_library():
    library = alloc._Library(SIM_LIB)
    raw = library._lib
    raw.streamsafe_torch_malloc.restype = ctypes.c_void_p
    raw.streamsafe_torch_malloc.argtypes = [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
    raw.streamsafe_torch_free.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
    return library, raw


@unittest.skipUnless(SIM_LIB, "STREAMSAFE_TORCH_ALLOC_SIM_LIB not set (ctest sets it)")
class CtypesBindingOnSim(unittest.TestCase):
    """One process-wide allocator per loaded library: the steps depend on their order."""

    def test_options_then_allocations_then_statistics(self):
        library, raw = sim_library()
        with self.assertRaisesRegex(alloc.AllocatorError, "no_such_key"):
            library.configure("no_such_key:1")
        library.configure("segments:fixed,small_segment:4MiB")
        stats = library.stats(0)
        self.assertEqual(set(stats), TORCH_KEYS)
        self.assertTrue(all(value == 0 for value in stats.values()))

        ptr = raw.streamsafe_torch_malloc(1000, 0, PRODUCER)
        self.assertTrue(ptr)
        stats = library.stats(0)
        self.assertEqual(stats["allocated_bytes.all.current"], 1024)
        self.assertEqual(stats["requested_bytes.all.current"], 1000)
        self.assertEqual(stats["reserved_bytes.all.current"], 4 << 20)
        with self.assertRaisesRegex(alloc.AllocatorError, "after the first allocation"):
            library.configure("segments:expandable")
        library.configure("")  # nothing to change: accepted at any time

        raw.streamsafe_torch_free(ptr, 1000, 0, PRODUCER)
        self.assertEqual(library.stats(0)["allocated_bytes.all.peak"], 1024)
        library.reset_peak_stats(0)
        self.assertEqual(library.stats(0)["allocated_bytes.all.peak"], 0)
        library.empty_cache()
        self.assertEqual(library.stats(0)["reserved_bytes.all.current"], 0)
        self.assertEqual(library.deferred_frees(), 0)
        self.assertTrue(library.address("streamsafe_torch_record_stream"))


class OptionsString(unittest.TestCase):
    def test_keywords_become_alloc_conf(self):
        self.assertEqual(alloc.options_string({"segments": "fixed", "repeat_plan": False, "granularity": 2 << 20,
                                               "small_segment": "4MiB"}),
                         "segments:fixed,repeat_plan:off,granularity:2097152,small_segment:4MiB")
        self.assertEqual(alloc.options_string({}), "")

    def test_a_value_that_would_split_the_string_is_refused(self):
        with self.assertRaisesRegex(alloc.AllocatorError, "segments"):
            alloc.options_string({"segments": "fixed,cross_stream:never"})


class FakeNative:
    def __init__(self, record=True, reset=True):
        self.wired = {}
        if record:
            self.set_record_stream_fn = lambda address: self.wired.__setitem__("record_stream", address)
        if reset:
            self.set_reset_fn = lambda address: self.wired.__setitem__("reset", address)


class FakePluggable:
    native = None

    def __init__(self, path, alloc_fn, free_fn):
        self.args = (path, alloc_fn, free_fn)

    def allocator(self):
        return FakePluggable.native


@unittest.skipIf(torch is None, "torch is not installed")
@unittest.skipUnless(SIM_LIB, "STREAMSAFE_TORCH_ALLOC_SIM_LIB not set (ctest sets it)")
class UseAllocator(unittest.TestCase):
    def setUp(self):
        self.installed = []
        FakePluggable.native = FakeNative()
        self.patchers = [
            mock.patch.object(torch.cuda.memory, "CUDAPluggableAllocator", FakePluggable, create=True),
            mock.patch.object(torch.cuda.memory, "change_current_allocator", self.installed.append, create=True),
            mock.patch.object(torch.cuda, "is_initialized", lambda: False),
            mock.patch.dict(os.environ, {alloc.LIBRARY_ENV: SIM_LIB}),
        ]
        for patcher in self.patchers:
            patcher.start()
        self.originals = {name: getattr(torch.cuda, name) for name in ("memory_allocated", "memory_stats",
                                                                       "memory_snapshot", "empty_cache")}

    def tearDown(self):
        alloc._reset_for_tests()
        for patcher in reversed(self.patchers):
            patcher.stop()
        for name, original in self.originals.items():
            self.assertIs(getattr(torch.cuda, name), original, f"torch.cuda.{name} left patched")

    def test_cuda_already_initialized_is_refused_before_anything_changes(self):
        with mock.patch.object(torch.cuda, "is_initialized", lambda: True):
            with self.assertRaisesRegex(alloc.AllocatorError, "already initialized"):
                alloc.use_allocator()
        self.assertEqual(self.installed, [])
        self.assertFalse(alloc.allocator_in_use())

    def test_a_torch_without_pluggable_allocators_is_named(self):
        with mock.patch.object(torch.cuda, "memory", types.SimpleNamespace(change_current_allocator=print)):
            with self.assertRaisesRegex(alloc.AllocatorError, "no torch.cuda.memory.CUDAPluggableAllocator"):
                alloc.use_allocator()

    def test_record_stream_and_empty_cache_are_wired_to_the_library(self):
        path = alloc.use_allocator()
        self.assertEqual(len(self.installed), 1)
        self.assertEqual(self.installed[0].args, (str(path), "streamsafe_torch_malloc", "streamsafe_torch_free"))
        library = alloc._state.library
        wired = FakePluggable.native.wired
        self.assertEqual(wired["record_stream"], library.address("streamsafe_torch_record_stream"))
        self.assertEqual(wired["reset"], library.address("streamsafe_torch_empty_cache"))
        self.assertIs(torch.cuda.empty_cache, self.originals["empty_cache"])  # torch's reaches us through reset_fn

    def test_a_torch_that_cannot_wire_record_stream_is_refused(self):
        FakePluggable.native = FakeNative(record=False)
        with self.assertRaisesRegex(alloc.AllocatorError, "record_stream"):
            alloc.use_allocator()
        self.assertEqual(self.installed, [])

    def test_without_a_reset_hook_empty_cache_is_patched_to_reach_the_library(self):
        FakePluggable.native = FakeNative(reset=False)
        alloc.use_allocator()
        self.assertIs(torch.cuda.empty_cache, alloc.empty_cache)
        torch.cuda.empty_cache()

    def test_again_with_the_same_options_does_nothing_with_others_raises(self):
        alloc.use_allocator()
        alloc.use_allocator()
        self.assertEqual(len(self.installed), 1)
        with self.assertRaisesRegex(alloc.AllocatorError, "already in use"):
            alloc.use_allocator(segments="fixed")

    def test_unsupported_features_raise_naming_themselves(self):
        alloc.use_allocator()
        with self.assertRaisesRegex(alloc.UnsupportedFeatureError, "memory snapshots"):
            torch.cuda.memory_snapshot()
        with self.assertRaisesRegex(alloc.UnsupportedFeatureError, "memory history"):
            torch.cuda.memory._record_memory_history()
        with self.assertRaisesRegex(alloc.UnsupportedFeatureError, "patch_memory_apis"):
            torch.cuda.memory_allocated()
        with self.assertRaisesRegex(alloc.UnsupportedFeatureError, "patch_memory_apis"):
            torch.cuda.memory_cached()  # a deprecated alias meets the guard of what it calls
        with self.assertRaisesRegex(alloc.UnsupportedFeatureError, "CUDA IPC"):
            torch.UntypedStorage._share_cuda_(None)
        with self.assertRaisesRegex(alloc.UnsupportedFeatureError, "cudnn.benchmark"):
            torch.backends.cudnn.benchmark = True
        self.assertFalse(torch.backends.cudnn.benchmark)
        torch.backends.cudnn.benchmark = False

    def test_patched_memory_apis_answer_from_the_allocator_and_unpatch_restores_the_guards(self):
        alloc.use_allocator()
        _, raw = sim_library()
        with alloc.patch_memory_apis():
            before = torch.cuda.memory_allocated(0)
            ptr = raw.streamsafe_torch_malloc(4096, 0, PRODUCER)
            self.assertEqual(torch.cuda.memory_allocated(0), before + 4096)
            self.assertEqual(torch.cuda.memory.memory_allocated(0), before + 4096)
            self.assertGreaterEqual(torch.cuda.max_memory_allocated(0), before + 4096)
            self.assertGreaterEqual(torch.cuda.memory_reserved(0), before + 4096)
            stats = torch.cuda.memory_stats(0)
            self.assertEqual(set(stats), TORCH_KEYS)
            self.assertEqual(list(stats), sorted(stats))
            self.assertIn("Allocated memory", torch.cuda.memory_summary(0))
            self.assertEqual(torch.cuda.memory_stats_as_nested_dict(0)["allocated_bytes"]["all"]["current"],
                             before + 4096)
            self.assertEqual(torch.cuda.memory_cached(0), torch.cuda.memory_reserved(0))  # an alias follows
            raw.streamsafe_torch_free(ptr, 4096, 0, PRODUCER)
            torch.cuda.reset_peak_memory_stats(0)
            self.assertEqual(torch.cuda.max_memory_allocated(0), before)
        with self.assertRaises(alloc.UnsupportedFeatureError):
            torch.cuda.memory_allocated(0)

    def test_statistics_before_use_allocator_say_so(self):
        with self.assertRaisesRegex(alloc.AllocatorError, "use_allocator"):
            alloc.memory_stats(0)


class LibraryLookup(unittest.TestCase):
    def test_a_missing_library_names_where_it_looked_and_the_variable(self):
        with mock.patch.dict(os.environ, {alloc.LIBRARY_ENV: "/nonexistent/libstreamsafe_torch_alloc.so"}):
            with mock.patch.object(alloc, "library_candidates",
                                   lambda: [alloc.pathlib.Path("/nonexistent/libstreamsafe_torch_alloc.so")]):
                with self.assertRaisesRegex(alloc.AllocatorError, alloc.LIBRARY_ENV):
                    alloc.find_library()

    def test_the_environment_variable_comes_first(self):
        with mock.patch.dict(os.environ, {alloc.LIBRARY_ENV: "/somewhere/lib.so"}):
            self.assertEqual(str(alloc.library_candidates()[0]), "/somewhere/lib.so")


if __name__ == "__main__":
    unittest.main()
