"""streamsafe._engine: one packed call per op reaches the engine; findings come back with the
engine's kind names, both ops and both call sites. Needs no torch."""

import unittest

import streamsafe

A, B = 11, 22
BUF = 0x10000


class EngineBindingTest(unittest.TestCase):
    def setUp(self):
        self.engine = streamsafe.Engine()
        self.engine.name_stream(A, "producer")
        self.engine.name_stream(B, "consumer")
        self.write = self.engine.label("fill", "app.py:10")
        self.read = self.engine.label("sum", "app.py:20")

    def test_unordered_write_then_read_is_a_race_naming_both_sites(self):
        self.assertEqual(self.engine.op(A, [(BUF, 256, True)], self.write), 0)
        self.assertEqual(self.engine.op(B, [(BUF + 128, 64, False)], self.read), 1)
        (found,) = self.engine.take_hazards()
        self.assertEqual(found["kind"], "race")
        self.assertEqual((found["first"]["op"], found["first"]["loc"], found["first"]["stream"]),
                         ("fill", "app.py:10", "producer"))
        self.assertEqual((found["second"]["op"], found["second"]["loc"], found["second"]["stream"]),
                         ("sum", "app.py:20", "consumer"))
        self.assertEqual(found["range"], (BUF + 128, 64))
        self.assertEqual(self.engine.take_hazards(), [])

    def test_event_wait_orders_the_read(self):
        self.engine.op(A, [(BUF, 256, True)], self.write)
        self.engine.event_record(7, A, self.engine.label("record"))
        self.engine.stream_wait_event(B, 7, self.engine.label("wait"))
        self.assertEqual(self.engine.op(B, [(BUF, 256, False)], self.read), 0)

    def test_disjoint_ranges_of_one_op_do_not_race(self):
        self.engine.op(A, [(BUF, 128, True)], self.write)
        self.assertEqual(self.engine.op(B, [(BUF + 128, 128, True), (BUF, 128, False)], self.read), 1)
        self.assertEqual(self.engine.take_hazards()[0]["range"], (BUF, 128))

    def test_repeats_between_the_same_sites_count_once(self):
        for _ in range(3):
            self.engine.op(A, [(BUF, 64, True)], self.write)
            self.engine.op(B, [(BUF, 64, False)], self.read)
        found = {(h["first"]["op"], h["second"]["op"]): h["count"] for h in self.engine.hazards()}
        self.assertEqual(found, {("fill", "sum"): 3, ("sum", "fill"): 2})

    def test_host_read_before_sync_then_after(self):
        self.engine.op(A, [(BUF, 64, True)], self.write)
        self.assertEqual(self.engine.host_op([(BUF, 64, False)], self.read), 1)
        self.assertEqual(self.engine.take_hazards()[0]["kind"], "host_race")
        self.engine.stream_sync(A, self.engine.label("sync"))
        other = self.engine.label("sum", "app.py:30")
        self.assertEqual(self.engine.host_op([(BUF, 64, False)], other), 0)

    def test_missing_record_stream_is_a_reuse_race(self):
        site = self.engine.label("alloc")
        self.engine.alloc(BUF, 256, A, site)
        self.engine.op(B, [(BUF, 256, False)], self.read)
        self.engine.free(BUF, self.engine.label("free", "app.py:25"))
        self.engine.alloc(BUF, 256, A, site)
        self.assertEqual(self.engine.op(A, [(BUF, 256, True)], self.write), 1)
        (found,) = self.engine.take_hazards()
        self.assertEqual(found["kind"], "reuse_race")
        self.assertEqual(found["free"]["loc"], "app.py:25")

    def test_record_stream_covers_the_reuse(self):
        site = self.engine.label("alloc")
        self.engine.alloc(BUF, 256, A, site)
        self.engine.op(B, [(BUF, 256, False)], self.read)
        self.engine.record_stream(BUF, B, site)
        self.engine.free(BUF, site)
        self.engine.alloc(BUF, 256, A, site)
        self.assertEqual(self.engine.op(A, [(BUF, 256, True)], self.write), 0)

    def test_broken_preconditions_raise_usage_error(self):
        with self.assertRaises(streamsafe.UsageError):
            self.engine.free(BUF, self.write)
        self.engine.alloc(BUF, 64, A, self.write)
        with self.assertRaises(streamsafe.UsageError):
            self.engine.alloc(BUF + 32, 64, A, self.write)
        with self.assertRaises(TypeError):
            self.engine.op(A, [(BUF, 64)], self.write)


if __name__ == "__main__":
    unittest.main()
