# Chameleon Fig. 8: CPUs in each task's execution object over time (the
# lines are offset a little so that equal sizes stay visible).
set terminal pngcairo size 900,540 font "DejaVu Sans,11"
set datafile separator ","
set datafile columnheaders
set output out."/fig8.png"
set title "Fig. 8: allocation by weight on 10 CPUs (astar 1, lbm 2, sjeng 3)"
set xlabel "time (s)"
set ylabel "CPUs in the object"
set yrange [0:5.2]
set key outside top center horizontal
set grid
off(t) = t eq "astar1" ? -0.09 : t eq "astar2" ? -0.03 : t eq "lbm" ? 0.03 : 0.09
plot for [t in "astar1 astar2 lbm sjeng"] in."/fig8.csv" \
       using ($1/1000):(strcol(2) eq t ? $3 + off(t) : 1/0) with steps lw 2 title t, \
     in."/fig8_events.csv" using ($1/1000):(0):(0):(4.6) with vectors nohead dt 2 lc rgb "#888888" notitle, \
     in."/fig8_events.csv" using ($1/1000):(4.85):2 with labels notitle
