# Chameleon Fig. 6: object sizes over time with 3 and with 4 sequential tasks
# (offset a little so that equal sizes stay visible).
set terminal pngcairo size 900,700 font "DejaVu Sans,11"
set datafile separator ","
set output out."/fig6_alloc.png"
set multiplot layout 2,1 title "Fig. 6: CPUs in each task's object over time (8 CPUs)"
set xlabel "time (s)"
set ylabel "CPUs"
set yrange [0:5]
set grid
set key outside right
names = "seq1 seq2 seq3 seq4"
set title "3 tasks (4, 6, 8 s of work)"
plot for [i=0:2] in."/fig6_steps.dat" index i using ($1/1000):($2 + 0.06 * (i - 1.5)) with steps lw 2 title word(names, i + 1)
set title "4 tasks (4, 6, 8, 10 s of work)"
plot for [i=4:7] in."/fig6_steps.dat" index i using ($1/1000):($2 + 0.06 * (i - 5.5)) with steps lw 2 title word(names, i - 3)
unset multiplot
