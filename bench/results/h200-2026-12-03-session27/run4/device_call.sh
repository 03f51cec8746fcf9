set -u; R=/tmp/r; rm -rf $R; mkdir -p $R; deps=$PWD/.device-build/deps/usr; s=$(date +%s)
zlib=$(ls /lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/libz.so.1 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$deps/lib/x86_64-linux-gnu
g++ -O2 .device-build/pf.cpp -o /tmp/pf && { /tmp/pf; /tmp/pf; } > $R/page_faults.txt 2>&1
rm -rf /tmp/t-new /tmp/t-base && mkdir -p /tmp/t-new /tmp/t-base && tar --exclude=./.device-build -cf - . | tar -x -C /tmp/t-new && tar xzf .device-build/base.tar.gz -C /tmp/t-base
for t in new base; do
  python3 .device-build/instrument.py /tmp/t-$t
  cmake -S /tmp/t-$t -B /tmp/t-$t/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTREAMSAFE_CUDA=OFF -DSTREAMSAFE_TESTS=OFF -DSTREAMSAFE_FUZZ=OFF -DCMAKE_CXX_FLAGS="-isystem $deps/include" -Dsimdjson_DIR="$deps/lib/x86_64-linux-gnu/cmake/simdjson" -DZLIB_INCLUDE_DIR="$deps/include" -DZLIB_LIBRARY="$zlib" -DSTREAMSAFE_TORCH_NATIVE=OFF > $R/configure_$t.txt 2>&1
  cmake --build /tmp/t-$t/build --target streamsafe_cli -j16 > $R/build_$t.txt 2>&1; echo "$t built rc $? $(( $(date +%s)-s )) s" | tee -a $R/log.txt
done
for r in 1 2 3 4 5 6; do for t in new base; do
  echo "round $r $t: $(/tmp/t-$t/build/tools/streamsafe/streamsafe replay .device-build/traces/inf10_s1.csv.gz --iterations 4 --json 2>&1 >/dev/null | tr '\n' ' ')" | tee -a $R/switch.txt
done; done
echo "total $(( $(date +%s)-s )) s" | tee -a $R/log.txt
tar czf $OUT/run.tar.gz -C /tmp r
