/*
 * instlabels HOST NAME: look NAME up through the pmcd at HOST (its
 * descriptor too), print "ready", wait for a line on standard input, then
 * ask the labels of the instances of NAME's instance domain, as pminfo -l
 * does, having made no fetch. Prints "sets N" (the label sets pmcd
 * answered, one an instance) or "error MESSAGE".
 */
#include <pcp/pmapi.h>
#include <stdio.h>

int
main(int argc, char **argv)
{
    pmDesc	desc;
    pmLabelSet	*sets;
    char	line[64];
    int		n = PM_ERR_GENERIC;

    if (argc == 3 && (n = pmNewContext(PM_CONTEXT_HOST, argv[1])) >= 0) {
	const char	*name = argv[2];
	pmID		pmid;

	if ((n = pmLookupName(1, &name, &pmid)) >= 0)
	    n = pmLookupDesc(pmid, &desc);
    }
    if (n < 0) {
	fprintf(stderr, "instlabels HOST NAME: %s\n", pmErrStr(n));
	return 2;
    }
    printf("ready\n");
    fflush(stdout);
    if (fgets(line, sizeof(line), stdin) == NULL)
	return 2;
    if ((n = pmGetInstancesLabels(desc.indom, &sets)) < 0) {
	printf("error %s\n", pmErrStr(n));
	return 0;
    }
    printf("sets %d\n", n);
    pmFreeLabelSets(sets, n);
    return 0;
}
