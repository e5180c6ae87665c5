# Chameleon Fig. 5: sequential speed-up fused 2 / fused 4 per category.
load dir."/common.gp"
set output out."/fig5.png"
set title "Fig. 5: sequential speed-up over a plain CPU (emulated, schedstat)"
set ylabel "speed-up"
set yrange [0:2.4]
plot in."/fig5_report.csv" using 2:xtic(1) title "fused 2 (ours)" lc rgb "#3465a4", \
     "" using 3 title "fused 2 (paper)" lc rgb "#729fcf", \
     "" using 4 title "fused 4 (ours)" lc rgb "#cc0000", \
     "" using 5 title "fused 4 (paper)" lc rgb "#ef2929"
