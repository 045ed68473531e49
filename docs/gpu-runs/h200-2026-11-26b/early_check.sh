#!/usr/bin/env bash
# Early GPU check of the cuDNN fixes (not committed): tests, speed, memory, one trace.
set -u
B=build/gpu-bundle
R=$B/bin/run
cd "$(dirname "$0")/.."
log=$OUT/early.log
exec > >(tee "$log") 2>&1
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
mem() { (while :; do nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits; sleep 0.5; done) > "$1" 2>/dev/null & echo $!; }
peak() { sort -n "$1" | tail -1; }
el tests
timeout 60 $R cuda_backend_test > $OUT/cuda_backend_test.txt 2>&1; echo "cuda_backend_test rc=$?"
grep -E "^\[  (FAILED|PASSED)|Failure|Which is|Expected" $OUT/cuda_backend_test.txt | head -30
timeout 120 $R backend_conformance_test --gtest_filter='*cuda*' > $OUT/conformance.txt 2>&1; echo "conformance rc=$?"
grep -E "^\[  FAILED|^\[  PASSED|Failure|worst error|heap grew|in use at most" $OUT/conformance.txt | head -60
el stoker
run() {  # tag args...
  local tag=$1; shift
  local m; m=$(mem /tmp/mem_$tag)
  timeout --foreground 60 $R stoker train --synthetic --backend cuda --arch resnet50 --batch 256 --size 224 \
    --steps 30 --timing-warmup 5 --json $OUT/s_$tag.json "$@" > /tmp/s_$tag.out 2>&1
  echo "-- $tag rc=$? peak_mib=$(peak /tmp/mem_$tag)"; kill $m 2>/dev/null
  grep -E "img/s|cuda:|error|Error" /tmp/s_$tag.out | tail -4
}
run f16-nhwc --precision f16 --compute-layout nhwc
run bf16-nhwc --precision bf16 --compute-layout nhwc
run bf16-nhwc-graph --precision bf16 --compute-layout nhwc --graph
run f16-nhwc-exh --precision f16 --compute-layout nhwc --graph --conv-algo exhaustive
run tf32-nchw --precision tf32 --compute-layout nchw
run bf16-nhwc-trace --precision bf16 --compute-layout nhwc --graph --trace $OUT/trace_bf16_graph.json --trace-steps 10:12
el torch
m=$(mem /tmp/mem_torch)
timeout 90 python3 $B/bench/torch_gpu_bench.py --variants f16-nhwc,bf16-nhwc,tf32-nchw --steps 30 --warmup 5 --json $OUT/torch.json > /tmp/torch.out 2>&1
echo "torch rc=$? peak_mib(all variants)=$(peak /tmp/mem_torch)"; kill $m
tail -8 /tmp/torch.out
el done
cd /tmp && tar czf $OUT/outs.tgz s_*.out torch.out mem_* 2>/dev/null
