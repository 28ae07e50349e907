# Figure 3: loss-scale trajectories (log2 of the scale) of every run that scales,
# skipped steps marked. Needs: datafile, N, ymin, ymax, xmin, xmax, array lbl.
# Data: per run two blocks: step log2(scale); skipped steps: step log2(scale).
if (!exists("paper")) paper = 0
# On paper (PDF, SVG) no title (the caption says it) and the key inside the plot.
# a font of n points on the screen; on paper (PDF, SVG) 8/11 of it and at least 8 pt
F(n) = sprintf(",%g", paper > 0 ? (n * 8.0 / 11 < 8 ? 8 : n * 8.0 / 11) : n)
fs8 = F(8); fs9 = F(9); fs10 = F(10); fs11 = F(11); fs12 = F(12); fs13 = F(13)   # gnuplot takes a font from a string variable
RM = paper > 0 ? 0.97 : 0.74
set tics out nomirror
set grid lc rgb "#e8e8e8"
set xrange [xmin:xmax]
set yrange [ymin:ymax]
set xlabel "step"
set ylabel "log2(loss scale)"
set ytics 1
if (ymax - ymin > 24) { set ytics 4 }
if (ymax - ymin > 60) { set ytics 16 }
set title (paper > 0 ? "" : "Loss scale used at each step (filled circles: skipped steps)") font fs12
if (paper > 0) { set key inside top right samplen 1 spacing 0.9 font fs8 opaque } else { set key at screen RM + 0.015, graph 1 left top Left reverse samplen 2 font fs10 }
set lmargin at screen (paper == 1 ? 0.2 : paper == 2 ? 0.1 : 0.08)
set rmargin at screen RM
array pal[20] = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", \
                 "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#9edae5", "#dbdb8d", "#393b79"]
colour(k) = pal[(k - 1) % 20 + 1]
dash(k) = (k - 1) % 5 + 1
plot for [i=1:N] datafile index (2*i-2) using 1:2 with steps lw 2 dt dash(i) lc rgb colour(i) title lbl[i], \
     for [i=1:N] datafile index (2*i-1) using 1:2 with points pt 7 ps 1.5 lc rgb colour(i) notitle, \
     keyentry with points pt 7 ps 1.5 lc rgb "#444444" title "skipped step"
