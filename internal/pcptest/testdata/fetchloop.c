/*
 * fetchloop HOST MILLISECONDS NAME: look NAME up through the pmcd at HOST
 * until it exists (for at most MILLISECONDS), then fetch its PMID back to
 * back for MILLISECONDS, as a monitoring client does (a name looked up
 * once, then fetched by PMID), only as fast as it can. Prints
 * "fetches N values V lost B": the fetches made, those that returned a
 * value, and whether pmcd stopped answering.
 */
#include <pcp/pmapi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <unistd.h>

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
    const char	*name;
    double	end;
    pmID	pmid;
    pmResult	*r;
    int		sts, n = 0, values = 0, lost = 0;

    if (argc != 4) {
	fprintf(stderr, "usage: fetchloop HOST MILLISECONDS NAME\n");
	return 2;
    }
    name = argv[3];
    end = now() + atoi(argv[2]) / 1e3;
    if ((sts = pmNewContext(PM_CONTEXT_HOST, argv[1])) < 0) {
	fprintf(stderr, "pmNewContext %s: %s\n", argv[1], pmErrStr(sts));
	return 2;
    }
    while ((sts = pmLookupName(1, &name, &pmid)) < 0) {
	if (now() > end) {
	    fprintf(stderr, "pmLookupName %s: %s\n", name, pmErrStr(sts));
	    return 2;
	}
	usleep(1000);
    }
    end = now() + atoi(argv[2]) / 1e3;
    while (now() < end) {
	sts = pmFetch(1, &pmid, &r);
	n++;
	if (sts < 0) {
	    /* a vanished PMID is no error; a lost connection is */
	    if (sts == PM_ERR_IPC || sts == PM_ERR_TIMEOUT || sts == -ECONNRESET || sts == -EPIPE) {
		lost = 1;
		break;
	    }
	    continue;
	}
	if (r->numpmid == 1 && r->vset[0]->numval > 0)
	    values++;
	pmFreeResult(r);
    }
    printf("fetches %d values %d lost %s\n", n, values, lost ? "true" : "false");
    return 0;
}
