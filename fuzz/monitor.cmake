# Fuzz target of the monitor layer: the trace reader.
streamsafe_fuzz_target(fuzz_trace trace_fuzz.cpp corpus/trace)
