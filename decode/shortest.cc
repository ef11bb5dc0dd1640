/*
** shortest.cc - see shortest.h.
**
** Why C++ and what is written here: the shortest digits need an exact
** algorithm.  printf's %.17g is exact but not shortest, and trying %.15g,
** %.16g, %.17g with a strtod each to check costs two or three conversions
** each way per value.  libstdc++'s std::to_chars (GCC 11 on; Ryu inside)
** gives the shortest digits that read back exactly, closest to the value
** among them; the module links libstdc++ already (the Protobuf decoder),
** and Debian has no C library for it (libdouble-conversion is C++ as
** well).  Written here: the layout (shortest.h), and a faster path for a
** double with at most 4 decimals (prices, rates, most hand-made data),
** whose digits are found by rounding v * 10^d to an integer r and checking
** r / 10^d == v in double arithmetic.  That check is exact: r and 10^d are
** representable, and IEEE division rounds correctly, as strtod does.
*/
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>

extern "C" {
#include "shortest.h"
}

namespace {

/* The digits of u, most significant first, into out; their count. */
size_t put_digits(uint64_t u, char *out) {
  char t[24];
  size_t n = 0;
  do {
    t[n++] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  for (size_t i = 0; i < n; i++) out[i] = t[n - 1 - i];
  return n;
}

size_t put_integer(double v, char *out) {
  size_t k = 0;
  if (v < 0) out[k++] = '-';
  k += put_digits((uint64_t)std::fabs(v), out + k);
  out[k] = 0;
  return k;
}

/* The two digits of u < 100 before q; q moved to them. */
char *put_pair(char *q, uint64_t u) {
  static const char pairs[201] =
      "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
      "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
      "8081828384858687888990919293949596979899";
  q -= 2;
  std::memcpy(q, pairs + 2 * u, 2);
  return q;
}

/* v with at most 4 decimals, or 0.  |v| * 10^4 < 2^51 keeps the rounding
** error of v * 10^d below a half, so rounding finds the one integer r with
** r / 10^d == v when there is one (and r is exact); the first d that has
** one gives the fewest digits, which is what the shortest digits are.  The
** decimal exponent is then between -4 and 14: plain decimals in %g's
** layout. */
size_t few_decimals(double v, char *out) {
  static const double pow10[] = {1, 10, 100, 1000, 10000};
  if (v == 0 || !(std::fabs(v) * 10000 < 2251799813685248.0)) return 0; /* -0: "-0" */
  for (int dec = 1; dec <= 4; dec++) {
    double x = v * pow10[dec]; /* |x| < 2^51: x +- 0.5 is exact, and so is r */
    int64_t r = (int64_t)(x < 0 ? x - 0.5 : x + 0.5);
    if ((double)r / pow10[dec] != v) continue;
    /* the digits from the last, the point after dec of them (0.0ddd when
    ** fewer), in a word-sized copy: at most 18 bytes (2^51 / 10^4 has 12
    ** digits) */
    char t[64], *e = t + 40, *q = e;
    std::memset(e, 0, 24); /* copied past the text, then overwritten */
    uint64_t u = r < 0 ? (uint64_t)0 - (uint64_t)r : (uint64_t)r;
    int i = dec;
    for (; i >= 2; i -= 2, u /= 100) q = put_pair(q, u % 100);
    if (i) {
      *--q = (char)('0' + u % 10);
      u /= 10;
    }
    *--q = '.';
    for (; u >= 100; u /= 100) q = put_pair(q, u % 100);
    if (u >= 10) q = put_pair(q, u);
    else *--q = (char)('0' + u);
    if (v < 0) *--q = '-';
    size_t k = (size_t)(e - q);
    std::memcpy(out, q, 24);
    out[k] = 0;
    return k;
  }
  return 0;
}

/* The shortest digits from std::to_chars in scientific form, laid out as
** %g with precision max(floor, digits) lays them out. */
size_t ryu(double v, int is_float, char *out) {
  char s[KL_SHORTEST_MAX + 8];
  std::to_chars_result r = is_float
      ? std::to_chars(s, s + sizeof s - 1, (float)v, std::chars_format::scientific)
      : std::to_chars(s, s + sizeof s - 1, v, std::chars_format::scientific);
  *r.ptr = 0;
  const char *p = s, *e = std::strchr(s, 'e');
  char digits[24];
  size_t nd = 0, k = 0;
  if (*p == '-') out[k++] = *p++;
  for (; p < e; p++) {
    if (*p != '.') digits[nd++] = *p;
  }
  int x = std::atoi(e + 1);
  int prec = std::max(is_float ? 6 : 15, (int)nd);
  if (x < -4 || x >= prec) { /* to_chars's scientific form is %g's */
    size_t n = (size_t)(r.ptr - s);
    std::memcpy(out, s, n + 1);
    return n;
  }
  if (x < 0) {
    out[k++] = '0';
    out[k++] = '.';
    for (int i = -1; i > x; i--) out[k++] = '0';
    std::memcpy(out + k, digits, nd);
    k += nd;
  } else {
    size_t whole = (size_t)x + 1;
    for (size_t i = 0; i < whole; i++) out[k++] = i < nd ? digits[i] : '0';
    if (nd > whole) {
      out[k++] = '.';
      std::memcpy(out + k, digits + whole, nd - whole);
      k += nd - whole;
    }
  }
  out[k] = 0;
  return k;
}

} // namespace

extern "C" size_t kl_shortest(double v, int is_float, char *out) {
  if (std::fabs(v) < 9007199254740992.0 && v == std::trunc(v) && !(v == 0 && std::signbit(v))) {
    return put_integer(v, out); /* exact, and what %g would print */
  }
  size_t k = is_float ? 0 : few_decimals(v, out);
  return k ? k : ryu(v, is_float, out);
}
