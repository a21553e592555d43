/* The audit spool (common/base/spool.c): an append keeps the whole lines
 * that fit under the bound and nothing of a torn one; a take moves the
 * lines aside and a second take before done gets the same lines again
 * (at least once); done removes them; the conf file follows the profile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spool.h"
#include "util.h"
#include "tap.h"

int main(void)
{
	char dir[] = "/tmp/sbx-test-spool.XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	int64_t size;
	is_int(sbx_spool_append(dir, "aaaa\nbbbb\n", 10, 8, &size), 5, "only the whole line that fits");
	is_int(size, 5, "the spool's size after");
	is_int(sbx_spool_append(dir, "cc\n", 3, 8, &size), 3, "a line that fits next");
	is_int(sbx_spool_append(dir, "dddd\n", 5, 8, &size), 0, "a full spool takes nothing");
	is_int(sbx_spool_size(dir), 8, "sbx_spool_size");

	char *text = NULL;
	size_t len;
	int lk;
	struct sbx_err err = {0};
	ok(sbx_spool_take(dir, 1 << 20, &text, &len, &lk, &err) == 0 && lk >= 0, "take");
	is_str(text, "aaaa\ncc\n", "the lines taken");
	free(text);
	is_int(sbx_spool_size(dir), 0, "the spool is empty after a take");
	is_int(sbx_spool_append(dir, "eeee\n", 5, 12, &size), 5, "the writer appends to a new spool");
	close(lk);                       /* a taker that died before done */
	ok(sbx_spool_take(dir, 1 << 20, &text, &len, &lk, &err) == 0 && lk >= 0, "take again");
	is_str(text, "aaaa\ncc\n", "the lines left taken come first, again");
	free(text);
	sbx_spool_done(dir, lk);
	ok(sbx_spool_take(dir, 1 << 20, &text, &len, &lk, &err) == 0 && lk >= 0, "a third take");
	is_str(text, "eeee\n", "then the new spool's");
	free(text);
	sbx_spool_done(dir, lk);
	ok(sbx_spool_take(dir, 1 << 20, &text, &len, &lk, &err) == 0 && lk < 0 && !text,
	   "nothing left to take");
	/* done leaves the taken file emptied as the writer's spare, which
	 * the next append makes the spool: no inode made or deleted */
	SBX_AUTOFREE char *spare = sbx_xasprintf("%s/" SBX_SPOOL_SPARE, dir);
	SBX_AUTOFREE char *spool = sbx_xasprintf("%s/" SBX_SPOOL_FILE, dir);
	struct stat st1, st2;
	ok(stat(spare, &st1) == 0 && st1.st_size == 0, "done leaves an empty spare");
	is_int(sbx_spool_append(dir, "ffff\n", 5, 12, &size), 5, "an append after done");
	ok(stat(spool, &st2) == 0 && st2.st_ino == st1.st_ino && access(spare, F_OK) != 0,
	   "the spare became the spool");
	ok(sbx_spool_take(dir, 1 << 20, &text, &len, &lk, &err) == 0 && lk >= 0, "take the reused spool");
	is_str(text, "ffff\n", "only the new line: the spare was empty");
	free(text);
	/* a taker that died after emptying, before its rename: an empty
	 * taken, which the next take finishes (nothing written twice) */
	SBX_AUTOFREE char *taken = sbx_xasprintf("%s/" SBX_SPOOL_TAKEN, dir);
	ok(truncate(taken, 0) == 0, "emptied, not renamed");
	close(lk);
	ok(sbx_spool_take(dir, 1 << 20, &text, &len, &lk, &err) == 0 && lk >= 0 && len == 0,
	   "the empty leftover is taken: no lines");
	free(text);
	sbx_spool_done(dir, lk);
	ok(access(taken, F_OK) != 0 && access(spare, F_OK) == 0, "and done makes it the spare");
	ok(sbx_spool_take("/nonexistent/sbx", 1 << 20, &text, &len, &lk, &err) == 0 && lk < 0,
	   "no folder: nothing to take");

	SBX_AUTOFREE char *conf = sbx_xasprintf("%s/" SBX_SPOOL_CONF, dir);
	ok(sbx_spool_conf_write(dir, 8, 1, &err) == 0, "conf written");
	SBX_AUTOFREE char *c = NULL;
	ok(sbx_read_file(conf, 4096, &c, &len, &err) == 0, "conf read");
	is_str(c, "{\"required\":true,\"spool_max\":4096}\n", "8 records: the 4 KiB floor, required");
	free(c);
	c = NULL;
	ok(sbx_spool_conf_write(dir, 100000000, 0, &err) == 0 && sbx_read_file(conf, 4096, &c, &len, &err) == 0,
	   "a large audit_maxlen");
	is_str(c, "{\"required\":false,\"spool_max\":16777216}\n", "the 16 MiB ceiling");
	is_int(sbx_spool_conf_max(dir), 16777216, "the writer's bound, read without libsbx (sbx-procd)");
	ok(sbx_spool_conf_write(dir, 0, 0, &err) == 0 && access(conf, F_OK) != 0, "audit_maxlen 0: no conf");
	is_int(sbx_spool_conf_max(dir), 0, "no conf: bound 0, nothing written");
	SBX_AUTOFREE char *rm = sbx_xasprintf("rm -rf %s", dir);
	(void)!system(rm);
	return tap_done();
}
