#!/usr/bin/python3
# Writes MMV files with PCP's Python binding (Debian python3-pcp, a ctypes
# wrapper of libpcp_mmv): run with PCP_TMP_DIR set, it writes one file per
# scenario into $PCP_TMP_DIR/mmv and prints its name.
#
# The binding's traits, kept as they are: mmv_metric never stores the
# semantics or the units it is given (they stay 0), and both help texts of
# metrics and indoms are the short help.
import sys

from pcp import mmv, pmapi
import cpmapi as pcpapi
import cmmv as mmvapi

def acme(name, flags):
    instances = [mmv.mmv_instance(0, "Anvils"), mmv.mmv_instance(1, "Rockets"),
                 mmv.mmv_instance(2, "Giant_Rubber_Bands")]
    indom = mmv.mmv_indom(serial=61, shorttext="Acme products",
                          helptext="Most popular products produced by the Acme Corporation")
    indom.set_instances(instances)
    metrics = [
        mmv.mmv_metric(name="products.count", item=7, typeof=mmvapi.MMV_TYPE_U64,
                       semantics=mmvapi.MMV_SEM_COUNTER,
                       dimension=pmapi.pmUnits(0, 0, 1, 0, 0, pcpapi.PM_COUNT_ONE),
                       indom=61, shorttext="Acme factory product throughput",
                       helptext="Monotonic increasing counter of products"),
        mmv.mmv_metric(name="products.time", item=8, typeof=mmvapi.MMV_TYPE_U64,
                       semantics=mmvapi.MMV_SEM_COUNTER,
                       dimension=pmapi.pmUnits(0, 1, 0, 0, pcpapi.PM_TIME_USEC, 0),
                       indom=61, shorttext="Machine time spent producing Acme products"),
        mmv.mmv_metric(name="temperature", item=9, typeof=mmvapi.MMV_TYPE_DOUBLE,
                       semantics=mmvapi.MMV_SEM_INSTANT,
                       dimension=pmapi.pmUnits(0, 0, 0, 0, 0, 0)),
        mmv.mmv_metric(name="version", item=10, typeof=mmvapi.MMV_TYPE_STRING,
                       semantics=mmvapi.MMV_SEM_DISCRETE,
                       dimension=pmapi.pmUnits(0, 0, 0, 0, 0, 0), shorttext="release"),
        mmv.mmv_metric(name="busy", item=11, typeof=mmvapi.MMV_TYPE_ELAPSED,
                       semantics=mmvapi.MMV_SEM_COUNTER,
                       dimension=pmapi.pmUnits(0, 1, 0, 0, pcpapi.PM_TIME_USEC, 0)),
    ]
    values = mmv.MemoryMappedValues(name, flags)
    values.add_indoms([indom])
    values.add_metrics(metrics)
    values.start()
    if not values.started():
        raise RuntimeError("mmv_stats_init failed for " + name)
    values.lookup_add("products.count", "Anvils", 42)
    values.lookup_add("products.count", "Rockets", 7)
    values.lookup_add("products.time", "Giant_Rubber_Bands", 1234567)
    values.lookup_set("temperature", None, -40.5)
    values.lookup_set_string("version", None, "1.2.3")
    values.lookup_add("busy", None, 2500)
    return values

def main():
    kept = []  # the files stay mapped until the program exits
    for name, flags in [("acme", 0), ("acme_noprefix", 1)]:
        kept.append(acme(name, flags))
        print(name)
    return 0

if __name__ == "__main__":
    sys.exit(main())
