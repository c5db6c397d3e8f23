/* layout.c: bit-map layouts of tiles over threads and registers (layout.h). */
#include "layout.h"

#include <string.h>

int lay_log2(int64_t v) {
    int n = 0;
    while (v > 1) { v >>= 1; n++; }
    return n;
}

int lay_pos(int rank, const int *shape, int d, int j) {
    int p = j;
    for (int e = d + 1; e < rank; e++) p += lay_log2(shape[e]);
    return p;
}

void lay_dim_of(int rank, const int *shape, int b, int *d, int *j) {
    for (int e = rank - 1; e >= 0; e--) {
        int nb = lay_log2(shape[e]);
        if (b < nb) { *d = e; *j = b; return; }
        b -= nb;
    }
    *d = -1; *j = -1;
}

static void lay_init(Layout *l, int rank, const int *shape) {
    memset(l, 0, sizeof *l);
    l->rank = rank;
    for (int d = 0; d < rank; d++) l->shape[d] = shape[d];
    for (int d = 0; d < rank; d++) l->nbits += lay_log2(shape[d]);
}

static void set_bit(Layout *l, int pos, int space, int bit) {
    l->space[pos] = (unsigned char)space;
    l->bit[pos] = (unsigned char)bit;
}

Layout lay_blocked(const Type *t, int fastest, int warpbits, int max_vec) {
    Layout l;
    lay_init(&l, t->rank, t->shape);
    l.kind = LAYK_BLOCKED;
    if (t->rank == 0) return l;
    if (fastest < 0 || fastest >= t->rank) fastest = t->rank - 1;
    /* linear bit positions, fastest dimension first */
    int order[LAY_MAX_BITS], n = 0;
    for (int j = 0; j < lay_log2(t->shape[fastest]); j++)
        order[n++] = lay_pos(t->rank, t->shape, fastest, j);
    for (int d = t->rank - 1; d >= 0; d--) {
        if (d == fastest) continue;
        for (int j = 0; j < lay_log2(t->shape[d]); j++) order[n++] = lay_pos(t->rank, t->shape, d, j);
    }
    int vbits = lay_log2(max_vec);
    if (vbits > lay_log2(t->shape[fastest])) vbits = lay_log2(t->shape[fastest]);
    int spare = l.nbits - 5 - warpbits;   /* bits left once every thread holds one element */
    if (spare < 0) spare = 0;
    if (vbits > spare) vbits = spare;
    int i = 0, reg = 0;
    for (; i < vbits; i++) set_bit(&l, order[i], LAY_REG, reg++);
    for (int k = 0; k < 5 && i < n; k++, i++) set_bit(&l, order[i], LAY_LANE, k);
    for (int k = 0; k < warpbits && i < n; k++, i++) set_bit(&l, order[i], LAY_WARP, k);
    for (; i < n; i++) set_bit(&l, order[i], LAY_REG, reg++);
    l.nregbits = reg;
    return l;
}

Layout lay_lanes_down(const Type *t, int warpbits, int vec) {
    Layout l;
    lay_init(&l, t->rank, t->shape);
    l.kind = LAYK_BLOCKED;
    int kb = lay_log2(t->shape[0]), nbits = lay_log2(t->shape[1]), vb = lay_log2(vec), reg = 0, n = 0;
    for (; n < vb; n++) set_bit(&l, lay_pos(2, t->shape, 1, n), LAY_REG, reg++);
    for (int k = 0; k < 5; k++) set_bit(&l, lay_pos(2, t->shape, 0, k), LAY_LANE, k);
    for (int w = 0; w < warpbits; w++, n++) set_bit(&l, lay_pos(2, t->shape, 1, n), LAY_WARP, w);
    for (; n < nbits; n++) set_bit(&l, lay_pos(2, t->shape, 1, n), LAY_REG, reg++);
    for (int k = 5; k < kb; k++) set_bit(&l, lay_pos(2, t->shape, 0, k), LAY_REG, reg++);
    l.nregbits = reg;
    return l;
}

Layout lay_mma(const Type *t, int wmbits, int wnbits) {
    Layout l;
    lay_init(&l, t->rank, t->shape);
    l.kind = LAYK_MMA;
    int r = t->rank, M = t->shape[r - 2], N = t->shape[r - 1];
    int nib = lay_log2(N / 8) - wnbits, mib = lay_log2(M / 16) - wmbits;
    int reg = 2;
    set_bit(&l, lay_pos(r, t->shape, r - 1, 0), LAY_REG, 0);
    set_bit(&l, lay_pos(r, t->shape, r - 1, 1), LAY_LANE, 0);
    set_bit(&l, lay_pos(r, t->shape, r - 1, 2), LAY_LANE, 1);
    for (int j = 0; j < nib; j++) set_bit(&l, lay_pos(r, t->shape, r - 1, 3 + j), LAY_REG, reg++);
    for (int j = 0; j < wnbits; j++) set_bit(&l, lay_pos(r, t->shape, r - 1, 3 + nib + j), LAY_WARP, j);
    set_bit(&l, lay_pos(r, t->shape, r - 2, 0), LAY_LANE, 2);
    set_bit(&l, lay_pos(r, t->shape, r - 2, 1), LAY_LANE, 3);
    set_bit(&l, lay_pos(r, t->shape, r - 2, 2), LAY_LANE, 4);
    set_bit(&l, lay_pos(r, t->shape, r - 2, 3), LAY_REG, 1);
    for (int j = 0; j < mib; j++) set_bit(&l, lay_pos(r, t->shape, r - 2, 4 + j), LAY_REG, reg++);
    for (int j = 0; j < wmbits; j++) set_bit(&l, lay_pos(r, t->shape, r - 2, 4 + mib + j), LAY_WARP, wnbits + j);
    for (int d = r - 3; d >= 0; d--)
        for (int j = 0; j < lay_log2(t->shape[d]); j++) set_bit(&l, lay_pos(r, t->shape, d, j), LAY_REG, reg++);
    l.nregbits = reg;
    return l;
}

Layout lay_wgmma(const Type *t, int wgmbits, int wgnbits) {
    Layout l;
    lay_init(&l, t->rank, t->shape);
    l.kind = LAYK_MMA;
    int M = t->shape[0], N = t->shape[1];
    int nib = lay_log2(N / 8) - wgnbits, mib = lay_log2(M / 64) - wgmbits;
    int reg = 2;
    set_bit(&l, lay_pos(2, t->shape, 1, 0), LAY_REG, 0);
    set_bit(&l, lay_pos(2, t->shape, 1, 1), LAY_LANE, 0);
    set_bit(&l, lay_pos(2, t->shape, 1, 2), LAY_LANE, 1);
    for (int j = 0; j < nib; j++) set_bit(&l, lay_pos(2, t->shape, 1, 3 + j), LAY_REG, reg++);
    for (int j = 0; j < wgnbits; j++) set_bit(&l, lay_pos(2, t->shape, 1, 3 + nib + j), LAY_WARP, 2 + j);
    for (int j = 0; j < 3; j++) set_bit(&l, lay_pos(2, t->shape, 0, j), LAY_LANE, 2 + j);
    set_bit(&l, lay_pos(2, t->shape, 0, 3), LAY_REG, 1);
    set_bit(&l, lay_pos(2, t->shape, 0, 4), LAY_WARP, 0);
    set_bit(&l, lay_pos(2, t->shape, 0, 5), LAY_WARP, 1);
    for (int j = 0; j < mib; j++) set_bit(&l, lay_pos(2, t->shape, 0, 6 + j), LAY_REG, reg++);
    for (int j = 0; j < wgmbits; j++) set_bit(&l, lay_pos(2, t->shape, 0, 6 + mib + j), LAY_WARP, 2 + wgnbits + j);
    l.nregbits = reg;
    return l;
}

Layout lay_mma_a(const Type *t, int wmbits, int wnbits, bool half, bool kperm) {
    Layout l;
    lay_init(&l, t->rank, t->shape);
    l.kind = LAYK_MMA;
    int r = t->rank, M = t->shape[r - 2], K = t->shape[r - 1];
    int kfix = half ? 4 : 3;                 /* K bits inside one k step */
    int ksb = lay_log2(K) - kfix, mib = lay_log2(M / 16) - wmbits;
    int kpos = r - 1, mpos = r - 2, reg = 0;
#define KBIT(j, sp, b) set_bit(&l, lay_pos(r, t->shape, kpos, j), sp, b)
    if (half && !kperm) {
        KBIT(0, LAY_REG, 0), KBIT(1, LAY_LANE, 0), KBIT(2, LAY_LANE, 1), KBIT(3, LAY_REG, 2);
        set_bit(&l, lay_pos(r, t->shape, mpos, 3), LAY_REG, 1);
    } else if (half) {
        KBIT(0, LAY_REG, 0), KBIT(1, LAY_REG, 1), KBIT(2, LAY_LANE, 0), KBIT(3, LAY_LANE, 1);
        set_bit(&l, lay_pos(r, t->shape, mpos, 3), LAY_REG, 2);
    } else if (!kperm) {
        KBIT(0, LAY_LANE, 0), KBIT(1, LAY_LANE, 1), KBIT(2, LAY_REG, 1);
        set_bit(&l, lay_pos(r, t->shape, mpos, 3), LAY_REG, 0);
    } else {
        KBIT(0, LAY_REG, 0), KBIT(1, LAY_LANE, 0), KBIT(2, LAY_LANE, 1);
        set_bit(&l, lay_pos(r, t->shape, mpos, 3), LAY_REG, 1);
    }
#undef KBIT
    reg = half ? 3 : 2;
    for (int j = 0; j < 3; j++) set_bit(&l, lay_pos(r, t->shape, mpos, j), LAY_LANE, 2 + j);
    for (int j = 0; j < ksb; j++) set_bit(&l, lay_pos(r, t->shape, kpos, kfix + j), LAY_REG, reg++);
    for (int j = 0; j < mib; j++) set_bit(&l, lay_pos(r, t->shape, mpos, 4 + j), LAY_REG, reg++);
    for (int j = 0; j < wmbits; j++) set_bit(&l, lay_pos(r, t->shape, mpos, 4 + mib + j), LAY_WARP, wnbits + j);
    for (int d = r - 3; d >= 0; d--)
        for (int j = 0; j < lay_log2(t->shape[d]); j++) set_bit(&l, lay_pos(r, t->shape, d, j), LAY_REG, reg++);
    l.nregbits = reg;
    return l;
}

Layout lay_reshape(const Layout *x, int rank, const int *shape) {
    Layout l = *x;
    l.rank = rank;
    for (int d = 0; d < rank; d++) l.shape[d] = shape[d];
    return l;
}

bool lay_equal(const Layout *a, const Layout *b) {
    if (a->rank != b->rank || a->nbits != b->nbits || a->nregbits != b->nregbits) return false;
    for (int d = 0; d < a->rank; d++)
        if (a->shape[d] != b->shape[d]) return false;
    for (int i = 0; i < a->nbits; i++)
        if (a->space[i] != b->space[i] || (a->space[i] != LAY_NONE && a->bit[i] != b->bit[i])) return false;
    return true;
}

bool lay_full(const Layout *l) { return lay_mapped_bits(l) == l->nbits; }

int lay_mapped_bits(const Layout *l) {
    int n = 0;
    for (int i = 0; i < l->nbits; i++) n += l->space[i] != LAY_NONE;
    return n;
}

bool lay_compatible(const Layout *x, const Layout *r) {
    if (x->nbits != r->nbits) return false;
    for (int i = 0; i < x->nbits; i++) {
        int xs = x->space[i], rs = r->space[i];
        if (xs == LAY_NONE) continue;
        if (xs != rs) return false;
        if (xs != LAY_REG && x->bit[i] != r->bit[i]) return false;
    }
    return true;
}

int64_t lay_reg_elem(const Layout *l, int reg) {
    int64_t e = 0;
    for (int i = 0; i < l->nbits; i++)
        if (l->space[i] == LAY_REG && ((reg >> l->bit[i]) & 1)) e |= (int64_t)1 << i;
    return e;
}

int lay_reg_map(const Layout *x, const Layout *r, int reg) {
    int64_t e = lay_reg_elem(r, reg);
    int xr = 0;
    for (int i = 0; i < x->nbits; i++)
        if (x->space[i] == LAY_REG && ((e >> i) & 1)) xr |= 1 << x->bit[i];
    return xr;
}

unsigned lay_lane_mask(const Layout *l) {
    unsigned m = 0;
    for (int i = 0; i < l->nbits; i++)
        if (l->space[i] == LAY_LANE) m |= 1u << l->bit[i];
    return m;
}

unsigned lay_warp_mask(const Layout *l) {
    unsigned m = 0;
    for (int i = 0; i < l->nbits; i++)
        if (l->space[i] == LAY_WARP) m |= 1u << l->bit[i];
    return m;
}

/* Register bits renumbered 0, 1, ... in their old order (bits no element
 * uses dropped), so the registers are as few as the mapped bits need. */
static void compact_regs(Layout *l) {
    int used[LAY_MAX_BITS], n = 0;
    for (int b = 0; b < LAY_MAX_BITS; b++) used[b] = -1;
    for (int i = 0; i < l->nbits; i++)
        if (l->space[i] == LAY_REG) used[l->bit[i]] = 1;
    for (int b = 0; b < LAY_MAX_BITS; b++)
        if (used[b] > 0) used[b] = n++;
    for (int i = 0; i < l->nbits; i++)
        if (l->space[i] == LAY_REG) l->bit[i] = (unsigned char)used[l->bit[i]];
    l->nregbits = n;
}

Layout lay_pick(const Layout *w, int rank, const int *shape, const int *pos_of) {
    Layout l;
    lay_init(&l, rank, shape);
    l.kind = LAYK_OTHER;
    for (int i = 0; i < l.nbits; i++) {
        int p = pos_of[i];
        if (p >= 0) set_bit(&l, i, w->space[p], w->bit[p]);
    }
    compact_regs(&l);
    return l;
}

Layout lay_complete(const Layout *x, int warpbits) {
    Layout l = *x;
    l.kind = LAYK_OTHER;
    unsigned lanes = lay_lane_mask(x), warps = lay_warp_mask(x);
    int free_thread = 0;
    for (int k = 0; k < 5; k++) free_thread += !((lanes >> k) & 1);
    for (int k = 0; k < warpbits; k++) free_thread += !((warps >> k) & 1);
    int none = l.nbits - lay_mapped_bits(x), to_regs = none > free_thread ? none - free_thread : 0;
    int reg = x->nregbits, seen = 0;
    for (int i = 0; i < l.nbits; i++) {
        if (l.space[i] != LAY_NONE) continue;
        if (seen++ < to_regs) { set_bit(&l, i, LAY_REG, reg++); continue; }
        int k = 0;
        while (k < 5 && ((lanes >> k) & 1)) k++;
        if (k < 5) { lanes |= 1u << k; set_bit(&l, i, LAY_LANE, k); continue; }
        k = 0;
        while ((warps >> k) & 1) k++;
        warps |= 1u << k;
        set_bit(&l, i, LAY_WARP, k);
    }
    l.nregbits = reg;
    return l;
}
