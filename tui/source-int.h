/* What the two source implementations share: the message queue and the wake
 * descriptor (source.c), and the table each fills. */
#ifndef SBX_TUI_SOURCE_INT_H
#define SBX_TUI_SOURCE_INT_H

#include <pthread.h>

#include "tui/source.h"

#define SOURCE_QUEUE_MAX 20000	/* messages waiting; output and log text beyond are
					 * dropped */

struct source_ops {
	const char *kind;
	void	(*free)(struct source *s);
	void	(*select)(struct source *s, const char *id);
	char	*(*log_path)(struct source *s, const char *id);
	int	(*call)(struct source *s, const char *tool, cJSON *args, cJSON **result,
		    struct sbx_err *e);
	int	(*approvals)(struct source *s, cJSON **list, struct sbx_err *e);
	int	(*approve)(struct source *s, const char *id, int allow, const char *reason,
		    struct sbx_err *e);
	int	(*approve_mode)(struct source *s, const char *mode, struct sbx_err *e);
	int	(*net)(struct source *s, const char *verb, const cJSON *params,
		    cJSON **result, struct sbx_err *e);
	int	(*pty_open)(struct source *s, const char *id, int cols, int rows,
		    struct sbx_err *e);
};

struct source_msg;

struct source {
	const struct source_ops	*ops;
	void			*impl;
	int			 wake;		/* eventfd */
	pthread_mutex_t		 mu;
	struct source_msg	*head, *tail;
	size_t			 queued;
	size_t			 dropped;
	/* Asynchronous calls in flight, joined at free. */
	pthread_t		*workers;
	size_t			 nworkers;
	int			 closing;
};

/* Set up the common part. */
void source_init(struct source *s, const struct source_ops *ops, void *impl);
/* Queue message m (taken) of kind k (added to m) and wake the console.
 * Output messages are dropped when the queue is full; others never are. */
void source_post(struct source *s, const char *k, cJSON *m);
/* Join the workers, drop the queue (before the implementation frees itself). */
void source_fini(struct source *s);

#endif
