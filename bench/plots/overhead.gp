# Overhead vs peers: median ratio to EEVDF per workload (< 1 better).
load dir."/common.gp"
set output out."/overhead.png"
set title "Overhead: ratio to EEVDF in the same round (median; < 1 = better than EEVDF)"
set ylabel "ratio to EEVDF"
set yrange [0:*]
set xtics rotate by -20
plot for [c=2:*] in."/overhead_summary.csv" using c:xtic(1) title columnheader
