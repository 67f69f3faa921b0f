/* The unit tests' start, in place of the library's constructor: the rooms
 * configured from the options as the library configures them (the
 * environment, else the table's defaults). */
#include "../../preload/preload.h"

__attribute__((constructor)) static void setup(void)
{
	hz_fork_register();
	hz_options_setup();
}
