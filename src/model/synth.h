/*
 * synth.h — the synthetic-model writer's internal entry point for tests:
 * inf_synth_write (include/inferno.h) plus deliberate faults, so loader
 * tests can produce well-formed GGUF files that are wrong as Qwen3 models
 * (a missing tensor, a wrong shape or type, a bad hyperparameter).
 *
 * Example: a model that declares one layer more than it has
 *
 *     inf_synth_faults faults = {0};
 *     faults.set_keys[0] = (inf_synth_key_fault){"qwen3.block_count", inf_synth_u32(3)};
 *     faults.n_set_keys = 1;
 *     inf_synth_write_ex(&opt, path, &faults, &err);   // opt.n_layer = 2
 */
#ifndef INF_SYNTH_H
#define INF_SYNTH_H

#include "inferno.h"
#include "io/gguf.h"

#define INF_SYNTH_MAX_KEY_FAULTS 4

typedef struct inf_synth_key_fault {
    const char *key;  /* replaced in place when the writer sets it, else added at the end */
    gguf_value value; /* any type; strings and arrays are copied */
} inf_synth_key_fault;

/* Every field is optional (NULL / 0 = no fault). Naming a tensor or key
 * that the model does not have is an INF_ERR_INVALID error, so a typo
 * cannot make a test pass by accident. */
typedef struct inf_synth_faults {
    const char *omit_tensor;    /* e.g. "blk.1.ffn_down.weight" */
    const char *reshape_tensor; /* written with the shape below (random data of that size) */
    uint32_t reshape_n_dims;
    uint64_t reshape_ne[GGUF_MAX_DIMS]; /* fastest-varying first */
    const char *retype_tensor;  /* written with type retype (e.g. a norm in f16) */
    inf_dtype retype;
    const char *omit_key;       /* e.g. "qwen3.attention.head_count_kv" */
    inf_synth_key_fault set_keys[INF_SYNTH_MAX_KEY_FAULTS];
    int n_set_keys;
} inf_synth_faults;

/* inf_synth_write with faults (NULL = none). */
inf_status inf_synth_write_ex(const inf_synth_options *opt, const char *path, const inf_synth_faults *faults,
                              inf_error *err);

/* The file inf_synth_write writes, with the weights of source instead of
 * random ones (`inferno convert`): opt gives the geometry, the name, the
 * tokenizer files and the matrices' type (or, with keep_types, each matrix
 * keeps the source's type; norms are f32 either way); every planned tensor
 * must be in source with its shape, and nothing else may be; source's
 * general.sampling.* keys are copied; the tokenizer must fit the
 * embedding's rows (it is padded to them, never truncated). source is
 * read, not changed. */
inf_status inf_synth_write_from(const inf_synth_options *opt, const gguf_file *source, bool keep_types,
                                const char *path, inf_error *err);

static inline gguf_value inf_synth_u32(uint32_t v) { return (gguf_value){.type = GGUF_TYPE_UINT32, .u64 = v}; }
static inline gguf_value inf_synth_f32(float v) { return (gguf_value){.type = GGUF_TYPE_FLOAT32, .f64 = v}; }
/* s must outlive the call to inf_synth_write_ex (it is copied there). */
static inline gguf_value inf_synth_str(const char *s) {
    gguf_value v = {.type = GGUF_TYPE_STRING};
    v.str.len = __builtin_strlen(s);
    v.str.data = (char *)s;
    return v;
}

#endif /* INF_SYNTH_H */
