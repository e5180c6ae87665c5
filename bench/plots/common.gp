# Shared settings for the bench plots (gnuplot, PNG without X: pngcairo).
set terminal pngcairo size 900,540 font "DejaVu Sans,11"
set datafile separator ","
set key outside top center horizontal
set grid ytics
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set datafile columnheaders
