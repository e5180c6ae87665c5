# Chameleon Fig. 4: parallel programs, untagged scx_chameleon vs EEVDF.
load dir."/common.gp"
set output out."/fig4.png"
set title "Fig. 4: parallel stand-ins, performance relative to EEVDF (1 = equal)"
set ylabel "EEVDF wall time / scx_chameleon wall time"
set yrange [0.8:1.2]
plot in."/fig4_summary.csv" using 2:xtic(1) title "median of rounds" lc rgb "#3465a4", \
     0.98 with lines dt 2 lc rgb "#cc0000" title "goal >= 0.98"
