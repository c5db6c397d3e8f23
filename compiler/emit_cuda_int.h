/* emit_cuda_int.h: what the two files of the CUDA emitter share (not a
 * public header).  emit_cuda.c: values, layouts, memory, element-wise and
 * shape ops, control flow and the kernel; emit_cuda_ops.c: reductions,
 * scans, mma, print; emit_cuda_async.c: mma operands copied by cp.async,
 * pipelined over loops; emit_cuda_remat.c: values made again in the layout
 * a use needs; emit_cuda_store.c: 16-bit tiles stored by TMA.
 * Prefix: ce_. */
#ifndef TILEC_EMIT_CUDA_INT_H
#define TILEC_EMIT_CUDA_INT_H

#include "emit_cuda.h"
#include "layout.h"
#include "scalar.h"

#include <stdarg.h>

/* ---- text buffers --------------------------------------------------------- */

typedef struct Buf {
    char *p;
    size_t len, cap;
} Buf;

/* ---- the emitter ------------------------------------------------------------ */

typedef struct Val {
    int lay;              /* index in E->lays, -1 before definition */
    const char *name;     /* C name of its registers */
} Val;

/* Hopper's shared memory per SM for blocks, and what each block reserves. */
#define SMEM_PER_SM 233472
#define SMEM_PER_BLOCK_RESERVED 1024
/* Blocks per SM that `smem` bytes of shared memory a block allow (0: no
 * shared memory, no limit from it). */
int ce_smem_blocks(int64_t smem);

#define ASYNC_MAX_PIPE 8
/* A swizzled wgmma operand buffer starts at a multiple of this: the
 * hardware's swizzle is a function of address bits 4-9 (emit_cuda_wgmma.c). */
#define SWIZZLE_ALIGN 1024

/* The cp.async pipeline of a loop (emit_cuda_async.c); n == 0: none. */
typedef struct Pipe {
    const IrOp *loop;
    const IrOp *loads[ASYNC_MAX_PIPE];
    int64_t off[ASYNC_MAX_PIPE];          /* each load's buffers, bytes into tile_async */
    bool readback[ASYNC_MAX_PIPE];        /* read into registers, not by an mma */
    int n, stages;
    /* iterations copied ahead: stages - 1, or stages - 2 when the loop's
     * wgmma products stay in flight into the next iteration (wgmma_inflight:
     * the buffer they read is refilled one iteration later) */
    int lookahead;
    bool wgmma_inflight;
    const char *stage;                    /* C name of this iteration's stage */
    /* loads copied by the tensor memory accelerator (tma[j]: load j is),
     * completing on one mbarrier per stage at bar_off, which expects
     * tma_bytes a stage (ce_async_loop_begin) */
    bool tma[ASYNC_MAX_PIPE];
    int64_t bar_off;
    int tma_bytes;
    /* every stage by TMA, none rounded, transposed or read by wgmma: each
     * warp releases its stage on a second mbarrier a stage (after the first
     * ones), which thread 0 waits on before refilling it, instead of a
     * block barrier each iteration (plan_release) */
    bool release;
    int tma_map[ASYNC_MAX_PIPE];          /* load j's tensor map (CudaKernelCode.tmaps) */
    /* wgmma's transposed copies (async_tr_wgmma) made before the barrier
     * that publishes the stage, not after it (all of them by TMA), and how
     * many copies of each alternate (tr_alloc) */
    bool tr_early;
    int tr_copies;
    /* ... or load j's transposed in its own stage buffer, each warp a
     * swizzle panel (emit_transpose_in_place) */
    bool tr_inplace[ASYNC_MAX_PIPE];
    /* ... its lanes' byte offsets in a panel, computed once before the loop
     * (tr_offsets): the C prefix of the 8 reads' (rd0..rd7) and 8 writes' (wr0..wr7) */
    const char *tr_offs[ASYNC_MAX_PIPE];
    /* A loop with no pipeline (one holding a loop) may prefetch: single async
     * loads of its body copied one iteration ahead into their own buffer
     * (ce_async_prefetch_begin) */
    const IrOp *pf_loop;
    const char *pf_i;                     /* the loop's C name */
    int pf_n;
    const IrOp *pf_loads[ASYNC_MAX_PIPE];
    int64_t pf_off[ASYNC_MAX_PIPE];
    bool *pf_chain;                       /* the ops that recompute their indices */
} Pipe;

/* A wgmma product committed and not yet waited for: its result's registers. */
enum { WGMMA_MAX_PENDING = 4 };
typedef struct {
    int id;            /* the mma's result value */
    const char *d;     /* its accumulator registers */
    int lay, nregs;
    bool staged;       /* its B lies in the scratch area (ce_wgmma_stages_b) */
} WgmmaPending;

typedef struct Emitter {
    const IrFunc *f;
    Diag *diag;
    CudaEmitOptions opt;
    Arena mem;            /* strings of this emission */
    Buf body;
    int indent;
    int warpbits, threads;
    Layout *lays;
    int nlays, caplays;
    bool *lay_used;       /* thread-part variables needed in the prologue */
    Val *vals;
    int *local_lay;       /* per local: layout index, -1 = not known yet */
    bool local_changed;
    bool analysis;        /* layouts only: the text is thrown away */
    int smem_bytes;
    /* no thread has touched the scratch area since the last barrier: a
     * write to it needs no barrier first */
    bool scratch_clean;
    /* per array parameter: the IrMemAccess kinds (bit 1 << kind) since the
     * last hazard barrier */
    unsigned char *mem_state;
    int ntmp;
    int last_line;
    int errors;
    /* cp.async operands (emit_cuda_async.c), per value id */
    int *nuses;               /* uses by ops */
    signed char *async_kind;  /* not async / an async load / a view of one (no code) */
    int *async_pitch;         /* async load: row pitch of its buffer, elements */
    const char **async_ptr;   /* async load: C expression of this iteration's buffer */
    int *async_stages;        /* async load: buffers when pipelined */
    bool *pipe_chain;         /* scalars recomputed for a later iteration */
    int64_t async_top, async_peak;   /* bytes of async buffers in use / at most */
    const IrOp **readback_loop;      /* pipelined load read back: its loop (buffer in async_ptr) */
    bool opt_remat;           /* make values again in a use's layout (emit_cuda_remat.c) */
    bool opt_packed_cvt;      /* TILEC_PACKED_CVT: f32 -> bf16 / f16 casts two registers per instruction */
    bool rounds_in_smem;      /* emit_round emitted: tf32 rounded in place in shared memory */
    bool opt_no_staged_kperm; /* TILEC_NO_STAGED_KPERM: a staged tf32 A's columns in order (emit_cuda_ops.c's kperm_col) */
    bool opt_no_xor8;         /* TILEC_NO_XOR8: a staged tf32 A in plain padded rows (emit_cuda_ops.c's xor8_col) */
    bool opt_tf32_mixed;      /* a swizzled tf32 buffer both wgmma and mma.sync products read, and a tf32 B the
                               * kernel computed staged K-major for wgmma (both off: TILEC_TF32_NO_MIXED) */
    bool opt_tf32_scalar;     /* TILEC_TF32_SCALAR_FRAGMENTS: tf32 fragments read a float at a time, not by ldmatrix */
    bool opt_tf32_no_transpose; /* TILEC_TF32_NO_TRANSPOSE: a tf32 B stored [K][N] read where it landed (for measurements) */
    bool opt_wgmma_reg_a_no_transpose; /* TILEC_WGMMA_REG_A_NO_TRANSPOSE: a product with A from registers keeps a tf32 B
                                        * stored [K][N] on mma.sync (no transposed copy for wgmma) */
    bool opt_wgmma_no_kperm_copy; /* TILEC_WGMMA_NO_KPERM_COPY: a reg-A product with k-permuted tf32 fragments stays
                                   * on mma.sync (no k-permuted transposed copy of its B) */
    bool opt_no_lanes_down;   /* TILEC_NO_LANES_DOWN: a tf32 B wgmma stages has no wanted layout (emit_cuda_wgmma.c's note_staged) */
    bool opt_no_remat_at_use; /* TILEC_NO_REMAT_AT_USE: a mixed 32-bit tile's registers read back where its load
                               * stands serve every use (emit_cuda_remat.c's ce_remat_at_use) */
    bool opt_no_mixed32;      /* TILEC_NO_MIXED32: a 32-bit mma operand other uses read in registers is a plain load
                               * (emit_cuda_async.c's mixed32_ok) */
    bool opt_no_wgmma_transpose; /* TILEC_NO_WGMMA_TRANSPOSE: ... kept on mma.sync, not copied transposed for wgmma
                                  * (for measurements) */
    bool opt_transpose_late;  /* TILEC_TRANSPOSE_LATE: ... copied after the stage's barrier even by TMA (for measurements) */
    bool opt_no_transpose_in_place; /* TILEC_NO_TRANSPOSE_IN_PLACE: ... into copies of their own, never in their
                                     * stage buffer (for measurements) */
    bool opt_loop_store_barrier; /* TILEC_LOOP_STORE_BARRIER: a loop's stores of disjoint tiles wait at a barrier too (for measurements) */
    bool opt_outer_pipe;      /* TILEC_OUTER_PIPE: pipeline loops that hold loops too */
    long long readback_max_bytes;   /* largest register-read tile on a pipeline; -1: the default */
    Pipe pipe;                /* the innermost pipelined loop */
    /* the plan (emit_cuda_plan.c), per value id */
    signed char *mma_split;   /* mma result: M warp bits | N warp bits << 4; -1 none */
    bool *mma_reg_a;          /* mma result: its A operand is read from registers */
    bool *mma_kperm;          /* ... with each k step's columns permuted (lay_mma_a) */
    int *want;                /* layout the value should be made in; -1 none */
    int *local_want;          /* per local: the layout its reads are wanted in; -1 none */
    bool *mma_alone;          /* mma result: no other mma's result meets its accumulator */
    /* wgmma (emit_cuda_wgmma.c) */
    signed char *wgmma_split; /* per mma result: warp groups over M | over N << 4 (log2); -1: mma.sync */
    bool *wgmma_reg_a;        /* per mma result on wgmma: A read from registers (fragments), not shared memory */
    bool *wgmma_kperm;        /* ... its K order permuted: A's k-permuted fragments (reg-A), or A from a k-permuted
                               * transposed copy and B staged in the same order */
    bool *wgmma_barred;       /* per mma result: kept off wgmma (its buffer is read by mma.sync too: ce_wgmma_plan) */
    unsigned char *wgmma_tally; /* per async load: read by wgmma from shared memory (1), by mma.sync (2) */
    unsigned char *round_how; /* per async load: read cast to tf32 (1), not (2) (ce_async_plan_rounding) */
    int *round_reads;         /* per async load: warps reading each element, over its products (the same) */
    bool *async_mixed;        /* per value of an async operand's chain: also read in registers (emit_cuda_async.c) */
    bool *async_core;         /* per async load: its buffer is in a wgmma layout (else mma.sync's) */
    bool *async_round;        /* ... its f32 elements rounded to tf32 in shared memory once they land (wgmma reads them so) */
    int *async_tr_ld;         /* ... a tf32 B stored [K][N] copied transposed each iteration: the copy's row
                               * pitch (0: read where it lands; ce_async_loop_begin) */
    int64_t *async_tr_off;    /* ... and the copy's offset in the async area */
    bool *async_tr_round;     /* ... rounded to tf32 on the way */
    bool *async_tr_kperm;     /* ... its K columns k-permuted in each 8 (kperm_col's order: K index 2q at q, 2q + 1
                               * at q + 4), for a wgmma product whose A fragments are k-permuted (wgmma_kperm) */
    short *async_tr_wgmma;    /* ... a tf32 operand stored MN-major that wgmma reads: copied transposed, into
                               * wgmma's layout swizzled this many bytes wide (ce_wgmma_plan); 0: not so */
    const char **async_tr_ptr; /* ... C expression of the transposed copy this iteration reads */
    bool *async_read_direct;  /* ... a wgmma product reads it where it lands, not transposed (ce_wgmma_plan) */
    bool *mma_tf32_a_regs;    /* per mma result: its tf32 A, stored MN-major, read from registers
                               * (tf32_a_by_registers: of the products in `transposed`, those whose
                               * chains the async marking took, decided as it marked them) */
    bool *transposed;         /* per value: a product emit_cuda_rewrite.c transposed (NULL: none) */
    short *async_swizzle;     /* ... rows of 32, 64 or 128 bytes, their 16-byte pieces permuted (the
                               * swizzle of that width; mma.sync's 16-bit operands take it too);
                               * 0: core matrices (wgmma) or padded rows (mma.sync) */
    bool swizzled;            /* some buffer is swizzled: shared memory aligned to SWIZZLE_ALIGN */
    bool tr_unpiped;          /* a load of a tf32 B that wgmma reads transposed (async_tr_wgmma) was not
                               * pipelined in the last pass: emit again with no such products (cuda_emit) */
    bool opt_wgmma;           /* CudaEmitOptions.target_sm90a */
    bool opt_wgmma_wait0;     /* TILEC_WGMMA_WAIT0: no wgmma left in flight across iterations */
    bool opt_wgmma_noswizzle; /* TILEC_WGMMA_NOSWIZZLE: core matrices only (for measurements) */
    bool opt_mma_noswizzle;   /* TILEC_MMA_NOSWIZZLE: mma.sync's operands in padded rows (for measurements) */
    bool opt_no_prefetch;     /* TILEC_NO_PREFETCH: no single loads copied an iteration ahead (for measurements) */
    bool opt_tf32_truncate;   /* TILEC_TF32_TRUNCATE: tf32 wgmma operands not rounded in shared memory
                               * (wgmma truncates them; for measurements) */
    bool opt_wgmma_noreg;     /* TILEC_WGMMA_NOREG: no wgmma with A from registers (for measurements) */
    bool opt_tf32_round_at_read; /* TILEC_TF32_ROUND_AT_READ: mma.sync rounds tf32 operands at each fragment
                                  * read, not once in shared memory (for measurements) */
    bool opt_no_access_base;  /* TILEC_NO_ACCESS_BASE: stores inside their array sum every register's
                               * offset from scratch, as loads do (for measurements) */
    bool opt_no_ldsm_readback; /* TILEC_NO_LDSM_READBACK: buffers read back element by element where
                                * ldmatrix.trans could read them (for measurements) */
    bool opt_wgmma_nodefer;   /* TILEC_WGMMA_NODEFER: every wgmma product waited for at once (for measurements) */
    WgmmaPending wg_pending[WGMMA_MAX_PENDING]; /* products committed, not yet waited for (ce_wgmma_settle) */
    int wg_npending;
    bool opt_wgmma_nostage;   /* TILEC_WGMMA_NOSTAGE: no wgmma with B staged from registers (for measurements) */
    bool used_wgmma;
    bool opt_no_tma;          /* TILEC_NO_TMA: pipelined copies by cp.async only (for measurements) */
    bool opt_mma_tma;         /* mma.sync's swizzled operands by TMA too (plan_tma; TILEC_MMA_TMA) */
    bool opt_stage_release;   /* TILEC_STAGE_RELEASE: stages released by mbarrier where they can be
                               * (plan_release; opt-in: timed, 1% slower) */
    bool opt_tr_no_hoist;     /* TILEC_TR_NO_HOIST: in-place transpositions' offsets computed in the loop
                               * (for measurements; tr_offsets) */
    bool opt_edge_unrolled;   /* TILEC_EDGE_UNROLLED: an edge tile's copies unrolled behind the fast path
                               * (for measurements; issue_copy) */
    bool opt_ldsm_whole;      /* TILEC_LDSM_WHOLE: every ldmatrix address computed whole (for measurements;
                               * ldsm_split) */
    /* ldsm_split's offsets declared in the current k step: their expressions
     * and variables (reset at each k step's start) */
    const char *ldsm_key[32], *ldsm_var[32];
    int nldsm;
    bool opt_tma_round;       /* tiles rounded to tf32 in shared memory by TMA too (TILEC_NO_TMA_ROUND=1: by cp.async) */
    int ntmaps;               /* the tensor maps this pass's TMA copies read (CudaKernelCode.tmaps) */
    CudaTensorMap tmaps[CUDA_MAX_TMAPS];
    int wgmma_acc_regs;       /* most accumulator registers per thread of one wgmma product */
    int scratch_hint;         /* most scratch shared memory an earlier pass used (bounds the wgmma pipeline) */
    bool *local_wgmma;        /* per local: a wgmma accumulates into its registers in place */
    /* stores by TMA through shared memory (emit_cuda_store.c) */
    bool opt_no_tma_store;    /* TILEC_NO_TMA_STORE */
    bool opt_transposed_products;   /* TILEC_TRANSPOSED_PRODUCTS: emit_cuda_rewrite.c's rewrite (opt-in: timed, no gain) */
    int stage_cap;            /* the largest box a warp may store by TMA, bytes (cuda_emit lowers it) */
    bool *tma_store_ok;       /* per parameter: an array that only stores access */
    bool *tma_stored;         /* per parameter: some store of it went by TMA (in this pass or an earlier one) */
    bool tma_store_any;       /* ... of any array */
    int64_t stage_bytes;      /* this pass's buffers for them (tile_stage), all warps' */
    int stage_stride;         /* a warp's buffer: the largest box of any pass */
} Emitter;

void ce_buf_vprintf(Buf *b, const char *fmt, va_list ap);
void ce_buf_printf(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ce_out(Emitter *E, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *ce_fmt_str(Emitter *E, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *ce_fresh(Emitter *E, const char *prefix);
void ce_fail(Emitter *E, const IrOp *op, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void ce_need_smem(Emitter *E, int64_t bytes);
/* An experiment knob of the environment is set (to anything but "" or "0"). */
bool ce_env_flag(const char *name);
/* `name` set and not "0" (true), set to "0" (false), or unset: `dflt` */
bool ce_env_default(const char *name, bool dflt);
/* Calls visit on every MMA of blk, nested blocks first (the analyses that
 * mark an mma's operands: emit_cuda_async.c, emit_cuda_wgmma.c). */
void ce_each_mma(Emitter *E, const IrBlock *blk, void (*visit)(Emitter *E, const IrOp *mma));
/* The block whose ops include `op`, searched from blk down (its place in
 * *at when at is not NULL), or NULL. */
const IrBlock *ce_block_holding(const IrBlock *blk, const IrOp *op, int *at);
bool ce_async_exact_reads(Emitter *E, int lv);
bool ce_async_mixed32_used(Emitter *E);
const char *ce_ctype(DType t);
const char *ce_mtype(DType t);
int ce_regsize(DType t);
bool ce_is_half(DType t);
const char *ce_comptype(DType t);
const char *ce_widen(Emitter *E, DType t, const char *x);
const char *ce_narrow(Emitter *E, DType t, const char *x);
const char *ce_lit_str(Emitter *E, DType t, Scalar v);
const char *ce_ew_unary(Emitter *E, OpId op, DType t, const char *a);
const char *ce_ew_binary(Emitter *E, OpId op, DType t, const char *a, const char *b);
const char *ce_ew_cast(Emitter *E, DType from, DType to, const char *a);
const char *ce_tf32_value(Emitter *E, int v, const char *x);
int ce_lay_add(Emitter *E, const Layout *l);
int ce_nregs(Emitter *E, int id);
int ce_blocked(Emitter *E, const Type *t, int fastest);
const char *ce_reg(Emitter *E, const char *name, int lay, int r);
void ce_decl(Emitter *E, DType t, const char *name, int lay);
const char *ce_thread_coord(Emitter *E, int lay, int d);
int64_t ce_reg_coord(Emitter *E, int lay, int r, int d);
const char *ce_coord(Emitter *E, int lay, int r, int d);
const char *ce_owner(Emitter *E, int lay);
const char *ce_pext_expr(Emitter *E, const char *var, unsigned mask);
Val *ce_val(Emitter *E, int id);
const Type *ce_vtype(Emitter *E, int id);
DType ce_vdt(Emitter *E, int id);
const char *ce_vreg(Emitter *E, int id, int r);
void ce_set_val(Emitter *E, int id, const char *name, int lay);
const char *ce_convert(Emitter *E, const char *name, int x, DType t, int r);
void ce_make_full(Emitter *E, int id);
void ce_emit_block(Emitter *E, const IrBlock *blk);
void ce_emit_op(Emitter *E, const IrOp *op);
unsigned ce_array_flags(const Emitter *E, int i);
int ce_vector_width(Emitter *E, int lay, int d, int max);
void ce_vec_store(Emitter *E, DType t, const char *ptr, const char *name, int lay, int r0, int n);
void ce_vec_load(Emitter *E, DType t, const char *ptr, const char *name, int lay, int r0, int n);
int ce_contiguous_view_axis(const IrOp *op, int rank);
const char *ce_off_type(Emitter *E, int arr);   /* "int" when the launch allows 32-bit offsets */
void ce_elem_at(Emitter *E, int arr, int rank, const int *axis, const char *const *idx, const char **inb,
                const char **off);
void ce_emit_load(Emitter *E, const IrOp *op);
void ce_fit_operand(Emitter *E, int id, const Type *t);
void ce_emit_line(Emitter *E, const IrOp *op);
void ce_emit_reduce(Emitter *E, const IrOp *op);
void ce_emit_scan(Emitter *E, const IrOp *op);
void ce_emit_mma(Emitter *E, const IrOp *op);
void ce_emit_print(Emitter *E, const IrOp *op);
bool ce_mma_on_tensor_cores(const Type *a, const Type *b, const Type *result);
/* Elements of K per tensor-core instruction (32 bytes of them): 8 for tf32, else 16. */
int  ce_mma_kstep(DType operand);
/* Memory hazards inside a block: before an access of `arr` that must see (or
 * must not be seen by) another thread's earlier access, a barrier. */
void ce_mem_access(Emitter *E, int arr, IrMemAccess kind);

/* emit_cuda_store.c: 16-bit tiles stored by TMA through shared memory */
void ce_tma_store_analyse(Emitter *E);
/* Emits store `op` of value `vid` by TMA when it qualifies (false: nothing emitted). */
bool ce_tma_store(Emitter *E, const IrOp *op, int vid);
/* Each warp waits for its stores by TMA: until they are written (before any
 * barrier that orders memory accesses: it orders every array's), or until
 * they have left shared memory (before the kernel ends or returns).  Nothing
 * when the kernel has none. */
void ce_tma_store_drain(Emitter *E, bool written);
/* After a plain store of `arr`: the fence that orders it before the copy
 * engine's stores of the same array (when there are any). */
void ce_tma_store_fence_plain(Emitter *E, int arr);
/* The index in E->tmaps of tensor map m (added if new); -1 when the kernel
 * has its CUDA_MAX_TMAPS already. */
int ce_tma_map_add(Emitter *E, const CudaTensorMap *m);

/* emit_cuda_async.c: mma operands by cp.async */
typedef struct SmemOperand {
    const char *base;   /* C expression: element (0, 0) of the stored operand */
    int ld;             /* elements between stored rows */
    bool kmajor;        /* stored with K contiguous: A as [M][K], B as [N][K] */
    bool round_tf32;    /* f32 in memory, rounded to tf32 when read */
    int swizzle;        /* 0: rows `ld` apart; else swizzled rows of this many bytes (ce_swizzle_offset) */
    int rows;           /* stored rows (a swizzled tile's panels are rows x swizzle bytes) */
    bool xor8;          /* padded rows, 16-byte pieces XORed with (row / 8) % 8 (emit_cuda_ops.c's xor8_col) */
} SmemOperand;
/* Byte offset of the 16-byte piece at row `r`, element column `k` (C
 * expressions) of a tile of `cols` `s`-byte elements a row stored as core
 * matrices (wgmma's no-swizzle layout): each 8 rows x 16 bytes 128
 * contiguous bytes, those of one 8-row group side by side. */
const char *ce_core_offset(Emitter *E, const char *r, const char *k, int cols, int s);
/* Byte offset of the 16-byte piece at row `r`, element column `k` (C
 * expressions; k a multiple of 16 bytes' worth) of a tile of `rows` rows of
 * `s`-byte elements stored swizzled with width w (32, 64 or 128 bytes): the
 * columns in panels of w bytes, each panel `rows` rows of w bytes, piece p of
 * row r stored at p ^ (address bits 7.. of the row within the panel). */
const char *ce_swizzle_offset(Emitter *E, int w, const char *r, const char *k, int rows, int s);
typedef struct AsyncLoopState {   /* the enclosing loop's pipeline, kept across a nested one */
    Pipe pipe;
    int64_t top;
} AsyncLoopState;
/* The largest tile read into registers that rides a cp.async pipeline, unless
 * TILEC_READBACK_MAX_BYTES says otherwise (emit_cuda_async.c) */
#define CE_READBACK_MAX_BYTES (16 * 1024)
/* emit_cuda_rewrite.c: `f`, or a copy of it rewritten for the target (tf32
 * products with an N-major B computed transposed on sm_90a) */
const IrFunc *ce_rewrite_for_target(Emitter *E, const IrFunc *f);
/* ... and whether every product it transposed got the form it was made for
 * (wgmma with A from registers, read back from a pipelined buffer) */
bool ce_rewrite_held(Emitter *E);
void ce_async_analyse(Emitter *E);
/* Does tf32 product `o` read its MN-major A from registers, as it landed
 * (emit_cuda_async.c's tf32_a_by_registers)? */
bool ce_async_tf32_a_by_registers(Emitter *E, const IrOp *o);
/* The async load whose tile operand `id` of an mma is (through views), or
 * -1; *col_dim: the operand dimension contiguous in shared memory; *round
 * (unless NULL): whether a cast to tf32 is on the way. */
int  ce_async_operand_load(Emitter *E, int id, int *col_dim, bool *round);
/* After ce_wgmma_plan: the f32 buffers that every product reading them
 * casts to tf32, and that four or more warps read, are rounded once in
 * shared memory when they land. */
void ce_async_plan_rounding(Emitter *E);
/* emit_cuda_wgmma.c: Hopper's warpgroup mma */
void ce_wgmma_plan(Emitter *E);
/* The products of an mma marked by the plan (operands in wgmma's shared-memory
 * layouts; A, when `a` is NULL, from registers `areg` of fragment layout
 * a_lay), into accumulator registers `d` of layout `lay` (lay_wgmma);
 * inplace: `d` is a loop-carried local's own (ce_wgmma_inplace). */
void ce_emit_wgmma(Emitter *E, const IrOp *op, const SmemOperand *a, const char *areg, int a_lay, const SmemOperand *b,
                   const char *d, int lay, bool inplace);
int  ce_wgmma_layout(Emitter *E, const IrOp *op);
/* Could mma `o` take wgmma with A from registers, by its shapes, the block's
 * warps and its B (a K-major cp.async operand for tf32), whatever the plan
 * decides for A?  The plan asks before it chooses A's k-column order. */
bool ce_wgmma_may_read_a_registers(Emitter *E, const IrOp *o);
/* Is mma a wgmma product with A from registers (its B alone in shared memory)? */
bool ce_wgmma_reads_registers(Emitter *E, const IrOp *mma);
/* Is B of mma `o` a tile of the kernel's (not a cp.async buffer), which a
 * wgmma product stages into shared memory itself? */
bool ce_wgmma_stages_b(Emitter *E, const IrOp *o);
/* The swizzle width (bytes; 0: core matrices) of wgmma product `o`'s staged B
 * stored with its dimension `col_dim` contiguous. */
int ce_wgmma_staged_swizzle(Emitter *E, const IrOp *o, int col_dim);
/* Every register of `d` (layout lay) made opaque to the compiler here: no
 * read or write of them moves across (a wgmma product's results or inputs). */
void ce_wgmma_fence_registers(Emitter *E, const char *d, int lay);
/* Before op (NULL: before leaving a block): waits for the wgmma products in
 * flight unless op may run beside them. */
void ce_wgmma_settle(Emitter *E, const IrOp *op);
/* The registers of the local `op` accumulates into in place (its C operand
 * read from the local, its result only stored back to it, nothing reading
 * the local between), or NULL. */
const char *ce_wgmma_inplace(Emitter *E, const IrOp *op, int lay);
/* Is op `o` of f a view an async operand's chain may pass: a reshape, a
 * permute, or a cast to its own storage (f32 -> tf32 too)?  The one
 * definition: emit_cuda_rewrite.c's chains must be views of this kind too. */
bool ce_async_view_op(const IrFunc *f, const IrOp *o);
bool ce_async_is_view(Emitter *E, int v);
/* Has value v registers (not a view only a product's operand reads)? */
bool ce_async_in_registers(Emitter *E, int v);
bool ce_async_is_load(Emitter *E, int v);
void ce_async_emit_load(Emitter *E, const IrOp *ld);
bool ce_async_pipelined(Emitter *E, const IrOp *ld);
bool ce_async_loop_begin(Emitter *E, const IrOp *loop, const char *i, const char *lo, AsyncLoopState *save);
void ce_async_loop_top(Emitter *E, const IrOp *loop, const char *i);
/* Do async load `lv`'s buffers start at the swizzle's alignment (the
 * hardware computes the swizzle from the address)? */
bool ce_async_swizzle_aligned(const Emitter *E, int lv);
/* the end of a pipelined loop's body: each warp releases its stage (Pipe.release) */
void ce_async_loop_bottom(Emitter *E);
void ce_async_loop_end(Emitter *E, bool pipelined, AsyncLoopState *save);
/* For a loop ce_async_loop_begin gave no pipeline: its prefetched loads'
 * buffers and the first iteration's copies (before the loop). */
void ce_async_prefetch_begin(Emitter *E, const IrOp *loop, const char *i, const char *lo);
/* At the end of such a loop's body: the next iteration's copies. */
void ce_async_prefetch_next(Emitter *E);
bool ce_async_operand(Emitter *E, int id, int which, SmemOperand *out);
/* Whether async operand `id` will be stored K-major (false: not async). */
bool ce_async_operand_kmajor(Emitter *E, int id, int which, bool *kmajor);
const Layout *ce_lay(Emitter *E, int id);
/* Registers `name` of pipelined load `lv` in layout `lay`, read from this
 * iteration's buffer (E->async_ptr[lv]); declares them. */
void ce_async_read(Emitter *E, int lv, int lay, const char *name);

/* shared by the emitter's files */
int ce_relabel(Emitter *E, const Layout *src, int rank, const int *shape, const int *src_bit_of);
const char *ce_ew_expr(Emitter *E, const IrOp *op, const char *const *regs);
void ce_emit_arange(Emitter *E, DType t, int lay, const char *name);

/* emit_cuda_plan.c: splits, register A operands and wanted layouts */
void ce_plan(Emitter *E);
void ce_plan_split(Emitter *E, const IrOp *mma, int *wmb, int *wnb);
void ce_plan_accumulators(Emitter *E);
int  ce_mma_result_layout(Emitter *E, const IrOp *op);
bool ce_plan_reg_a(Emitter *E, const IrOp *mma);
bool ce_plan_kperm(Emitter *E, const IrOp *mma);
/* The layout value `id` should be made in: its want, else `fallback`. */
int ce_plan_layout(Emitter *E, int id, int fallback);
void ce_plan_want(Emitter *E, int id, int lay);
/* The layout local `l` should start in: the want of its reads, else `fallback`. */
int ce_plan_local_layout(Emitter *E, int l, int fallback);

/* For view op `op` (permute, broadcast): the result bit position each operand
 * bit lands on, and the operand bit each result bit comes from (-1: none). */
void ce_view_positions(Emitter *E, const IrOp *op, int *pos_of_src, int *src_of_res);

/* emit_cuda_remat.c: values made again in the layout a use needs */
bool ce_remat_cheap(Emitter *E, int id);
bool ce_remat_at_use(Emitter *E, int id);
/* Registers of `id` in a layout compatible with `want` (full): false when
 * `id` cannot be made again here. */
bool ce_remat(Emitter *E, int id, int want, const char **name, int *lay);

#endif
