# Figure 5: per-layer underflow rate of the weight gradients vs layer index,
# one line per run/scaler (Zhao et al. style). Needs: datafile, N, NL, yfloor,
# array lbl, and the xtics (layer names). Data: one block per run: layer rate.
set tics out nomirror
set grid lc rgb "#e8e8e8"
set xrange [0.5:NL+0.5]
set logscale y
set yrange [yfloor/2:ymaxv]
set ytics add ("0" yfloor)
set format y "%.0e"
set xlabel "layer (input to output)"
set ylabel "weight-gradient values flushed to zero (fraction)"
set title "Per-layer underflow rate of the weight gradients" font ",12"
set key at screen 0.74 + 0.015, graph 1 left top Left reverse samplen 2 font ",10"
set lmargin at screen 0.1
set rmargin at screen 0.74
array pal[20] = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", \
                 "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#9edae5", "#dbdb8d", "#393b79"]
colour(k) = pal[(k - 1) % 20 + 1]
set arrow 1 from graph 0, first yfloor*1.6 to graph 1, first yfloor*1.6 nohead dt 3 lc rgb "#999999"
if (allzero) { set label 1 "no weight-gradient value was flushed to zero in any layer" at graph 0.5, graph 0.6 center font ",12" }
# markers dodged sideways so that runs with equal rates (often 0) stay visible
plot for [i=1:N] datafile index (i-1) using ($1 + (i - (N + 1) / 2.0) * 0.5 / (N > 1 ? N : 1)):($2 > 0 ? $2 : yfloor) with linespoints lw 2 pt (i % 7 + 4) ps 1.2 lc rgb colour(i) title lbl[i]
