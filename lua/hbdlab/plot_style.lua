-- The shared style of every hbdlab figure, embedded in each generated .gp script (so a
-- script is self-contained and never loads a style file from the current folder).
return [[
set encoding utf8
set border 3 lw 1.2
set tics nomirror out scale 0.7
set grid back lc rgb "#dddddd" lw 1
set key outside right top vertical spacing 1.2 box lc rgb "#bbbbbb"
set linetype 1 lc rgb "#1f77b4" lw 2.2 pt 7 ps 1.1
set linetype 2 lc rgb "#d62728" lw 2.2 pt 5 ps 1.1
set linetype 3 lc rgb "#2ca02c" lw 2.2 pt 9 ps 1.3
set linetype 4 lc rgb "#ff7f0e" lw 2.2 pt 11 ps 1.3
set linetype 5 lc rgb "#9467bd" lw 2.2 pt 13 ps 1.3
set linetype 6 lc rgb "#8c564b" lw 2.2 pt 15 ps 1.3
]]
