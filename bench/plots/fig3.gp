# Chameleon Fig. 3: execution time of A (tagged) and B (pinned to the CPU A
# borrows) relative to a task alone on a baseline CPU, per tax rate.
load dir."/common.gp"
set output out."/fig3.png"
set title "Fig. 3: taxation (A fused level 1 vs B on the borrowed CPU)"
set ylabel "execution time relative to alone (lower = faster)"
set xlabel "tax rate"
set y2label "A fused (% of its run time)"
set y2range [0:100]
set y2tics
set yrange [0:*]
plot in."/fig3.csv" using 7:xtic(1) title "A" lc rgb "#3465a4", \
     "" using 8 title "B" lc rgb "#cc0000", \
     "" using 0:2 axes x1y2 with linespoints pt 7 lw 2 lc rgb "#4e9a06" title "A fused %"
