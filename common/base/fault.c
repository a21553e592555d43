/* fault.c - named test points (fault.h). */
#include "fault.h"

#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Whether the comma-separated list in environment variable `var` names
 * `point` exactly (not as a prefix of a longer name). */
static bool listed(const char *var, const char *point)
{
	const char *f = getenv(var);
	if (!f || !*f)
		return false;
	size_t n = strlen(point);
	for (const char *p = f; (p = strstr(p, point)); p += n)
		if ((p == f || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
			return true;
	return false;
}

void sbx_fault(const char *point)
{
	if (listed("SBX_FAULT", point))
		raise(SIGKILL);
	if (listed("SBX_STOP", point))
		raise(SIGSTOP);
}

int sbx_fault_on(const char *point)
{
	return listed("SBX_FAULT", point);
}
