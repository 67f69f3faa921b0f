/* fork, for the whole of obs/ (fork_reset.c). */
#include "obs.h"

void hz_obs_fork_prepare(void)
{
	hz_counters_fork_prepare();
}

void hz_obs_fork_parent(void)
{
	hz_counters_fork_parent();
}

void hz_obs_fork_child(void)
{
	hz_counters_fork_child();
	hz_report_fork_child();
	hz_callsites_fork_child();
	hz_ab_fork_child();
}

void hz_obs_fork_child_ready(void)
{
	hz_report_fork_child_ready();
}
