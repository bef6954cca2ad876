# SPDX-License-Identifier: LGPL-2.1-or-later
"""Before a run: packages (aide, gnuplot), the build in build-bench/, and the two helper
programs compiled into the work directory (the rescan shim and runm)."""
import os
import shutil
import subprocess
import sys

from .common import die


def installed(pkg):
    r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
    return "install ok installed" in r.stdout


def ensure_packages(src):
    subprocess.run(["bash", os.path.join(src, "scripts", "deps.sh")], stdout=subprocess.DEVNULL, check=True)
    missing = [p for p in ("aide", "gnuplot-nox") if not installed(p)]
    if missing:
        print(f"# installing {' '.join(missing)}", file=sys.stderr)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        q = dict(stdout=subprocess.DEVNULL, env=env)
        subprocess.run(["apt-get", "update", "-q"], check=True, **q)
        # gnuplot is optional (the report falls back to SVG drawn by python); aide is not
        if subprocess.run(["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing], **q).returncode:
            subprocess.run(["apt-get", "install", "-y", "-q", "--no-install-recommends", "aide"], **q)
    if not shutil.which("aide"):
        die("aide is missing and could not be installed")


def build(src, bdir):
    print(f"# building in {bdir}", file=sys.stderr)
    subprocess.run(["cmake", "-S", src, "-B", bdir, "-DCMAKE_BUILD_TYPE=Release"], stdout=subprocess.DEVNULL, check=True)
    subprocess.run(["cmake", "--build", bdir, f"-j{os.cpu_count()}"], stdout=subprocess.DEVNULL, check=True)


NOINOTIFY_C = r'''/* Pure rescan mode for the benchmark: every inotify watch fails as if the
 * watch limit were reached and whole-filesystem tracking (a fanotify group
 * with FAN_REPORT_FID) is unavailable, so iverd covers the tree by rescans
 * only and re-hashes on every cookie move. */
#include <errno.h>
#include <stdint.h>
int inotify_add_watch(int fd, const char *path, uint32_t mask) {
        (void) fd; (void) path; (void) mask;
        errno = ENOSPC;
        return -1;
}
int fanotify_init(unsigned flags, unsigned event_f_flags) {
        (void) flags; (void) event_f_flags;
        errno = ENOSYS;
        return -1;
}
'''

RUNM_C = r'''/* runm OUT CMD...: run CMD and write "wall_s cpu_s maxrss_kib status" to OUT.
 * A small exec'ing parent, so that the child's peak RSS is its own and not
 * the (v)forking python driver's. */
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static volatile pid_t child;
static void forward(int sig) {
        if (child > 0)
                kill(child, sig);      /* so that killing runm by pid kills what it runs */
}
int main(int argc, char *argv[]) {
        struct timespec a, b;
        struct rusage ru;
        int st;
        if (argc < 3)
                return 2;
        signal(SIGTERM, forward);
        signal(SIGINT, forward);
        signal(SIGHUP, forward);
        clock_gettime(CLOCK_MONOTONIC, &a);
        pid_t pid = fork();
        if (pid == 0) {
                execvp(argv[2], argv + 2);
                _exit(127);
        }
        child = pid;
        if (pid < 0 || wait4(pid, &st, 0, &ru) < 0)
                return 1;
        clock_gettime(CLOCK_MONOTONIC, &b);
        FILE *f = fopen(argv[1], "we");
        if (!f)
                return 1;
        fprintf(f, "%.6f %.6f %ld %d\n", (double) (b.tv_sec - a.tv_sec) + (double) (b.tv_nsec - a.tv_nsec) / 1e9,
                (double) (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (double) (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6,
                ru.ru_maxrss, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
        fclose(f);
        return 0;
}
'''


def build_helpers(work):
    """The LD_PRELOAD shim of the rescan daemon and runm, compiled into the work directory."""
    for name, text, flags, out in (("noinotify.c", NOINOTIFY_C, ["-shared", "-fPIC", "-O2"], "noinotify.so"),
                                   ("runm.c", RUNM_C, ["-O2"], "runm")):
        with open(os.path.join(work, name), "w") as f:
            f.write(text)
        subprocess.run(["cc", *flags, "-o", os.path.join(work, out), os.path.join(work, name)], check=True)
