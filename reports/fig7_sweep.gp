# Figure 7 (sweep report): tail-mean loss and flushed share of gradient values
# over the seeds per configuration, against the varied options. Needs: datafile,
# N (configurations), NV (varied values), arrays lbl, vlbl. Data: one block per
# configuration: x, loss mean, loss sd, flushed % mean, flushed % sd.
set tics out nomirror
set grid lc rgb "#e8e8e8"
set xrange [-0.5:NV - 0.5]
set xtics ()
do for [j=1:NV] { set xtics add ("" j - 1) }   # the labels go under the lower panel
set key at screen 0.74 + 0.015, screen 0.93 left top Left reverse samplen 2 font ",10"
set lmargin at screen 0.09
set rmargin at screen 0.74
array pal[20] = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", \
                 "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#9edae5", "#dbdb8d", "#393b79"]
colour(k) = pal[(k - 1) % 20 + 1]
set multiplot
set tmargin at screen 0.93
set bmargin at screen 0.55
set ylabel "tail-mean loss (mean ± sd)"
set title "Tail loss and flushed share per configuration and varied options" font ",12"
plot for [i=1:N] datafile index (i-1) using 1:2:3 with yerrorlines lw 1.8 pt 7 ps 0.8 lc rgb colour(i) title lbl[i]
unset title
set key off
set xtics () rotate by -20
do for [j=1:NV] { set xtics add (vlbl[j] j - 1) }
set tmargin at screen 0.48
set bmargin at screen 0.14
set ylabel "gradient values flushed (%)"
set yrange [0:*]
plot for [i=1:N] datafile index (i-1) using 1:4:5 with yerrorlines lw 1.8 pt 7 ps 0.8 lc rgb colour(i) notitle
unset multiplot
