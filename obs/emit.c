/* The emitters' output buffer (emit.c). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../os/os.h"
#include "obs.h"

int hz_report_off;

void hz_out_flush(struct hz_out *o)
{
	int e = o->len ? hz_os_write_all(o->fd, o->buf, o->len) : 0;
	if (e && !o->error)
		o->error = e;
	o->len = 0;
}

void hz_out_put(struct hz_out *o, const char *fmt, ...)
{
	char line[1024]; /* names in it are cut to 200 bytes (hz_out_str, frames) */
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof line)
		return;
	if (o->len + (size_t)n > sizeof o->buf)
		hz_out_flush(o);
	memcpy(o->buf + o->len, line, (size_t)n);
	o->len += (size_t)n;
}

void hz_out_str(struct hz_out *o, const char *s)
{
	char buf[200];
	size_t n = 0;
	for (; s && *s && n < sizeof buf - 3; s++) {
		if (*s == '"' || *s == '\\')
			buf[n++] = '\\';
		buf[n++] = *s;
	}
	buf[n] = 0;
	hz_out_put(o, "\"%s\"", buf);
}

