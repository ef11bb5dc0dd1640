# queries.gp - chart of a queries run.
#   gnuplot -e "dir='out'; tag='queries'" tests/bench/queries.gp   -> out/queries.png
# One bar per figure: native time / kafka_log time (log scale; >1 = kafka_log
# faster), from the line at 1.  Green: goal met, red: missed, grey: no ratio
# goal; a black diamond marks the goal; n/a: the kafka_log statement did not
# prepare or run (e.g. a column this build lacks).
if (!exists("dir")) dir = 'out'
if (!exists("tag")) tag = 'queries'
data = dir.'/'.tag.'.dat'
rows = system('grep -vc "^#" '.data) + 0
set terminal pngcairo size 1100,(140 + 30 * rows) font 'DejaVu Sans,11'
set output dir.'/'.tag.'.png'
set termoption noenhanced
set title 'kafka_log vs native SQLite table: native time / kafka_log time (same records, same run)'
set xlabel 'ratio (log scale; >1 = kafka_log faster)'
set logscale x 10
set xrange [1e-3:3e4]
set yrange [-0.7:rows - 0.3]
set grid xtics
set style fill solid 0.85 border -1
set key bottom right opaque box
set arrow 1 from first 1, graph 0 to first 1, graph 1 nohead dt 2 lw 2 lc rgb '#444444'
color(s) = s == 1 ? 0x2ca02c : s == 0 ? 0xd62728 : 0x8c8c8c
plot data using (1):0:($2 < 1 ? $2 : 1):($2 < 1 ? 1 : $2):($0 - 0.35):($0 + 0.35):(color($4)):ytic(1) \
       with boxxyerror lc rgb variable notitle, \
     '' using (valid(2) && $2 < 1 ? $2 : NaN):0:5 with labels right offset -0.6,0 font ',9' notitle, \
     '' using (valid(2) ? ($2 >= 1 ? $2 : NaN) : 1):0:5 with labels left offset 0.6,0 font ',9' \
       notitle, \
     '' using 3:0 with points pt 13 ps 1.6 lc rgb '#000000' title 'goal'
