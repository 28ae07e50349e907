# Figure 2: loss of each run against the FP32 reference, with a lower panel of
# |loss - reference loss|. Needs: datafile, N, hasref, anydiff, logloss, xmin, xmax,
# ylo, yhi, win (running-mean window), ymark, nonfin, hasval, arrays lbl, isref.
# Data: one block per run (reference first; a run whose trajectory equals an
# earlier one's is not drawn again: its name is in that run's label):
# step loss absdiff loss_mean absdiff_mean nonfinite (1 or NaN) val_loss.
# "paper" (set with the terminal): 0 screen, 1 a 3.5 in column, 2 a 7 in page.
if (!exists("paper")) paper = 0
# On paper (PDF, SVG) no title (the caption says it) and the key inside the plot.
# a font of n points on the screen; on paper (PDF, SVG) 8/11 of it and at least 8 pt
F(n) = sprintf(",%g", paper > 0 ? (n * 8.0 / 11 < 8 ? 8 : n * 8.0 / 11) : n)
# a key entry fits its room: a longer name (runs merged as "A = B") keeps its
# first KW characters and "..." (the page lists every name): 34 on paper (two
# columns of it at 7 in), 28 in the screen's key beside the panels
KW = paper > 0 ? 34 : 28
short(s) = strlen(s) > KW ? s[1:KW - 3] . "..." : s
fs8 = F(8); fs9 = F(9); fs10 = F(10); fs11 = F(11); fs12 = F(12); fs13 = F(13)   # gnuplot takes a font from a string variable
LM = paper == 1 ? 0.27 : paper == 2 ? 0.13 : 0.09
RM = paper > 0 ? 0.97 : 0.74
set tics out nomirror
set grid lc rgb "#e8e8e8"
set xrange [xmin:xmax]
set yrange [ylo:yhi]
# On paper the key goes under the panels (one column at 3.5 in, two at 7 in):
# KH is its height and B0 the bottom of the lower panel, as canvas fractions.
NE = N + (nonfin > 0) + (hasval > 0)
KH = paper > 0 ? ((paper == 1 ? NE : int((NE + 1) / 2)) * 13 + 6) / (pxh * 8.0 / 11) : 0
B0 = paper > 0 ? KH + 38 / (pxh * 8.0 / 11) : 0.09
SPLIT = B0 + 0.42 * (0.97 - B0)
if (paper > 0) {
    set key off   # drawn last, in a plot of its own (a key is cut to its plot's height)
} else {
    set key at screen RM + 0.015, graph 1 left top Left reverse samplen 2 font fs10
}
if (logloss) { set logscale y; set ylabel (paper > 0 ? "loss" : "loss (log scale)") } else { set ylabel "loss" }
if (win > 1 && paper == 0) { set ylabel sprintf("loss (running mean over %d steps)", win) }
set lmargin at screen LM
set rmargin at screen RM
array pal[20] = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", \
                 "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#9edae5", "#dbdb8d", "#393b79"]
colour(k) = pal[(k - 1) % 20 + 1]
dash(k) = (k - 1) % 5 + 1
# about four labelled steps on paper (gnuplot's own choice crowds a narrow axis)
xd = (xmax - xmin) / 4.0; xe = 10 ** floor(log10(xd)); xm = xd / xe
xs = (xm <= 1 ? 1 : xm <= 2 ? 2 : xm <= 5 ? 5 : 10) * xe
if (paper > 0) { set xtics xs }
if (!hasref && paper > 0) { set tmargin at screen 0.97; set bmargin at screen B0 }
if (hasref || paper > 0) { set multiplot }
if (hasref) {
    set tmargin at screen (paper > 0 ? 0.97 : 0.93)
    set bmargin at screen (paper > 0 ? SPLIT + 0.02 : 0.40)
    set format x ""
    set title (paper > 0 ? "" : "Training loss against the FP32 reference") font fs12
} else {
    set title (paper > 0 ? "" : "Training loss") font fs12
    set xlabel "step"
}
plot for [i=1:N] datafile index (i-1) using 1:(isref[i] && win > 1 ? $2 : NaN) with lines lw 1 lc rgb "#c8c8c8" notitle, \
     for [i=1:N] datafile index (i-1) using 1:4 with lines \
     lw (isref[i] ? 3.5 : 1.8) dt dash(isref[i] ? 1 : i - hasref) lc rgb (isref[i] ? "#000000" : colour(i - hasref)) \
     title short(isref[i] ? lbl[i] . " (reference)" : lbl[i]), \
     for [i=1:N] datafile index (i-1) using 1:($6 == 1 ? ymark : NaN) with points pt 2 ps 1.2 \
     lc rgb (isref[i] ? "#000000" : colour(i - hasref)) notitle, \
     for [i=1:N] datafile index (i-1) using 1:7 with points pt 6 ps 1 \
     lc rgb (isref[i] ? "#000000" : colour(i - hasref)) notitle, \
     keyentry with points pt 2 ps 1.2 lc rgb "#444444" title (nonfin > 0 ? "loss not finite" : ""), \
     keyentry with points pt 6 ps 1 lc rgb "#444444" title (hasval > 0 ? "validation loss" : "")
if (hasref) {
    unset title
    unset logscale y
    set autoscale y
    set logscale y
    set format y "%.0e"
    set format x "%g"
    set tmargin at screen (paper > 0 ? SPLIT - 0.02 : 0.37)
    set bmargin at screen B0
    set xlabel "step"
    set ylabel (paper > 0 ? "|loss - ref|" : "|loss - reference|")
    if (paper > 0) { set ytics 100 }   # every other decade labelled
    set key off
    if (anydiff) {
        plot for [i=2:N] datafile index (i-1) using 1:5 with lines lw 1.8 dt dash(i - 1) lc rgb colour(i - 1) notitle
    } else {
        set yrange [1e-8:1]
        set label 1 "every run equals the reference at every step" at graph 0.5, graph 0.5 center
        plot 1e-30 notitle
    }
}
if (paper > 0) {   # the key: an empty plot in the band under the panels
    unset border; unset tics; unset xlabel; unset ylabel; unset grid; unset logscale; unset label; unset title
    set xrange [0:1]; set yrange [0:1]
    set tmargin at screen KH; set bmargin at screen 0; set lmargin at screen 0.02; set rmargin at screen 0.98
    set key inside center top Left reverse maxrows (paper == 1 ? NE : int((NE + 1) / 2)) samplen 1.5 font fs8
    plot for [i=1:N] NaN with lines lw (isref[i] ? 3.5 : 1.8) dt dash(isref[i] ? 1 : i - hasref) \
         lc rgb (isref[i] ? "#000000" : colour(i - hasref)) title short(isref[i] ? lbl[i] . " (reference)" : lbl[i]), \
         keyentry with points pt 2 ps 1.2 lc rgb "#444444" title (nonfin > 0 ? "loss not finite" : ""), \
         keyentry with points pt 6 ps 1 lc rgb "#444444" title (hasval > 0 ? "validation loss" : "")
}
if (hasref || paper > 0) { unset multiplot }
