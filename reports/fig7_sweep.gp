# Figure 7 (sweep report): the tail-mean loss gap to the reference, paired per
# seed, and the flushed share of gradient values (percent) over the seeds per configuration, against the varied options. Needs: datafile,
# N (configurations), NV (varied values), arrays lbl, vlbl. Data: one block per
# configuration: x, gap mean, gap sd, flushed % mean, flushed % sd.
if (!exists("paper")) paper = 0
# On paper (PDF, SVG) no title (the caption says it) and the key inside the plot.
# a font of n points on the screen; on paper (PDF, SVG) 8/11 of it and at least 8 pt
F(n) = sprintf(",%g", paper > 0 ? (n * 8.0 / 11 < 8 ? 8 : n * 8.0 / 11) : n)
fs8 = F(8); fs9 = F(9); fs10 = F(10); fs11 = F(11); fs12 = F(12); fs13 = F(13)   # gnuplot takes a font from a string variable
RM = paper > 0 ? 0.97 : 0.74
set tics out nomirror
set grid lc rgb "#e8e8e8"
set xrange [-0.5:NV - 0.5]
set xtics ()
do for [j=1:NV] { set xtics add ("" j - 1) }   # the labels go under the lower panel
if (paper > 0) { set key inside top right samplen 1 spacing 0.9 font fs8 opaque } else { set key at screen RM + 0.015, screen 0.93 left top Left reverse samplen 2 font fs10 }
set lmargin at screen (paper == 1 ? 0.27 : paper == 2 ? 0.13 : 0.12)
set rmargin at screen RM
array pal[20] = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", \
                 "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#9edae5", "#dbdb8d", "#393b79"]
colour(k) = pal[(k - 1) % 20 + 1]
set multiplot
set tmargin at screen 0.93
set bmargin at screen 0.55
set ylabel "gap to reference (paired)"
set format y "%.1e"
set arrow 1 from graph 0, first 0 to graph 1, first 0 nohead dt 2 lc rgb "#666666"
set title (paper > 0 ? "" : "Tail-loss gap to the reference (paired per seed, mean ± sd) and flushed share") font fs12
plot for [i=1:N] datafile index (i-1) using 1:2:3 with yerrorlines lw 1.8 pt 7 ps 0.8 lc rgb colour(i) title lbl[i]
unset title
set key off
set xtics () rotate by -20
do for [j=1:NV] { set xtics add (vlbl[j] j - 1) }
set tmargin at screen 0.48
set bmargin at screen 0.14
unset arrow 1
set format y "%g"
set ylabel "flushed (% of grads)"
set yrange [0:*]
plot for [i=1:N] datafile index (i-1) using 1:4:5 with yerrorlines lw 1.8 pt 7 ps 0.8 lc rgb colour(i) notitle
unset multiplot
