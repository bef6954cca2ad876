# SPDX-License-Identifier: LGPL-2.1-or-later
"""The bulk workload's part of the report (issues 14 and 23): the initial-measurement table, memory per
file, the churn soak and the targets (met / missed). bench/run prints it at the end of a run
and REPORT.md has it; results from before the bulk workload print "not measured"."""


def find(B, fs, wl, contender):
    for r in B.get("rows", []):
        if r["fs"] == fs and r["workload"] == wl and r["contender"] == contender:
            return r
    return None


def xargs_name(B):
    return f"xargs -P{B.get('cores', 2)} sha256sum"


def openssl_name(B):
    return f"xargs -P{B.get('cores', 2)} openssl dgst -sha256"


def floor_target(B, fs, wl, c):
    """Issue 23: iverd within 1.1x of the faster of xargs -P sha256sum and xargs -P openssl."""
    i = find(B, fs, wl, c)
    floor = [r for r in (find(B, fs, wl, xargs_name(B)), find(B, fs, wl, openssl_name(B))) if r]
    name = f"{c} on {fs}: {wl} files ≤ 1.1× the faster of {xargs_name(B)} and {openssl_name(B)} (the parallel floor)"
    if not i or not floor:
        return dict(name=name, met=None, detail="not measured")
    f = min(floor, key=lambda r: r["wall"])
    return dict(name=name, met=i["wall"] <= 1.1 * f["wall"],
                detail=f"{i['wall']:.2f} s vs {f['wall']:.2f} s ({f['contender']}): {i['wall'] / f['wall']:.2f}×")


def ratio_target(name, a, b, bound, fmt="%.2f s vs %.2f s (%.2f×)"):
    if not a or not b:
        return dict(name=name, met=None, detail="not measured")
    return dict(name=name, met=a["wall"] <= bound * b["wall"],
                detail=fmt % (a["wall"], b["wall"], a["wall"] / b["wall"]))


def targets(B):
    """Every bulk target as {name, met (True/False/None = not measured), detail}."""
    if not B:
        return [dict(name="bulk workload (issue 14)", met=None, detail="not measured")]
    t = []
    xn = xargs_name(B)
    for fs in ("tmpfs", "ext4"):
        for c in ("iverd", "iverd (list ext4)") if fs == "ext4" else ("iverd",):
            i = find(B, fs, "small", c)
            t.append(ratio_target(f"{c} on {fs}: {B['sizes']['small']:,} small files ≤ 2× sha256sum", i,
                                  find(B, fs, "small", "sha256sum"), 2))
            t.append(floor_target(B, fs, "small", c))
    workers = B.get("cores", 1)
    for fs in ("tmpfs", "ext4"):
        i, o = find(B, fs, "large", "iverd"), find(B, fs, "large", "openssl dgst -sha256")
        name = f"iverd on {fs}: large files ≥ 0.9× openssl dgst -sha256 per worker ({workers} workers)"
        if i and o:
            ir, orate = i["bytes"] / i["wall"] / 1e6, o["bytes"] / o["wall"] / 1e6
            detail = f"{ir:.0f} MB/s vs {orate:.0f} MB/s × {workers} ({ir / orate / workers:.2f}× per worker)"
            p = find(B, fs, "large", f"xargs -P{workers} openssl dgst -sha256")
            if p:       # a disk that does not scale with readers bounds every contender
                prate = p["bytes"] / p["wall"] / 1e6
                detail += f"; {workers} openssl readers together: {prate:.0f} MB/s ({ir / prate:.2f}×)"
            t.append(dict(name=name, met=ir >= 0.9 * orate * workers, detail=detail))
        else:
            t.append(dict(name=name, met=None, detail="not measured"))
        t.append(floor_target(B, fs, "large", "iverd"))
    big = [m for m in B.get("cache_mem", []) if m["files"] >= 1_000_000 * B["sizes"].get("scale", 1)]
    name = f"cache ≤ 100 B/file beyond half the raw path bytes at {B['sizes']['mem'][-1]:,} files (bench-cache_mem)"
    if big:
        m = big[-1]
        beyond = m["rss_per_file"] - m["path_bytes_per_file"] / 2
        t.append(dict(name=name, met=beyond <= 100,
                      detail=f"{m['rss_per_file']:.1f} B/file − {m['path_bytes_per_file'] / 2:.1f} (half of "
                             f"{m['path_bytes_per_file']:.1f} B of path) = {beyond:.1f} B/file; path records "
                             f"{m['path_records_per_file']:.1f} B/file"))
    else:
        t.append(dict(name=name, met=None, detail="not measured"))
    c = B.get("churn_cache")
    name = "cache churn (500 files, rename-over): RSS within 1 %"
    t.append(dict(name=name, met=abs(c["churn_rss_growth_pct"]) <= 1,
                  detail=f"{c['churn_rss_start_kib']:.0f} → {c['churn_rss_end_kib']:.0f} KiB "
                         f"({c['churn_rss_growth_pct']:+.2f} %) over {c['churn_replacements']:,.0f} replacements")
             if c else dict(name=name, met=None, detail="not measured"))
    d = B.get("churn_daemon")
    name = "iverd churn soak (test-soak.sh): RSS within 1 %"
    if d and "rss_start_kib" in d:
        t.append(dict(name=name, met=abs(d["growth_pct"]) <= 1,
                      detail=f"{d['rss_start_kib']:,} → {d['rss_end_kib']:,} kB ({d['growth_pct']:+.2f} %) over "
                             f"{d['replacements']:,} replacements among {d['tree']:,} files"))
    else:
        t.append(dict(name=name, met=None if not d else False,
                      detail="not measured" if not d else "test-soak.sh failed (see the run's log)"))
    e = B.get("empty_daemon")
    for fs, i, files in (("tmpfs", find(B, "tmpfs", "small", "iverd"), B["sizes"]["small"]),
                         ("ext4", find(B, "ext4", "small", "iverd"), B["sizes"]["small"]),
                         ("tmpfs", B.get("daemon_mem"), B["sizes"]["mem"][-1])):
        name = f"iverd (whole daemon) on {fs}: ≤ 100 B/file beyond half the path bytes at {files:,} files"
        if i and e and i.get("cached"):
            per = (i["rss_kib"] - e["hwm_kib"]) * 1024 / i["cached"]
            settled = (i["rss_settled_kib"] - e["rss_kib"]) * 1024 / i["cached"]
            half = i["path_bytes_per_file"] / 2
            t.append(dict(name=name, met=per - half <= 100,
                          detail=f"peak RSS {i['rss_kib'] / 1024:.1f} MiB − empty daemon {e['hwm_kib'] / 1024:.1f} MiB = "
                                 f"{per:.0f} B/file − {half:.0f} (half of {i['path_bytes_per_file']:.0f} B of path) = "
                                 f"{per - half:.0f} (settled: {settled - half:.0f})"))
        else:
            t.append(dict(name=name, met=None, detail="not measured"))
    return t


def targets_list(out, with_targets, ts):
    """A section's closing lines: its targets met / missed (ts() makes them), or a pointer to the table."""
    if not with_targets:
        out.append("Its targets are in the Targets table above.\n")
        return out
    out.append("**Targets**\n")
    out += [f"- {mark(t['met'])}: {t['name']}: {t['detail']}" for t in ts()]
    out.append("")
    return out


def mark(met):
    return "not measured" if met is None else ("met" if met else "MISSED")


def section(B, scale=None, with_targets=True):
    """The bulk section of REPORT.md (markdown lines; its targets are in REPORT.md's table, with_targets=False)
    and what bench/run prints at the end. scale: the trees part's scale run (the whole daemon at 100,000 or
    1,000,000 files), if it ran."""
    out = []
    P = out.append
    P("## Bulk: initial measurement at host scale, memory per file, churn soak (issue 14)\n")
    if not B:
        P("Not measured (these results predate the bulk workload, or the run left it out).\n")
        return out
    sz = B["sizes"]
    if sz.get("scale", 1) != 1:
        P(f"**Reduced sizes (--bulk-scale {sz['scale']:g}): development figures, not the issue's.**\n")
    if "elapsed_s" in B:
        P(f"This part took {B['elapsed_s']:.0f} s; load average {B['load_start']} at its start, {B['load_end']} at its end.\n")
    P(f"Initial measurement from nothing of {sz['small']:,} files of 10–200 bytes + {sz['small_big']:,} of 1 MiB "
      f"(small) and of {sz['large']:,} files of 1 MiB (large), on a tmpfs and on a loop-mounted ext4 (relatime) with the "
      f"page cache dropped before every run (`echo 3 > /proc/sys/vm/drop_caches`); "
      + ("one run each" if B["repeat"] == 1 else
         f"best of {B['repeat']}" + (", run round by round (each round runs every contender)"
                                      if B.get("rounds") else "")) +
      ". iverd: `--tpm none --on-access none`, default workers (one per CPU), wall from its start until `iverctl settle` "
      "returns, its list on tmpfs as /run is (\"list ext4\": its runtime directory on the ext4 under test); the others "
      "run as `find -print0 | xargs -0 …` (xargs fills a 128 KiB command line: the small tree's paths make about a "
      "hundred sha256sum (or openssl) commands that -P spreads over the cores, the large tree's 1,024 paths fit in "
      "one, so -P changes nothing there for sha256sum, but `xargs -n 64 -PN openssl` runs N readers at once: what the "
      "disk gives as many readers as iverd has workers); the parallel floor is the faster of the two xargs -PN "
      "contenders (issue 23); aide with a sha256-only rule. CPU: user+system of every process. "
      "Peak RSS B/file: iverd's VmHWM ÷ files (the whole daemon).\n")
    P("| fs | workload | contender | files | MB | wall s | CPU s | MB/s | files/s | peak RSS B/file |")
    P("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in B["rows"]:
        hwm = f"{r['rss_kib'] * 1024 / r['files']:.0f}" if r.get("rss_kib") and r["contender"].startswith("iverd") else ""
        cold = " (cold)" if r.get("cold") else (" (warm)" if r["fs"] != "tmpfs" else "")
        P(f"| {r['fs']}{cold} | {r['workload']} | {r['contender']} | {r['files']:,} | {r['bytes'] / 1e6:.0f} | "
          f"{r['wall']:.2f} | {r['cpu']:.2f} | {r['bytes'] / 1e6 / r['wall']:.0f} | {r['files'] / r['wall']:.0f} | {hwm} |")
    if not B.get("aide"):
        P("\naide is not installed: no aide rows.")
    P("")
    e = B.get("empty_daemon")
    if e:
        P("**The whole daemon**, bytes of RSS per cached file above an iverd with nothing to measure "
          f"(peak {e['hwm_kib'] / 1024:.1f} MiB, settled {e['rss_kib'] / 1024:.1f} MiB):\n")
        P("| run | files | peak RSS MiB | peak B/file | settled RSS MiB | settled B/file | mean path bytes |")
        P("|---|---:|---:|---:|---:|---:|---:|")
        for r in B["rows"]:
            if r["workload"] == "small" and r["contender"].startswith("iverd") and r.get("cached"):
                P(f"| bulk {r['fs']}, {r['contender']} | {r['cached']:,} | {r['rss_kib'] / 1024:.1f} | "
                  f"{(r['rss_kib'] - e['hwm_kib']) * 1024 / r['cached']:.0f} | {r['rss_settled_kib'] / 1024:.1f} | "
                  f"{(r['rss_settled_kib'] - e['rss_kib']) * 1024 / r['cached']:.0f} | {r['path_bytes_per_file']:.0f} |")
        dm = B.get("daemon_mem")
        if dm and dm.get("cached"):
            P(f"| tmpfs, iverd alone on the tree | {dm['cached']:,} | {dm['rss_kib'] / 1024:.1f} | "
              f"{(dm['rss_kib'] - e['hwm_kib']) * 1024 / dm['cached']:.0f} | {dm['rss_settled_kib'] / 1024:.1f} | "
              f"{(dm['rss_settled_kib'] - e['rss_kib']) * 1024 / dm['cached']:.0f} | {dm['path_bytes_per_file']:.0f} |")
        if scale and scale.get("cached"):
            sc = scale
            P(f"| scale run ({sc['fs']}; the trees part) | {sc['cached']:,} | {sc['hwm_kib'] / 1024:.1f} | – | "
              f"{sc['rss_kib'] / 1024:.1f} | {(sc['rss_kib'] - sc['base_rss_kib']) * 1024 / sc['cached']:.0f} | – |")
        P("")
    if B.get("cache_mem"):
        P("**The cache alone** (`bench-cache_mem N`, /usr-like paths, ~24 files per directory):\n")
        P("| files | RSS B/file | path records B/file | beyond path records | unique path bytes/file | beyond unique path bytes | full path bytes/file |")
        P("|---:|---:|---:|---:|---:|---:|---:|")
        for m in B["cache_mem"]:
            P(f"| {m['files']:,.0f} | {m['rss_per_file']:.1f} | {m['path_records_per_file']:.1f} | "
              f"{m['rss_per_file_beyond_path_records']:.1f} | {m['unique_path_bytes_per_file']:.1f} | "
              f"{m['rss_per_file_beyond_unique_paths']:.1f} | {m['path_bytes_per_file']:.1f} |")
        P("")
    c, d = B.get("churn_cache"), B.get("churn_daemon")
    if c or d:
        P("**Churn soak** (500 files replaced dpkg-style, NAME.dpkg-new renamed over NAME, two versions alternating):\n")
    if c:
        P(f"- the cache alone (`bench-cache_mem --churn 500 {c['churn_replacements']:.0f}`): RSS "
          f"{c['churn_rss_start_kib']:,.0f} → {c['churn_rss_end_kib']:,.0f} KiB ({c['churn_rss_growth_pct']:+.2f} %)")
    if d and "rss_start_kib" in d:
        P(f"- iverd (tests/integration/test-soak.sh, {d['replacements']:,} replacements among {d['tree']:,} other files, "
          f"settled after each round of 500, RSS after four warm-up rounds → after the soak): {d['rss_start_kib']:,} → "
          f"{d['rss_end_kib']:,} kB ({d['growth_pct']:+.2f} %); the {d['replacements']:,} replacements took {d['soak_s']} s, {d['hashed']:,} files hashed; "
          f"test {'PASS' if d['passed'] else 'FAIL'}")
    elif d:
        P(f"- iverd (tests/integration/test-soak.sh): failed: `{d.get('failed', '').strip()[-200:]}`")
    if c or d:
        P("")
    return targets_list(out, with_targets, lambda: targets(B))


def usr_find(U, temp, contender):
    return next((r for r in U.get("rows", []) if r["temp"] == temp and r["contender"] == contender), None)


def usr_targets(U):
    """Issue 23 on the real /usr: iverd within 1.1× the parallel floor, cold and warm."""
    t = []
    for temp in ("cold", "warm"):
        xn = f"xargs -P{(U or {}).get('cores', 2)} sha256sum"
        on = f"xargs -P{(U or {}).get('cores', 2)} openssl dgst -sha256"
        name = f"real /usr {temp}: iverd ≤ 1.1× the faster of {xn} and {on} (the parallel floor), the shipped policy's files"
        i = usr_find(U or {}, temp, "iverd")
        floor = [r for r in (usr_find(U or {}, temp, xn), usr_find(U or {}, temp, on)) if r]
        if not i or not floor:
            t.append(dict(name=name, met=None, detail="not measured"))
            continue
        f = min(floor, key=lambda r: r["wall"])
        t.append(dict(name=name, met=i["wall"] <= 1.1 * f["wall"],
                      detail=f"{i['wall']:.2f} s vs {f['wall']:.2f} s ({f['contender']}): {i['wall'] / f['wall']:.2f}×"))
    return t


def usr_section(U, with_targets=True):
    """The real-/usr section of REPORT.md (markdown lines) and what bench/run prints at its end."""
    out = []
    P = out.append
    P("## Real /usr: the shipped default policy's files, cold and warm (issue 23)\n")
    if not U:
        P("Not measured (these results predate the real-/usr part, or the run left it out).\n")
        return out
    fl, first = U["list"], U["first"]
    P(f"This part took {U['elapsed_s']:.0f} s; load average {U['load_start']} at its start, {U['load_end']} at its end.\n")
    P(f"The files `{U['policy']}` measures under this host's {U['root']} ({U['fs']}): the shipped policy with its "
      f"measure rules outside {U['root']} left out (" + ", ".join(f"`{r}`" for r in U["dropped_rules"]) +
      f"), every dont_measure rule kept. A first, untimed iverd run walked {first['seen']:,} files under {U['root']} and "
      f"cached {first['cached']:,}; of the names it lists, {fl['files']:,} are regular files ({fl['bytes'] / 1e6:.0f} MB) "
      f"and {fl['symlinks']:,} symbolic links (iverd lists those with the digest of their target string; left out of "
      f"the contenders' list)" + (f", {fl['unlisted']:,} could not be stat'ed" if fl["unlisted"] else "") + ". "
      f"Those {fl['files']:,} names, NUL-separated in a seeded random order, are what the xargs contenders hash (`xargs -0 "
      f"-a LIST -n {fl.get('batch', '?')} -P{U['cores']} sha256sum`, `… openssl dgst -sha256`: left to pack its command "
      f"lines, xargs would put these few thousand paths into one or two commands, one reader instead of "
      f"{U['cores']}; -n makes 32 batches a reader, which -P balances over the readers, the shuffle mixes large and small "
      f"files in each batch); they are {fl['inodes']:,} inodes "
      f"({fl['inode_bytes'] / 1e6:.0f} MB): a file with several hard links is hashed once per name by the contenders, once "
      f"per inode by iverd (iverd hashed {first['hashed_bytes'] / 1e6:.0f} MB in its first run). iverd: `--tpm none "
      f"--on-access none`, RescanIntervalSec=0, default workers, its list on tmpfs; wall from its start until `iverctl "
      f"settle` returns, which includes its walk of {U['root']} and its policy decisions (the contenders get the list for "
      f"free); CPU of its threads (schedstat). Cold: `sync; echo 3 > /proc/sys/vm/drop_caches` before every run"
      + ("" if U.get("cold_dropped", True) else " (**refused here: the cold runs are not cold**)") +
      "; warm: one untimed run of the same contender first; " +
      ("one run each" if U["repeat"] == 1 else f"best of {U['repeat']}, run round by round (each round runs every "
       "contender)") + ". MB and files: the contenders' list. iverd's CPU wait: the time its threads waited runnable "
      "for a CPU (schedstat), in the best run: on this shared machine, other engineers' load.\n")
    P("| contender | files | MB | wall s | CPU s | cold/warm | MB/s | runs: wall s (1-min load at start) | iverd's CPU wait s |")
    P("|---|---:|---:|---:|---:|---|---:|---|---:|")
    for r in U["rows"]:
        runs = ", ".join(f"{w:.2f}" + (f" ({ld:.1f})" if ld is not None else "")
                         for w, ld in zip(r["walls"], r.get("loads") or [None] * len(r["walls"])))
        wait = f"{r['runq_wait']:.2f}" if "runq_wait" in r else ""
        P(f"| {r['contender']} | {r['files']:,} | {r['bytes'] / 1e6:.0f} | {r['wall']:.2f} | {r['cpu']:.2f} | {r['temp']} | "
          f"{r['bytes'] / 1e6 / r['wall']:.0f} | {runs} | {wait} |")
    P("")
    if any("walk" in r["contender"] for r in U["rows"]):
        P("The row *with find's walk* hashes the same list while `find` walks the directories the policy's measure "
          "rules name (its dont_measure subtrees pruned) and stats every file (`-perm /111`): what the same hashes cost "
          "a tool that must find the files, as iverd must. It is a reference, not the target's floor.\n")
    return targets_list(out, with_targets, lambda: usr_targets(U))
