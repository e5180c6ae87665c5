# Chameleon Fig. 8: CPUs in each task's execution object over time (the
# lines are offset a little so that equal sizes stay visible).
set terminal pngcairo size 900,540 font "DejaVu Sans,11"
set datafile separator ","
set output out."/fig8.png"
set title "Fig. 8: allocation by weight on 10 CPUs (astar 1, lbm 2, sjeng 3)"
set xlabel "time (s)"
set ylabel "CPUs in the object"
set yrange [0:5.2]
set key outside top center horizontal
set grid
names = "astar1 astar2 lbm sjeng"
plot for [i=0:3] in."/fig8_steps.dat" index i using ($1/1000):($2 + 0.06 * (i - 1.5)) \
       with steps lw 2 title word(names, i + 1), \
     in."/fig8_events.csv" every ::1 using ($1/1000):(0):(0):(4.6) with vectors nohead dt 2 lc rgb "#888888" notitle, \
     in."/fig8_events.csv" every ::1 using ($1/1000):(4.85):2 with labels notitle
