/*
 * fetchall HOST N PREFIX: find every metric below PREFIX through the pmcd
 * at HOST, then fetch them all, in one pmFetch, N times, as a monitoring
 * client fetching a whole registry does. Prints "metrics M values V" and
 * then one line per fetch, its wall time in seconds. Exits 1 when a fetch
 * fails (pmcd or its agent lost).
 */
#include <pcp/pmapi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

static char	**names;
static int	nnames, capnames;

static void
collect(const char *name)
{
    if (nnames == capnames) {
	capnames = capnames ? 2 * capnames : 1024;
	if ((names = realloc(names, capnames * sizeof(*names))) == NULL)
	    exit(2);
    }
    names[nnames++] = strdup(name);
}

static double
now(void)
{
    struct timeval tv;

    gettimeofday(&tv, NULL);
    return tv.tv_sec + tv.tv_usec / 1e6;
}

int
main(int argc, char **argv)
{
    pmID	*pmids;
    pmResult	*r;
    double	start;
    int		i, j, n, sts, values = 0;

    if (argc != 4) {
	fprintf(stderr, "usage: fetchall HOST N PREFIX\n");
	return 2;
    }
    n = atoi(argv[2]);
    if ((sts = pmNewContext(PM_CONTEXT_HOST, argv[1])) < 0) {
	fprintf(stderr, "pmNewContext %s: %s\n", argv[1], pmErrStr(sts));
	return 2;
    }
    if ((sts = pmTraversePMNS(argv[3], collect)) < 0) {
	fprintf(stderr, "pmTraversePMNS %s: %s\n", argv[3], pmErrStr(sts));
	return 2;
    }
    if ((pmids = calloc(nnames ? nnames : 1, sizeof(*pmids))) == NULL)
	return 2;
    if ((sts = pmLookupName(nnames, (const char **)names, pmids)) < 0) {
	fprintf(stderr, "pmLookupName: %s\n", pmErrStr(sts));
	return 2;
    }
    for (i = 0; i < n; i++) {
	start = now();
	if ((sts = pmFetch(nnames, pmids, &r)) < 0) {
	    fprintf(stderr, "pmFetch: %s\n", pmErrStr(sts));
	    return 1;
	}
	if (i == 0) {
	    for (j = 0; j < r->numpmid; j++)
		if (r->vset[j]->numval > 0)
		    values += r->vset[j]->numval;
	    printf("metrics %d values %d\n", nnames, values);
	}
	pmFreeResult(r);
	printf("%.6f\n", now() - start);
    }
    return 0;
}
