/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_place_svg: layout of the domain tree, then emission of the SVG text.
 */
#include "gb_place_svg.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gc_quantity.h"

/* Geometry of the drawing, in SVG user units. */
static const double COLW = 120, ROWH = 90, BOXW = 112, BOXH = 62, MARGIN = 20;

/* Where every domain and node goes.  Columns are counted from the left in
 * units of COLW; rows are domain depths, with the nodes one row below the
 * deepest domain. */
struct svg_layout {
  size_t nd;                /* domains */
  uint32_t *cstart, *child; /* domain children (CSR), name order */
  uint32_t *nstart, *nodes; /* nodes attached directly to a domain (CSR) */
  double *x;                /* domain centre column */
  double *nx;               /* node column, by slot */
  int *depth;
  int64_t *placed; /* pods the result puts on each node, by slot */
  int max_depth;
  double cols;
  int draw_nodes;
};

/* ------------------------------------------------------------------ */
/* Layout                                                               */

static void layout_free(struct svg_layout *L) {
  free(L->cstart);
  free(L->child);
  free(L->nstart);
  free(L->nodes);
  free(L->x);
  free(L->nx);
  free(L->depth);
  free(L->placed);
}

static int layout_alloc(struct svg_layout *L, size_t nd, size_t n_alive, size_t slots) {
  L->nd = nd;
  L->cstart = calloc(nd + 2, sizeof(uint32_t));
  L->child = calloc(nd + 1, sizeof(uint32_t));
  L->nstart = calloc(nd + 2, sizeof(uint32_t));
  L->nodes = calloc(n_alive + 1, sizeof(uint32_t));
  L->x = calloc(nd, sizeof(double));
  L->nx = calloc(slots + 1, sizeof(double));
  L->depth = calloc(nd, sizeof(int));
  L->placed = calloc(slots + 1, sizeof(int64_t));
  if (!L->cstart || !L->child || !L->nstart || !L->nodes || !L->x || !L->nx || !L->depth ||
      !L->placed)
    return GC_ENOMEM;
  return GC_OK;
}

/* Gives domain d and its subtree their columns: children left to right,
 * then d's own nodes, and d centred over them.  Depth is bounded by the
 * snapshot's tier count, so the recursion is shallow. */
static void layout_place(struct svg_layout *L, uint32_t d, int depth) {
  double start = L->cols;
  L->depth[d] = depth;
  if (depth > L->max_depth)
    L->max_depth = depth;
  for (uint32_t j = L->cstart[d]; j < L->cstart[d + 1]; j++)
    layout_place(L, L->child[j], depth + 1);
  if (L->draw_nodes)
    for (uint32_t j = L->nstart[d]; j < L->nstart[d + 1]; j++)
      L->nx[L->nodes[j]] = L->cols++;
  if (L->cols == start)
    L->cols += 1;
  L->x[d] = (start + L->cols - 1) / 2.0;
}

static int cmp_str_idx(const void *a, const void *b) {
  const char *const *x = a, *const *y = b;
  return strcmp(*x, *y);
}

/* Fills L's child lists with each domain's children in name order.
 * byname and fill are scratch of nd pairs and nd + 1 entries (zeroed). */
static void layout_children(const struct tp_snapshot *s, struct svg_layout *L,
                            const char **byname, uint32_t *fill) {
  size_t nd = L->nd;
  /* Sort (name, index) pairs packed as two slots. */
  for (size_t d = 0; d < nd; d++) {
    byname[2 * d] = tp_snapshot_domain_name(s, (uint32_t)d);
    byname[2 * d + 1] = (const char *)(uintptr_t)d;
  }
  qsort(byname, nd, 2 * sizeof(*byname), cmp_str_idx);
  for (size_t d = 1; d < nd; d++)
    L->cstart[tp_snapshot_domain_parent(s, (uint32_t)d) + 1]++;
  for (size_t d = 0; d < nd; d++)
    L->cstart[d + 1] += L->cstart[d];
  for (size_t i = 0; i < nd; i++) {
    uint32_t d = (uint32_t)(uintptr_t)byname[2 * i + 1];
    int64_t p = d ? tp_snapshot_domain_parent(s, d) : -1;
    if (p >= 0)
      L->child[L->cstart[p] + fill[p]++] = d;
  }
}

/* Fills L's node lists with the nodes of each leaf domain in name order.
 * fill is scratch of nd + 1 entries. */
static void layout_nodes(const struct tp_snapshot *s, struct svg_layout *L, uint32_t *fill) {
  size_t nd = L->nd, n = tp_snapshot_node_count(s);
  for (size_t i = 0; i < n; i++)
    L->nstart[tp_snapshot_node_leaf(s, tp_snapshot_node_sorted(s, i)) + 1]++;
  for (size_t d = 0; d < nd; d++)
    L->nstart[d + 1] += L->nstart[d];
  memset(fill, 0, (nd + 1) * sizeof(uint32_t));
  for (size_t i = 0; i < n; i++) {
    uint32_t slot = tp_snapshot_node_sorted(s, i);
    uint32_t leaf = tp_snapshot_node_leaf(s, slot);
    L->nodes[L->nstart[leaf] + fill[leaf]++] = slot;
  }
}

/* Computes the whole layout of snapshot s for result res into L (which the
 * caller frees with layout_free, also on failure). */
static int layout_build(const struct tp_snapshot *s, const struct tp_result *res,
                        struct svg_layout *L) {
  size_t nd = tp_snapshot_domain_count(s), n_alive = tp_snapshot_node_count(s);
  int rc = layout_alloc(L, nd, n_alive, tp_snapshot_slot_count(s));
  if (rc)
    return rc;
  const char **byname = malloc(nd * 2 * sizeof(*byname));
  uint32_t *fill = calloc(nd + 1, sizeof(uint32_t));
  if (!byname || !fill) {
    rc = GC_ENOMEM;
    goto out;
  }
  L->draw_nodes = n_alive <= GB_PLACE_SVG_NODES_DRAWN;
  layout_children(s, L, byname, fill);
  layout_nodes(s, L, fill);
  for (size_t i = 0; i < res->n_assign; i++)
    L->placed[res->assign[i].slot] += res->assign[i].pods;
  layout_place(L, 0, 0);
out:
  free(byname);
  free(fill);
  return rc;
}

/* ------------------------------------------------------------------ */
/* Emission                                                             */

/* What every emitter reads. */
struct svg_ctx {
  const struct tp_snapshot *s;
  const struct tp_evaluator *ev;
  const struct tp_gang *g;
  const struct tp_result *res;
  const struct svg_layout *L;
  struct gb_buf *b;
  double top;    /* y of the first row of domains */
  int free_res;  /* the resource whose free amount each domain shows, or -1 */
};

/* Appends s as XML character data: markup characters escaped, control
 * characters (which XML 1.0 forbids) dropped. */
static void xml_text(struct gb_buf *b, const char *s) {
  for (; *s; s++) {
    switch (*s) {
    case '<': gb_buf_addstr(b, "&lt;"); break;
    case '>': gb_buf_addstr(b, "&gt;"); break;
    case '&': gb_buf_addstr(b, "&amp;"); break;
    case '"': gb_buf_addstr(b, "&quot;"); break;
    default:
      if ((unsigned char)*s >= 0x20)
        gb_buf_add(b, s, 1);
    }
  }
}

static void emit_header(const struct svg_ctx *c, double width, double height) {
  const struct tp_result *res = c->res;
  struct gb_buf *b = c->b;
  gb_buf_printf(b,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"10\">\n"
                "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n",
                width, height, width, height);
  gb_buf_printf(b, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"13\" font-weight=\"bold\">", MARGIN,
                MARGIN + 4);
  xml_text(b, c->g->name ? c->g->name : "gang");
  if (res->feasible) {
    gb_buf_printf(b, ": %lld pods on %zu node(s) in ", (long long)res->pods, res->nodes_used);
    xml_text(b, res->whole_cluster ? "the whole cluster" : res->domain_name);
  } else {
    gb_buf_addstr(b, ": infeasible");
  }
  gb_buf_printf(b, " (mode %s", tp_mode_name(res->mode));
  if (res->highest_tier >= 0)
    gb_buf_printf(b, ", tier &lt;= %lld", (long long)res->highest_tier);
  gb_buf_printf(b, ", %s)", tp_profile_name(res->profile));
  gb_buf_addstr(b, "</text>\n");
}

/* The parent-child edges, drawn first so that the boxes cover their ends. */
static void emit_edges(const struct svg_ctx *c) {
  const struct svg_layout *L = c->L;
  for (size_t d = 1; d < L->nd; d++) {
    uint32_t p = (uint32_t)tp_snapshot_domain_parent(c->s, (uint32_t)d);
    gb_buf_printf(c->b,
                  "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999\"/>\n",
                  MARGIN + L->x[p] * COLW + COLW / 2, c->top + L->depth[p] * ROWH + BOXH,
                  MARGIN + L->x[d] * COLW + COLW / 2, c->top + L->depth[d] * ROWH);
  }
}

static void emit_domain(const struct svg_ctx *c, uint32_t d) {
  const struct tp_snapshot *s = c->s;
  struct gb_buf *b = c->b;
  int chosen = c->res->feasible && (int64_t)d == c->res->domain;
  double x = MARGIN + c->L->x[d] * COLW + (COLW - BOXW) / 2, y = c->top + c->L->depth[d] * ROWH;
  gb_buf_printf(b,
                "<g><rect x=\"%.1f\" y=\"%.1f\" width=\"%.0f\" height=\"%.0f\" rx=\"6\" "
                "fill=\"%s\" stroke=\"%s\" stroke-width=\"%s\"/>\n",
                x, y, BOXW, BOXH, chosen ? "#ffe0b2" : "#eef3fb", chosen ? "#e65100" : "#5b7db1",
                chosen ? "3" : "1");
  gb_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" font-weight=\"bold\">", x + 5, y + 13);
  xml_text(b, d ? tp_snapshot_domain_name(s, d) : "cluster");
  gb_buf_printf(b, "</text>\n<text x=\"%.1f\" y=\"%.1f\">tier %lld%s", x + 5, y + 26,
                (long long)tp_snapshot_domain_tier(s, d), d ? "" : " (root)");
  if (tp_snapshot_domain_tier_name(s, d)) {
    gb_buf_addstr(b, " · ");
    xml_text(b, tp_snapshot_domain_tier_name(s, d));
  }
  gb_buf_printf(b, "</text>\n<text x=\"%.1f\" y=\"%.1f\">fits %lld pods · %u nodes</text>\n",
                x + 5, y + 39, (long long)tp_evaluator_domain_pods(c->ev, d),
                tp_snapshot_domain_nodes(s, d));
  if (c->free_res >= 0) {
    char q[GC_QUANTITY_BUFSZ];
    tp_snapshot_units_format(tp_snapshot_resource_name(s, c->free_res),
                             tp_snapshot_domain_free(s, c->free_res, d), q, sizeof(q));
    gb_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\">free ", x + 5, y + 52);
    xml_text(b, tp_snapshot_resource_name(s, c->free_res));
    gb_buf_printf(b, ": %s</text>\n", q);
  }
  gb_buf_addstr(b, "</g>\n");
}

/* One node box under its leaf domain: green when the result puts pods on
 * it, grey and dashed when it is excluded. */
static void emit_node(const struct svg_ctx *c, uint32_t slot) {
  const struct svg_layout *L = c->L;
  struct gb_buf *b = c->b;
  uint32_t d = tp_snapshot_node_leaf(c->s, slot);
  double x = MARGIN + L->nx[slot] * COLW + (COLW - BOXW) / 2;
  double y = c->top + (L->max_depth + 1) * ROWH;
  int excl = tp_snapshot_node_state(c->s, slot) == TP_NODE_EXCLUDED;
  int used = L->placed[slot] > 0;
  gb_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ccc\"/>\n",
                MARGIN + L->x[d] * COLW + COLW / 2, c->top + L->depth[d] * ROWH + BOXH,
                x + BOXW / 2, y);
  gb_buf_printf(b,
                "<g><rect x=\"%.1f\" y=\"%.1f\" width=\"%.0f\" height=\"40\" rx=\"3\" fill=\"%s\" "
                "stroke=\"%s\"%s/>\n<text x=\"%.1f\" y=\"%.1f\">",
                x, y, BOXW, excl ? "#eeeeee" : used ? "#c8e6c9" : "#ffffff",
                used ? "#2e7d32" : "#888", excl ? " stroke-dasharray=\"4 2\"" : "", x + 4, y + 14);
  xml_text(b, tp_snapshot_node_name(c->s, slot));
  gb_buf_printf(b, "</text>\n<text x=\"%.1f\" y=\"%.1f\">", x + 4, y + 30);
  if (excl)
    gb_buf_addstr(b, "excluded");
  else if (used)
    gb_buf_printf(b, "+%lld pods (fits %lld)", (long long)L->placed[slot],
                  (long long)tp_evaluator_node_pods(c->ev, 0, slot));
  else
    gb_buf_printf(b, "fits %lld", (long long)tp_evaluator_node_pods(c->ev, 0, slot));
  gb_buf_addstr(b, "</text></g>\n");
}

/* The resource whose free amount the domain boxes show: the last request
 * of the first pod set that requests anything, else pods; -1 when the
 * snapshot does not know it. */
static int free_resource(const struct tp_snapshot *s, const struct tp_gang *g) {
  const char *rn = NULL;
  for (size_t k = 0; k < g->n_sets && !rn; k++)
    if (g->sets[k].n_req)
      rn = g->sets[k].res[g->sets[k].n_req - 1];
  return tp_snapshot_resource(s, rn ? rn : "pods");
}

static int emit_all(struct svg_ctx *c) {
  const struct svg_layout *L = c->L;
  int rows = L->max_depth + 1 + (L->draw_nodes ? 1 : 0);
  double width = L->cols * COLW + 2 * MARGIN, height = rows * ROWH + 2 * MARGIN + 40;
  c->top = MARGIN + 30;
  c->free_res = free_resource(c->s, c->g);
  emit_header(c, width, height);
  emit_edges(c);
  for (size_t d = 0; d < L->nd; d++)
    emit_domain(c, (uint32_t)d);
  if (L->draw_nodes)
    for (size_t i = 0; i < tp_snapshot_node_count(c->s); i++)
      emit_node(c, tp_snapshot_node_sorted(c->s, i));
  gb_buf_printf(c->b,
                "<text x=\"%.0f\" y=\"%.0f\" fill=\"#555\">orange: chosen domain; green: nodes "
                "receiving pods (+N); grey dashed: excluded (cordoned or tainted); \"fits\": pods "
                "of the gang's shape that fit now</text>\n",
                MARGIN, height - 12);
  return gb_buf_addstr(c->b, "</svg>\n");
}

int gb_place_svg(const struct tp_snapshot *s, const struct tp_evaluator *ev,
                 const struct tp_gang *g, const struct tp_result *res, const char *where,
                 struct gb_buf *out, struct gc_diags *diags) {
  size_t nd = tp_snapshot_domain_count(s), n_alive = tp_snapshot_node_count(s);
  if (nd > GB_PLACE_SVG_MAX_DOMAINS || n_alive > GB_PLACE_SVG_MAX_NODES) {
    gc_diags_addf(diags, "%s: the cluster is too large to draw (%zu domains, %zu nodes; "
                  "at most %d and %d)",
                  where, nd, n_alive, GB_PLACE_SVG_MAX_DOMAINS, GB_PLACE_SVG_MAX_NODES);
    return GC_ELIMIT;
  }
  struct svg_layout L = {0};
  int rc = layout_build(s, res, &L);
  if (!rc) {
    struct svg_ctx c = {.s = s, .ev = ev, .g = g, .res = res, .L = &L, .b = out};
    rc = emit_all(&c);
  }
  layout_free(&L);
  return rc;
}
