/*
 * cli_progress.c — the progress bar for waits (model loading, long
 * prefills, downloads) and the Ctrl-C flag generation loops poll.
 */
#include "cli/cli.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { BAR_WIDTH = 30 };
#define SHOW_AFTER_S 0.25 /* a wait shorter than this draws nothing */

double cli_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void cli_progress_begin(cli_progress *p, const char *label) {
    p->label = label;
    p->t_start_s = cli_now_s();
    p->enabled = isatty(STDERR_FILENO);
    p->drawn_pct = -1;
}

/* Percent of fraction when the bar should be redrawn at it; -1 when not
 * (off, too early, or the same percent as drawn). */
static int pct_to_draw(cli_progress *p, double fraction) {
    if (!p->enabled) return -1;
    if (p->drawn_pct < 0 && cli_now_s() - p->t_start_s < SHOW_AFTER_S) return -1;
    int pct = (int)(100.0 * (fraction < 0 ? 0 : fraction > 1 ? 1 : fraction));
    if (pct == p->drawn_pct) return -1;
    p->drawn_pct = pct;
    return pct;
}

static void draw_bar(const cli_progress *p, int pct) {
    char bar[BAR_WIDTH + 1];
    int full = pct * BAR_WIDTH / 100;
    memset(bar, '#', (size_t)full);
    memset(bar + full, '.', (size_t)(BAR_WIDTH - full));
    bar[BAR_WIDTH] = 0;
    fprintf(stderr, "\r%s [%s] %3d%%", p->label, bar, pct);
}

void cli_progress_update(cli_progress *p, double fraction) {
    int pct = pct_to_draw(p, fraction);
    if (pct < 0) return;
    draw_bar(p, pct);
    fflush(stderr);
}

void cli_progress_update_bytes(cli_progress *p, uint64_t done_bytes, uint64_t total_bytes) {
    int pct = pct_to_draw(p, total_bytes ? (double)done_bytes / (double)total_bytes : 1.0);
    if (pct < 0) return;
    draw_bar(p, pct);
    fprintf(stderr, " %.1f/%.1f MiB\033[K", (double)done_bytes / 1048576.0, (double)total_bytes / 1048576.0);
    fflush(stderr);
}

void cli_progress_end(cli_progress *p) {
    if (p->enabled && p->drawn_pct >= 0) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
    p->drawn_pct = -1;
}

void cli_progress_callback(double fraction, void *user) { cli_progress_update(user, fraction); }

volatile sig_atomic_t cli_interrupted;

static void on_sigint(int sig) {
    (void)sig;
    if (cli_interrupted) _exit(130);
    cli_interrupted = 1;
}

void cli_catch_interrupt(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: a blocking read returns EINTR */
    sigaction(SIGINT, &sa, NULL);
}
