# bench.gp - chart of a bench run.
#   gnuplot -e "dir='out'; tag='bench'" tests/bench/bench.gp   -> out/bench.png
# Left: how kafka_log compares with the native table per figure (advantage:
# >1 means kafka_log is faster, log scale).  Right: full-scan rate of each
# codec relative to uncompressed (when the run measured codecs).
if (!exists("dir")) dir = 'out'
if (!exists("tag")) tag = 'bench'
codecs = dir.'/'.tag.'-codecs.dat'
has_codecs = system('test -s '.codecs.' && echo 1 || echo 0') + 0
set terminal pngcairo size (has_codecs ? 1400 : 900),560 font 'DejaVu Sans,11'
set output dir.'/'.tag.'.png'
set termoption noenhanced
set style fill solid 0.85 border -1
set boxwidth 0.6
set grid ytics
unset key
if (has_codecs) { set multiplot layout 1,2 title 'kafkalog benchmark ('.tag.')' }
set title 'kafka_log vs native SQLite table (same records, same run)'
set ylabel 'advantage of kafka_log (x, log scale; >1 = faster)'
set logscale y 10
set yrange [0.01:10]
set xtics rotate by -30 left
set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead dt 2 lw 2 lc rgb '#444444'
plot dir.'/'.tag.'.dat' using 0:2:xtic(1) with boxes lc rgb '#3b75af', \
     '' using 0:2:(sprintf('%.2fx', $2)) with labels offset 0,0.8 font ',10'
if (has_codecs) {
  unset arrow 1
  unset logscale y
  set yrange [0:1.2]
  set title 'kafka_log full scan by codec, relative to uncompressed'
  set ylabel 'rows/s relative to none'
  set xtics norotate
  plot codecs using 0:2:xtic(1) with boxes lc rgb '#e1812c', \
       '' using 0:2:(sprintf('%.2f', $2)) with labels offset 0,0.8 font ',10'
  unset multiplot
}
