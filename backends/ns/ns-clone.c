/* The clone of a sandbox's init without a copy of its creator.
 *
 * A fork-style clone of the core server copies its page tables (17 MB resident,
 * some 300 mappings, a dozen threads) only for the child to tear the copy down
 * again at its exec of the agent: 2-3 ms of every cold create, more than the
 * namespaces themselves.  With CLONE_VM the child runs in the creator's memory
 * until that exec, as vfork's child does, but its creator must go on meanwhile
 * (it writes the child's id maps, moves it into its cgroup), so vfork's wait is
 * not an option.
 *
 * Shared memory means shared thread state too: the child runs with the thread
 * pointer of the thread that cloned it, so errno, the malloc cache and every
 * other thread-local of that thread are the child's as well.  So a thread of
 * its own clones it and then does nothing at all, blocked with every signal
 * held, until the creator has seen the child exec or reaped it; the creating
 * thread keeps its own errno.  The child itself keeps to system calls on its
 * own stack and to its own copy of what it is given (backend-ns.c,
 * child_main).  It starts with every signal held, so none of the core's
 * handlers runs in it; it sets its mask back just before its exec. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backends/ns/ns.h"

#define CLONE_STACK	(256 * 1024)

/* Under ASan the child's frames leave their redzones marked in the shadow of
 * a stack ASan never saw; clear them before the memory is given back. */
#if defined(__SANITIZE_ADDRESS__)
#define SBX_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SBX_ASAN 1
#endif
#endif
#ifdef SBX_ASAN
void __asan_unpoison_memory_region(void const volatile *addr, size_t size);
#endif

static void *
cloner_main(void *arg)
{
	struct ns_clone *c = arg;
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, NULL);
	c->pid = clone(c->fn, (char *)c->stack + c->stack_size, c->flags, c->arg);
	c->err = errno;
	sem_post(&c->cloned);
	/* From here this thread's state is the child's: touch nothing. */
	if (c->pid > 0)
		while (sem_wait(&c->done) != 0)
			;
	return NULL;
}

pid_t
ns_clone_start(struct ns_clone *c, int (*fn)(void *), void *arg, int flags)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	pthread_attr_t at;
	char *map;
	int rc;

	memset(c, 0, sizeof *c);
	c->fn = fn;
	c->arg = arg;
	c->flags = flags | CLONE_VM;
	c->pid = -1;
	/* A guard page below the stack: an overflow faults rather than writes
	 * into whatever the core has mapped there. */
	map = mmap(NULL, CLONE_STACK + page, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (map == MAP_FAILED)
		return -1;
	(void)mprotect(map, page, PROT_NONE);
	c->stack = map + page;
	c->stack_size = CLONE_STACK;
	sem_init(&c->cloned, 0, 0);
	sem_init(&c->done, 0, 0);
	if ((rc = pthread_attr_init(&at)) == 0) {
		pthread_attr_setstacksize(&at, 64 * 1024);
		rc = pthread_create(&c->thread, &at, cloner_main, c);
		pthread_attr_destroy(&at);
	}
	if (rc == 0) {
		c->running = 1;
		while (sem_wait(&c->cloned) != 0)
			;
	}
	if (c->pid < 0) {
		int err = rc != 0 ? rc : c->err;
		ns_clone_finish(c);
		errno = err;
		return -1;
	}
	return c->pid;
}

void
ns_clone_finish(struct ns_clone *c)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	if (c->stack == NULL)
		return;
	if (c->running) {
		sem_post(&c->done);
		pthread_join(c->thread, NULL);
	}
	sem_destroy(&c->cloned);
	sem_destroy(&c->done);
#ifdef SBX_ASAN
	__asan_unpoison_memory_region(c->stack, c->stack_size);
#endif
	munmap((char *)c->stack - page, c->stack_size + page);
	c->stack = NULL;
}
