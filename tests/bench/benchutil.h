/*
** benchutil.h - what the benchmark programs share: a fatal error that
** names the program, the monotonic clock every figure is timed with, and
** the xorshift64* generator their parameters are drawn from (fixed seed:
** runs draw the same parameters).  Header-only: each program is one file.
*/
#ifndef KL_BENCHUTIL_H
#define KL_BENCHUTIL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifndef BENCH_NAME
#error "define BENCH_NAME (the program's name, for messages) before including benchutil.h"
#endif

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", BENCH_NAME);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(1);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t g_rng = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void) {
  g_rng ^= g_rng >> 12;
  g_rng ^= g_rng << 25;
  g_rng ^= g_rng >> 27;
  return g_rng * UINT64_C(2685821657736338717);
}

#endif
