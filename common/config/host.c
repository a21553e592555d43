/* host.c - this host's id (host.h). */
#include "host.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

char *sbx_host_id(struct sbx_err *err)
{
	char name[256] = "";
	const char *e = getenv("SBX_HOST_ID");
	const char *from = e && *e ? "SBX_HOST_ID" : "the hostname";
	if (e && *e)
		snprintf(name, sizeof(name), "%s", e);
	else if (gethostname(name, sizeof(name) - 1) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "host", "gethostname"), NULL;
	size_t n = strlen(name);
	int ok = n > 0 && n < 256 && (!e || strlen(e) == n);
	for (size_t i = 0; ok && i < n; i++) {
		unsigned char c = (unsigned char)name[i];
		ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		     c == '.' || c == '_' || c == '-';
	}
	if (!ok)
		return sbx_fail_config(err, "host", "the host id (%s) must be 1 to 255 characters "
				       "of A-Z a-z 0-9 . _ -; set SBX_HOST_ID", from), NULL;
	return sbx_xstrdup(name);
}
