# Fuzz targets of the hazard layer.
streamsafe_fuzz_target(fuzz_oplog oplog_fuzz.cpp corpus/oplog)
