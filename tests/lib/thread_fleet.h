/*
 * thread_fleet.h -- the test programs' threads: fn on N threads at once,
 * each given its index (0..N-1), all joined before it returns.
 */
#ifndef TESTS_THREAD_FLEET_H
#define TESTS_THREAD_FLEET_H

#include <pthread.h>

#define THREAD_FLEET_MAX 256

/* 0 once every thread has run; 2 when n is outside 1..THREAD_FLEET_MAX;
 * 1 when a thread could not start (those started are joined first). */
static inline int run_fleet(int n, void *(*fn)(void *))
{
	pthread_t th[THREAD_FLEET_MAX];
	int started = 0;

	if (n < 1 || n > THREAD_FLEET_MAX)
		return 2;
	while (started < n && pthread_create(&th[started], NULL, fn, (void *)(long)started) == 0)
		started++;
	for (int t = 0; t < started; t++)
		pthread_join(th[t], NULL);
	return started == n ? 0 : 1;
}

#endif /* TESTS_THREAD_FLEET_H */
