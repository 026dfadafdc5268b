# The style of every hbdlab figure: terminal, fonts, palette, line styles, grid.
# Embedded at build time (cmake/lua_chunks.c --text, as hbdlab.plot_style) and copied verbatim into each
# generated .gp after its three header lines, which set hbdlab_format ("png", "svg" or "pdf")
# and the default hbdlab_output, so a .gp reruns alone and never loads this file.
# Edit it here; the figures pick it up at the next build (tools/regen_figures.sh redraws them).
if (hbdlab_format eq "svg") {
  set terminal svg size 1000,620 noenhanced font 'Liberation Sans,12' background rgb 'white'
} else {
  if (hbdlab_format eq "pdf") {
    set terminal pdfcairo size 6.5in,4in noenhanced font 'Liberation Sans,10'
  } else {
    set terminal pngcairo size 1000,620 noenhanced font 'Liberation Sans,12'
  }
}
set encoding utf8
set border 3 lw 1.2
set tics nomirror out scale 0.7
set grid back lc rgb "#dddddd" lw 1
set key outside right top vertical spacing 1.2 box lc rgb "#bbbbbb"
# series colours (tab10), the linetypes below in order
hbdlab_colors = "#1f77b4 #d62728 #2ca02c #ff7f0e #9467bd #8c564b"
set linetype 1 lc rgb word(hbdlab_colors, 1) lw 2.2 pt 7 ps 1.1
set linetype 2 lc rgb word(hbdlab_colors, 2) lw 2.2 pt 5 ps 1.1
set linetype 3 lc rgb word(hbdlab_colors, 3) lw 2.2 pt 9 ps 1.3
set linetype 4 lc rgb word(hbdlab_colors, 4) lw 2.2 pt 11 ps 1.3
set linetype 5 lc rgb word(hbdlab_colors, 5) lw 2.2 pt 13 ps 1.3
set linetype 6 lc rgb word(hbdlab_colors, 6) lw 2.2 pt 15 ps 1.3
# series colour i (1..6, cycling) at 75% transparency, for points drawn behind a curve
hbdlab_faint(i) = "#C0" . word(hbdlab_colors, (i - 1) % words(hbdlab_colors) + 1)[2:]
# colour scale of a heatmap, light to dark
set palette defined (0 '#f7fbff', 0.5 '#6baed6', 1 '#08306b')
# text drawn inside the plot: value labels, operator names; reference lines
hbdlab_ink = "#222222"
hbdlab_rule = "#444444"
hbdlab_label_font = ",9"
hbdlab_small_font = ",8"
