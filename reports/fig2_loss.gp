# Figure 2: loss of each run against the FP32 reference, with a lower panel of
# |loss - reference loss|. Needs: datafile, N, hasref, anydiff, logloss, xmin, xmax,
# ylo, yhi, win (running-mean window), ymark, nonfin, hasval, arrays lbl, isref.
# Data: one block per run (reference first; a run whose trajectory equals an
# earlier one's is not drawn again: its name is in that run's label):
# step loss absdiff loss_mean absdiff_mean nonfinite (1 or NaN) val_loss.
# "paper" (set with the terminal): 0 screen, 1 a 3.5 in column, 2 a 7 in page.
if (!exists("paper")) paper = 0
LM = paper == 1 ? 0.17 : 0.09
RM = paper == 1 ? 0.97 : 0.74
FT = paper == 1 ? ",9" : ",12"
set tics out nomirror
set grid lc rgb "#e8e8e8"
set xrange [xmin:xmax]
set yrange [ylo:yhi]
if (paper == 1) {
    set key inside top right samplen 1 spacing 0.9 font ",8" opaque
} else {
    set key at screen RM + 0.015, graph 1 left top Left reverse samplen 2 font ",10"
}
if (logloss) { set logscale y; set ylabel "loss (log scale)" } else { set ylabel "loss" }
if (win > 1 && paper != 1) { set ylabel sprintf("loss (running mean over %d steps)", win) }
set lmargin at screen LM
set rmargin at screen RM
array pal[20] = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", \
                 "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#9edae5", "#dbdb8d", "#393b79"]
colour(k) = pal[(k - 1) % 20 + 1]
dash(k) = (k - 1) % 5 + 1
if (hasref) {
    set multiplot
    set tmargin at screen 0.93
    set bmargin at screen 0.40
    set format x ""
    set title "Training loss against the FP32 reference" font FT
} else {
    set title "Training loss" font FT
    set xlabel "step"
}
plot for [i=1:N] datafile index (i-1) using 1:(isref[i] && win > 1 ? $2 : NaN) with lines lw 1 lc rgb "#c8c8c8" notitle, \
     for [i=1:N] datafile index (i-1) using 1:4 with lines \
     lw (isref[i] ? 3.5 : 1.8) dt dash(isref[i] ? 1 : i - hasref) lc rgb (isref[i] ? "#000000" : colour(i - hasref)) \
     title (isref[i] ? lbl[i] . " (reference)" : lbl[i]), \
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
    set tmargin at screen 0.37
    set bmargin at screen 0.09
    set xlabel "step"
    set ylabel "|loss - reference|"
    set key off
    if (anydiff) {
        plot for [i=2:N] datafile index (i-1) using 1:5 with lines lw 1.8 dt dash(i - 1) lc rgb colour(i - 1) notitle
    } else {
        set yrange [1e-8:1]
        set label 1 "every run equals the reference at every step" at graph 0.5, graph 0.5 center
        plot 1e-30 notitle
    }
    unset multiplot
}
