set -u
BUDGET=240 bash bench/gpu_verify_session.sh; mv /tmp/r /tmp/verify
COMMIT=$COMMIT bash .device-build/call4.sh
mv /tmp/verify /tmp/r/verify; tar czf $OUT/run.tar.gz -C /tmp r
