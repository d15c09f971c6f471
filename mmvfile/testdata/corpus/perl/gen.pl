#!/usr/bin/perl
# Writes MMV files with PCP's Perl binding (Debian libpcp-mmv-perl, an XS
# wrapper of libpcp_mmv): run with PCP_TMP_DIR set, it writes one file per
# scenario into $PCP_TMP_DIR/mmv and prints its name.
#
# The binding's trait: its MMV_TYPE_ELAPSED is 10, where libpcp_mmv's is 9,
# and libpcp_mmv refuses type 10 (EINVAL): a Perl program cannot declare
# an elapsed metric, so no file here has one.
use strict;
use warnings;
use PCP::MMV;

$| = 1;

sub server {
	my ($file, $flags) = @_;
	my @db_instances = (0 => "tempdb", 1 => "datadb");
	my @indoms = ([1, \@db_instances, 'Database instances',
		'An instance domain for each database used by this server.']);
	my @metrics = (
		['response_time.requests', 1, MMV_TYPE_U64, MMV_INDOM_NULL,
			mmv_units(0,0,1,0,0,MMV_COUNT_ONE), MMV_SEM_COUNTER,
			'Number of server requests processed', ''],
		['response_time.maximum', 3, MMV_TYPE_DOUBLE, MMV_INDOM_NULL,
			mmv_units(0,1,0,0,MMV_TIME_MSEC,0), MMV_SEM_INSTANT,
			'Maximum observed response time in milliseconds', ''],
		['version', 4, MMV_TYPE_STRING, MMV_INDOM_NULL,
			mmv_units(0,0,0,0,0,0), MMV_SEM_DISCRETE,
			'Version number of the server process', ''],
		['database.transactions.count', 5, MMV_TYPE_U64, 1,
			mmv_units(0,0,1,0,0,MMV_COUNT_ONE), MMV_SEM_COUNTER,
			'Number of requests issued to each database', ''],
	);
	my $handle = mmv_stats_init($file, 0, $flags, \@metrics, \@indoms);
	die("mmv_stats_init $file failed: $!\n") unless defined($handle);
	mmv_stats_set_string($handle, 'version', '', '7.4.2-5');
	mmv_stats_inc($handle, 'database.transactions.count', 'tempdb');
	mmv_stats_add($handle, 'database.transactions.count', 'datadb', 17);
	mmv_stats_set($handle, 'response_time.maximum', '', 12.5);
	mmv_stats_add($handle, 'response_time.requests', '', 3);
	print "$file\n";
	return $handle;
}

my @kept = (server("perlserver", 0), server("perlprocess", MMV_FLAG_PROCESS | MMV_FLAG_NOPREFIX));
