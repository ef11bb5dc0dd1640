/*
** terms.c - see terms.h.
*/
#include "terms.h"

#include <string.h>

SQLITE_EXTENSION_INIT3

int kl_terms_find(const kl_term *t, int n, int allow, int rowid_col, int col, int op) {
  if (col == -1) col = rowid_col;
  if (op == SQLITE_INDEX_CONSTRAINT_LIMIT || op == SQLITE_INDEX_CONSTRAINT_OFFSET) col = KL_TERM_ANY;
  else if (col < 0) return -1;
  for (int k = 0; k < n; k++) {
    if (t[k].col == col && t[k].op == op && (t[k].flags & (KL_T_NEED_DIR | KL_T_IF) & ~allow) == 0) return k;
  }
  return -1;
}

/* Is a term of group g (KL_T_ONE) chosen already? */
static int group_taken(const kl_term *t, int n, const kl_terms_plan *p, int g) {
  for (int k = 0; k < n; k++) {
    if (p->used[k] >= 0 && t[k].group == g) return 1;
  }
  return 0;
}

void kl_terms_choose(sqlite3_index_info *info, const kl_term *t, int n, int allow, int rowid_col,
                     kl_terms_plan *p) {
  memset(p->in, 0, sizeof p->in);
  p->n_other = 0;
  for (int k = 0; k < KL_TERMS_MAX; k++) p->used[k] = -1;
  for (int i = 0; i < info->nConstraint; i++) {
    const struct sqlite3_index_constraint *c = &info->aConstraint[i];
    if (!c->usable) continue;
    int k = kl_terms_find(t, n, allow, rowid_col, c->iColumn, c->op);
    int rows = k >= 0 && (t[k].flags & KL_T_ROWS);
    if (k < 0 || (!rows && (p->used[k] >= 0 ||
                            ((t[k].flags & KL_T_ONE) && group_taken(t, n, p, t[k].group))))) {
      /* Not ours, or a second bound of the same kind: SQLite checks it. */
      if (!rows) p->n_other++;
      continue;
    }
    if (p->used[k] < 0) p->used[k] = i;
  }
  for (int k = 0; k < n; k++) {
    if (p->used[k] >= 0 && (t[k].flags & KL_T_IN)) {
      p->in[k] = (unsigned char)(sqlite3_vtab_in(info, p->used[k], -1) != 0);
    }
  }
}

int kl_terms_used(const kl_term *t, int n, const kl_terms_plan *p, kl_term_act act, int arg) {
  for (int k = 0; k < n; k++) {
    if (p->used[k] >= 0 && t[k].act == act && (arg < 0 || t[k].arg == arg)) return k;
  }
  return -1;
}

void kl_terms_drop(const kl_term *t, int n, kl_terms_plan *p, int flag) {
  for (int k = 0; k < n; k++) {
    if (!flag || (t[k].flags & flag)) p->used[k] = -1, p->in[k] = 0;
  }
}

/* Has a term of t[k]'s group come before it, chosen? */
static int group_seen(const kl_term *t, const kl_terms_plan *p, int k) {
  if (t[k].group == 0) return 0;
  for (int j = 0; j < k; j++) {
    if (p->used[j] >= 0 && t[j].group == t[k].group) return 1;
  }
  return 0;
}

double kl_terms_narrow(const kl_term *t, int n, const kl_terms_plan *p, double x) {
  for (int k = 0; k < n; k++) {
    if (p->used[k] < 0 || group_seen(t, p, k)) continue;
    double f = p->in[k] ? t[k].narrow_in : t[k].narrow;
    if (f > 0) x /= f;
  }
  return x;
}

double kl_terms_select(const kl_term *t, int n, const kl_terms_plan *p, double rows,
                       kl_term_act act, int want) {
  for (int k = 0; k < n; k++) {
    if (p->used[k] < 0 || (t[k].act == act) != want || group_seen(t, p, k)) continue;
    if (t[k].sel > 0) rows *= t[k].sel;
    rows += t[k].add;
  }
  return rows;
}

/* The word of term k: its label, or "<column> IN (...)" for an IN list. */
static void add_word(sqlite3_str *s, const kl_term *tk, int in) {
  if (sqlite3_str_length(s)) sqlite3_str_appendchar(s, 1, ' ');
  if (in) {
    size_t len = strlen(tk->label);
    sqlite3_str_appendf(s, "%.*s IN (...)", (int)(len > 2 ? len - 2 : len), tk->label);
  } else {
    sqlite3_str_appendall(s, tk->label);
  }
}

int kl_terms_emit(sqlite3_index_info *info, const kl_term *t, int n, const kl_terms_plan *p,
                  const char *none, const char *order) {
  sqlite3_str *s = sqlite3_str_new(NULL);
  int argv = 0;
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1 && order && *order) {
      if (sqlite3_str_length(s)) sqlite3_str_appendchar(s, 1, ' ');
      sqlite3_str_appendall(s, order);
    }
    for (int k = 0; k < n; k++) {
      if (p->used[k] < 0 || ((t[k].flags & KL_T_ROWS) != 0) != pass) continue;
      info->aConstraintUsage[p->used[k]].argvIndex = ++argv;
      info->aConstraintUsage[p->used[k]].omit = 1;
      if (p->in[k]) sqlite3_vtab_in(info, p->used[k], 1);
      add_word(s, &t[k], p->in[k]);
    }
  }
  if (sqlite3_str_length(s) == 0 && none) sqlite3_str_appendall(s, none);
  int rc = sqlite3_str_errcode(s);
  char *str = sqlite3_str_finish(s);
  if (rc != SQLITE_OK || !str) {
    sqlite3_free(str);
    return rc != SQLITE_OK ? rc : (none && *none ? SQLITE_NOMEM : SQLITE_OK);
  }
  info->idxStr = str;
  info->needToFreeIdxStr = 1;
  return SQLITE_OK;
}

/* Does word w (len bytes) stand at s, followed by a space or the end? */
static int at(const char *s, const char *w, size_t len) {
  return strncmp(s, w, len) == 0 && (s[len] == ' ' || s[len] == 0);
}

/* The longest word at s: a term (*in when as an IN list) as *term, or a
** phrase (*term -1).  Its length, 0 when none is there. */
static size_t word_at(const kl_term *t, int n, const char *const *phrases, const char *s,
                      int *term, int *in) {
  size_t best = 0;
  for (int k = 0; k < n; k++) {
    size_t len = strlen(t[k].label);
    if (len > best && at(s, t[k].label, len)) best = len, *term = k, *in = 0;
    static const char in_list[] = " IN (...)";
    size_t m = len - 2 + sizeof in_list - 1; /* "<column> IN (...)" */
    if ((t[k].flags & KL_T_IN) && len > 2 && m > best && strncmp(s, t[k].label, len - 2) == 0 &&
        at(s + len - 2, in_list, sizeof in_list - 1)) {
      best = m, *term = k, *in = 1;
    }
  }
  for (int i = 0; phrases && phrases[i]; i++) {
    size_t len = strlen(phrases[i]);
    if (len > best && at(s, phrases[i], len)) best = len, *term = -1;
  }
  return best;
}

int kl_terms_decode(const kl_term *t, int n, const char *const *phrases, const char *idx_str,
                    int argc, kl_term_use *use, int *nuse, sqlite3_vtab *vt, const char *module) {
  *nuse = 0;
  const char *s = idx_str ? idx_str : "";
  while (*s) {
    int term = -1, in = 0;
    size_t len = word_at(t, n, phrases, s, &term, &in);
    if (len == 0 || (term >= 0 && *nuse == KL_TERMS_MAX)) goto bad;
    if (term >= 0) use[*nuse].term = term, use[(*nuse)++].in = in;
    s += len;
    if (*s == ' ' && s[1]) s++;
    else if (*s) goto bad;
  }
  if (*nuse == argc) return SQLITE_OK;
bad:
  sqlite3_free(vt->zErrMsg);
  vt->zErrMsg = sqlite3_mprintf("%s: the plan \"%s\" is not valid (%d values)", module, idx_str,
                                argc);
  return vt->zErrMsg ? SQLITE_ERROR : SQLITE_NOMEM;
}

int kl_terms_decode_memo(kl_terms_memo *m, const kl_term *t, int n, const char *const *phrases,
                         const char *idx_str, int argc, kl_term_use *use, int *nuse,
                         sqlite3_vtab *vt, const char *module) {
  const char *s = idx_str ? idx_str : "";
  for (int i = 0; i < KL_TERMS_MEMO; i++) {
    if (m->slot[i].str && m->slot[i].argc == argc && strcmp(m->slot[i].str, s) == 0) {
      *nuse = m->slot[i].nuse;
      memcpy(use, m->slot[i].use, sizeof(kl_term_use) * (size_t)*nuse);
      return SQLITE_OK;
    }
  }
  int rc = kl_terms_decode(t, n, phrases, idx_str, argc, use, nuse, vt, module);
  if (rc != SQLITE_OK) return rc;
  char *copy = sqlite3_mprintf("%s", s);
  if (!copy) return SQLITE_NOMEM;
  int k = m->next;
  m->next = (k + 1) % KL_TERMS_MEMO;
  sqlite3_free(m->slot[k].str);
  m->slot[k].str = copy;
  m->slot[k].argc = argc;
  m->slot[k].nuse = *nuse;
  memcpy(m->slot[k].use, use, sizeof(kl_term_use) * (size_t)*nuse);
  return SQLITE_OK;
}

void kl_terms_memo_free(kl_terms_memo *m) {
  for (int i = 0; i < KL_TERMS_MEMO; i++) sqlite3_free(m->slot[i].str);
  memset(m, 0, sizeof *m);
}
