# twozone.gp - chart of the two-zone study.
#   gnuplot -e "dir='out'" tests/bench/twozone.gp   -> out/twozone.png
# Top: distinct index pages a tail lookup touches as the offset index grows
# entry by entry, and how many of them lie outside the warm section.
# Bottom: cumulative "cold" page touches (pages nothing touched during the
# previous page of growth).
if (!exists("dir")) dir = 'out'
set terminal pngcairo size 1100,760 font 'DejaVu Sans,11'
set output dir.'/twozone.png'
set termoption noenhanced
set multiplot layout 2,1 title 'Tail lookups on a growing offset index: classic vs two-zone binary search'
set grid
set key top left
set xlabel 'index size (4 KiB pages)'
set ylabel 'pages per lookup'
set yrange [0:9]
plot dir.'/twozone.dat' using 2:3 with steps lw 1.5 lc rgb '#c0392b' title 'classic: distinct pages', \
     '' using 2:5 with steps lw 1.5 lc rgb '#e59866' title 'classic: pages outside the warm section', \
     '' using 2:4 with steps lw 2 lc rgb '#2471a3' title 'two-zone: distinct pages', \
     '' using 2:6 with steps lw 2 dt 2 lc rgb '#1abc9c' title 'two-zone: pages outside the warm section'
set yrange [0:*]
set ylabel 'cold page touches (cumulative)'
plot dir.'/twozone.dat' using 2:7 with steps lw 2 lc rgb '#c0392b' title 'classic', \
     '' using 2:8 with steps lw 2 lc rgb '#2471a3' title 'two-zone'
unset multiplot
