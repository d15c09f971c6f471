/*
 * gen.c writes the golden MMV files of package mmv with PCP's own C writer,
 * libpcp_mmv, one file per scenario.
 *
 *	gcc -o gen gen.c -lpcp_mmv -lpcp
 *	PCP_TMP_DIR=/some/tmp ./gen OUTDIR [SCENARIO...]
 *	./gen -l			(list the scenarios, in order)
 *
 * libpcp_mmv writes $PCP_TMP_DIR/mmv/<scenario>; gen copies that file to
 * OUTDIR/<scenario>.mmv. It refuses to run without PCP_TMP_DIR in the
 * environment, so it never writes into the host's real MMV directory.
 *
 * The scenarios are declared twice: here, one function per scenario, and in
 * ../../golden_test.go, one table entry per scenario, IN THE SAME ORDER AND
 * UNDER THE SAME NAMES. A scenario's registry name is its file name, and
 * golden_test.go checks that "gen -l" lists exactly its table. Keep the
 * declarations of a scenario in the same order in both places: the file
 * layout follows the order of declaration.
 *
 * Conventions, to match what the Go API can express:
 *  - singular metrics use MMV_INDOM_NULL: the Go writer stores 0xFFFFFFFF
 *    (PM_INDOM_NULL) for a metric with no indom, while libpcp would store a
 *    0 given as is;
 *  - an absent help text is NULL. The Go API maps an empty Go string to no
 *    help at all (offset 0, no string slot); libpcp gives "" a slot of its
 *    own and only NULL none, so an "empty help" in the Go table is NULL here;
 *  - MMV_STRING_TYPE label values are given already JSON-quoted, and every
 *    label value is given in the compact form encoding/json produces (maps
 *    with their keys sorted), since libpcp stores the text as given.
 *
 * What gen changes in the file libpcp wrote: only the label payload bytes
 * after the payload's NUL, which libpcp leaves as uninitialised heap memory;
 * gen zeroes them, as the Go writer does, so the goldens hold no stray
 * process memory. The generation numbers and the pid stay as written; to
 * keep regeneration quiet, an existing golden is rewritten only when it
 * differs from the new file somewhere other than gen1, gen2 and pid.
 */
#include <pcp/pmapi.h>
#include <pcp/mmv_stats.h>
#include <pcp/mmv_dev.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Header fields masked when comparing an existing golden (see above). */
#define GEN1_OFF	8
#define GEN2_OFF	16
#define GEN_END		24
#define PID_OFF		32
#define PID_END		36

static const char *scenario;	/* the scenario being declared, for errors */

static void
die(const char *what)
{
    fprintf(stderr, "gen: %s: %s: %s\n", scenario ? scenario : "-", what,
	    strerror(errno));
    exit(1);
}

/* CHECK runs an add call and stops gen when it fails. */
#define CHECK(call) do { errno = 0; if ((call) != 0) die(#call); } while (0)

/*
 * Serials of the indoms declared in the current scenario, so that
 * add_instance can tell success from failure: libpcp 6.0.3's
 * mmv_stats_add_instance adds the instance and then returns -1 with EINVAL
 * every time (its "indom not found" test runs after a loop that never stops
 * early), so its return code alone cannot be trusted.
 */
static int serials[4096];
static int nserials;

static void
add_indom(mmv_registry_t *r, int serial, const char *shorthelp,
	  const char *longhelp)
{
    CHECK(mmv_stats_add_indom(r, serial, shorthelp, longhelp));
    serials[nserials++] = serial;
}

static void
add_instance(mmv_registry_t *r, int serial, int id, const char *name)
{
    int i, known = 0;

    for (i = 0; i < nserials; i++)
	if (serials[i] == serial)
	    known = 1;
    errno = 0;
    if (mmv_stats_add_instance(r, serial, id, name) == 0)
	return;
    if (known && errno == EINVAL)
	return;		/* the 6.0.3 bug above: the instance was added */
    die("mmv_stats_add_instance");
}

/* Units, as MMV_UNITS(dimSpace, dimTime, dimCount, space, time, count). */
static const pmUnits none = MMV_UNITS(0, 0, 0, 0, 0, 0);
static const pmUnits count = MMV_UNITS(0, 0, 1, 0, 0, PM_COUNT_ONE);
static const pmUnits bytes = MMV_UNITS(1, 0, 0, PM_SPACE_BYTE, 0, 0);
static const pmUnits kbyte = MMV_UNITS(1, 0, 0, PM_SPACE_KBYTE, 0, 0);
static const pmUnits kbyte_per_sec =
	MMV_UNITS(1, -1, 0, PM_SPACE_KBYTE, PM_TIME_SEC, 0);
static const pmUnits usec = MMV_UNITS(0, 1, 0, 0, PM_TIME_USEC, 0);
static const pmUnits msec = MMV_UNITS(0, 1, 0, 0, PM_TIME_MSEC, 0);

/* The eight value types, in the order the scenarios use them. */
static const struct {
    const char		*name;
    mmv_metric_type_t	type;
    mmv_metric_sem_t	sem;
    const pmUnits	*units;
} types[] = {
    { "i32", MMV_TYPE_I32, MMV_SEM_INSTANT, &count },
    { "u32", MMV_TYPE_U32, MMV_SEM_COUNTER, &count },
    { "i64", MMV_TYPE_I64, MMV_SEM_INSTANT, &bytes },
    { "u64", MMV_TYPE_U64, MMV_SEM_COUNTER, &kbyte },
    { "float", MMV_TYPE_FLOAT, MMV_SEM_INSTANT, &none },
    { "double", MMV_TYPE_DOUBLE, MMV_SEM_INSTANT, &kbyte_per_sec },
    { "string", MMV_TYPE_STRING, MMV_SEM_DISCRETE, &none },
    { "elapsed", MMV_TYPE_ELAPSED, MMV_SEM_COUNTER, &usec },
};
#define NTYPES ((int)(sizeof(types) / sizeof(types[0])))

/* A file with no indoms and no metrics. */
static void
s_empty(mmv_registry_t *r)
{
    (void)r;
}

/* One singular metric of every type, items 1..8. */
static void
s_types_singular(mmv_registry_t *r)
{
    static char help[NTYPES][64];
    int i;

    for (i = 0; i < NTYPES; i++) {
	snprintf(help[i], sizeof(help[i]), "A singular %s", types[i].name);
	CHECK(mmv_stats_add_metric(r, types[i].name, i + 1, types[i].type,
		types[i].sem, *types[i].units, MMV_INDOM_NULL, help[i], NULL));
    }
}

/* One metric of every type over a three-instance indom, items 1..8. */
static void
s_types_indom(mmv_registry_t *r)
{
    static char help[NTYPES][64];
    int i;

    add_indom(r, 1, "Workers", "The worker pool.");
    add_instance(r, 1, 0, "alpha");
    add_instance(r, 1, 1, "beta");
    add_instance(r, 1, 2, "gamma");
    for (i = 0; i < NTYPES; i++) {
	snprintf(help[i], sizeof(help[i]), "A %s per worker", types[i].name);
	CHECK(mmv_stats_add_metric(r, types[i].name, i + 1, types[i].type,
		types[i].sem, *types[i].units, 1, help[i], NULL));
    }
}

/* Indoms with both help texts, short only, long only and none. */
static void
s_indom_help(mmv_registry_t *r)
{
    add_indom(r, 1, "Both texts", "Long help of indom 1.");
    add_instance(r, 1, 0, "a");
    add_instance(r, 1, 1, "b");
    add_indom(r, 2, "Short text only", NULL);
    add_instance(r, 2, 0, "a");
    add_instance(r, 2, 1, "b");
    add_indom(r, 3, NULL, "Long text only.");
    add_instance(r, 3, 0, "a");
    add_instance(r, 3, 1, "b");
    add_indom(r, 4, NULL, NULL);
    add_instance(r, 4, 0, "a");
    add_instance(r, 4, 1, "b");
    CHECK(mmv_stats_add_metric(r, "on.one", 1, MMV_TYPE_U64,
	    MMV_SEM_COUNTER, count, 1, "Metric on indom 1", NULL));
    CHECK(mmv_stats_add_metric(r, "on.two", 2, MMV_TYPE_U64,
	    MMV_SEM_COUNTER, count, 2, NULL, NULL));
    CHECK(mmv_stats_add_metric(r, "on.three", 3, MMV_TYPE_U64,
	    MMV_SEM_COUNTER, count, 3, NULL, "Long help of metric on.three."));
    CHECK(mmv_stats_add_metric(r, "on.four", 4, MMV_TYPE_U64,
	    MMV_SEM_COUNTER, count, 4, NULL, NULL));
    CHECK(mmv_stats_add_metric(r, "single", 5, MMV_TYPE_I32,
	    MMV_SEM_INSTANT, none, MMV_INDOM_NULL, "Singular", NULL));
}

/* 255 bytes: the longest help text a string slot holds. */
static char long255[256];

/* Metric help: none, short only, long only, multi-line, longest. */
static void
s_help(mmv_registry_t *r)
{
    memset(long255, 'h', 255);
    CHECK(mmv_stats_add_metric(r, "none", 1, MMV_TYPE_U32,
	    MMV_SEM_COUNTER, count, MMV_INDOM_NULL, NULL, NULL));
    CHECK(mmv_stats_add_metric(r, "short", 2, MMV_TYPE_U32,
	    MMV_SEM_COUNTER, count, MMV_INDOM_NULL, "Short only", NULL));
    CHECK(mmv_stats_add_metric(r, "long", 3, MMV_TYPE_U32,
	    MMV_SEM_COUNTER, count, MMV_INDOM_NULL, NULL, "Long only."));
    CHECK(mmv_stats_add_metric(r, "multi", 4, MMV_TYPE_U32,
	    MMV_SEM_COUNTER, count, MMV_INDOM_NULL, "Multi-line help",
	    "First line.\nSecond line,\tindented.\n\nFourth line: UTF-8 \xc3\xa9\xe2\x9c\x93.\n"));
    CHECK(mmv_stats_add_metric(r, "longest", 5, MMV_TYPE_U32,
	    MMV_SEM_COUNTER, count, MMV_INDOM_NULL, long255, long255));
}

/* String values, singular and per instance, among other metrics. */
static void
s_strings(mmv_registry_t *r)
{
    add_indom(r, 3, "Colours", NULL);
    add_instance(r, 3, 10, "red");
    add_instance(r, 3, 20, "green");
    add_instance(r, 3, 30, "blue");
    CHECK(mmv_stats_add_metric(r, "version", 1, MMV_TYPE_STRING,
	    MMV_SEM_DISCRETE, none, MMV_INDOM_NULL, "Version", NULL));
    CHECK(mmv_stats_add_metric(r, "count", 2, MMV_TYPE_U64,
	    MMV_SEM_COUNTER, count, 3, "Count per colour", NULL));
    CHECK(mmv_stats_add_metric(r, "name", 3, MMV_TYPE_STRING,
	    MMV_SEM_INSTANT, none, 3, "Name per colour", "One string per colour."));
    CHECK(mmv_stats_add_metric(r, "status", 4, MMV_TYPE_STRING,
	    MMV_SEM_INSTANT, none, MMV_INDOM_NULL, NULL, NULL));
}

/* Elapsed values, singular and per instance, in two time units. */
static void
s_elapsed(mmv_registry_t *r)
{
    add_indom(r, 2, "Phases", NULL);
    add_instance(r, 2, 0, "parse");
    add_instance(r, 2, 1, "plan");
    CHECK(mmv_stats_add_metric(r, "busy", 1, MMV_TYPE_ELAPSED,
	    MMV_SEM_COUNTER, usec, MMV_INDOM_NULL, "Busy time", NULL));
    CHECK(mmv_stats_add_metric(r, "phase", 2, MMV_TYPE_ELAPSED,
	    MMV_SEM_COUNTER, msec, 2, "Time per phase", "Milliseconds."));
}

/* Units of several dimensions and scales. */
static void
s_units(mmv_registry_t *r)
{
    static const struct {
	const char	*name;
	pmUnits		units;
    } u[] = {
	{ "none", MMV_UNITS(0, 0, 0, 0, 0, 0) },
	{ "count", MMV_UNITS(0, 0, 1, 0, 0, PM_COUNT_ONE) },
	{ "kcount", MMV_UNITS(0, 0, 1, 0, 0, 3) },
	{ "centicount", MMV_UNITS(0, 0, 1, 0, 0, -2) },
	{ "bytes", MMV_UNITS(1, 0, 0, PM_SPACE_BYTE, 0, 0) },
	{ "mbyte2", MMV_UNITS(2, 0, 0, PM_SPACE_MBYTE, 0, 0) },
	{ "kbyte_per_sec", MMV_UNITS(1, -1, 0, PM_SPACE_KBYTE, PM_TIME_SEC, 0) },
	{ "gbyte_per_hour", MMV_UNITS(1, -1, 0, PM_SPACE_GBYTE, PM_TIME_HOUR, 0) },
	{ "nsec", MMV_UNITS(0, 1, 0, 0, PM_TIME_NSEC, 0) },
	{ "per_min", MMV_UNITS(0, -1, 1, 0, PM_TIME_MIN, PM_COUNT_ONE) },
	{ "count_per_usec2", MMV_UNITS(0, -2, 1, 0, PM_TIME_USEC, 0) },
    };
    int i;

    for (i = 0; i < (int)(sizeof(u) / sizeof(u[0])); i++)
	CHECK(mmv_stats_add_metric(r, u[i].name, i + 1, MMV_TYPE_DOUBLE,
		MMV_SEM_INSTANT, u[i].units, MMV_INDOM_NULL, NULL, NULL));
}

/* 63-byte names: the longest that keep a version 1 file. */
static void
s_v1_name_63(mmv_registry_t *r)
{
    static char metric[64], inst[64];

    memset(metric, 'm', 63);
    memset(inst, 'i', 63);
    add_indom(r, 1, NULL, NULL);
    add_instance(r, 1, 0, inst);
    CHECK(mmv_stats_add_metric(r, metric, 1, MMV_TYPE_U64,
	    MMV_SEM_COUNTER, count, 1, NULL, NULL));
}

/* A 64-byte metric name makes a version 2 file. */
static void
s_v2_metric_name(mmv_registry_t *r)
{
    static char metric[65];

    memset(metric, 'm', 64);
    add_indom(r, 1, "Sides", NULL);
    add_instance(r, 1, 0, "left");
    add_instance(r, 1, 1, "right");
    CHECK(mmv_stats_add_metric(r, "short.name", 1, MMV_TYPE_U64,
	    MMV_SEM_COUNTER, count, 1, "Short name", NULL));
    CHECK(mmv_stats_add_metric(r, metric, 2, MMV_TYPE_I32,
	    MMV_SEM_INSTANT, none, MMV_INDOM_NULL, "Long name", "64 bytes."));
    CHECK(mmv_stats_add_metric(r, "text", 3, MMV_TYPE_STRING,
	    MMV_SEM_DISCRETE, none, 1, "Text per side", NULL));
}

/* A 64-byte instance name makes a version 2 file; 255 bytes fit. */
static void
s_v2_instance_name(mmv_registry_t *r)
{
    static char inst64[65], inst255[256];

    memset(inst64, 'i', 64);
    memset(inst255, 'j', 255);
    add_indom(r, 1, NULL, NULL);
    add_instance(r, 1, 0, "short");
    add_instance(r, 1, 1, inst64);
    add_instance(r, 1, 2, inst255);
    CHECK(mmv_stats_add_metric(r, "per.instance", 1, MMV_TYPE_U32,
	    MMV_SEM_INSTANT, count, 1, NULL, NULL));
}

/* Labels of every kind and value type, optional ones included (v3). */
static void
s_v3_labels(mmv_registry_t *r)
{
    static char maxed[233 + 1];	/* "x...x": 231 x and two quotes */

    add_indom(r, 1, "Queues", NULL);
    add_instance(r, 1, 0, "q0");
    add_instance(r, 1, 1, "q1");
    add_instance(r, 1, 2, "q2");
    add_indom(r, 2, NULL, NULL);
    add_instance(r, 2, 5, "only");
    CHECK(mmv_stats_add_metric(r, "depth", 1, MMV_TYPE_U32,
	    MMV_SEM_INSTANT, count, 1, "Queue depth", NULL));
    CHECK(mmv_stats_add_metric(r, "uptime", 2, MMV_TYPE_ELAPSED,
	    MMV_SEM_COUNTER, usec, MMV_INDOM_NULL, NULL, NULL));
    CHECK(mmv_stats_add_metric(r, "other", 3, MMV_TYPE_DOUBLE,
	    MMV_SEM_INSTANT, none, 2, NULL, NULL));

    CHECK(mmv_stats_add_registry_label(r, "service", "\"billing\"",
	    MMV_STRING_TYPE, 0));
    CHECK(mmv_stats_add_registry_label(r, "replica", "3",
	    MMV_NUMBER_TYPE, 1));
    CHECK(mmv_stats_add_metric_label(r, 1, "bounded", "true",
	    MMV_BOOLEAN_TYPE, 0));
    CHECK(mmv_stats_add_metric_label(r, 1, "limit", "null",
	    MMV_NULL_TYPE, 1));
    CHECK(mmv_stats_add_metric_label(r, 2, "ratio", "-2.5",
	    MMV_NUMBER_TYPE, 0));
    CHECK(mmv_stats_add_metric_label(r, 3, "tags", "[1,\"two\",false,null]",
	    MMV_ARRAY_TYPE, 0));
    CHECK(mmv_stats_add_indom_label(r, 1, "kind", "\"fifo\"",
	    MMV_STRING_TYPE, 0));
    CHECK(mmv_stats_add_indom_label(r, 2, "shape",
	    "{\"h\":2,\"ok\":true,\"w\":[1,2]}", MMV_MAP_TYPE, 1));
    CHECK(mmv_stats_add_instance_label(r, 1, 0, "owner", "\"say \\\"hi\\\"\"",
	    MMV_STRING_TYPE, 0));
    CHECK(mmv_stats_add_instance_label(r, 1, 2, "weight", "0.125",
	    MMV_NUMBER_TYPE, 1));
    CHECK(mmv_stats_add_instance_label(r, 2, 5, "empty", "{}",
	    MMV_MAP_TYPE, 0));
    CHECK(mmv_stats_add_instance_label(r, 2, 5, "none", "[]",
	    MMV_ARRAY_TYPE, 0));
    CHECK(mmv_stats_add_registry_label(r, "enabled", "false",
	    MMV_BOOLEAN_TYPE, 0));
    /* The longest payload: 243 bytes and the NUL. */
    memset(maxed, 'x', sizeof(maxed) - 1);
    maxed[0] = maxed[sizeof(maxed) - 2] = '"';
    CHECK(mmv_stats_add_instance_label(r, 1, 1, "maxed", maxed,
	    MMV_STRING_TYPE, 0));
}

/*
 * Indoms of 0, 1 and many instances, with serials and instance ids out of
 * order, some instances added after the metrics, and an indom no metric
 * uses.
 */
static void
s_indom_sizes(mmv_registry_t *r)
{
    static char names[20][16];
    int i;

    add_indom(r, 100, "No instances", NULL);
    add_indom(r, 5, "One instance", NULL);
    add_instance(r, 5, 42, "solo");
    add_indom(r, 2047, "Many instances", NULL);
    for (i = 0; i < 10; i++) {
	snprintf(names[i], sizeof(names[i]), "cpu%d", 19 - i);
	add_instance(r, 2047, 19 - i, names[i]);
    }
    add_indom(r, 7, "Unused", NULL);
    add_instance(r, 7, 1, "x");
    CHECK(mmv_stats_add_metric(r, "zero", 1, MMV_TYPE_U64,
	    MMV_SEM_COUNTER, count, 100, NULL, NULL));
    CHECK(mmv_stats_add_metric(r, "one", 2, MMV_TYPE_U64,
	    MMV_SEM_COUNTER, count, 5, NULL, NULL));
    CHECK(mmv_stats_add_metric(r, "many", 3, MMV_TYPE_U64,
	    MMV_SEM_COUNTER, count, 2047, NULL, NULL));
    CHECK(mmv_stats_add_metric(r, "many_again", 4, MMV_TYPE_FLOAT,
	    MMV_SEM_INSTANT, none, 2047, NULL, NULL));
    CHECK(mmv_stats_add_metric(r, "zero_text", 5, MMV_TYPE_STRING,
	    MMV_SEM_INSTANT, none, 100, NULL, NULL));
    for (i = 10; i < 20; i++) {
	snprintf(names[i], sizeof(names[i]), "cpu%d", 19 - i);
	add_instance(r, 2047, 19 - i, names[i]);
    }
}

/* The most metrics a file may hold, cycling through the types. */
static void
s_many_metrics(mmv_registry_t *r)
{
    static char names[1023][16];
    int i;

    for (i = 0; i < 1023; i++) {
	snprintf(names[i], sizeof(names[i]), "m%04d", i + 1);
	CHECK(mmv_stats_add_metric(r, names[i], i + 1, types[i % NTYPES].type,
		types[i % NTYPES].sem, *types[i % NTYPES].units,
		MMV_INDOM_NULL, NULL, NULL));
    }
}

/* The NoPrefix flag alone. */
static void
s_flags_noprefix(mmv_registry_t *r)
{
    CHECK(mmv_stats_add_metric(r, "noprefix.hits", 1, MMV_TYPE_U64,
	    MMV_SEM_COUNTER, count, MMV_INDOM_NULL, "Hits", NULL));
}

/* Every flag, and the largest cluster. */
static void
s_flags_all(mmv_registry_t *r)
{
    add_indom(r, 9, NULL, NULL);
    add_instance(r, 9, 0, "zero");
    add_instance(r, 9, 1, "one");
    CHECK(mmv_stats_add_metric(r, "allflags.value", 1, MMV_TYPE_I64,
	    MMV_SEM_INSTANT, none, 9, "Value", NULL));
    CHECK(mmv_stats_add_metric(r, "allflags.text", 2, MMV_TYPE_STRING,
	    MMV_SEM_DISCRETE, none, MMV_INDOM_NULL, NULL, NULL));
}

/* The registry of examples/quickstart (issue 2, item 9), in its order. */
static void
s_quickstart(mmv_registry_t *r)
{
    add_indom(r, 1, "HTTP request methods",
	    "Request methods seen by the quickstart server.");
    add_instance(r, 1, 0, "GET");
    add_instance(r, 1, 1, "POST");
    add_instance(r, 1, 2, "PUT");
    add_instance(r, 1, 3, "DELETE");
    CHECK(mmv_stats_add_metric(r, "requests.total", 1, MMV_TYPE_U64,
	    MMV_SEM_COUNTER, count, 1, "Requests served, by method", NULL));
    CHECK(mmv_stats_add_metric(r, "requests.bytes", 2, MMV_TYPE_U64,
	    MMV_SEM_COUNTER, bytes, 1, "Response bytes sent, by method",
	    "Total size of the response bodies written, by request method."));
    CHECK(mmv_stats_add_metric(r, "inflight", 3, MMV_TYPE_I32,
	    MMV_SEM_INSTANT, count, MMV_INDOM_NULL,
	    "Requests being served now", NULL));
    CHECK(mmv_stats_add_metric(r, "busy.time", 4, MMV_TYPE_ELAPSED,
	    MMV_SEM_COUNTER, usec, MMV_INDOM_NULL,
	    "Time spent serving requests", NULL));
    CHECK(mmv_stats_add_metric(r, "load", 5, MMV_TYPE_DOUBLE,
	    MMV_SEM_INSTANT, none, MMV_INDOM_NULL,
	    "Requests per second, smoothed over one minute", NULL));
    CHECK(mmv_stats_add_metric(r, "version", 6, MMV_TYPE_STRING,
	    MMV_SEM_DISCRETE, none, MMV_INDOM_NULL, "Server version", NULL));
}

/* The scenarios, in the order of golden_test.go's table. */
static const struct {
    const char		*name;
    int			cluster;
    mmv_stats_flags_t	flags;
    void		(*declare)(mmv_registry_t *);
} scenarios[] = {
    { "empty", 0, 0, s_empty },
    { "types_singular", 1, 0, s_types_singular },
    { "types_indom", 2, 0, s_types_indom },
    { "indom_help", 3, 0, s_indom_help },
    { "help", 4, 0, s_help },
    { "strings", 5, 0, s_strings },
    { "elapsed", 6, 0, s_elapsed },
    { "units", 7, 0, s_units },
    { "v1_name_63", 8, 0, s_v1_name_63 },
    { "v2_metric_name", 9, 0, s_v2_metric_name },
    { "v2_instance_name", 10, 0, s_v2_instance_name },
    { "v3_labels", 11, 0, s_v3_labels },
    { "indom_sizes", 12, 0, s_indom_sizes },
    { "many_metrics", 13, 0, s_many_metrics },
    { "flags_noprefix", 14, MMV_FLAG_NOPREFIX, s_flags_noprefix },
    { "flags_all", 2047,
      MMV_FLAG_NOPREFIX | MMV_FLAG_PROCESS | MMV_FLAG_SENTINEL, s_flags_all },
    { "quickstart", 42, MMV_FLAG_PROCESS, s_quickstart },
};
#define NSCENARIOS ((int)(sizeof(scenarios) / sizeof(scenarios[0])))

static unsigned char *
slurp(const char *path, size_t *size)
{
    unsigned char *buf;
    struct stat st;
    FILE *f;

    if ((f = fopen(path, "rb")) == NULL)
	return NULL;
    if (fstat(fileno(f), &st) < 0 || (buf = malloc(st.st_size + 1)) == NULL ||
	fread(buf, 1, st.st_size, f) != (size_t)st.st_size) {
	fclose(f);
	return NULL;
    }
    fclose(f);
    *size = st.st_size;
    return buf;
}

/* Zero every label payload byte after the payload's NUL. */
static void
zero_label_tails(unsigned char *buf, size_t size)
{
    mmv_disk_header_t *hdr = (mmv_disk_header_t *)buf;
    mmv_disk_toc_t *toc = (mmv_disk_toc_t *)(buf + sizeof(*hdr));
    mmv_disk_label_t *lb;
    size_t n;
    int i, j;

    for (i = 0; i < hdr->tocs; i++) {
	if (toc[i].type != MMV_TOC_LABELS)
	    continue;
	for (j = 0; j < toc[i].count; j++) {
	    lb = (mmv_disk_label_t *)(buf + toc[i].offset) + j;
	    if ((unsigned char *)(lb + 1) > buf + size)
		return;
	    n = strnlen(lb->payload, sizeof(lb->payload));
	    if (n < sizeof(lb->payload))
		memset(lb->payload + n, 0, sizeof(lb->payload) - n);
	}
    }
}

/* Equal but for gen1, gen2 and pid. */
static int
same_masked(const unsigned char *a, const unsigned char *b, size_t size)
{
    size_t i;

    for (i = 0; i < size; i++) {
	if ((i >= GEN1_OFF && i < GEN_END) || (i >= PID_OFF && i < PID_END))
	    continue;
	if (a[i] != b[i])
	    return 0;
    }
    return 1;
}

static void
generate(int k, const char *outdir)
{
    char src[MAXPATHLEN], dst[MAXPATHLEN];
    unsigned char *buf, *old;
    size_t size, oldsize;
    mmv_registry_t *r;
    FILE *f;

    scenario = scenarios[k].name;
    nserials = 0;
    if ((r = mmv_stats_registry(scenario, scenarios[k].cluster,
				scenarios[k].flags)) == NULL)
	die("mmv_stats_registry");
    scenarios[k].declare(r);
    errno = 0;
    if (mmv_stats_start(r) == NULL)
	die("mmv_stats_start");

    pmsprintf(src, sizeof(src), "%s/mmv/%s", pmGetConfig("PCP_TMP_DIR"),
	    scenario);
    pmsprintf(dst, sizeof(dst), "%s/%s.mmv", outdir, scenario);
    if ((buf = slurp(src, &size)) == NULL)
	die(src);
    zero_label_tails(buf, size);
    old = slurp(dst, &oldsize);
    if (old != NULL && oldsize == size && same_masked(old, buf, size)) {
	printf("%s: unchanged\n", dst);
    } else {
	if ((f = fopen(dst, "wb")) == NULL ||
	    fwrite(buf, 1, size, f) != size || fclose(f) != 0)
	    die(dst);
	printf("%s: written\n", dst);
    }
    free(old);
    free(buf);
    mmv_stats_free(r);	/* unmaps; removes the file when PROCESS is set */
    scenario = NULL;
}

int
main(int argc, char **argv)
{
    char dir[MAXPATHLEN];
    const char *tmp;
    int i, k, found;

    if (argc == 2 && strcmp(argv[1], "-l") == 0) {
	for (k = 0; k < NSCENARIOS; k++)
	    printf("%s\n", scenarios[k].name);
	return 0;
    }
    if (argc < 2 || argv[1][0] == '-') {
	fprintf(stderr, "usage: PCP_TMP_DIR=DIR %s OUTDIR [SCENARIO...]\n"
			"       %s -l\n", argv[0], argv[0]);
	return 2;
    }
    if ((tmp = getenv("PCP_TMP_DIR")) == NULL || tmp[0] == '\0') {
	fprintf(stderr, "gen: set PCP_TMP_DIR to a scratch directory\n");
	return 2;
    }
    pmsprintf(dir, sizeof(dir), "%s/mmv", pmGetConfig("PCP_TMP_DIR"));
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
	die(dir);

    for (i = 2; i < argc; i++) {
	for (k = found = 0; k < NSCENARIOS; k++)
	    if (strcmp(argv[i], scenarios[k].name) == 0)
		found = 1;
	if (!found) {
	    fprintf(stderr, "gen: no scenario %s\n", argv[i]);
	    return 2;
	}
    }
    for (k = 0; k < NSCENARIOS; k++) {
	found = argc == 2;
	for (i = 2; i < argc; i++)
	    if (strcmp(argv[i], scenarios[k].name) == 0)
		found = 1;
	if (found)
	    generate(k, argv[1]);
    }
    return 0;
}
