#!/usr/bin/env python3
"""Plots of a linerate-regions JSON, in the shape of the DPA study's Fig. 5-8 (docs/regions.md):
(a) read latency against the working set, one line per region and stride (log scales);
(b) random read bandwidth against the working set, one worker and all; (c) sequential read and
write bandwidth, one worker and all; (d) the mixed pair. gnuplot draws them (as every plot of
bench/); without it, one line says so and nothing is drawn.

  bench/lib/regions_plot.py REGIONS.json OUT.png
"""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchkit as bk  # noqa: E402


def _dat(name, rows):
    os.makedirs(bk.TMP, exist_ok=True)
    path = os.path.join(bk.TMP, name)
    with open(path, "w") as f:
        f.write("".join(" ".join(str(v) for v in row) + "\n" for row in rows))
    return path


def _curves(doc):
    """(a) and (b): one data block per region (and stride), gnuplot's `index`."""
    lat, rnd, lat_titles, rnd_titles = [], [], [], []
    for r in doc["regions"]:
        strides = [c["stride_bytes"] for c in r["latency"]]
        for c in r["latency"]:
            if c["stride_bytes"] not in (min(strides), max(strides)):
                continue  # the least and the largest stride: the rest lie between
            lat.append([(p["working_set_bytes"] / 1024, p["latency_ns"]) for p in c["points"]])
            lat_titles.append(f"{r['spec'].split(',')[0]} {c['stride_bytes']} B")
        for key, label in (("random_read_one_worker", "1 worker"), ("random_read_all_workers", "all")):
            rnd.append([(p["working_set_bytes"] / 1024, p["gb_per_s"]) for p in r[key]])
            rnd_titles.append(f"{r['spec'].split(',')[0]} {label}")
    return lat, lat_titles, rnd, rnd_titles


def _blocks(name, blocks):
    os.makedirs(bk.TMP, exist_ok=True)
    path = os.path.join(bk.TMP, name)
    with open(path, "w") as f:
        f.write("\n\n\n".join("\n".join(f"{x} {y}" for x, y in b) for b in blocks) + "\n")
    return path


def _lines(path, titles):
    return ", ".join(f"'{path}' index {i} with linespoints title '{t}'" for i, t in enumerate(titles))


def script(doc):
    lat, lat_titles, rnd, rnd_titles = _curves(doc)
    seq = _dat("regions_seq.dat", [(f'"{r["spec"].split(",")[0]}"', s["read_one_worker_gb_per_s"],
                                    s["read_all_workers_gb_per_s"], s["write_one_worker_gb_per_s"],
                                    s["write_all_workers_gb_per_s"])
                                   for r in doc["regions"] if (s := r.get("sequential"))])
    caches = ", ".join(f"L{c['level']} {c['size_bytes'] // 1024} KiB" for c in doc["machine"]["caches"])
    out = f"""set multiplot layout 2,2 title '{doc["machine"]["cpu_model"]}, {doc["workers"]} workers; {caches}'
set grid
set logscale x 2
set key top left font ',8'
set xlabel 'working set (KiB)'
set title '(a) read latency, random pointer chase (Fig. 5)'
set ylabel 'ns'
set logscale y 10
plot {_lines(_blocks("regions_lat.dat", lat), lat_titles)}
unset logscale y
set title '(b) random read bandwidth (Fig. 6)'
set ylabel 'GB/s'
set yrange [0:*]
plot {_lines(_blocks("regions_rnd.dat", rnd), rnd_titles)}
unset logscale x
set xlabel ''
set style data histogram
set style histogram cluster gap 1
set style fill solid 0.8 border -1
set key top right
set title '(c) sequential bandwidth (Fig. 7)'
plot '{seq}' using 2:xtic(1) title 'read, 1 worker', '' using 3 title 'read, all', '' using 4 title 'write, 1 worker', '' using 5 title 'write, all'
"""
    if doc.get("mixed"):
        m = doc["mixed"]
        mix = _dat("regions_mixed.dat", [(f'"{p["workers_on_first"]}+{p["workers_on_second"]}"',
                                          p["read_gb_per_s"]) for p in m["points"]])
        out += (f"set title '(d) mixed reads, workers on {m['first'].split(',')[0]} + "
                f"{m['second'].split(',')[0]} (Fig. 8)'\n"
                f"plot '{mix}' using 2:xtic(1) title 'GB/s, all workers'\n")
    return out + "unset multiplot\n"


def plot(doc, png):
    """The PNG's path relative to the tree, or None (one line says why) without gnuplot."""
    if not shutil.which("gnuplot"):
        print("regions: no gnuplot, no plot", file=sys.stderr)
        return None
    return bk.plot(png, script(doc), size="1300,900", font_pt=9)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        print(plot(json.load(f), os.path.abspath(sys.argv[2])))
