/* Colour themes: files themes/NAME.theme of "element = fg bg [attrs...]" lines,
 * parsed into one colour table (the elements below).  Colours are names
 * (default, black, red, ..., white, bright-red, ...) or 0..255; on a terminal
 * with fewer colours a number is brought to the nearest of the eight.  Without
 * colour (NO_COLOR, a monochrome terminal) only the attributes are used. */
#ifndef SBX_TUI_THEME_H
#define SBX_TUI_THEME_H

#include <stddef.h>

#include "lib/err.h"

enum theme_el {
	TH_NORMAL, TH_TITLE, TH_BORDER, TH_HEADER, TH_SELECTED, TH_DIM, TH_RUNNING,
	TH_SUSPENDED, TH_ERROR, TH_OK, TH_FAIL, TH_TAB, TH_TAB_ACTIVE, TH_PROMPT,
	TH_KEYBAR, TH_KEY, TH_HUMAN, TH_AGENT, TH_APPROVAL, TH_EXEC_HEAD, TH_STDERR,
	TH_COUNT
};

/* Parse theme name (a file name in the theme path, or a path with a '/') into
 * the table.  Errors name file:line. */
int theme_load(const char *name, struct sbx_err *e);
/* Make the table current on the terminal (after initscr; again after a load). */
void theme_apply(void);
/* The curses attributes (colour pair included) of an element. */
int theme_attr(enum theme_el el);
/* Element base in element over's colour: over's foreground (base's where over
 * has none) on base's background (over's where base has none), both their
 * attributes.  A colour pair of its own for the pair of elements: two pairs
 * OR-ed together make a third, unrelated one. */
int theme_attr_over(enum theme_el base, enum theme_el over);
/* The name of the loaded theme. */
const char *theme_name(void);
/* Every theme file found, comma-separated, into buf. */
void theme_list(char *buf, size_t len);
/* Element names, for the parser and the docs. */
const char *theme_el_name(enum theme_el el);

#endif
