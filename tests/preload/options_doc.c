/* Prints the option reference of README.md from the option table. */
#include <stdio.h>

#include "../../preload/options.h"

int main(void)
{
	puts("| variable | default | meaning |");
	puts("| --- | --- | --- |");
	for (int i = 0; i < HZ_OPT_COUNT; i++) {
		char def[32];
		printf("| `HUGEZERO_%s` | %s | %s |\n", hz_options[i].name,
		       hz_option_default_text((enum hz_option)i, def, sizeof def), hz_options[i].doc);
	}
	return 0;
}
