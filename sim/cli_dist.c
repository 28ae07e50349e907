/* Running compare/sweep runs: local child processes, or over MPI ranks
 * (dynamic assignment: rank 0 hands out the next run to whichever rank asks;
 * rank 0 runs runs too). The MPI calls come from the plugin ampsim-mpi.so,
 * loaded with dlopen only under an MPI launcher, so ampsim never needs MPI. */
#include "cli.h"
#include "cli_dist.h"
#include "mpi/amp_mpi_plugin.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { TAG_REQ = 1, TAG_ASSIGN = 2 };

static const char *env_any(const char *const *names)
{
    for (int i = 0; names[i]; i++) {
        const char *v = getenv(names[i]);
        if (v && *v) return v;
    }
    return NULL;
}

static const char *const size_vars[] = { "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", NULL };
static const char *const rank_vars[] = { "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID", NULL };

int amp_cli_dist_active(void)
{
    const char *no = getenv("AMPSIM_NO_MPI");
    if (no && *no && strcmp(no, "0")) return 0;
    return env_any(size_vars) != NULL;
}

static char *join_argv(char **v)
{
    size_t len = 1;
    for (int i = 1; v[i]; i++) len += strlen(v[i]) + 3;
    char *s = malloc(len), *p = s;
    if (!s) return NULL;
    for (int i = 1; v[i]; i++) p += sprintf(p, "%s'%s'", i > 1 ? " " : "", v[i]);
    *p = 0;
    return s;
}

/* 1 if DIR/NAME finished before with the same command (compare's rule). */
static int already_done(const char *dir, const char *name, char **argv)
{
    char path[4400];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s/summary.json", dir, name);
    if (stat(path, &sb) != 0) return 0;
    snprintf(path, sizeof path, "%s/%s.cmd", dir, name);
    char *old, *cmd = join_argv(argv);
    size_t len;
    if (!cmd) return 0;
    if (amp_read_file(path, 1 << 20, &old, &len) != AMP_OK) { free(cmd); return 0; }
    int same = !strcmp(old, cmd);
    free(old);
    free(cmd);
    return same;
}

/* The exit status a kept run had: 1 when its loss ended not finite (the
 * line train printed is printed again), else 0. */
static int kept_status(const char *cmd, const char *dir, const char *name)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return amp_cli_run_failed(cmd, path);
}

/* Starts run i: removes a stale summary.json first (so a run killed midway
 * never looks finished), writes NAME.cmd, spawns with the log. -1 on error. */
static pid_t start_run(const char *dir, const char *name, char **argv)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s/summary.json", dir, name);
    if (unlink(path) != 0 && errno != ENOENT) {
        amp_fail(AMP_EIO, "%s: cannot remove: %s", path, strerror(errno));
        return -1;
    }
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *slash = strrchr(path, '/');
    *slash = 0;
    if (amp_mkdir_p(path)) return -1;   /* the group folder of a sweep run */
    char *cmd = join_argv(argv);
    if (!cmd) { amp_fail(AMP_ENOMEM, "out of memory"); return -1; }
    snprintf(path, sizeof path, "%s/%s.cmd", dir, name);
    amp_status st = amp_write_file_atomic(path, cmd, strlen(cmd) + 1);
    free(cmd);
    if (st) return -1;
    snprintf(path, sizeof path, "%s/%s.log", dir, name);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) { amp_fail(AMP_EIO, "fork failed: %s", strerror(errno)); return -1; }
    if (pid == 0) {
        /* the run dies with its launcher (a killed sweep or rank leaves no
         * orphan writing into DIR while the sweep is resumed) */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(128 + SIGKILL);
        /* its own process group: a Ctrl-C at a terminal signals the whole
         * foreground group, and a run that got it too would take the
         * launcher's SIGTERM as a second signal and die before removing its
         * temporaries; the launcher alone forwards one SIGTERM */
        setpgid(0, 0);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execv(argv[0], argv);
        dprintf(2, "ampsim: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    return pid;
}

static int exit_code(int ws)
{
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One line per finished run: on a terminal (local runs) or always under MPI
 * (cluster logs). secs < 0: not timed. */
static void report(const char *cmd, const char *out, const amp_run_cfg *r, int k, int n, int st, int rank, double secs)
{
    if (!amp_cli_progress_ok() && (st == 0 || st == 128 + SIGTERM || st == 128 + SIGINT) && rank < 0) return;
    char where[32] = "", took[32] = "";
    if (rank >= 0) snprintf(where, sizeof where, " on rank %d", rank);
    if (secs >= 0) snprintf(took, sizeof took, " %.1f s", secs);
    fprintf(stderr, "ampsim %s: [%d/%d] %s %s%s%s (log %s/%s.log)\n", cmd, k, n, r->name,
            st ? "FAILED" : "ok", took, where, out, r->name);
}

/* A run stopped by an interrupt: its command and log go too (the run removed
 * its own files), so the folder holds only finished runs and resumable ones. */
static void forget_run(const char *out, const char *name)
{
    char p[4400];
    snprintf(p, sizeof p, "%s/%s.cmd", out, name);
    unlink(p);
    snprintf(p, sizeof p, "%s/%s.log", out, name);
    unlink(p);
    snprintf(p, sizeof p, "%s/%s", out, name);
    rmdir(p);
}

/* Returns 0, or 2 on error (printed), or 3 when interrupted (children stopped). */
static int run_local(const char *cmd, const char *out, const amp_run_cfg *runs, char ***argvs, int n,
                     long jobs, int force, int *status)
{
    pid_t *pids = calloc((size_t)n, sizeof *pids);
    double *t0 = calloc((size_t)n, sizeof *t0);
    if (!pids || !t0) { free(pids); free(t0); return amp_cli_fail(AMP_ENOMEM); }
    int running = 0, next = 0, finished = 0, rc = 0;
    while (finished < n) {
        if (amp_cli_interrupted()) break;
        while (running < jobs && next < n) {
            int i = next++;
            if (!force && already_done(out, runs[i].name, argvs[i])) {
                status[i] = kept_status(cmd, out, runs[i].name);
                finished++;
                if (amp_cli_progress_ok()) fprintf(stderr, "ampsim %s: [%d/%d] %s already done\n", cmd, finished, n, runs[i].name);
                continue;
            }
            if ((pids[i] = start_run(out, runs[i].name, argvs[i])) < 0) { rc = amp_cli_fail(AMP_EIO); goto done; }
            t0[i] = now_s();
            running++;
        }
        if (running == 0) continue;
        int ws;
        pid_t pid = wait(&ws);
        if (pid < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int i = 0; i < n; i++)
            if (pids[i] == pid) {
                pids[i] = 0;
                status[i] = exit_code(ws);
                running--;
                finished++;
                if (amp_cli_interrupted() && (status[i] == 128 + SIGINT || status[i] == 128 + SIGTERM)) {
                    forget_run(out, runs[i].name);
                    continue;
                }
                report(cmd, out, &runs[i], finished, n, status[i], -1, now_s() - t0[i]);
            }
    }
    if (amp_cli_interrupted()) {
        for (int i = 0; i < n; i++)
            if (pids[i] > 0) kill(pids[i], SIGTERM);
        for (int i = 0; i < n; i++) {
            if (pids[i] <= 0) continue;
            int ws;
            while (waitpid(pids[i], &ws, 0) < 0 && errno == EINTR) {}
            if (exit_code(ws) != 0) forget_run(out, runs[i].name);
            pids[i] = 0;
        }
        rc = 3;
    }
done:
    free(pids);
    free(t0);
    return rc;
}

static const amp_mpi_plugin *load_plugin(void)
{
    char self[4096], path[4400];
    const char *envp = getenv("AMPSIM_MPI_PLUGIN");
    const char *cand[3] = { envp, NULL, NULL };
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl > 0) {
        self[sl] = 0;
        static char c1[4400], c2[4400];
        char *d = dirname(self);
        snprintf(c1, sizeof c1, "%s/ampsim-mpi.so", d);
        snprintf(c2, sizeof c2, "%s/../lib/ampsim/ampsim-mpi.so", d);
        cand[1] = c1;
        cand[2] = c2;
    }
    for (int i = 0; i < 3; i++) {
        if (!cand[i] || !*cand[i]) continue;
        snprintf(path, sizeof path, "%s", cand[i]);
        if (access(path, R_OK) != 0) continue;
        void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
        if (!h) {
            fprintf(stderr, "ampsim: cannot load the MPI plugin %s: %s\n", path, dlerror());
            continue;
        }
        amp_mpi_plugin_fn fn;
        *(void **)&fn = dlsym(h, AMP_MPI_PLUGIN_SYMBOL);
        const amp_mpi_plugin *p = fn ? fn() : NULL;
        if (p && p->version == AMP_MPI_PLUGIN_VERSION) return p;
        fprintf(stderr, "ampsim: %s is not an ampsim MPI plugin of this version\n", path);
    }
    return NULL;
}

static void nap(void)
{
    struct timespec ts = { 0, 2000000 };   /* 2 ms: ranks poll without spinning */
    nanosleep(&ts, NULL);
}

/* Rank 0: hands out runs (also to itself) until all are done. */
static int mpi_root(const amp_mpi_plugin *mp, int size, const char *cmd, const char *out,
                    const amp_run_cfg *runs, char ***argvs, int n, int force, int *status)
{
    int next = 0, finished = 0, stopped = 0;
    pid_t own = 0;
    int own_i = -1;
    for (;;) {
        int busy = 0;
        /* the next run not already done, or -1 */
        while (next < n && !force && already_done(out, runs[next].name, argvs[next])) {
            status[next] = kept_status(cmd, out, runs[next].name);
            finished++;
            if (amp_cli_progress_ok()) fprintf(stderr, "ampsim %s: [%d/%d] %s already done\n", cmd, finished, n, runs[next].name);
            next++;
        }
        if (own) {
            int ws;
            pid_t p = waitpid(own, &ws, WNOHANG);
            if (p == own) {
                status[own_i] = exit_code(ws);
                finished++;
                report(cmd, out, &runs[own_i], finished, n, status[own_i], 0, -1);
                own = 0;
                busy = 1;
            }
        }
        if (!own && next < n) {
            own_i = next++;
            if ((own = start_run(out, runs[own_i].name, argvs[own_i])) < 0) {
                fprintf(stderr, "ampsim %s: %s\n", cmd, amp_errmsg());
                mp->abort_all(2);
                return 2;
            }
            busy = 1;
            continue;   /* re-check "already done" before answering the workers */
        }
        int src;
        int pr = mp->probe(TAG_REQ, &src);
        if (pr < 0) { fprintf(stderr, "ampsim %s: MPI_Iprobe failed\n", cmd); mp->abort_all(2); return 2; }
        if (pr == 1) {
            int msg[2], give;
            if (mp->recv(msg, 2, src, TAG_REQ)) { mp->abort_all(2); return 2; }
            if (msg[0] >= 0 && msg[0] < n) {
                status[msg[0]] = msg[1];
                finished++;
                report(cmd, out, &runs[msg[0]], finished, n, msg[1], src, -1);
            }
            give = next < n ? next++ : -1;
            if (give < 0) stopped++;
            if (mp->send(&give, 1, src, TAG_ASSIGN)) { mp->abort_all(2); return 2; }
            busy = 1;
        }
        if (!own && next >= n && stopped == size - 1) break;
        if (!busy) nap();
    }
    return 0;
}

/* Other ranks: ask for a run, run it, report it with the next request. */
static int mpi_worker(const amp_mpi_plugin *mp, const char *cmd, const char *out, const amp_run_cfg *runs,
                      char ***argvs, int n)
{
    int msg[2] = { -1, 0 };
    for (;;) {
        if (mp->send(msg, 2, 0, TAG_REQ)) return 2;
        int src, pr, i;
        while ((pr = mp->probe(TAG_ASSIGN, &src)) == 0) nap();
        if (pr < 0 || mp->recv(&i, 1, src, TAG_ASSIGN)) return 2;
        if (i < 0 || i >= n) return 0;
        pid_t pid = start_run(out, runs[i].name, argvs[i]);
        int code = 127;
        if (pid < 0) fprintf(stderr, "ampsim %s: %s: %s\n", cmd, runs[i].name, amp_errmsg());
        else {
            int ws;
            while (waitpid(pid, &ws, 0) < 0)
                if (errno != EINTR) { ws = 127 << 8; break; }
            code = exit_code(ws);
        }
        msg[0] = i;
        msg[1] = code;
    }
}

int amp_cli_dist_run(const char *cmd, const char *out, const amp_run_cfg *runs, char ***argvs, int n,
                     long jobs, int force, int *status)
{
    if (!amp_cli_dist_active()) return run_local(cmd, out, runs, argvs, n, jobs, force, status);
    const amp_mpi_plugin *mp = load_plugin();
    if (!mp) {
        const char *r = env_any(rank_vars);
        int rank = r ? atoi(r) : 0;
        if (rank != 0) {
            fprintf(stderr, "ampsim %s: no MPI plugin (ampsim-mpi.so) in this build: rank %d leaves the runs to rank 0\n", cmd, rank);
            return 1;
        }
        fprintf(stderr, "ampsim %s: no MPI plugin (ampsim-mpi.so) in this build: rank 0 runs everything locally\n", cmd);
        return run_local(cmd, out, runs, argvs, n, jobs, force, status);
    }
    int rank, size;
    if (mp->init(&rank, &size)) {
        fprintf(stderr, "ampsim %s: MPI_Init failed\n", cmd);
        return 2;
    }
    int rc;
    if (rank == 0) rc = mpi_root(mp, size, cmd, out, runs, argvs, n, force, status);
    else {
        rc = mpi_worker(mp, cmd, out, runs, argvs, n);
        if (rc) {
            fprintf(stderr, "ampsim %s: rank %d: MPI communication failed\n", cmd, rank);
            mp->abort_all(2);
        }
        rc = rc ? 2 : 1;
    }
    mp->finalize();
    return rc;
}
