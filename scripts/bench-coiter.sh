#!/usr/bin/env bash
# The coiteration benchmark (issue 3, item 7): builds bench_inner_spgemm (with the MLIR 15
# sparsifier's kernel when mlir-opt-15 / mlir-translate-15 / clang-15 are installed: Debian
# packages mlir-15-tools and clang-15), runs it, prints one summary table, counts instructions
# with callgrind on a small case, and draws docs/coiter-speedup.png with gnuplot.
#
#   scripts/bench-coiter.sh [build-dir]        (default /tmp/build-coiter; -j2)
# Environment: REPS (repetitions, default 3), FILTER (a --benchmark_filter regex),
# OUT (where the JSON, tables and plot data go; default <build-dir>/bench-coiter),
# SKIP_RUN=1 (reuse OUT/bench.json: tables, callgrind and plot only), SKIP_CALLGRIND=1.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-/tmp/build-coiter}"
out="${OUT:-$build/bench-coiter}"
reps="${REPS:-3}"
mkdir -p "$build" "$out" "$here/docs"
[ -f "$build/CMakeCache.txt" ] || cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j2 --target bench_inner_spgemm bench_inner_spgemm_v3 >/dev/null
bin="$build/bench/bench_inner_spgemm"

[ -n "${SKIP_RUN:-}" ] || "$bin" --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
       --benchmark_min_time=0.05 ${FILTER:+--benchmark_filter="$FILTER"} \
       --benchmark_format=console --benchmark_out_format=json --benchmark_out="$out/bench.json" \
       > "$out/bench.txt" 2> "$out/bench.err" || { cat "$out/bench.err"; exit 1; }

# Instruction counts (valgrind cannot run AVX-512: the x86-64-v3 build, SPARSEJIT_ISA=avx2).
# SKIP_CALLGRIND=1 keeps OUT/callgrind.txt from an earlier run (the counts take minutes).
[ -n "${SKIP_CALLGRIND:-}" ] || : > "$out/callgrind.txt"
if [ -z "${SKIP_CALLGRIND:-}" ] && command -v valgrind >/dev/null; then
  for setup in spgemm-5% real-bcsstk06; do
    for v in scalar mlir driver jit-auto jit/n4/p001/broadcast jit/n8/p111/rotate; do
      f="$out/cg.$(echo "$setup-$v" | tr '/%' '__').out"
      if SPARSEJIT_ISA=avx2 valgrind --tool=callgrind --toggle-collect='*sj_bench_counted_run*' \
           --callgrind-out-file="$f" "$build/bench/bench_inner_spgemm_v3" --count "$v" "$setup" >/dev/null 2>&1; then
        ir=$(grep -m1 '^totals:' "$f" | awk '{print $2}')
        echo "$setup $v $ir" >> "$out/callgrind.txt"
      fi
    done
  done
fi

python3 - "$out" "$here/docs" <<'PY'
import json, math, sys, collections
out, docs = sys.argv[1], sys.argv[2]
data = json.load(open(f"{out}/bench.json"))
t = {}       # name -> median real time (ns)
label = {}
ctx = data.get("context", {})
for b in data["benchmarks"]:
    if b.get("aggregate_name", "median") != "median" or b.get("error_occurred"): continue
    name = b["run_name"] if "run_name" in b else b["name"]
    unit = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
    t[name] = b["cpu_time"] * unit  # CPU time: the build machine is shared (wall time inflates)
    if "median_us" in b: t[name] = b["median_us"]
    if b.get("label"): label[name] = b["label"]
def ratio(base, x): return t[base] / t[x] if base in t and x in t else float("nan")
lines = []
P = lines.append
P(f"# coiteration benchmark ({ctx.get('host_name','')}, {ctx.get('date','')}); time ratios = baseline time / variant time (>1: variant faster)")
dens = ["0.01%", "0.1%", "1%", "5%", "10%"]
P("\n## Inner-product SpGEMM 5000x5000, B CSR x C CSC, dense output (speed-up over the branchy scalar loop; 'vs mlir' = over MLIR-15)")
P("| density | scalar ms/row | mlir | driver (no JIT) | jit-auto | jit-auto vs mlir | best jit (spec) | best vs mlir |")
P("|---|---|---|---|---|---|---|---|")
best_by_n = {}
for d in dens:
    pre = f"spgemm/{d}/"
    if pre + "scalar" not in t: continue
    rows = {"0.01%":400,"0.1%":160,"1%":32,"5%":8,"10%":4}[d]
    jits = [k for k in t if k.startswith(pre + "jit/")]
    best = min(jits, key=lambda k: t[k]) if jits else None
    P(f"| {d} | {t[pre+'scalar']/rows/1e6:.3f} | {ratio(pre+'scalar', pre+'mlir'):.2f} | {ratio(pre+'scalar', pre+'driver'):.2f} | "
      f"{ratio(pre+'scalar', pre+'jit-auto'):.2f} | {ratio(pre+'mlir', pre+'jit-auto'):.2f} | "
      f"{ratio(pre+'scalar', best):.2f} ({best[len(pre)+4:] if best else '-'}) | {ratio(pre+'mlir', best) if best else float('nan'):.2f} |")
P("\n## Table 1: phase masks (n = 4, broadcast), speed-up over scalar")
P("| mask (3,2,1) | " + " | ".join(dens) + " |")
P("|---|" + "---|" * len(dens))
for ph in ["000","001","010","011","100","101","110","111"]:
    P(f"| {ph} | " + " | ".join(f"{ratio(f'spgemm/{d}/scalar', f'spgemm/{d}/jit/n4/p{ph}/broadcast'):.2f}" for d in dens) + " |")
P("\n## Figure 12: width x method (phases 001 / 111), speed-up over scalar")
P("| n / method / phases | " + " | ".join(dens) + " |")
P("|---|" + "---|" * len(dens))
specs = sorted({k.split("/",2)[2] for k in t if k.startswith("spgemm/5%/jit/")}, key=lambda s: (int(s.split('/')[1][1:]), s))
for s in specs:
    P(f"| {s[4:]} | " + " | ".join(f"{ratio(f'spgemm/{d}/scalar', f'spgemm/{d}/{s}'):.2f}" for d in dens) + " |")
P("\n## SpMSpV, A 5000x5000 CSR, x 50% of 5000 (sparse y), speed-up over scalar")
P("| A density | scalar us | driver | jit-auto | n4/001/broadcast | n8/111 | n16/111 |")
P("|---|---|---|---|---|---|---|")
for d in dens:
    pre = f"spmspv/{d}/"
    if pre + "scalar" not in t: continue
    n8 = next((k for k in t if k.startswith(pre + "jit/n8/")), None)
    n16 = next((k for k in t if k.startswith(pre + "jit/n16/")), None)
    P(f"| {d} | {t[pre+'scalar']/1e3:.1f} | {ratio(pre+'scalar', pre+'driver'):.2f} | {ratio(pre+'scalar', pre+'jit-auto'):.2f} | "
      f"{ratio(pre+'scalar', pre+'jit/n4/p001/broadcast'):.2f} | {ratio(pre+'scalar', n8):.2f} | {ratio(pre+'scalar', n16):.2f} |")
mats = sorted({k.split("/")[1] for k in t if k.startswith("real/")})
P("\n## Real matrices, A*A^T inner product, dense output (first rows, <= 5e5 dots); speed-up of jit-auto")
P("| matrix | scalar ms | mlir vs scalar | driver vs scalar | jit-auto vs scalar | jit-auto vs mlir | n8/111 vs scalar | n16/111 vs scalar |")
P("|---|---|---|---|---|---|---|---|")
g_mlir, g_scalar, worst = [], [], (9e9, "")
plot = []
for m in mats:
    pre = f"real/{m}/"
    if pre + "scalar" not in t or pre + "jit-auto" not in t: continue
    rs, rm = ratio(pre+"scalar", pre+"jit-auto"), ratio(pre+"mlir", pre+"jit-auto")
    n8 = next((k for k in t if k.startswith(pre + "jit/n8/")), None)
    n16 = next((k for k in t if k.startswith(pre + "jit/n16/")), None)
    g_scalar.append(rs)
    if not math.isnan(rm): g_mlir.append(rm)
    worst = min(worst, (rs, m))
    plot.append((m, rs, rm))
    P(f"| {m} | {t[pre+'scalar']/1e6:.3f} | {ratio(pre+'scalar', pre+'mlir'):.2f} | {ratio(pre+'scalar', pre+'driver'):.2f} | {rs:.2f} | {rm:.2f} | "
      f"{ratio(pre+'scalar', n8):.2f} | {ratio(pre+'scalar', n16):.2f} |")
gm = lambda v: math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")
P(f"\nReal matrices: geomean jit-auto vs scalar {gm(g_scalar):.2f}x, vs MLIR-15 {gm(g_mlir):.2f}x "
  f"(over {len(g_scalar)} matrices); lowest vs scalar {worst[0]:.2f}x ({worst[1]})")
cg = [k for k in t if k.startswith("codegen/")]
if cg:
    P("\n## Code generation, one kernel (fresh JIT), median of 51")
    for k in sorted(cg): P(f"- {k[8:]}: {t[k]:.1f} us")
try:
    rows = [l.split() for l in open(f"{out}/callgrind.txt") if l.strip()]
    if rows:
        P("\n## Instructions (callgrind, x86-64-v3 build, SPARSEJIT_ISA=avx2; 4 rows at 5%; bcsstk06 A*A^T)")
        P("| setup | variant | instructions | vs scalar |"); P("|---|---|---|---|")
        base = {r[0]: int(r[2].replace(',', '')) for r in rows if r[1] == "scalar"}
        for r in rows:
            ir = int(r[2].replace(',', ''))
            P(f"| {r[0]} | {r[1]} | {ir:,} | {ir / base.get(r[0], ir):.2f} |")
except FileNotFoundError:
    pass
open(f"{out}/summary.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
# Plot data: synthetic (density, mlir, driver, jit-auto, best) and real (matrix, vs scalar, vs mlir).
with open(f"{out}/spgemm.dat", "w") as f:
    for d in dens:
        pre = f"spgemm/{d}/"
        if pre + "scalar" not in t: continue
        jits = [k for k in t if k.startswith(pre + "jit/")]
        best = min(jits, key=lambda k: t[k])
        f.write(f"\"{d}\" {ratio(pre+'scalar', pre+'mlir'):.4f} {ratio(pre+'scalar', pre+'driver'):.4f} "
                f"{ratio(pre+'scalar', pre+'jit-auto'):.4f} {ratio(pre+'scalar', best):.4f}\n")
with open(f"{out}/real.dat", "w") as f:
    for i, (m, rs, rm) in enumerate(sorted(plot, key=lambda x: x[1])):
        f.write(f"{i} \"{m}\" {rs:.4f} {rm if not math.isnan(rm) else 0:.4f}\n")
PY

if command -v gnuplot >/dev/null; then
  gnuplot -e "dir='$out'; outfile='$here/docs/coiter-speedup.png'" "$here/scripts/plot-coiter.gp"
  echo "plot: $here/docs/coiter-speedup.png"
fi
