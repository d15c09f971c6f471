/*
 * start.c builds and starts a libpcp_mmv registry, the C side of
 * BenchmarkStart (../start_test.go), which runs it as a subprocess:
 *
 *	PCP_TMP_DIR=DIR ./start SCENARIO ITERATIONS [KEEP]
 *
 * SCENARIO is "metrics" (1,000 metrics over an indom of 10 instances) or
 * "instances" (one metric over an indom of 10,000 instances), declared as
 * main.go declares them. It prints the mean nanoseconds of building the
 * registry (the names, mmv_stats_registry and the add calls) and of
 * mmv_stats_start, the peak RSS (VmHWM) in KiB, and the mean nanoseconds
 * of making the names, the part of the build that is the program's. The
 * file is removed after each iteration unless KEEP is given.
 */
#include <pcp/pmapi.h>
#include <pcp/mmv_stats.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/*
 * peak_rss is VmHWM, in KiB: unlike getrusage's ru_maxrss, which a
 * process started by Go's os/exec inherits from its parent across exec, it
 * is this program's own.
 */
static long
peak_rss(void)
{
    char line[256];
    long kib = -1;
    FILE *f = fopen("/proc/self/status", "r");

    while (f != NULL && fgets(line, sizeof(line), f) != NULL)
	if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
	    break;
    if (f != NULL)
	fclose(f);
    return kib;
}

static void
fail(const char *what)
{
    fprintf(stderr, "start: %s failed\n", what);
    exit(1);
}

int
main(int argc, char **argv)
{
    pmUnits count = MMV_UNITS(0, 0, 1, 0, 0, PM_COUNT_ONE);
    long long build = 0, start = 0, names = 0;
    int metrics, instances, n, i, j;
    char name[64], path[4096];
    char **inames, **mnames;

    if (argc < 3 || getenv("PCP_TMP_DIR") == NULL) {
	fprintf(stderr, "usage: PCP_TMP_DIR=DIR start metrics|instances ITERATIONS [KEEP]\n");
	return 2;
    }
    if (strcmp(argv[1], "metrics") == 0)
	metrics = 1000, instances = 10;
    else if (strcmp(argv[1], "instances") == 0)
	metrics = 1, instances = 10000;
    else
	fail("scenario");
    n = atoi(argv[2]);
    inames = malloc(instances * sizeof(char *));
    mnames = malloc(metrics * sizeof(char *));
    if (inames == NULL || mnames == NULL)
	fail("malloc");
    for (i = 0; i < n; i++) {
	long long t0 = now(), tn, t1, t2;
	mmv_registry_t *r;
	/* libpcp keeps the pointers to names, not copies */
	for (j = 0; j < instances; j++) {
	    snprintf(name, sizeof(name), "inst%d", j);
	    inames[j] = strdup(name);
	}
	for (j = 0; j < metrics; j++) {
	    snprintf(name, sizeof(name), "metric%d", j);
	    mnames[j] = strdup(name);
	}
	tn = now();
	if ((r = mmv_stats_registry("start", 42, 0)) == NULL)
	    fail("mmv_stats_registry");
	if (mmv_stats_add_indom(r, 1, "Instances", NULL) < 0)
	    fail("mmv_stats_add_indom");
	for (j = 0; j < instances; j++) {
	    /* libpcp 6.0.3 adds the instance, then returns -1 with EINVAL
	     * every time (see ../../testdata/golden/gen.c) */
	    errno = 0;
	    if (mmv_stats_add_instance(r, 1, j, inames[j]) < 0 && errno != EINVAL)
		fail("mmv_stats_add_instance");
	}
	for (j = 0; j < metrics; j++) {
	    if (mmv_stats_add_metric(r, mnames[j], j + 1, MMV_TYPE_U64, MMV_SEM_COUNTER,
			count, 1, "A metric", NULL) < 0)
		fail("mmv_stats_add_metric");
	}
	t1 = now();
	if (mmv_stats_start(r) == NULL)
	    fail("mmv_stats_start");
	t2 = now();
	build += t1 - t0;
	start += t2 - t1;
	names += tn - t0;
	mmv_stats_free(r);
	if (argc < 4) {
	    snprintf(path, sizeof(path), "%s/mmv/start", getenv("PCP_TMP_DIR"));
	    unlink(path);
	}
    }
    printf("%lld %lld %ld %lld\n", build / n, start / n, peak_rss(), names / n);
    return 0;
}
