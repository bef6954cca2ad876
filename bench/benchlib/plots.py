# SPDX-License-Identifier: LGPL-2.1-or-later
"""Grouped bar charts for REPORT.md: gnuplot (SVG + PNG) when installed, else SVG drawn here."""
import math
import os
import shutil
import subprocess

from .common import A


def svg_bars(path, title, ylabel, groups, series, values, logy=True):
    """Grouped bar chart, drawn by hand (no plotting package needed)."""
    import math
    W_, H_, L, R, T, B = 960, 520, 80, 20, 50, 150
    colors = ["#1b9e77", "#66a61e", "#e6ab02", "#d95f02", "#7570b3", "#e7298a", "#666666"]
    vmax = max([v for row in values for v in row if v] + [1])
    top = 10 ** math.ceil(math.log10(vmax)) if logy else vmax * 1.1
    def y(v):
        if logy:
            if v <= 0:
                return H_ - B
            return H_ - B - (H_ - B - T) * max(0.0, math.log10(max(v, 1)) / math.log10(top))
        return H_ - B - (H_ - B - T) * v / top
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W_}" height="{H_}" font-family="sans-serif" font-size="12">',
         f'<rect width="{W_}" height="{H_}" fill="white"/>',
         f'<text x="{W_ / 2}" y="24" text-anchor="middle" font-size="15">{title}</text>',
         f'<text x="16" y="{(H_ - B + T) / 2}" transform="rotate(-90 16 {(H_ - B + T) / 2})" text-anchor="middle">{ylabel}</text>']
    ticks = [10 ** k for k in range(0, int(math.log10(top)) + 1)] if logy else [top * i / 5 for i in range(6)]
    for t in ticks:
        o.append(f'<line x1="{L}" x2="{W_ - R}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#ddd"/>')
        o.append(f'<text x="{L - 6}" y="{y(t) + 4:.1f}" text-anchor="end">{t:g}</text>')
    gw = (W_ - L - R) / len(groups)
    bw = gw * 0.8 / len(series)
    for gi, g in enumerate(groups):
        x0 = L + gi * gw + gw * 0.1
        for si, s in enumerate(series):
            v = values[gi][si]
            yy = y(v)
            o.append(f'<rect x="{x0 + si * bw:.1f}" y="{yy:.1f}" width="{bw - 2:.1f}" height="{H_ - B - yy:.1f}" '
                     f'fill="{colors[si % len(colors)]}"><title>{s}: {v:g}</title></rect>')
            if v == 0:
                o.append(f'<text x="{x0 + si * bw + bw / 2:.1f}" y="{H_ - B - 3}" text-anchor="middle" '
                         f'font-size="10">0</text>')
        o.append(f'<text x="{x0 + gw * 0.4:.1f}" y="{H_ - B + 18}" text-anchor="middle">{g}</text>')
    o.append(f'<line x1="{L}" x2="{W_ - R}" y1="{H_ - B}" y2="{H_ - B}" stroke="black"/>')
    for si, s in enumerate(series):
        lx, ly = L + (si % 3) * 290, H_ - B + 50 + (si // 3) * 22
        o.append(f'<rect x="{lx}" y="{ly - 11}" width="14" height="14" fill="{colors[si % len(colors)]}"/>')
        o.append(f'<text x="{lx + 20}" y="{ly}">{s}</text>')
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")


def gnuplot_bars(path, title, ylabel, groups, series, values):
    if not shutil.which("gnuplot"):
        return False
    dat = os.path.join(A.work, os.path.basename(path) + ".dat")
    with open(dat, "w") as f:
        f.write("workload " + " ".join(f'"{s}"' for s in series) + "\n")
        for g, row in zip(groups, values):
            f.write(f'"{g}" ' + " ".join(f"{v:g}" for v in row) + "\n")
    pos = [v for row in values for v in row if v > 0]
    ymin = 10 ** math.floor(math.log10(min(pos))) if pos else 0.1
    ok = True
    for term, outp in (("svg size 960,520 dynamic font 'sans,11' background rgb 'white'", path),
                       ("pngcairo size 960,520 font 'sans,10' background rgb 'white'", path[:-4] + ".png")):
        ok = gnuplot_one(term, outp, title, ylabel, dat, series, ymin) and ok
    return ok


def gnuplot_one(term, path, title, ylabel, dat, series, ymin):
    script = f"""set terminal {term}
set output '{path}'
set title '{title}'
set ylabel '{ylabel}'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set logscale y
set yrange [{ymin:g}:*]
set grid ytics
set key outside bottom center horizontal maxcols 3
set xtics nomirror
plot for [i=2:{len(series) + 1}] '{dat}' using i:xtic(1) title columnheader(i)
"""
    r = subprocess.run(["gnuplot"], input=script, text=True, stderr=subprocess.PIPE)
    return r.returncode == 0 and os.path.getsize(path) > 0


def plot(path, title, ylabel, groups, series, values):
    if gnuplot_bars(path, title, ylabel, groups, series, values):
        return "gnuplot"
    svg_bars(path, title, ylabel, groups, series, values)
    return "python"
