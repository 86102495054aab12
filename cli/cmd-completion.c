/* sbxtop completion: a completion script for bash, zsh or fish, made from the
 * command table (cli/cmd.c: each command's options and words), the global
 * options and the configuration's choices, so a new command or flag completes
 * with nothing more to write.  What is completed from the running system (the
 * sandboxes, the hosts) is asked of sbxtop itself when Tab is pressed: the
 * kinds table below says how. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "lib/buf.h"
#include "lib/util.h"

static int cmd_completion(struct cli *cli, int argc, char **argv);

static const struct option options[] = { { NULL, 0, NULL, 0 } };

const struct cmd_entry cmd_completion_entry = {
	"completion", "bash|zsh|fish",
	"print a shell completion script",
	"  Commands, their options, sandbox ids and names, hosts and the options'\n"
	"  choices.  `make install` puts the scripts where each shell looks; by hand:\n"
	"    bash  sbxtop completion bash > ~/.local/share/bash-completion/completions/sbxtop\n"
	"    zsh   sbxtop completion zsh > ~/.zfunc/_sbxtop  (with ~/.zfunc in $fpath)\n"
	"    fish  sbxtop completion fish > ~/.config/fish/completions/sbxtop.fish\n",
	cmd_completion,
	.options = options,
	.words = "bash|zsh|fish",
};

/* The kinds of words, by a flag's long name or by the name a command's words
 * give them (struct cmd_entry's words): fixed values, a command of sbxtop's
 * that prints them one a line, or host paths.  A new kind is a line here. */
static const struct kind {
	const char	*name;
	const char	*values;	/* '|'-separated, or NULL */
	const char	*list;		/* sbxtop's arguments, or NULL */
	int		 files;
} kinds[] = {
	{ "sandbox", NULL, "ls --format '{{.ID}}\\n{{.Name}}'", 0 },
	{ "sandbox:path", NULL, "ls --format '{{.ID}}:\\n{{.Name}}:'", 0 },
	{ "host", NULL, "host ls -q", 0 },
	{ "key", NULL, "key ls -q", 0 },
	{ "scope", "exec|admin|metrics", NULL, 0 },
	{ "file", NULL, NULL, 1 },
	{ "identity", NULL, NULL, 1 },
	{ "kernel", NULL, NULL, 1 },
	{ "from", NULL, NULL, 1 },
	{ "bundle", NULL, NULL, 1 },
	{ "token-file", NULL, NULL, 1 },
	{ "log", NULL, NULL, 1 },
	{ "theme", "default|light|high-contrast|monochrome", NULL, 0 },
};

static const struct kind *
kind_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		if (strcmp(kinds[i].name, name) == 0)
			return &kinds[i];
	return NULL;
}

/* The values of flag --name: a kind's name, the option's choices, the
 * backends, or NULL (anything: nothing to offer). */
static void
flag_values(const char *name, struct buf *out)
{
	const struct config_option *o = config_option_by_flag(name);

	if (kind_find(name) != NULL) {
		buf_printf(out, "%s", name);
	} else if (strcmp(name, "backend") == 0) {
		const char *const *b = core_backend_names();
		for (size_t i = 0; b[i] != NULL; i++)
			buf_printf(out, "%s%s", i ? "|" : "", b[i]);
	} else if (o != NULL && o->choices != NULL) {
		for (size_t i = 0; o->choices[i] != NULL; i++)
			buf_printf(out, "%s%s", i ? "|" : "", o->choices[i]);
	}
}

/* Flags left out: the ones for sbxtop's own use and its tests'. */
static const char *const hidden[] = { "proxy-daemon", "conformance-fixtures" };

static int
is_hidden(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(hidden); i++)
		if (strcmp(hidden[i], name) == 0)
			return 1;
	return 0;
}

/* The command's flags (long and short, space-separated) into all, and those
 * that take a value into val. */
static void
command_flags(const struct cmd_entry *c, struct buf *all, struct buf *val)
{
	const struct option *o = cmd_options(c);
	const char *s = c->shortopts ? c->shortopts : "";

	for (; o->name != NULL; o++) {
		if (is_hidden(o->name))
			continue;
		buf_printf(all, "%s--%s", all->len ? " " : "", o->name);
		if (o->has_arg == required_argument)
			buf_printf(val, "%s--%s", val->len ? " " : "", o->name);
	}
	for (; *s; s++) {
		if (*s == ':' || *s == '+')
			continue;
		buf_printf(all, "%s-%c", all->len ? " " : "", *s);
		if (s[1] == ':')
			buf_printf(val, "%s-%c", val->len ? " " : "", *s);
	}
}

/* A flag whose name says another kind than the table's, in one command:
 * secret's --host is a web host, not one of `sbxtop host`'s. */
static const struct { const char *cmd, *flag, *kind; } flag_override[] = {
	{ "secret", "host", "" },
};


/* The flags of command cmd ("": the global ones) in table o with values to
 * offer: "'create --host') echo 'host' ;;" arms of a case (sh), or cases of a
 * switch (fish). */
static void
flag_kinds_of(const char *cmd, const struct option *o, struct buf *out, int fish)
{
	struct buf v;

	buf_init(&v, 1 << 16);
	for (; o->name != NULL; o++) {
		if (o->has_arg != required_argument || is_hidden(o->name))
			continue;
		int over = 0;
		buf_reset(&v);
		for (size_t i = 0; i < ARRAY_SIZE(flag_override); i++)
			if (strcmp(flag_override[i].cmd, cmd) == 0 &&
			    strcmp(flag_override[i].flag, o->name) == 0) {
				buf_printf(&v, "%s", flag_override[i].kind);
				over = 1;
			}
		if (!over)
			flag_values(o->name, &v);
		if (v.len == 0)
			continue;
		if (fish)
			buf_printf(out, "\t\tcase '%s --%s'\n\t\t\techo '%.*s'\n", cmd, o->name,
			    (int)v.len, v.data);
		else
			buf_printf(out, "\t'%s --%s') echo '%.*s' ;;\n", cmd, o->name, (int)v.len,
			    v.data);
	}
	buf_free(&v);
}

static void
flag_kinds(struct buf *out, int fish)
{
	const char *names[64];
	int value[64];
	size_t n = cli_globals(names, value, ARRAY_SIZE(names));
	struct option g[65];

	for (size_t i = 0; cmd_table[i] != NULL; i++)
		flag_kinds_of(cmd_table[i]->name, cmd_options(cmd_table[i]), out, fish);
	for (size_t k = 0; k < n; k++)
		g[k] = (struct option){ names[k], value[k] ? required_argument : no_argument,
		    NULL, 0 };
	g[n] = (struct option){ NULL, 0, NULL, 0 };
	flag_kinds_of("", g, out, fish);
}

/* The per-command data every script shares: its flags, the ones that take a
 * value, and its words, as case arms (fish: switch cases). */
static void
command_data(struct buf *out, int fish, int what)
{
	for (size_t i = 0; cmd_table[i] != NULL; i++) {
		const struct cmd_entry *c = cmd_table[i];
		struct buf all, val;
		const char *text;

		buf_init(&all, 1 << 16);
		buf_init(&val, 1 << 16);
		command_flags(c, &all, &val);
		text = what == 0 ? (all.data ? all.data : "") : what == 1 ?
		    (val.data ? val.data : "") : (c->words ? c->words : "");
		if (fish)
			buf_printf(out, "\t\tcase %s\n\t\t\techo '%s'\n", c->name, text);
		else
			buf_printf(out, "\t%s) echo '%s' ;;\n", c->name, text);
		buf_free(&all);
		buf_free(&val);
	}
}

/* The case arms that turn a kind into words (files: the caller's business). */
static void
kind_values(struct buf *out, int fish)
{
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		const struct kind *k = &kinds[i];
		if (k->files) {
			buf_printf(out, fish ? "\t\t\tcase '%s'\n" : "\t\t'%s') ;;\n", k->name);
			continue;
		}
		if (fish)
			buf_printf(out, "\t\t\tcase '%s'\n\t\t\t\t", k->name);
		else
			buf_printf(out, "\t\t'%s') ", k->name);
		if (k->list != NULL) {
			/* A name left empty ("" or ":") is no word. */
			buf_printf(out, "command sbxtop %s 2>/dev/null | grep -v '^:*$'", k->list);
		} else {
			buf_printf(out, "printf '%%s\\n'");
			for (const char *v = k->values; *v; v += strcspn(v, "|") + (v[strcspn(v,
			    "|")] != '\0'))
				buf_printf(out, " %.*s", (int)strcspn(v, "|"), v);
		}
		buf_printf(out, fish ? "\n" : " ;;\n");
	}
}

/* The kinds that are host paths, space-separated. */
static void
file_kinds(struct buf *b)
{
	int n = 0;

	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		if (kinds[i].files)
			buf_printf(b, "%s%s", n++ ? " " : "", kinds[i].name);
}

static void
globals(struct buf *all, struct buf *val)
{
	const char *names[64];
	int value[64];
	size_t n = cli_globals(names, value, ARRAY_SIZE(names));

	for (size_t k = 0; k < n; k++) {
		buf_printf(all, "%s--%s", k ? " " : "", names[k]);
		if (value[k])
			buf_printf(val, "%s--%s", val->len ? " " : "", names[k]);
	}
}

/* The parts of the scripts written by hand: how a command line is read.  Both
 * sh scripts find the command (the first word that is no global option),
 * then the word's place among the command's arguments (options and their
 * values skipped), and offer the flags, a flag's values or the words of that
 * place. */
/* What bash and zsh share: a kind's words, and whether it is a host path.
 * A command substitution's words split in both shells alike. */
static const char sh_values[] =
"_sbxtop_values() {\n"
"\tlocal w\n"
"\tfor w in $(printf '%s' \"$1\" | tr '|' ' '); do\n"
"\t\tcase $w in\n"
"@KINDS@"
"\t\t'command') printf '%s\\n' $(printf '%s' \"$_sbxtop_commands\") ;;\n"
"\t\t*) printf '%s\\n' \"$w\" ;;\n"
"\t\tesac\n"
"\tdone\n"
"}\n"
"\n"
"_sbxtop_files() {\n"
"\tlocal w\n"
"\tfor w in $(printf '%s' \"$1\" | tr '|' ' '); do\n"
"\t\t[[ \" $_sbxtop_file_kinds \" == *\" ${w%...} \"* ]] && return 0\n"
"\tdone\n"
"\treturn 1\n"
"}\n"
"\n";

static const char bash_head[] =
"# bash completion for sbxtop, made by `sbxtop completion bash` from its\n"
"# command table.\n";

static const char bash_body[] =
"_sbxtop() {\n"
"\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
"\tlocal i=1 cmd='' w vals pos=0 spec n\n"
"\tCOMPREPLY=()\n"
"\twhile [ $i -lt $COMP_CWORD ]; do\n"
"\t\tw=${COMP_WORDS[i]}\n"
"\t\tif [[ \" $_sbxtop_global_vflags \" == *\" $w \"* ]]; then i=$((i + 2)); continue; fi\n"
"\t\tcase $w in -*) i=$((i + 1)); continue ;; esac\n"
"\t\tcmd=$w\n"
"\t\tbreak\n"
"\tdone\n"
"\tlocal flags=$_sbxtop_globals vflags=$_sbxtop_global_vflags\n"
"\tif [ -n \"$cmd\" ]; then\n"
"\t\tflags=$(_sbxtop_flags \"$cmd\")\n"
"\t\tvflags=$(_sbxtop_vflags \"$cmd\")\n"
"\tfi\n"
"\tif [[ \" $vflags \" == *\" $prev \"* ]]; then\n"
"\t\tvals=$(_sbxtop_flag_values \"$cmd\" \"$prev\")\n"
"\t\t[ -n \"$vals\" ] || { COMPREPLY=($(compgen -f -- \"$cur\")); return; }\n"
"\t\tCOMPREPLY=($(compgen -W \"$(_sbxtop_values \"$vals\")\" -- \"$cur\"))\n"
"\t\t_sbxtop_files \"$vals\" && COMPREPLY+=($(compgen -f -- \"$cur\"))\n"
"\t\treturn\n"
"\tfi\n"
"\tif [[ $cur == -* ]]; then\n"
"\t\tCOMPREPLY=($(compgen -W \"$flags\" -- \"$cur\"))\n"
"\t\treturn\n"
"\tfi\n"
"\tif [ -z \"$cmd\" ]; then\n"
"\t\tCOMPREPLY=($(compgen -W \"$_sbxtop_commands\" -- \"$cur\"))\n"
"\t\treturn\n"
"\tfi\n"
"\ti=$((i + 1))\n"
"\twhile [ $i -lt $COMP_CWORD ]; do\n"
"\t\tw=${COMP_WORDS[i]}\n"
"\t\ti=$((i + 1))\n"
"\t\tif [ \"$w\" = -- ]; then pos=$((pos + COMP_CWORD - i)); break; fi\n"
"\t\tif [[ \" $vflags \" == *\" $w \"* ]]; then i=$((i + 1)); continue; fi\n"
"\t\tcase $w in -*) continue ;; esac\n"
"\t\tpos=$((pos + 1))\n"
"\tdone\n"
"\tspec=($(_sbxtop_words \"$cmd\"))\n"
"\tn=${#spec[@]}\n"
"\t[ $n -gt 0 ] || return\n"
"\tw=${spec[pos]}\n"
"\tif [ -z \"$w\" ]; then\n"
"\t\tw=${spec[n-1]}\n"
"\t\t[[ $w == *... ]] || return\n"
"\tfi\n"
"\tw=${w%...}\n"
"\tCOMPREPLY=($(compgen -W \"$(_sbxtop_values \"$w\")\" -- \"$cur\"))\n"
"\t_sbxtop_files \"$w\" && COMPREPLY+=($(compgen -f -- \"$cur\"))\n"
"}\n"
"complete -F _sbxtop sbxtop\n";

static const char zsh_head[] =
"#compdef sbxtop\n"
"# zsh completion for sbxtop, made by `sbxtop completion zsh` from its\n"
"# command table.\n";

static const char zsh_body[] =
"_sbxtop() {\n"
"\tlocal cur=${words[CURRENT]} prev=${words[CURRENT-1]}\n"
"\tlocal -i i=2 pos=1\n"
"\tlocal cmd='' w vals flags vflags\n"
"\tlocal -a spec cands\n"
"\twhile (( i < CURRENT )); do\n"
"\t\tw=${words[i]}\n"
"\t\tif [[ \" $_sbxtop_global_vflags \" == *\" $w \"* ]]; then (( i += 2 )); continue; fi\n"
"\t\tcase $w in -*) (( i += 1 )); continue ;; esac\n"
"\t\tcmd=$w\n"
"\t\tbreak\n"
"\tdone\n"
"\tflags=$_sbxtop_globals vflags=$_sbxtop_global_vflags\n"
"\tif [[ -n $cmd ]]; then\n"
"\t\tflags=$(_sbxtop_flags $cmd)\n"
"\t\tvflags=$(_sbxtop_vflags $cmd)\n"
"\tfi\n"
"\tif [[ \" $vflags \" == *\" $prev \"* ]]; then\n"
"\t\tvals=$(_sbxtop_flag_values \"$cmd\" $prev)\n"
"\t\tif [[ -z $vals ]]; then _files; return; fi\n"
"\t\tcands=(${(f)\"$(_sbxtop_values $vals)\"})\n"
"\t\tcompadd -a cands\n"
"\t\t_sbxtop_files $vals && _files\n"
"\t\treturn\n"
"\tfi\n"
"\tif [[ $cur == -* ]]; then\n"
"\t\tcompadd -- ${=flags}\n"
"\t\treturn\n"
"\tfi\n"
"\tif [[ -z $cmd ]]; then\n"
"\t\tcompadd -- ${=_sbxtop_commands}\n"
"\t\treturn\n"
"\tfi\n"
"\t(( i += 1 ))\n"
"\twhile (( i < CURRENT )); do\n"
"\t\tw=${words[i]}\n"
"\t\t(( i += 1 ))\n"
"\t\tif [[ $w == -- ]]; then (( pos += CURRENT - i )); break; fi\n"
"\t\tif [[ \" $vflags \" == *\" $w \"* ]]; then (( i += 1 )); continue; fi\n"
"\t\tcase $w in -*) continue ;; esac\n"
"\t\t(( pos += 1 ))\n"
"\tdone\n"
"\tspec=(${=$(_sbxtop_words $cmd)})\n"
"\t(( ${#spec} > 0 )) || return 1\n"
"\tw=${spec[pos]}\n"
"\tif [[ -z $w ]]; then\n"
"\t\tw=${spec[-1]}\n"
"\t\t[[ $w == *... ]] || return 1\n"
"\tfi\n"
"\tw=${w%...}\n"
"\tcands=(${(f)\"$(_sbxtop_values $w)\"})\n"
"\t(( ${#cands} )) && compadd -a cands\n"
"\t_sbxtop_files $w && _files\n"
"\treturn 0\n"
"}\n"
"\n"
"if [[ $zsh_eval_context[-1] == loadautofunc ]]; then\n"
"\t_sbxtop \"$@\"\n"
"else\n"
"\tcompdef _sbxtop sbxtop\n"
"fi\n";

static const char fish_values[] =
"function __sbxtop_files\n"
"\tfor v in (string split '|' -- $argv[1])\n"
"\t\tcontains -- $v $__sbxtop_file_kinds; and return 0\n"
"\tend\n"
"\treturn 1\n"
"end\n"
"\n"
"function __sbxtop_values\n"
"\tfor v in (string split '|' -- $argv[1])\n"
"\t\tswitch $v\n"
"@KINDS@"
"\t\t\tcase command\n"
"\t\t\t\tprintf '%s\\n' $__sbxtop_commands\n"
"\t\t\tcase '*'\n"
"\t\t\t\techo $v\n"
"\t\tend\n"
"\tend\n"
"end\n"
"\n";

static const char fish_body[] =
"# The command: the first word that is no global option.\n"
"function __sbxtop_cmd\n"
"\tset -l w (commandline -opc)\n"
"\tset -l i 2\n"
"\twhile test $i -le (count $w)\n"
"\t\tif contains -- $w[$i] $__sbxtop_global_vflags\n"
"\t\t\tset i (math $i + 2)\n"
"\t\t\tcontinue\n"
"\t\tend\n"
"\t\tif string match -q -- '-*' $w[$i]\n"
"\t\t\tset i (math $i + 1)\n"
"\t\t\tcontinue\n"
"\t\tend\n"
"\t\techo $i $w[$i]\n"
"\t\treturn 0\n"
"\tend\n"
"\treturn 1\n"
"end\n"
"\n"
"# What to offer for the word being typed, one a line.\n"
"function __sbxtop_complete\n"
"\tset -l w (commandline -opc)\n"
"\tset -l cur (commandline -ct)\n"
"\tset -l found (__sbxtop_cmd)\n"
"\tset -l flags $__sbxtop_globals\n"
"\tset -l vflags $__sbxtop_global_vflags\n"
"\tset -l cmd ''\n"
"\tset -l i 0\n"
"\tif test -n \"$found\"\n"
"\t\tset i (string split ' ' -- $found)[1]\n"
"\t\tset cmd (string split ' ' -- $found)[2]\n"
"\t\tset flags (string split ' ' -- (__sbxtop_flags $cmd))\n"
"\t\tset vflags (string split ' ' -- (__sbxtop_vflags $cmd))\n"
"\tend\n"
"\tif test (count $w) -ge 2; and contains -- $w[-1] $vflags\n"
"\t\tset -l vals (__sbxtop_flag_values \"$cmd\" $w[-1])\n"
"\t\tif test -z \"$vals\"\n"
"\t\t\t__fish_complete_path $cur\n"
"\t\t\treturn\n"
"\t\tend\n"
"\t\t__sbxtop_values $vals\n"
"\t\t__sbxtop_files $vals; and __fish_complete_path $cur\n"
"\t\treturn\n"
"\tend\n"
"\tif string match -q -- '-*' $cur\n"
"\t\tprintf '%s\\n' $flags\n"
"\t\treturn\n"
"\tend\n"
"\tif test -z \"$cmd\"\n"
"\t\t__sbxtop_summaries\n"
"\t\treturn\n"
"\tend\n"
"\tset -l pos 1\n"
"\tset -l k (math $i + 1)\n"
"\twhile test $k -le (count $w)\n"
"\t\tset -l x $w[$k]\n"
"\t\tset k (math $k + 1)\n"
"\t\tif test \"$x\" = --\n"
"\t\t\tset pos (math $pos + (count $w) - $k + 1)\n"
"\t\t\tbreak\n"
"\t\tend\n"
"\t\tif contains -- $x $vflags\n"
"\t\t\tset k (math $k + 1)\n"
"\t\t\tcontinue\n"
"\t\tend\n"
"\t\tstring match -q -- '-*' $x; and continue\n"
"\t\tset pos (math $pos + 1)\n"
"\tend\n"
"\tset -l spec (string split -n ' ' -- (__sbxtop_words $cmd))\n"
"\ttest (count $spec) -gt 0; or return\n"
"\tset -l s\n"
"\tif test $pos -le (count $spec)\n"
"\t\tset s $spec[$pos]\n"
"\telse if string match -q -- '*...' $spec[-1]\n"
"\t\tset s $spec[-1]\n"
"\telse\n"
"\t\treturn\n"
"\tend\n"
"\tset s (string replace -- '...' '' $s)\n"
"\t__sbxtop_values $s\n"
"\t__sbxtop_files $s; and __fish_complete_path $cur\n"
"end\n"
"\n"
"complete -c sbxtop -f -a '(__sbxtop_complete)'\n";

/* What differs between the scripts: their hand-written parts and how a
 * variable and a function of cases are said. */
static const struct dialect {
	const char	*name, *head, *values, *body;	/* values: where the kinds go */
	int		 fish;
} dialects[] = {
	{ "bash", bash_head, sh_values, bash_body, 0 },
	{ "zsh", zsh_head, sh_values, zsh_body, 0 },
	{ "fish", "# fish completion for sbxtop, made by `sbxtop completion fish` from its\n"
	    "# command table.\n", fish_values, fish_body, 1 },
};

static void
var(struct buf *b, const struct dialect *d, const char *name, const struct buf *v)
{
	buf_printf(b, d->fish ? "set -g __sbxtop_%s %.*s\n" : "_sbxtop_%s='%.*s'\n", name,
	    (int)v->len, v->data ? v->data : "");
}

static void
script(struct buf *b, const struct dialect *d)
{
	static const char *const fn[] = { "flags", "vflags", "words" };
	struct buf all, val, k, cmds;

	buf_init(&all, 1 << 16);
	buf_init(&val, 1 << 16);
	buf_init(&k, 1 << 20);
	buf_init(&cmds, 1 << 16);
	buf_printf(b, "%s", d->head);
	for (size_t i = 0; cmd_table[i] != NULL; i++)
		buf_printf(&cmds, "%s%s", i ? " " : "", cmd_table[i]->name);
	var(b, d, "commands", &cmds);
	globals(&all, &val);
	var(b, d, "globals", &all);
	var(b, d, "global_vflags", &val);
	buf_reset(&all);
	file_kinds(&all);
	var(b, d, "file_kinds", &all);
	buf_printf(b, "\n");
	if (d->fish) {
		buf_printf(b, "function __sbxtop_summaries\n");
		for (size_t i = 0; cmd_table[i] != NULL; i++) {
			/* In fish's single quotes, \\ and \' are the only escapes. */
			buf_printf(b, "\tprintf '%%s\\t%%s\\n' %s '", cmd_table[i]->name);
			for (const char *p = cmd_table[i]->summary; *p; p++)
				buf_printf(b, "%s%c", *p == '\'' || *p == '\\' ? "\\" : "", *p);
			buf_printf(b, "'\n");
		}
		buf_printf(b, "end\n\n");
	}
	for (int what = 0; what <= 3; what++) {
		const char *name = what < 3 ? fn[what] : "flag_values";
		if (d->fish)
			buf_printf(b, "function __sbxtop_%s\n\tswitch %s\n", name, what < 3 ?
			    "$argv[1]" : "\"$argv[1] $argv[2]\"");
		else
			buf_printf(b, "_sbxtop_%s() {\n\tcase %s in\n", name, what < 3 ? "$1" :
			    "\"$1 $2\"");
		if (what < 3)
			command_data(b, d->fish, what);
		else
			flag_kinds(b, d->fish);
		buf_printf(b, d->fish ? "\tend\nend\n\n" : "\tesac\n}\n\n");
	}
	kind_values(&k, d->fish);
	/* The kinds' case arms go where the values' function says. */
	const char *at = strstr(d->values, "@KINDS@");
	buf_append(b, d->values, (size_t)(at - d->values));
	buf_append(b, k.data ? k.data : "", k.len);
	buf_printf(b, "%s%s", at + 7, d->body);
	buf_free(&all);
	buf_free(&val);
	buf_free(&k);
	buf_free(&cmds);
}

static int
cmd_completion(struct cli *cli, int argc, char **argv)
{
	static const char *const shells[] = { "bash", "zsh", "fish" };
	struct buf b;
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:", options, NULL)) != -1)
		return cli_bad_option(&cmd_completion_entry, c, argv);
	if (argc - optind != 1)
		return cli_usage(&cmd_completion_entry, "expected a shell: bash, zsh or fish");
	for (size_t i = 0; i < ARRAY_SIZE(dialects); i++)
		if (strcmp(argv[optind], dialects[i].name) == 0) {
			buf_init(&b, 4u << 20);
			script(&b, &dialects[i]);
			(void)!write_all(1, b.data, b.len);
			buf_free(&b);
			return 0;
		}
	const char *near = cli_nearest(argv[optind], shells, ARRAY_SIZE(shells));
	return cli_usage(&cmd_completion_entry, "no completion for '%s'%s%s%s: bash, zsh or "
	    "fish", argv[optind], near ? " (did you mean '" : "", near ? near : "",
	    near ? "'?)" : "");
}
