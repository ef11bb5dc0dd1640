/*
** test_invariant.c - core/invariant.h: in the debug build (KL_DEBUG) the
** assertions are compiled and KL_ALWAYS/KL_NEVER stop on a broken
** invariant; in the release build they are the defensive branch.
*/
#include "testutil.h"

#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "invariant.h"

#if defined(KL_DEBUG) && defined(NDEBUG)
#error "the debug build must compile the assertions (NDEBUG is defined)"
#endif

/* Run f in a child; its termination signal, or 0 when it exited. */
static int child_signal(void (*f)(void)) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    f();
    _exit(0);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

static volatile int sink;
static void never_true(void) { sink = KL_NEVER(sink == 0); }
static void always_false(void) { sink = KL_ALWAYS(sink != 0); }
static void plain_assert(void) { assert(sink != 0); }

static void test_broken_invariant(void **state) {
  (void)state;
  sink = 0;
#ifdef NDEBUG
  assert_int_equal(child_signal(never_true), 0);
  assert_int_equal(child_signal(always_false), 0);
  assert_int_equal(child_signal(plain_assert), 0);
  assert_true(KL_NEVER(1) == 1 && KL_ALWAYS(0) == 0);
#else
  assert_int_equal(child_signal(never_true), SIGABRT);
  assert_int_equal(child_signal(always_false), SIGABRT);
  assert_int_equal(child_signal(plain_assert), SIGABRT);
#endif
}

static void test_kept_invariant(void **state) {
  (void)state;
  sink = 1;
  assert_false(KL_NEVER(sink == 0));
  assert_true(KL_ALWAYS(sink != 0));
}

#ifdef KL_DEBUG
static void test_debug_build(void **state) {
  (void)state;
#ifdef NDEBUG
  fail_msg("NDEBUG in the debug build");
#endif
}
#endif

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_broken_invariant),
      cmocka_unit_test(test_kept_invariant),
#ifdef KL_DEBUG
      cmocka_unit_test(test_debug_build),
#endif
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
