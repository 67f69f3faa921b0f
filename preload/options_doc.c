/* A build tool, not part of the library: prints the option reference from
 * the option table, as README.md's table (no argument) or as the OPTIONS
 * section of hugezero(7) ("man"). */
#include <stdio.h>
#include <string.h>

#include "preload.h"

/* s with roff's special characters escaped: backslashes, and hyphens
 * (which roff would otherwise set as minus signs' neighbours). */
static void roff(const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\e", stdout);
		else if (*s == '-')
			fputs("\\-", stdout);
		else
			putchar(*s);
	}
}

int main(int argc, char **argv)
{
	int man = argc > 1 && !strcmp(argv[1], "man");
	if (!man) {
		puts("| variable | default | meaning |");
		puts("| --- | --- | --- |");
	}
	for (int i = 0; i < HZ_OPT_COUNT; i++) {
		char def[32];
		const char *d = hz_option_default_text((enum hz_option)i, def, sizeof def);
		if (!man) {
			printf("| `HUGEZERO_%s` | %s | %s |\n", hz_options[i].name, d, hz_options[i].doc);
			continue;
		}
		fputs(".TP\n.B HUGEZERO_", stdout);
		roff(hz_options[i].name);
		fputs("\n(default: ", stdout);
		roff(d);
		fputs(") ", stdout);
		roff(hz_options[i].doc);
		putchar('\n');
	}
	return 0;
}
