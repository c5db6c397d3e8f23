/* test_layout.c: unit tests of the bit-map layouts (compiler/layout.c) that
 * the CUDA emitter's conversions rely on: every element held by some thread,
 * as many registers as the tile needs, and the two helpers of
 * emit_cuda_remat.c (lay_complete, lay_pick). */
#include "harness.h"
#include "layout.h"

#include <string.h>

static Type tile(int rows, int cols) {
    Type t;
    memset(&t, 0, sizeof t);
    t.dtype = DT_F32;
    t.rank = 2;
    t.shape[0] = rows;
    t.shape[1] = cols;
    return t;
}

/* Counts, for every element, the (warp, lane, register) slots that hold it. */
static void coverage(const Layout *l, int warpbits, int *count, int numel) {
    memset(count, 0, sizeof(int) * (size_t)numel);
    for (int w = 0; w < (1 << warpbits); w++)
        for (int lane = 0; lane < 32; lane++)
            for (int r = 0; r < lay_nregs(l); r++) {
                int e = (int)lay_reg_elem(l, r);
                for (int i = 0; i < l->nbits; i++) {
                    if (l->space[i] == LAY_LANE && ((lane >> l->bit[i]) & 1)) e |= 1 << i;
                    if (l->space[i] == LAY_WARP && ((w >> l->bit[i]) & 1)) e |= 1 << i;
                }
                count[e]++;
            }
}

/* A full layout holds every element the same number of times. */
static bool every_element_held(const Layout *l, int warpbits) {
    int numel = 1 << l->nbits, count[1 << 14];
    if (numel > (1 << 14)) return false;
    coverage(l, warpbits, count, numel);
    for (int e = 1; e < numel; e++)
        if (count[e] != count[0] || count[e] == 0) return false;
    return true;
}

/* A column vector [64, 1] broadcast to [64, 64]: its layout maps the row bits
 * only; completed, the column bits go to registers (lowest first, so a row's
 * columns are consecutive registers) and the one free warp bit. */
static void t_complete_broadcast(void) {
    Type v = tile(64, 1), m = tile(64, 64);
    Layout col = lay_blocked(&v, -1, 2, 8);
    H_CHECK(lay_full(&col), "blocked is full");
    int src[LAY_MAX_BITS];
    for (int b = 0; b < LAY_MAX_BITS; b++) src[b] = -1;
    for (int j = 0; j < 6; j++) src[lay_pos(2, m.shape, 0, j)] = lay_pos(2, v.shape, 0, j);
    /* the broadcast: row bits from the vector, column bits NONE */
    Layout b;
    memset(&b, 0, sizeof b);
    b.rank = 2;
    b.shape[0] = b.shape[1] = 64;
    b.nbits = 12;
    b.nregbits = col.nregbits;
    for (int i = 0; i < 12; i++)
        if (src[i] >= 0) { b.space[i] = col.space[src[i]]; b.bit[i] = col.bit[src[i]]; }
    H_CHECK(!lay_full(&b), "a broadcast is not full");
    Layout c = lay_complete(&b, 2);
    H_CHECK(lay_full(&c), "completed layout is full");
    H_CHECK(lay_compatible(&b, &c), "the broadcast reads register by register in the completion");
    H_CHECK(every_element_held(&c, 2), "every element held, equally often");
    /* 4096 elements, 128 threads: 32 registers, no more */
    H_CHECK(lay_nregs(&c) == 32, "registers: %d, want 32", lay_nregs(&c));
    for (int j = 0; j < 5; j++) {
        int p = lay_pos(2, m.shape, 1, j);
        H_CHECK(c.space[p] == LAY_REG && c.bit[p] == j, "column bit %d -> register bit %d", j, j);
    }
    H_CHECK(c.space[lay_pos(2, m.shape, 1, 5)] == LAY_WARP, "the highest column bit takes the free warp bit");
}

/* Completing a layout that is already full changes nothing; completing one
 * with every bit NONE gives a full layout with the minimum of registers. */
static void t_complete_edges(void) {
    Type m = tile(32, 64);
    Layout full = lay_blocked(&m, -1, 2, 4);
    Layout same = lay_complete(&full, 2);
    H_CHECK(lay_compatible(&full, &same) && lay_compatible(&same, &full), "full stays as it was");
    H_CHECK(same.nregbits == full.nregbits, "no new registers");
    Layout none;
    memset(&none, 0, sizeof none);
    none.rank = 2;
    none.shape[0] = 32;
    none.shape[1] = 64;
    none.nbits = 11;
    Layout c = lay_complete(&none, 2);
    H_CHECK(lay_full(&c) && every_element_held(&c, 2), "from nothing: full");
    H_CHECK(lay_nregs(&c) == 16, "2048 elements over 128 threads: 16 registers, got %d", lay_nregs(&c));
}

/* lay_pick: the operand of a view laid out so the view lies as w.  A row
 * vector [1, 64] broadcast to [32, 64] in a blocked layout: the vector gets
 * w's column bits, and registers renumbered without the row bits' ones. */
static void t_pick_broadcast_source(void) {
    Type m = tile(32, 64);
    Layout w = lay_blocked(&m, -1, 2, 4);
    int shape[2] = {1, 64}, pos_of[LAY_MAX_BITS];
    for (int j = 0; j < 6; j++) pos_of[j] = lay_pos(2, m.shape, 1, j);
    Layout v = lay_pick(&w, 2, shape, pos_of);
    H_CHECK(v.nbits == 6 && lay_full(&v), "the vector's layout is full");
    int regbits = 0;
    for (int i = 0; i < 6; i++) {
        int p = pos_of[i];
        H_CHECK(v.space[i] == w.space[p], "bit %d keeps its space", i);
        if (v.space[i] != LAY_REG) H_CHECK(v.bit[i] == w.bit[p], "bit %d keeps its lane / warp bit", i);
        else regbits++;
    }
    H_CHECK(v.nregbits == regbits, "registers compact: %d bits, %d used", v.nregbits, regbits);
    for (int i = 0; i < 6; i++)
        if (v.space[i] == LAY_REG) H_CHECK(v.bit[i] < v.nregbits, "register bit %d in range", v.bit[i]);
}

int main(void) {
    H_RUN_TEST(t_complete_broadcast);
    H_RUN_TEST(t_complete_edges);
    H_RUN_TEST(t_pick_broadcast_source);
    return h_finish();
}
