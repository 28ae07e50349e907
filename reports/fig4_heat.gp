# Figure 4: heat maps tensor x step of the flushed fraction and of the
# saturated + overflow fraction. Needs: datafile, NT, xmin, xmax, cbmin, lmargin_px,
# maintitle, and the ytics (tensor names). Data: two blocks of
# "step row half_width half_height fraction" (fraction 0: drawn light grey).
if (!exists("paper")) paper = 0
# a font of n points on the screen; on paper (PDF, SVG) 8/11 of it and at least 8 pt
F(n) = sprintf(",%g", paper > 0 ? (n * 8.0 / 11 < 8 ? 8 : n * 8.0 / 11) : n)
fs8 = F(8); fs9 = F(9); fs10 = F(10); fs11 = F(11); fs12 = F(12); fs13 = F(13)   # gnuplot takes a font from a string variable
set tics out nomirror
set xrange [xmin:xmax]
set yrange [-0.5:NT-0.5]
set cbrange [cbmin:1]
set logscale cb
set format cb "%.0e"
set cbtics font fs9
set palette defined (0 "#fff3b0", 0.35 "#f9a03f", 0.7 "#d1495b", 1 "#5c0029")
set xlabel "step"
set style fill solid 1.0 noborder
unset key
if (paper > 0) { W = pxw; H = pxh }   # a paper-sized PDF/SVG: the layout in its own units
lm = lmargin_px * 1.0 / W
if (lm > 0.4) { lm = 0.4 }
gap = 0.03
pw = (0.84 - lm - gap) / 2
set multiplot
set label 100 maintitle at screen 0.5, screen 1 - 18.0 / H center font fs12
set tmargin at screen 1 - 70.0 / H
set bmargin at screen 60.0 / H
set lmargin at screen lm
set rmargin at screen lm + pw
set title "flushed to zero" font fs11
unset colorbox
plot datafile index 0 using 1:2:3:4:($5 > 0 ? $5 : NaN) with boxxyerror fc palette, \
     datafile index 0 using ($5 == 0 ? $1 : NaN):2:3:4 with boxxyerror fc rgb "#e6e6e6"
set lmargin at screen lm + pw + gap
set rmargin at screen lm + 2 * pw + gap
set ytics 0, 1, NT - 1 format ""
unset label 100
set title "saturated or overflowed" font fs11
set colorbox user origin screen lm + 2 * pw + gap + 0.015, screen 60.0 / H size screen 0.015, screen 1 - 130.0 / H
set cblabel "fraction of the tensor's values (log scale)" font fs10
plot datafile index 1 using 1:2:3:4:($5 > 0 ? $5 : NaN) with boxxyerror fc palette, \
     datafile index 1 using ($5 == 0 ? $1 : NaN):2:3:4 with boxxyerror fc rgb "#e6e6e6"
unset multiplot
