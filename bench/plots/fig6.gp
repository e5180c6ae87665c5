# Chameleon Fig. 6: 2, 3, 4 sequential tasks on 8 CPUs (3*: no exit notice).
load dir."/common.gp"
set output out."/fig6.png"
set title "Fig. 6: speed-up of each sequential task (8 CPUs, emulated)"
set ylabel "speed-up over a plain CPU"
set yrange [0:2.4]
plot in."/fig6_summary.csv" using 2:xtic(1) title "first task" lc rgb "#3465a4", \
     "" using 3 title "second" lc rgb "#cc0000", \
     "" using 4 title "third" lc rgb "#4e9a06", \
     "" using 5 title "fourth" lc rgb "#c4a000"
