set -u
{ cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag; uname -r; } > /tmp/thp.txt 2>&1
zcat bench/traces/gpt2_train.alloc.csv.gz > /tmp/gpt2.csv
P=.device-build/pl
g++ -O2 -std=c++20 -I$P/vec -Isrc -Iinclude .device-build/pl/det_time2.cpp $P/rd_vec.cpp -o /tmp/det_vec -pthread
g++ -O2 -std=c++20 -I$P/old -Isrc -Iinclude .device-build/pl/det_time2.cpp src/alloc/repeat_detector.cpp $P/hp_old.cpp -o /tmp/det_huge -pthread
g++ -O2 -std=c++20 -Isrc -Iinclude .device-build/pl/det_time2.cpp src/alloc/repeat_detector.cpp src/common/huge_page_array.cpp -o /tmp/det_prefault -pthread
for b in det_vec det_huge det_prefault; do for k in 1 2 3; do DET=1 /tmp/$b < /tmp/gpt2.csv | awk '{s+=$3; if(NR<=3)f=f" "$3} END {printf "%s first3%s mean30 %.1f\n", "'$b'", f, s/NR}'; done; done >> /tmp/thp.txt 2>&1
for k in 1 2; do /tmp/det_vec < /tmp/gpt2.csv | awk '{s+=$3} END {printf "no detector mean30 %.1f\n", s/NR}'; done >> /tmp/thp.txt
COMMIT=$COMMIT bash .device-build/call4.sh
cp /tmp/thp.txt /tmp/r/ 2>/dev/null; tar czf $OUT/run.tar.gz -C /tmp r
