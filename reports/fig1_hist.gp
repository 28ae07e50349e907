# Figure 1: gradient-magnitude histograms with the format's bands
# (Micikevicius et al. 2018, Fig. 3 style). One panel per tensor or run.
# Needs (from data/fig1_*.gp, written by `ampsim report`): datafile, N, cols, rows,
# xz (zero bar), xin (inf/NaN bar), xlo, xhi, ylo, any_infnan, maintitle and the
# arrays ttl, fmtname, eflush, enorm, eover (band edges in log2 units), scaled, asgiven
# (per-tensor FP8 scaled: only the values as given to the format, in blue).
# Data: per panel three blocks: unscaled, as logged (x loss scale), special bins.
if (!exists("paper")) paper = 0
# a font of n points on the screen; on paper (PDF, SVG) 8/11 of it and at least 8 pt
F(n) = sprintf(",%g", paper > 0 ? (n * 8.0 / 11 < 8 ? 8 : n * 8.0 / 11) : n)
fs8 = F(8); fs9 = F(9); fs10 = F(10); fs11 = F(11); fs12 = F(12); fs13 = F(13)   # gnuplot takes a font from a string variable
if (paper > 0) { W = pxw; H = pxh }   # a paper-sized PDF/SVG: the layout in its own units
c_flush = "#f4c7c3"; c_sub = "#fce8b2"; c_norm = "#d9ead3"; c_over = "#d0d0d0"
c_unsc = "#555555"; c_scal = "#1f5fbf"
set style fill solid 1.0 noborder
set logscale y
set yrange [ylo:100]
set xrange [xz - 1.5 : (any_infnan ? xin + 2.5 : xhi)]
set format y "%g"
set tics out nomirror
set mxtics 4
set grid ytics lc rgb "#e8e8e8"
set xtics xstart, (paper == 1 ? 2 * xstep : xstep), xend   # a 3.5 in column: every other binade labelled
set xtics add ("zero" xz)   # not "0": log2 = 0 has its own tick
if (any_infnan) { set xtics add ("inf/NaN" xin) }
single = (N == 1)
if (single) {
    set lmargin 10; set tmargin 4; set bmargin 4
    if (paper > 0) { set tmargin 1; set bmargin }   # no title; room for the key below
} else {
    # panels placed by hand (fractions of the canvas of W x H pixels)
    PL = 95.0 / W; PR = 15.0 / W; PT = 108.0 / H; PB = 62.0 / H; GX = 78.0 / W; GY = 92.0 / H
    CW = (1 - PL - PR - (cols - 1) * GX) / cols
    CH = (1 - PT - PB - (rows - 1) * GY) / rows
    set multiplot
    set label 100 maintitle at screen 0.5, screen 1 - 18.0 / H center font fs13
    set label 101 "log2 |gradient|  (one bar per binade [2^k, 2^(k+1)); zero: exact zeros)" at screen 0.5, screen 12.0 / H center font fs11
    set label 102 "% of values (log scale)" at screen 16.0 / W, screen 0.5 center rotate by 90 font fs11
}
do for [i=1:N] {
    unset object
    unset arrow
    brk = xz + 1.25
    f1 = (eflush[i] < brk ? brk : eflush[i])
    n1 = (enorm[i] < brk ? brk : enorm[i])
    o1 = (eover[i] > xhi ? xhi : eover[i])
    if (f1 > brk) { set object 1 rect from first brk, graph 0 to first (f1 > xhi ? xhi : f1), graph 1 fc rgb c_flush fs solid 0.9 noborder behind }
    if (n1 > f1 && f1 < xhi) { set object 2 rect from first f1, graph 0 to first (n1 > xhi ? xhi : n1), graph 1 fc rgb c_sub fs solid 0.9 noborder behind }
    if (o1 > n1) { set object 3 rect from first n1, graph 0 to first o1, graph 1 fc rgb c_norm fs solid 0.9 noborder behind }
    if (eover[i] < xhi) { set object 4 rect from first (eover[i] < brk ? brk : eover[i]), graph 0 to first xhi, graph 1 fc rgb c_over fs solid 0.9 noborder behind }
    if (any_infnan) { set arrow 2 from first xhi, graph 0 to first xhi, graph 1 nohead dt 2 lc rgb "#888888" front }
    # the axis break between the zero bar and the magnitudes
    set arrow 1 from first brk, graph 0 to first brk, graph 1 nohead dt 2 lc rgb "#888888" front
    set title ttl[i] font (cols > 2 ? fs10 : fs11)
    if (single) {
        set title maintitle . "\n" . ttl[i] font fs12
    }
    bottom = (single || i > N - cols)
    left = (single || (i - 1) % cols == 0)
    if (single && paper > 0) {
        set xlabel "log2 |gradient| (binades)"
    } else { if (single) {
        set xlabel "log2 |gradient|  (one bar per binade [2^k, 2^(k+1)); zero: exact zeros)"
    } }
    if (single) {
        set ylabel (paper > 0 ? "% of values" : "% of values (log scale)")
    }
    if (single && paper > 0) {   # paper: the key under the plot, no title (the caption says it)
        set key outside below center Left reverse maxrows 3 samplen 1.5 font fs8
        unset title
    } else { if (single) {
        set key outside right top samplen 2 spacing 1.1 font fs10
    } }
    if (!single) {
        unset key
        rr = int((i - 1) / cols); cc = (i - 1) % cols
        set lmargin at screen PL + cc * (CW + GX)
        set rmargin at screen PL + cc * (CW + GX) + CW
        set tmargin at screen 1 - PT - rr * (CH + GY)
        set bmargin at screen 1 - PT - rr * (CH + GY) - CH
    }
    b = 3 * (i - 1)
    if (asgiven[i]) {
        plot keyentry with boxes fc rgb c_norm title sprintf("normal (%s)", fmtname[i]), \
             keyentry with boxes fc rgb c_sub title "subnormal", \
             keyentry with boxes fc rgb c_flush title "flushed to 0", \
             keyentry with boxes fc rgb c_over title "overflow", \
             datafile index b+1 using 1:2:(1.0) with boxes fs solid 0.8 noborder lc rgb c_scal title "as given (per-tensor scaled)", \
             datafile index b+2 using 1:2:(1.0) with boxes fs solid 1.0 lc rgb "#000000" title "zero / inf,NaN"
    } else { if (scaled[i]) {
        plot keyentry with boxes fc rgb c_norm title sprintf("normal (%s)", fmtname[i]), \
             keyentry with boxes fc rgb c_sub title "subnormal", \
             keyentry with boxes fc rgb c_flush title "flushed to 0", \
             keyentry with boxes fc rgb c_over title "overflow", \
             datafile index b using 1:2:(1.0) with boxes fs transparent solid 0.55 noborder lc rgb c_unsc title "unscaled", \
             datafile index b+1 using 1:2:(0.62) with boxes fs transparent solid 0.75 noborder lc rgb c_scal title "after x loss scale", \
             datafile index b+2 using 1:2:(1.0) with boxes fs solid 1.0 lc rgb "#000000" title "zero / inf,NaN"
    } else {
        plot keyentry with boxes fc rgb c_norm title sprintf("normal (%s)", fmtname[i]), \
             keyentry with boxes fc rgb c_sub title "subnormal", \
             keyentry with boxes fc rgb c_flush title "flushed to 0", \
             keyentry with boxes fc rgb c_over title "overflow", \
             datafile index b using 1:2:(1.0) with boxes fs solid 0.8 noborder lc rgb c_unsc title "gradients", \
             datafile index b+2 using 1:2:(1.0) with boxes fs solid 1.0 lc rgb "#000000" title "zero / inf,NaN"
    } }
}
if (!single) {
    # the shared key: an empty plot across the top of the canvas
    unset object; unset arrow; unset title; unset xlabel; unset ylabel; unset grid
    unset border; unset tics; unset logscale y
    set xrange [0:1]; set yrange [0:1]
    set lmargin at screen 0.02; set rmargin at screen 0.98
    set tmargin at screen 1 - 35.0 / H; set bmargin at screen 1 - 70.0 / H
    set key at screen 0.5, screen 1 - 50.0 / H center horizontal maxrows 1 samplen 1.5 font fs10 nobox
    plot keyentry with boxes fc rgb c_norm title "normal", \
         keyentry with boxes fc rgb c_sub title "subnormal", \
         keyentry with boxes fc rgb c_flush title "flushed to 0", \
         keyentry with boxes fc rgb c_over title "overflow", \
         keyentry with boxes fc rgb c_unsc title "unscaled", \
         keyentry with boxes fc rgb c_scal title "x loss scale / as given", \
         keyentry with boxes fc rgb "#000000" title "zero, inf/NaN", \
         -1 notitle
    unset multiplot
}
