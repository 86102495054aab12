/* Unit tests for the option table: parsing of the config file, ranges, and the
 * precedence flag > environment > file > default whatever the order of reading.
 * Also the XDG paths the file is found through.  TAP lines. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "core/config.h"
#include "core/paths.h"
#include "lib/util.h"

static char tmpdir[] = "/tmp/sbxconf.XXXXXX";

static char *
write_conf(const char *name, const char *text)
{
	char *p = xasprintf("%s/%s", tmpdir, name);
	FILE *f = fopen(p, "w");

	fputs(text, f);
	fclose(f);
	return p;
}

static void
clear_env(void)
{
	size_t n;
	const struct config_option *o = config_options(&n);

	for (size_t i = 0; i < n; i++)
		unsetenv(o[i].env);
}

static void
test_table(void)
{
	size_t n;
	const struct config_option *o = config_options(&n);
	struct config *c = config_new();
	int envs_ok = 1;
	static const char *const needed[] = { "backend", "max_duration", "idle", "memory",
	    "cpus", "pids", "network", "log_level", "approve" };

	for (size_t i = 0; i < ARRAY_SIZE(needed); i++)
		check(config_option_find(needed[i]) != NULL, "option %s exists", needed[i]);
	for (size_t i = 0; i < n; i++) {
		char want[64];
		snprintf(want, sizeof want, "SBXTOP_%s", o[i].name);
		for (char *p = want; *p; p++)
			*p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
		envs_ok &= strcmp(want, o[i].env) == 0 && o[i].help && o[i].flag;
		/* Every default must pass its own check. */
		struct sbx_err e;
		check(config_check(o[i].name, o[i].def, CONFIG_DEFAULT, &e) == 0,
		    "default of %s is valid", o[i].name);
	}
	check(envs_ok, "every option has SBXTOP_<NAME>, a flag and help");
	check(strcmp(config_str(c, "backend"), "ns") == 0, "backend defaults to ns");
	check(config_int(c, "max_duration") == 14400, "max_duration defaults to 14400");
	check(config_int(c, "idle") == 0, "idle defaults to off");
	check(config_int(c, "pids") == 4096, "pids defaults to 4096");
	check(strcmp(config_str(c, "network"), "none") == 0, "network defaults to none");
	check(config_source_of(c, "memory") == CONFIG_DEFAULT, "source is the default");
	check(config_option_by_flag("max-duration") == config_option_find("max_duration"),
	    "--max-duration is the flag of max_duration");
	config_free(c);
}

static void
test_ranges(void)
{
	struct config *c = config_new();
	struct sbx_err e;

	check(config_set(c, "max_duration", "0", CONFIG_FLAG, &e) < 0 && e.code == SBX_EINVAL &&
	    strstr(e.msg, "--max-duration") && strstr(e.msg, "1 to 86400"),
	    "max_duration 0 refused with the range: %s", e.msg);
	check(config_set(c, "max_duration", "86401", CONFIG_ENV, &e) < 0 &&
	    strstr(e.msg, "SBXTOP_MAX_DURATION"), "too large, named by its variable: %s", e.msg);
	check(config_set(c, "max_duration", "86400", CONFIG_FLAG, &e) == 0 &&
	    config_int(c, "max_duration") == 86400, "the upper bound is allowed");
	check(config_set(c, "memory", "12abc", CONFIG_FLAG, &e) < 0, "trailing junk refused");
	check(config_set(c, "memory", "-1", CONFIG_FLAG, &e) < 0, "negative refused");
	check(config_set(c, "memory", "1.5", CONFIG_FLAG, &e) < 0, "fraction refused for MiB");
	check(config_set(c, "memory", " 5", CONFIG_FLAG, &e) < 0, "leading space refused");
	check(config_set(c, "memory", "", CONFIG_FLAG, &e) < 0, "empty refused");
	check(config_set(c, "memory", "1e3", CONFIG_FLAG, &e) < 0, "exponent refused");
	check(config_set(c, "cpus", "0.5", CONFIG_FLAG, &e) == 0 && config_num(c, "cpus") == 0.5,
	    "fractional cpus allowed");
	check(config_set(c, "cpus", "nan", CONFIG_FLAG, &e) < 0, "nan refused");
	check(config_set(c, "network", "wifi", CONFIG_FLAG, &e) < 0 &&
	    strstr(e.msg, "none|egress"), "network choices listed: %s", e.msg);
	check(config_set(c, "approve", "destructive", CONFIG_FLAG, &e) == 0, "approve choice");
	check(config_set(c, "nosuch", "1", CONFIG_FLAG, &e) < 0 && strstr(e.msg, "nosuch"),
	    "unknown option named");
	config_free(c);
}

static void
test_file(void)
{
	struct config *c = config_new();
	struct sbx_err e;
	_cleanup_free_ char *good = write_conf("good.conf",
	    "# sandboxes for the CI\n"
	    "\n"
	    "memory = 2048   # MiB\n"
	    "  network=egress\n"
	    "idle = \"300\"\n"
	    "log_level = debug\r\n");
	_cleanup_free_ char *unknown = write_conf("unknown.conf", "memory = 1\n\nmemroy = 2\n");
	_cleanup_free_ char *badval = write_conf("badval.conf", "pids = 99999999\n");
	_cleanup_free_ char *noeq = write_conf("noeq.conf", "# x\nmemory 12\n");
	_cleanup_free_ char *missing = xasprintf("%s/none.conf", tmpdir);

	check(config_load_file(c, good, &e) == 0, "a good file loads");
	check(config_int(c, "memory") == 2048 && strcmp(config_str(c, "network"), "egress") == 0 &&
	    config_int(c, "idle") == 300 && strcmp(config_str(c, "log_level"), "debug") == 0,
	    "its values (comments, spaces, quotes, CRLF) are read");
	check(config_source_of(c, "memory") == CONFIG_FILE, "source is the file");
	check(config_load_file(c, missing, &e) == 0, "a missing file is no error");
	check(config_load_file(c, unknown, &e) < 0 && strstr(e.msg, ":3:") &&
	    strstr(e.msg, "memroy") && strstr(e.msg, unknown),
	    "unknown key names file:line: %s", e.msg);
	check(config_load_file(c, badval, &e) < 0 && strstr(e.msg, ":1:") &&
	    strstr(e.msg, "0 to 4194304"), "bad value names file:line and range: %s", e.msg);
	check(config_load_file(c, noeq, &e) < 0 && strstr(e.msg, ":2:"),
	    "a line without '=' names its line: %s", e.msg);
	config_free(c);
}

static void
test_precedence(void)
{
	struct config *c;
	struct sbx_err e;
	_cleanup_free_ char *cfgdir = xasprintf("%s/xdgconf", tmpdir);
	_cleanup_free_ char *conf = xasprintf("%s/sbxtop", cfgdir);

	mkdir(cfgdir, 0700);
	mkdir(conf, 0700);
	free(write_conf("xdgconf/sbxtop/sbxtop.conf", "memory = 100\nidle = 10\ncpus = 2\n"));
	setenv("XDG_CONFIG_HOME", cfgdir, 1);

	/* Flags first, then env, then the file: the order of reading must not matter. */
	c = config_new();
	setenv("SBXTOP_MEMORY", "200", 1);
	setenv("SBXTOP_IDLE", "20", 1);
	check(config_set(c, "memory", "300", CONFIG_FLAG, &e) == 0, "flag set first");
	check(config_load(c, &e) == 0, "file and environment load");
	check(config_int(c, "memory") == 300, "flag beats env and file");
	check(config_int(c, "idle") == 20, "env beats file");
	check(config_num(c, "cpus") == 2, "file beats default");
	check(config_int(c, "pids") == 4096, "default when nothing else");
	check(config_source_of(c, "idle") == CONFIG_ENV, "idle came from the environment");
	config_free(c);

	setenv("SBXTOP_NETWORK", "carrier-pigeon", 1);
	c = config_new();
	check(config_load(c, &e) < 0 && strstr(e.msg, "SBXTOP_NETWORK"),
	    "a bad environment value is an error naming the variable: %s", e.msg);
	config_free(c);
	clear_env();
}

static void
test_paths(void)
{
	struct sbx_err e;
	_cleanup_free_ char *rt = xasprintf("%s/rt", tmpdir);
	_cleanup_free_ char *d = NULL, *d2 = NULL, *d3 = NULL;
	struct stat st;

	setenv("XDG_STATE_HOME", tmpdir, 1);
	d = paths_dir(PATHS_STATE, &e);
	check(d && strcmp(d + strlen(tmpdir), "/sbxtop") == 0, "state under XDG_STATE_HOME");
	setenv("XDG_STATE_HOME", "relative/dir", 1);
	setenv("HOME", "/home/someone", 1);
	d2 = paths_dir(PATHS_STATE, &e);
	check(d2 && strcmp(d2, "/home/someone/.local/state/sbxtop") == 0,
	    "a relative XDG_STATE_HOME is ignored: %s", d2 ? d2 : "(null)");
	setenv("XDG_RUNTIME_DIR", rt, 1);
	d3 = paths_ensure(PATHS_RUNTIME, &e);
	check(d3 && stat(d3, &st) == 0 && (st.st_mode & 0777) == 0700,
	    "runtime directory created 0700");
	free(d3);
	{
		/* Someone else's directory, or a symlink, where ours should be: refused. */
		_cleanup_free_ char *rt2 = xasprintf("%s/rt2", tmpdir);
		_cleanup_free_ char *sub = xasprintf("%s/sbxtop", rt2);
		_cleanup_free_ char *r = NULL;
		mkdir(rt2, 0700);
		if (symlink(tmpdir, sub) == 0) {
			setenv("XDG_RUNTIME_DIR", rt2, 1);
			r = paths_ensure(PATHS_RUNTIME, &e);
			check(r == NULL && strstr(e.msg, "not a directory"),
			    "a symlinked runtime directory is refused: %s", e.msg);
			unlink(sub);
		}
		if (getuid() == 0) {
			mkdir(sub, 0700);
			if (chown(sub, 65534, 65534) == 0) {
				free(r);
				r = paths_ensure(PATHS_RUNTIME, &e);
				check(r == NULL && e.code == SBX_EDENIED && strstr(e.msg, "65534"),
				    "a runtime directory owned by another uid is refused: %s", e.msg);
			}
		}
		free(r);
	}
	unsetenv("XDG_RUNTIME_DIR");
	d3 = paths_dir(PATHS_RUNTIME, &e);
	{
		char want[64];
		snprintf(want, sizeof want, "/tmp/sbxtop-%u", (unsigned)getuid());
		check(d3 && strcmp(d3, want) == 0, "without XDG_RUNTIME_DIR: %s", want);
	}
}

int
main(void)
{
	if (mkdtemp(tmpdir) == NULL)
		return 1;
	clear_env();
	test_table();
	test_ranges();
	test_file();
	test_precedence();
	test_paths();
	{
		_cleanup_free_ char *cmd = xasprintf("rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			printf("# could not remove %s\n", tmpdir);
	}
	return tap_end();
}
