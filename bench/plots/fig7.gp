# Chameleon Fig. 7: under-provisioned, sequential speed-up and parallel
# speed-up by tax rate, static and dynamic binding.
load dir."/common.gp"
set output out."/fig7.png"
set title "Fig. 7: 1 sequential task (4 of 8 CPUs) + a parallel program (emulated)"
set ylabel "speed-up over one plain CPU"
set yrange [0:*]
plot in."/fig7_report.csv" using 2:xtic(1) title "sequential" lc rgb "#3465a4", \
     "" using 3 title "parallel" lc rgb "#cc0000"
