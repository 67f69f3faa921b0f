/* fork, for the whole of obs/ (fork_reset.h). */
#include "ab.h"
#include "callsites.h"
#include "counters.h"
#include "fork_reset.h"
#include "report.h"

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
