# Figure 5: per-layer underflow rate of the weight gradients vs layer index,
# one line per run/scaler (Zhao et al. style). Needs: datafile, N, NL, yfloor,
# ymaxv, allzero, nonfin, array lbl, and the xtics (layer names). Data: one
# block per run: layer rate. "paper": 0 screen, 1 a 3.5 in column, 2 a 7 in page.
if (!exists("paper")) paper = 0
# On paper (PDF, SVG) no title (the caption says it) and the key inside the plot.
# a font of n points on the screen; on paper (PDF, SVG) 8/11 of it and at least 8 pt
F(n) = sprintf(",%g", paper > 0 ? (n * 8.0 / 11 < 8 ? 8 : n * 8.0 / 11) : n)
fs8 = F(8); fs9 = F(9); fs10 = F(10); fs11 = F(11); fs12 = F(12); fs13 = F(13)   # gnuplot takes a font from a string variable
if (!exists("nonfin")) nonfin = 0
LM = paper == 1 ? 0.27 : paper == 2 ? 0.13 : 0.1
RM = paper > 0 ? 0.97 : 0.74
set tics out nomirror
set grid lc rgb "#e8e8e8"
set xrange [0.5:NL+0.5]
set logscale y
set yrange [yfloor/2:ymaxv]
set ytics add ("0" yfloor)
set format y "%.0e"
set xlabel "layer (input to output)"
set ylabel (paper > 0 ? "w-grad flushed (fraction)" : "weight-gradient values flushed to zero (fraction)")
set title (paper > 0 ? "" : "Per-layer underflow rate of the weight gradients") font fs12
if (paper > 0) {
    set key inside top right samplen 1 spacing 0.9 font fs8 opaque
} else {
    set key at screen RM + 0.015, graph 1 left top Left reverse samplen 2 font fs10
}
set lmargin at screen LM
set rmargin at screen RM
array pal[20] = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", \
                 "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#9edae5", "#dbdb8d", "#393b79"]
colour(k) = pal[(k - 1) % 20 + 1]
set arrow 1 from graph 0, first yfloor*1.6 to graph 1, first yfloor*1.6 nohead dt 3 lc rgb "#999999"
if (allzero) {
    set label 1 (nonfin > 0 ? "nothing flushed to zero\n(some values not finite: see the caption)" \
                            : "no weight-gradient value was\nflushed to zero in any layer") at graph 0.5, graph 0.6 center font fs10
}
# markers dodged sideways so that runs with equal rates (often 0) stay visible; a
# layer with nothing flushed is a marker on the "0" line, not joined across the axis break
dx(i) = (i - (N + 1) / 2.0) * 0.5 / (N > 1 ? N : 1)
plot for [i=1:N] datafile index (i-1) using ($1 + dx(i)):($2 > 0 ? $2 : NaN) with linespoints lw 2 pt (i % 7 + 4) ps 1.2 lc rgb colour(i) title lbl[i], \
     for [i=1:N] datafile index (i-1) using ($1 + dx(i)):($2 > 0 ? NaN : yfloor) with points pt (i % 7 + 4) ps 1.2 lc rgb colour(i) notitle
