# Figure 8: the --what-if shadow loss scalers of one run. Needs: datafile, N,
# ymin, ymax, xmin, xmax, fmin, array lbl.
# Data: per shadow one block: step log2(scale) flushed/n overflow/n skipped.
if (!exists("paper")) paper = 0
# On paper (PDF, SVG) no title (the caption says it) and the key inside the plot.
# a font of n points on the screen; on paper (PDF, SVG) 8/11 of it and at least 8 pt
F(n) = sprintf(",%g", paper > 0 ? (n * 8.0 / 11 < 8 ? 8 : n * 8.0 / 11) : n)
fs8 = F(8); fs9 = F(9); fs10 = F(10); fs11 = F(11); fs12 = F(12); fs13 = F(13)   # gnuplot takes a font from a string variable
RM = paper > 0 ? 0.97 : 0.74
set tics out nomirror
set grid lc rgb "#e8e8e8"
set xrange [xmin:xmax]
array pal[20] = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", \
                 "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#9edae5", "#dbdb8d", "#393b79"]
colour(k) = pal[(k - 1) % 20 + 1]
set lmargin at screen (paper == 1 ? 0.2 : paper == 2 ? 0.1 : 0.08)
set rmargin at screen RM
set multiplot
set size 1, 0.5
set origin 0, 0.5
set yrange [ymin:ymax]
set ylabel "log2(scale)"
set ytics 1
if (ymax - ymin > 24) { set ytics 4 }
if (ymax - ymin > 60) { set ytics 16 }
set format x ""
set title (paper > 0 ? "" : "Scale of each shadow loss scaler (filled circles: steps it would skip)") font fs12
if (paper > 0) { set key inside top right samplen 1 spacing 0.9 font fs8 opaque } else { set key at screen RM + 0.015, graph 1 left top Left reverse samplen 2 font fs10 }
plot for [i=1:N] datafile index (i-1) using 1:2 with steps lw 2 lc rgb colour(i) title lbl[i], \
     for [i=1:N] datafile index (i-1) using 1:($5 > 0 ? $2 : NaN) with points pt 7 ps 1.3 lc rgb colour(i) notitle
set origin 0, 0
set title (paper > 0 ? "" : "Share of the weight-gradient values flushed (lines) and overflowed (crosses)") font fs12
set format x "%g"
set xlabel "step"
set ylabel "share of values"
set logscale y
set format y "1e%T"
set ytics auto
set yrange [fmin:1]
unset key
plot for [i=1:N] datafile index (i-1) using 1:($3 > 0 ? $3 : NaN) with linespoints pt 7 ps 0.5 lw 1.5 lc rgb colour(i), \
     for [i=1:N] datafile index (i-1) using 1:($4 > 0 ? $4 : NaN) with points pt 2 ps 1.2 lc rgb colour(i)
unset multiplot
