# Instructions per call of each scheduler's callbacks against the vCPU count
# (bench/insn_cost: the insn_cost plugin under MTTCG, the first load).
load dir."/common.gp"
set output out."/insn_cost.png"
set termoption noenhanced
set style data linespoints
set key outside right top vertical
set title "Guest instructions per callback call, inclusive (kfuncs and kernel code)"
set xlabel "vCPUs"
set ylabel "instructions per call"
set logscale x 2
set logscale y 10
set grid xtics ytics
set datafile missing "NaN"
plot for [c=2:*] in."/insn_cost_plot.csv" using 1:c title columnheader pointsize 1.2
