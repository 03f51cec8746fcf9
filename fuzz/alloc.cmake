# Fuzz target of the alloc layer: the allocation trace parser.
streamsafe_fuzz_target(fuzz_alloc_trace alloc_trace_fuzz.cpp corpus/alloc_trace)
