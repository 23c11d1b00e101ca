# The coiteration benchmark plot (scripts/bench-coiter.sh passes dir= and outfile=).
if (!exists("dir")) dir = "/tmp/build-coiter/bench-coiter"
if (!exists("outfile")) outfile = "docs/coiter-speedup.png"
set terminal pngcairo size 1400,560 font ",10" noenhanced
set output outfile
set multiplot layout 1,2 title "Inner-product SpGEMM: speed-up over the branchy scalar two-finger loop (-O3 -march=native)"
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set ylabel "time(scalar) / time(variant)"
set xlabel "density (5000x5000, B CSR x C CSC, dense output)"
set key top left
set grid ytics
set yrange [0:*]
plot dir."/spgemm.dat" using 2:xtic(1) title "MLIR-15 sparsifier", \
     "" using 3 title "driver, JIT off", \
     "" using 4 title "JIT, automatic spec", \
     "" using 5 title "JIT, best forced spec"
unset style
set style data linespoints
set xlabel "real matrices, A*A^T (sorted by JIT speed-up)"
set ylabel "speed-up"
set logscale y 2
set yrange [0.25:*]
set xtics () 
plot dir."/real.dat" using 1:3 with linespoints pt 7 ps 0.6 title "JIT auto vs scalar", \
     "" using 1:($4 > 0 ? $4 : 1/0) with linespoints pt 5 ps 0.6 title "JIT auto vs MLIR-15", \
     1 with lines lc rgb "black" dt 2 notitle, 0.95 with lines lc rgb "red" dt 3 title "0.95"
unset multiplot
