/*
 * Writes MMV files with PCP's own C library, libpcp_mmv, for the tests to
 * compare cmd/mmvdump with PCP's mmvdump on: run with PCP_TMP_DIR set, it
 * writes one file per scenario into $PCP_TMP_DIR/mmv and prints its name.
 * Build: gcc libpcp.c -lpcp_mmv -lpcp
 */
#include <pcp/pmapi.h>
#include <pcp/mmv_stats.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static pmUnits count = MMV_UNITS(0, 0, 1, 0, 0, PM_COUNT_ONE);
static pmUnits kbps = MMV_UNITS(1, -1, 0, PM_SPACE_KBYTE, PM_TIME_SEC, 0);
static pmUnits usec = MMV_UNITS(0, 1, 0, 0, PM_TIME_USEC, 0);
static pmUnits none = MMV_UNITS(0, 0, 0, 0, 0, 0);

/* every type, help texts NULL and "", values set, one interval left open */
static int all(const char *name, int version, int flags)
{
    mmv_registry_t *r = mmv_stats_registry(name, 42, flags);
    pmAtomValue *a;
    void *m;

    mmv_stats_add_indom(r, 1, "indom short", "indom long\nhelp");
    mmv_stats_add_instance(r, 1, 0, "zero");
    mmv_stats_add_instance(r, 1, 7, "seven with space");
    if (version >= 2)
	mmv_stats_add_instance(r, 1, 9, "a very long instance name that is definitely longer than sixty-four bytes");
    mmv_stats_add_indom(r, 2, NULL, "");
    mmv_stats_add_metric(r, "i32", 1, MMV_TYPE_I32, MMV_SEM_COUNTER, count, 1, "short i32", "long i32");
    mmv_stats_add_metric(r, "u32", 2, MMV_TYPE_U32, MMV_SEM_INSTANT, kbps, MMV_INDOM_NULL, NULL, NULL);
    mmv_stats_add_metric(r, "i64", 3, MMV_TYPE_I64, MMV_SEM_DISCRETE, usec, 1, "", NULL);
    mmv_stats_add_metric(r, "u64", 4, MMV_TYPE_U64, MMV_SEM_COUNTER, none, MMV_INDOM_NULL, NULL, "x");
    mmv_stats_add_metric(r, "flt", 5, MMV_TYPE_FLOAT, MMV_SEM_INSTANT, count, MMV_INDOM_NULL, NULL, NULL);
    mmv_stats_add_metric(r, "dbl", 6, MMV_TYPE_DOUBLE, MMV_SEM_INSTANT, count, 1, NULL, NULL);
    mmv_stats_add_metric(r, "str", 7, MMV_TYPE_STRING, MMV_SEM_DISCRETE, none, 1, NULL, NULL);
    mmv_stats_add_metric(r, "ela", 8, MMV_TYPE_ELAPSED, MMV_SEM_COUNTER, usec, MMV_INDOM_NULL, NULL, NULL);
    mmv_stats_add_metric(r, "open", 9, MMV_TYPE_ELAPSED, MMV_SEM_COUNTER, usec, MMV_INDOM_NULL, NULL, NULL);
    mmv_stats_add_metric(r, "nodom", 10, MMV_TYPE_U32, MMV_SEM_COUNTER, count, 2, NULL, NULL);
    mmv_stats_add_metric(r, "nan", 11, MMV_TYPE_DOUBLE, MMV_SEM_INSTANT, none, MMV_INDOM_NULL, NULL, NULL);
    if (version >= 3) {
	mmv_stats_add_indom_label(r, 1, "dom", "42", MMV_NUMBER_TYPE, 1);
	mmv_stats_add_metric_label(r, 3, "met", "true", MMV_BOOLEAN_TYPE, 0);
	mmv_stats_add_instance_label(r, 1, 7, "inst", "null", MMV_NULL_TYPE, 0);
	mmv_stats_add_metric_label(r, 7, "text", "\"a b\"", MMV_STRING_TYPE, 0);
    }
    if ((m = mmv_stats_start(r)) == NULL)
	return -1;
    a = mmv_lookup_value_desc(m, "i32", "seven with space"); mmv_inc_value(m, a, -5);
    a = mmv_lookup_value_desc(m, "u32", NULL); mmv_inc_value(m, a, 4000000000.0);
    a = mmv_lookup_value_desc(m, "i64", "zero"); mmv_inc_value(m, a, -123456789012.0);
    a = mmv_lookup_value_desc(m, "u64", NULL); mmv_inc_value(m, a, 18000000000000000000.0);
    a = mmv_lookup_value_desc(m, "flt", NULL); mmv_inc_value(m, a, -1.5);
    a = mmv_lookup_value_desc(m, "dbl", "seven with space"); mmv_inc_value(m, a, 3.14159265);
    a = mmv_lookup_value_desc(m, "str", "seven with space"); mmv_set_string(m, a, "hello world", 11);
    a = mmv_lookup_value_desc(m, "ela", NULL); mmv_inc_value(m, a, 1000);
    a = mmv_lookup_value_desc(m, "open", NULL); mmv_stats_interval_start(m, a, "open", NULL);
    a = mmv_lookup_value_desc(m, "nan", NULL); mmv_set_value(m, a, -NAN);
    return 0;
}

/* an indom with no instances: an empty instances section */
static int empty(const char *name, int version, int flags)
{
    mmv_registry_t *r = mmv_stats_registry(name, 0, flags);

    mmv_stats_add_indom(r, 3, NULL, NULL);
    mmv_stats_add_metric(r, "m", 1, MMV_TYPE_I32, MMV_SEM_COUNTER, count, MMV_INDOM_NULL, NULL, NULL);
    mmv_stats_add_metric(r, "n", 2, MMV_TYPE_I32, MMV_SEM_COUNTER, count, 3, NULL, NULL);
    return mmv_stats_start(r) == NULL ? -1 : 0;
}

/* a metric name too long for v1 */
static int longname(const char *name, int version, int flags)
{
    mmv_registry_t *r = mmv_stats_registry(name, 4095, flags);

    mmv_stats_add_metric(r, "a.metric.name.that.is.longer.than.sixty.four.bytes.so.the.file.is.v2", 1023,
	MMV_TYPE_U64, MMV_SEM_COUNTER, count, MMV_INDOM_NULL, "short", "long");
    return mmv_stats_start(r) == NULL ? -1 : 0;
}

/* one label: a small v3 file */
static int label(const char *name, int version, int flags)
{
    mmv_registry_t *r = mmv_stats_registry(name, 1, flags);

    mmv_stats_add_metric(r, "m", 1, MMV_TYPE_I64, MMV_SEM_INSTANT, none, MMV_INDOM_NULL, NULL, NULL);
    mmv_stats_add_metric_label(r, 1, "l", "[1,2]", MMV_ARRAY_TYPE, 0);
    return mmv_stats_start(r) == NULL ? -1 : 0;
}

static struct {
    const char *name;
    int (*fn)(const char *, int, int);
    int version, flags;
} scenarios[] = {
    { "all_v1", all, 1, 0 },
    { "all_v2", all, 2, MMV_FLAG_PROCESS },
    { "all_v3", all, 3, MMV_FLAG_NOPREFIX | MMV_FLAG_SENTINEL },
    { "empty", empty, 1, 0 },
    { "longname", longname, 2, MMV_FLAG_NOPREFIX | MMV_FLAG_PROCESS | MMV_FLAG_SENTINEL },
    { "label", label, 3, 0 },
};

int main(void)
{
    int i;

    for (i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
	if (scenarios[i].fn(scenarios[i].name, scenarios[i].version, scenarios[i].flags) < 0) {
	    fprintf(stderr, "%s: %s\n", scenarios[i].name, strerror(errno));
	    return 1;
	}
	printf("%s\n", scenarios[i].name);
    }
    return 0;
}
