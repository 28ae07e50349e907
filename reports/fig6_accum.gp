# Figure 6: dot-product relative error vs length K for narrow accumulators, with
# and without promotion to FP32 every N_C products (Wang et al. 2018, DeepSeek-V3).
# Needs: datafile, N, ymin, operands, arrays lbl, col (colour index), dash (1 solid,
# 2 promoted). Data: one block per configuration: K mean_rel_err max_rel_err.
if (!exists("paper")) paper = 0
# On paper (PDF, SVG) no title (the caption says it) and the key inside the plot.
# a font of n points on the screen; on paper (PDF, SVG) 8/11 of it and at least 8 pt
F(n) = sprintf(",%g", paper > 0 ? (n * 8.0 / 11 < 8 ? 8 : n * 8.0 / 11) : n)
fs8 = F(8); fs9 = F(9); fs10 = F(10); fs11 = F(11); fs12 = F(12); fs13 = F(13)   # gnuplot takes a font from a string variable
RM = paper > 0 ? 0.97 : 0.62
set tics out nomirror
set grid lc rgb "#e8e8e8"
set logscale xy 2
set logscale y 10
set format x "2^{%L}"
set format x "%g"
set format y "%.0e"
set yrange [ymin:*]
set xlabel "dot-product length K (products summed)"
set ylabel "relative error of the sum"
set title (paper > 0 ? "" : sprintf("Accumulation error: %s operands in [0,1), narrow accumulators", operands)) font fs12
if (paper > 0) {   # the long names in a key below the plot
    set key outside below center Left reverse maxcols (paper == 1 ? 1 : 2) samplen 2 font fs8
    set lmargin 9
    set rmargin 4
} else {
    set key at screen RM + 0.015, graph 1 left top Left reverse samplen 3 font fs10
    set lmargin at screen 0.1
    set rmargin at screen RM
}
array colr[9] = ["#000000", "#d62728", "#ff7f0e", "#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf"]
plot for [i=1:N] datafile index (i-1) using 1:($2 > 0 ? $2 : NaN) with linespoints lw 2 pt 7 ps 0.8 \
         dt dash[i] lc rgb colr[int(col[i]) % 9 + 1] title lbl[i], \
     for [i=1:N] datafile index (i-1) using 1:($3 > 0 ? $3 : NaN) with points pt 1 ps 0.7 \
         lc rgb colr[int(col[i]) % 9 + 1] notitle, \
     keyentry with points pt 1 ps 0.7 lc rgb "#444444" title "max over trials"
