/* Profiles: sources and precedence, self-contained profiles, secrets that
 * never reach a message; the keys a backend owns, parsed by that backend
 * (backend.h config_load) and accepted, untouched, for another. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "config.h"
#include "docker-api.h"
#include "local-sb.h"
#include "util.h"
#include "tap.h"

static char dir[] = "/tmp/sbx-config-XXXXXX";

static void write_config(const char *text)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/config.json", dir);
	struct sbx_err err;
	sbx_write_file_atomic(path, text, strlen(text), 0600, 0, &err);
	setenv("SBX_CONFIG", path, 1);
}

/* As every program loads a profile (sbx_app_use): the file, then the
 * backends' keys. */
static int load(const char *name, struct sbx_profile **p, struct sbx_err *err)
{
	if (sbx_config_load(name, p, err) < 0)
		return -1;
	if (sbx_backend_configure(*p, err) < 0) {
		sbx_profile_free(*p);
		*p = NULL;
		return -1;
	}
	return 0;
}

static const struct local_conf *lconf(const struct sbx_profile *p)
{
	return p->backend_conf_of == &sbx_backend_local ? p->backend_conf : NULL;
}

int main(void)
{
	struct sbx_profile *p = NULL;
	struct sbx_err err = {0};
	char keyfile[256];
	if (!mkdtemp(dir))
		return 1;
	unsetenv("SBX_PROFILE");
	unsetenv("SBX_BACKEND");
	unsetenv("SBX_REDIS_URL");
	unsetenv("SBX_STATE_DIR");

	snprintf(keyfile, sizeof(keyfile), "%s/key", dir);
	sbx_write_file_atomic(keyfile, "  e2b_sekrit123\n", 16, 0600, 0, &err);

	char text[4096];
	snprintf(text, sizeof(text),
		 "{\"default_profile\": \"a\", \"profiles\": {"
		 "\"a\": {\"backend\": \"docker\", \"endpoint\": \"unix:///a.sock\", \"memory\": \"512M\","
		 "        \"idle_timeout\": \"5m\", \"on_timeout\": \"kill\"},"
		 "\"b\": {\"backend\": \"e2b\", \"api_key_file\": \"%s\"},"
		 "\"c\": {\"backend\": \"e2b\", \"api_key_env\": \"SBX_TEST_KEY\"},"
		 "\"typo\": {\"allow_privte\": true},"
		 "\"inline\": {\"api_key\": \"e2b_inline_sekrit\"},"
		 "\"badresume\": {\"on_timeout\": \"kill\", \"auto_resume\": true},"
		 "\"keep3\": {\"checkpoints_keep\": 3},"
		 "\"aud\": {\"audit_maxlen\": 50, \"audit_max_age\": \"2h\", \"audit\": \"required\"},"
		 "\"aud_off\": {\"audit_maxlen\": 0, \"audit\": \"best-effort\"},"
		 "\"aud_neg\": {\"audit_maxlen\": -1},"
		 "\"aud_str\": {\"audit_maxlen\": \"50\"},"
		 "\"aud_age\": {\"audit_max_age\": \"soon\"},"
		 "\"aud_mode\": {\"audit\": \"strict\"},"
		 "\"keep_neg\": {\"checkpoints_keep\": -1},"
		 "\"keep_str\": {\"checkpoints_keep\": \"3\"},"
		 "\"lim\": {\"pids\": 0, \"disk\": \"2G\", \"shm\": \"8M\", \"cgroup_parent\": \"x.slice\"},"
		 "\"badparent\": {\"cgroup_parent\": \"../escape\"},"
		 "\"egress\": {\"egress_allow\": [\"10.1.0.0/16\", \"FD00:0::/64\", \"192.0.2.7/32\"]},"
		 "\"eg_hostbits\": {\"egress_allow\": [\"10.1.2.0/8\"]},"
		 "\"eg_nolen\": {\"egress_allow\": [\"10.1.0.0\"]},"
		 "\"eg_long\": {\"egress_allow\": [\"10.1.0.0/33\"]},"
		 "\"eg_inject\": {\"egress_allow\": [\"10.0.0.0/8 accept; flush ruleset\"]},"
		 "\"eg_notarray\": {\"egress_allow\": \"10.0.0.0/8\"},"
		 "\"eg_notstr\": {\"egress_allow\": [8]},"
		 "\"nodes\": {\"redis_nodes\": [\"10.20.0.0/16\", \"FD00:0:0:1::/64\"]},"
		 "\"nodes_bad\": {\"redis_nodes\": [\"10.20.0.1/16\"]},"
		 "\"nodes_str\": {\"redis_nodes\": \"10.20.0.0/16\"},"
		 "\"dockertls\": {\"backend\": \"docker\", \"tls_cert_path\": \"/x/tls\"},"
		 "\"mixed\": {\"backend\": \"docker\", \"allow_userns\": true, \"cgroup_parent\": \"y.slice\"},"
		 "\"cubekeys\": {\"backend\": \"cube\", \"domain\": \"c.example\", \"proxy\": \"http://p\","
		 "              \"data_plane\": \"host\"}}}", keyfile);
	write_config(text);

	ok(load(NULL, &p, &err) == 0, "the file's default profile loads");
	is_str(p->name, "a", "default_profile is used");
	is_str(p->backend, "docker", "backend from the profile");
	is_str(p->endpoint, "unix:///a.sock", "endpoint from the profile");
	is_int(p->limits.memory_bytes, 512LL << 20, "memory parsed");
	is_int(p->limits.pids, SBX_DEFAULT_PIDS, "pids: the built-in default when the profile sets none");
	ok(p->limits.cpus == SBX_DEFAULT_CPUS, "cpus: the built-in default");
	is_int(p->limits.disk_bytes, SBX_DEFAULT_DISK, "disk: the built-in default");
	is_int(p->limits.shm_bytes, SBX_DEFAULT_SHM, "shm: the built-in default");
	is_int(p->idle_timeout_ms, 300000, "idle timeout parsed");
	is_int(p->on_timeout_pause, 0, "on_timeout kill");
	is_int(p->checkpoints_keep, SBX_CHECKPOINTS_KEEP_DEFAULT, "checkpoints_keep: 20 unless set");
	sbx_profile_free(p);
	ok(load("keep3", &p, &err) == 0, "profile keep3");
	is_int(p->checkpoints_keep, 3, "checkpoints_keep parsed");
	sbx_profile_free(p);
	p = NULL;
	ok(load("keep_neg", &p, &err) < 0 && err.exit_status == 78,
	   "a negative checkpoints_keep is a configuration error");
	ok(load("keep_str", &p, &err) < 0 && err.exit_status == 78,
	   "a checkpoints_keep that is not a number is a configuration error");

	ok(load("keep3", &p, &err) == 0, "profile keep3 again");
	is_int(p->audit_maxlen, SBX_AUDIT_MAXLEN_DEFAULT, "audit_maxlen: 100000 unless set");
	is_int(p->audit_max_age_ms, 0, "audit_max_age: none unless set");
	is_int(p->audit_required, 0, "audit: best-effort unless set");
	sbx_profile_free(p);
	ok(load("aud", &p, &err) == 0, "profile aud");
	is_int(p->audit_maxlen, 50, "audit_maxlen parsed");
	is_int(p->audit_max_age_ms, 2 * 3600 * 1000, "audit_max_age parsed as a duration");
	is_int(p->audit_required, 1, "audit: required parsed");
	sbx_profile_free(p);
	ok(load("aud_off", &p, &err) == 0, "profile aud_off");
	is_int(p->audit_maxlen, 0, "audit_maxlen 0 turns the record off");
	is_int(p->audit_required, 0, "audit: best-effort parsed");
	sbx_profile_free(p);
	p = NULL;
	ok(load("aud_neg", &p, &err) < 0 && err.exit_status == 78, "a negative audit_maxlen is refused");
	ok(load("aud_str", &p, &err) < 0 && err.exit_status == 78, "an audit_maxlen string is refused");
	ok(load("aud_age", &p, &err) < 0 && err.exit_status == 78, "an audit_max_age not a duration is refused");
	ok(load("aud_mode", &p, &err) < 0 && err.exit_status == 78 && strstr(err.msg, "required or best-effort"),
	   "an audit mode but required or best-effort is refused");

	ok(load("lim", &p, &err) == 0, "profile lim");
	is_int(p->limits.pids, 0, "pids 0 turns the default off");
	is_int(p->limits.memory_bytes, SBX_DEFAULT_MEMORY, "memory: the built-in default");
	is_int(p->limits.disk_bytes, 2LL << 30, "disk parsed");
	is_int(p->limits.shm_bytes, 8LL << 20, "shm parsed");
	ok(lconf(p) && lconf(p)->cgroup_parent && !strcmp(lconf(p)->cgroup_parent, "x.slice"),
	   "cgroup_parent, parsed by the local backend");
	sbx_profile_free(p);
	p = NULL;
	ok(load("badparent", &p, &err) < 0, "a cgroup_parent with .. is refused");
	is_int(err.exit_status, 78, "... as a configuration error");

	setenv("SBX_PROFILE", "b", 1);
	ok(load(NULL, &p, &err) == 0, "SBX_PROFILE picks a profile");
	is_str(p->name, "b", "profile b");
	ok(p->endpoint == NULL, "a profile never inherits an endpoint from another");
	char *secret = NULL;
	ok(sbx_profile_secret(p, &secret, &err) == 0, "secret read from its file");
	is_str(secret, "e2b_sekrit123", "secret trimmed");
	sbx_secret_free(secret);
	sbx_profile_free(p);

	ok(load("a", &p, &err) == 0, "an explicit name wins over SBX_PROFILE");
	is_str(p->name, "a", "explicit profile a");
	sbx_profile_free(p);
	unsetenv("SBX_PROFILE");

	setenv("SBX_BACKEND", "local", 1);
	ok(load("a", &p, &err) == 0, "SBX_BACKEND overrides the backend");
	is_str(p->backend, "local", "backend overridden");
	ok(p->endpoint == NULL, "switching backend drops the profile's endpoint");
	sbx_profile_free(p);
	unsetenv("SBX_BACKEND");

	ok(load("c", &p, &err) == 0, "profile c");
	unsetenv("SBX_TEST_KEY");
	ok(sbx_profile_secret(p, &secret, &err) < 0, "a missing secret variable is an error");
	is_int(sbx_err_exit_status(&err), 78, "... a configuration error");
	setenv("SBX_TEST_KEY", "e2b_fromenv", 1);
	ok(sbx_profile_secret(p, &secret, &err) == 0 && strcmp(secret, "e2b_fromenv") == 0,
	   "secret from the named variable");
	sbx_secret_free(secret);
	sbx_profile_free(p);

	ok(load("typo", &p, &err) < 0, "an unknown key is refused");
	ok(strstr(err.msg, "allow_privte") != NULL, "... and named: %s", err.msg);
	is_int(sbx_err_exit_status(&err), 78, "... exit 78");

	ok(load("inline", &p, &err) < 0, "an inline api_key is refused");
	ok(strstr(err.msg, "sekrit") == NULL, "... without echoing the secret: %s", err.msg);

	ok(load("badresume", &p, &err) < 0, "auto_resume without pause is refused");

	ok(load("egress", &p, &err) == 0, "egress_allow loads");
	char **eg = lconf(p) ? lconf(p)->egress_allow : NULL;
	ok(eg && eg[0] && eg[1] && eg[2] && !eg[3], "... three entries, in the local backend's part");
	is_str(eg ? eg[0] : NULL, "10.1.0.0/16", "... IPv4 kept");
	is_str(eg ? eg[1] : NULL, "fd00::/64", "... IPv6 in canonical form");
	is_str(eg ? eg[2] : NULL, "192.0.2.7/32", "... a single address");
	sbx_profile_free(p);
	const char *bad_eg[] = {"eg_hostbits", "eg_nolen", "eg_long", "eg_inject", "eg_notarray",
			     "eg_notstr"};
	for (size_t i = 0; i < sizeof(bad_eg) / sizeof(bad_eg[0]); i++) {
		ok(load(bad_eg[i], &p, &err) < 0 && strstr(err.msg, "egress_allow"),
		   "egress_allow refused in profile %s: %s", bad_eg[i], err.msg);
		is_int(sbx_err_exit_status(&err), 78, "... a configuration error");
	}

	ok(load("nodes", &p, &err) == 0, "redis_nodes loads (%s)", err.msg);
	ok(p->redis_nodes && p->redis_nodes[0] && p->redis_nodes[1] && !p->redis_nodes[2],
	   "... two entries");
	is_str(p->redis_nodes[0], "10.20.0.0/16", "... IPv4 kept");
	is_str(p->redis_nodes[1], "fd00:0:0:1::/64", "... IPv6 in canonical form");
	ok(lconf(p) && !lconf(p)->egress_allow, "... and opens nothing in egress_allow");
	sbx_profile_free(p);
	ok(load("a", &p, &err) == 0 && !p->redis_nodes, "no redis_nodes: none");
	sbx_profile_free(p);
	const char *bad_nodes[] = {"nodes_bad", "nodes_str"};
	for (size_t i = 0; i < sizeof(bad_nodes) / sizeof(bad_nodes[0]); i++) {
		ok(load(bad_nodes[i], &p, &err) < 0 && strstr(err.msg, "redis_nodes"),
		   "redis_nodes refused in profile %s: %s", bad_nodes[i], err.msg);
		is_int(sbx_err_exit_status(&err), 78, "... a configuration error");
	}

	/* Each backend owns its keys: parsed by the profile's backend only. */
	ok(load("dockertls", &p, &err) == 0, "a docker profile with tls_cert_path (%s)", err.msg);
	ok(p->backend_conf_of == &sbx_backend_docker && p->backend_conf &&
	   !strcmp(((const struct docker_conf *)p->backend_conf)->tls_cert_path, "/x/tls"),
	   "... tls_cert_path parsed by the docker backend");
	sbx_profile_free(p);
	ok(load("mixed", &p, &err) == 0,
	   "a docker profile carrying local keys still loads (SBX_BACKEND may pick local): %s",
	   err.msg);
	ok(!lconf(p), "... and the local keys are not parsed for docker");
	sbx_profile_free(p);
	setenv("SBX_BACKEND", "local", 1);
	ok(load("mixed", &p, &err) == 0 && lconf(p) && lconf(p)->allow_userns &&
	   !strcmp(lconf(p)->cgroup_parent, "y.slice"),
	   "... under SBX_BACKEND=local, the local backend parses them");
	sbx_profile_free(p);
	unsetenv("SBX_BACKEND");
	ok(load("cubekeys", &p, &err) == 0, "cube's keys are the cube backend's (%s)", err.msg);
	sbx_profile_free(p);
	ok(load("lim", &p, &err) == 0 && lconf(p) && !lconf(p)->allow_userns,
	   "allow_userns: off unless set");
	sbx_profile_free(p);

	ok(load("nosuch", &p, &err) < 0, "a named profile that does not exist");
	is_int(sbx_err_exit_status(&err), 78, "... is a configuration error");

	write_config("{not json");
	ok(load(NULL, &p, &err) < 0, "a broken config file is an error");
	is_int(sbx_err_exit_status(&err), 78, "... exit 78");

	setenv("SBX_CONFIG", "/nonexistent/sbx.json", 1);
	ok(load(NULL, &p, &err) < 0, "SBX_CONFIG naming a missing file is an error");
	unsetenv("SBX_CONFIG");
	setenv("XDG_CONFIG_HOME", dir, 1);
	ok(load(NULL, &p, &err) == 0, "no config file at all: built-in defaults");
	is_str(p->name, "default", "profile 'default'");
	is_str(p->backend, "local", "local backend by default");
	is_str(p->prefix, "sbx", "key prefix sbx");
	sbx_profile_free(p);

	/* Every path any profile names, not only the one in use. */
	unsetenv("XDG_CONFIG_HOME");
	write_config("{\"default_profile\": \"a\", \"profiles\": {"
		     "\"a\": {\"state_dir\": \"/x/state-a\", \"redis_url\": \"unix:///x/r.sock?db=2\"},"
		     "\"b\": {\"api_key_file\": \"/x/key\", \"redis_password_file\": \"/x/pw\","
		     "        \"tls_cert_path\": \"/x/tls\", \"endpoint\": \"unix:///x/d.sock\","
		     "        \"state_dir\": \"rel/state-b\"},"
		     "\"c\": {\"redis_url\": \"redis://127.0.0.1:6379\", \"endpoint\": \"https://e\"}}}");
	char **paths = NULL;
	size_t np = 0;
	ok(sbx_config_paths(&paths, &np, &err) == 0, "config paths are listed");
	char cwd[4096], relb[4200], cpath[256];
	snprintf(relb, sizeof(relb), "%s/rel/state-b", getcwd(cwd, sizeof(cwd)) ? cwd : "");
	snprintf(cpath, sizeof(cpath), "%s/config.json", dir);
	const char *want[] = {cpath, "/x/state-a", "/x/r.sock", "/x/key", "/x/pw", "/x/tls",
			      "/x/d.sock", relb, "/etc/sbx/config.json", "/var/lib/sbx"};
	for (size_t i = 0; i < SBX_ARRAY_LEN(want); i++) {
		int found = 0;
		for (size_t j = 0; j < np; j++)
			found |= strcmp(paths[j], want[i]) == 0;
		ok(found, "... %s is among them", want[i]);
	}
	int bad = 0;
	for (size_t j = 0; j < np; j++)
		bad |= paths[j][0] != '/' || strstr(paths[j], "127.0.0.1") || strstr(paths[j], "https");
	ok(!bad && paths[np] == NULL, "... all absolute paths, NULL-terminated, no network URLs");
	sbx_strv_free(paths);
	write_config("{not json");
	ok(sbx_config_paths(&paths, &np, &err) < 0, "an unparsable config file fails the listing");

	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	return tap_done();
}
