/*
 * inferno.h — the one public API of inferno, an inference engine for the
 * Qwen3 family of dense models.
 *
 * The CLI and the server are clients of this header and nothing else. The
 * data model is five opaque objects:
 *   inf_model          loaded weights, hyperparameters, op table (read-only
 *                      once loaded); its op table runs one call at a time,
 *                      so one thread at a time evaluates on a model
 *   inf_session        one sequence: its KV cache and scratch buffers; one
 *                      thread at a time
 *   inf_engine         many sequences over a paged KV pool with a prefix
 *                      cache: requests in from any thread, events out
 *   inf_tokenizer      byte-level BPE vocabulary, merges, added tokens
 *   inf_chat_template  the chat template renderer (Qwen3's, or a fallback)
 *
 * Errors: every fallible call returns an inf_status and fills an optional
 * caller-provided inf_error with a one-line message that names the file,
 * key, tensor or field at fault. The library never prints and never exits.
 */
#ifndef INFERNO_H
#define INFERNO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define INFERNO_VERSION "0.1.0"

/* ------------------------------------------------------------------ errors */

typedef enum inf_status {
    INF_OK = 0,
    INF_ERR_IO,           /* missing, unreadable or short file */
    INF_ERR_FORMAT,       /* malformed or corrupt input (GGUF, JSON, UTF-8) */
    INF_ERR_UNSUPPORTED,  /* well-formed but not supported (architecture, tensor type) */
    INF_ERR_INVALID,      /* a bad argument from the caller */
    INF_ERR_NOMEM,        /* allocation failed */
    INF_ERR_CONTEXT_FULL, /* the session's KV cache has no room for the tokens */
} inf_status;

typedef struct inf_error {
    inf_status status;
    char msg[512]; /* one line, no trailing newline */
} inf_error;

/* A short lowercase name for a status ("io", "format", ...). */
const char *inf_status_name(inf_status status);

/* ------------------------------------------------------------------ dtypes */

/* Tensor element types; the values are GGUF's (ggml_type) ids. */
typedef enum inf_dtype {
    INF_DTYPE_F32 = 0,
    INF_DTYPE_F16 = 1,
    INF_DTYPE_Q4_0 = 2,   /* the GGUF block types (src/core/quant.h): 32 per block ... */
    INF_DTYPE_Q4_1 = 3,
    INF_DTYPE_Q5_0 = 6,
    INF_DTYPE_Q5_1 = 7,
    INF_DTYPE_Q8_0 = 8, /* blocks of 32 int8 with one f16 scale */
    INF_DTYPE_Q2_K = 10,  /* ... 256 per super-block (K-quants) */
    INF_DTYPE_Q3_K = 11,
    INF_DTYPE_Q4_K = 12,
    INF_DTYPE_Q5_K = 13,
    INF_DTYPE_Q6_K = 14,
    INF_DTYPE_IQ4_NL = 20, /* 32 per block, 4-bit indices into a fixed table */
    INF_DTYPE_IQ4_XS = 23, /* 256 per super-block, IQ4_NL's table */
    INF_DTYPE_BF16 = 30,
} inf_dtype;

/* "f32", "f16", "q4_0", ..., "q8_0", "q4_k", ..., "iq4_xs", "bf16", or "?" */
const char *inf_dtype_name(inf_dtype type);
/* Parses a name as above (case-insensitive); false when unknown. */
bool inf_dtype_from_name(const char *name, inf_dtype *out);

/* ------------------------------------------------------------------ model */

typedef struct inf_model inf_model;

typedef enum inf_kv_type {
    INF_KV_F32 = 0,
    INF_KV_F16 = 1,
    /* each (position, KV head) row as head_dim/32 Q8_0 blocks (34 bytes per
     * 32); when head_dim is a multiple of 64, q, k and v are rotated by
     * Hadamard blocks around it (as llama.cpp does by default) */
    INF_KV_Q8_0 = 2,
} inf_kv_type;

/* "f32", "f16", "q8_0", or "?" */
const char *inf_kv_type_name(inf_kv_type type);
/* Parses a name as above (case-insensitive); false when unknown. */
bool inf_kv_type_from_name(const char *name, inf_kv_type *out);
/* Bytes of n consecutive cache elements (n a multiple of 32 for Q8_0). */
size_t inf_kv_type_bytes(inf_kv_type type, size_t n);

/* RoPE scaling, as llama.cpp's rope.scaling.type names it. */
typedef enum inf_rope_scaling {
    INF_ROPE_SCALING_NONE = 0,
    INF_ROPE_SCALING_LINEAR, /* every angle divided by the factor */
    INF_ROPE_SCALING_YARN,   /* YaRN: fast pairs kept, slow ones divided, a ramp between; cos/sin scaled */
} inf_rope_scaling;

/* "none", "linear", "yarn". */
const char *inf_rope_scaling_name(inf_rope_scaling s);
/* Parses a name as above; false when unknown. */
bool inf_rope_scaling_from_name(const char *name, inf_rope_scaling *out);

typedef struct inf_load_options {
    int n_threads;       /* 0 = number of physical cores */
    /* true: map the file; false: every matrix the forward pass multiplies
     * is in anonymous memory (repacked or quantized from a mapping of the
     * file read once, or read), but for token_embd when it is only looked
     * up (untied, or the tied head repacked): the lookup reads its rows
     * from the mapping */
    bool use_mmap;
    int n_ctx;           /* default context length of new sessions; 0 = min(model's, 4096) */
    inf_kv_type kv_type; /* element type of the KV cache */
    bool trace;          /* record calls and time per op (inf_model_print_trace) */
    /* Quantize on load: every matrix stored as F32, F16 or BF16 (token_embd
     * and output too) is converted to quantize_type into anonymous memory
     * owned by the model; norms stay f32, quantized matrices stay as they
     * are. Only INF_DTYPE_Q8_0 is accepted (else INF_ERR_INVALID). The
     * file is then mapped and read once; with use_mmap false the matrices
     * already quantized are copied into anonymous memory too. */
    bool quantize;
    inf_dtype quantize_type;
    /* RoPE scaling over the file's, as llama.cpp's --rope-scaling,
     * --rope-scale and --yarn-orig-ctx: rope_scaling_set false keeps the
     * file's kind; rope_scale 0 keeps its factor; yarn_orig_ctx 0 keeps its
     * rope.scaling.original_context_length (else context_length). */
    bool rope_scaling_set;
    inf_rope_scaling rope_scaling;
    float rope_scale;
    int yarn_orig_ctx;
    /* Keep every weight as the file lays it out. By default the backend
     * repacks the matrices it multiplies fastest in its own layout, once
     * while loading (on x86 with AVX-512: Q8_0, into 16-row groups the
     * gemm and the AMX tiles read as they are), into anonymous memory of
     * the same size; the file's pages of those matrices are then no
     * longer read. The logits are the same either way, bit for bit. */
    bool no_repack;
    /* Called from the loading thread with the fraction done (0..1), first
     * with 0 and last with 1 on success; NULL for none. */
    void (*progress)(double fraction, void *user);
    void *progress_user;
} inf_load_options;

void inf_load_options_default(inf_load_options *opt);

/* Loads a GGUF file, or a Hugging Face Qwen3 checkpoint directory:
 * config.json, model.safetensors or the shards of
 * model.safetensors.index.json (F32, F16 and BF16 tensors, mapped or read
 * as the file is), tokenizer.json with tokenizer_config.json, and
 * generation_config.json (its sampling keys feed
 * inf_model_sampling_defaults). Every tensor is checked for presence,
 * shape and type; every size and offset in the files is checked. */
inf_status inf_model_load(const char *path, const inf_load_options *opt, inf_model **out,
                          inf_error *err);
void inf_model_free(inf_model *model);

typedef struct inf_model_info {
    const char *architecture; /* "qwen3" */
    const char *name;         /* general.name, or "" */
    int n_layer;
    int n_embd;      /* hidden size */
    int n_ff;        /* feed-forward size */
    int n_head;      /* query heads */
    int n_head_kv;   /* key/value heads */
    int head_dim;    /* attention.key_length */
    int n_vocab;     /* rows of token_embd */
    int n_ctx_train; /* context_length */
    int n_ctx_max;   /* the longest context accepted: n_ctx_train, or more with RoPE scaling */
    float rope_freq_base;
    inf_rope_scaling rope_scaling; /* in use (the file's unless overridden) */
    float rope_scale;              /* its factor; 1 when none */
    int rope_orig_ctx;             /* the context the scaling stretches (YaRN's original_context_length) */
    float rope_attn_factor;        /* the cos/sin scale RoPE applies (YaRN's mscale); 1 when none */
    float rms_norm_eps;
    bool tied_output;     /* output head shares token_embd */
    inf_dtype weight_type; /* type of most matrix weights */
    uint64_t n_params;
    uint64_t weight_bytes; /* bytes of tensor data */
    int n_files;           /* files the model was read from: 1, a split GGUF's shards, a directory's safetensors */
    uint64_t file_bytes;   /* their sizes together */
    const char *isa;       /* kernel path in use: "ref", "avx2", "avx512", "avx512+amx", "neon" */
    int n_threads;
} inf_model_info;

void inf_model_get_info(const inf_model *model, inf_model_info *out);

/* The tensors of the model file, in file order. */
typedef struct inf_tensor_info {
    const char *name;  /* owned by the model */
    inf_dtype type;
    int n_dims;
    uint64_t ne[4];    /* fastest-varying first (GGUF order); unused dims are 1 */
    uint64_t n_bytes;
} inf_tensor_info;

size_t inf_model_tensor_count(const inf_model *model);
/* Fills *out for tensor i; false when i >= the count. */
bool inf_model_tensor_info(const inf_model *model, size_t i, inf_tensor_info *out);

/* The tokenizer stored in the model file, or NULL when it has none. Owned by the model. */
const struct inf_tokenizer *inf_model_tokenizer(const inf_model *model);

/* Prints the per-op trace (calls, total ms, share, throughput) when the
 * model was loaded with trace = true; does nothing otherwise. */
void inf_model_print_trace(const inf_model *model, FILE *out);

/* ------------------------------------------------------------------ session */

typedef struct inf_session inf_session;

/* n_ctx 0 = the load options' n_ctx. The KV cache is allocated here, once. */
inf_status inf_session_new(inf_model *model, int n_ctx, inf_session **out, inf_error *err);
void inf_session_free(inf_session *session);

int inf_session_n_past(const inf_session *session); /* tokens in the KV cache */
int inf_session_n_ctx(const inf_session *session);
/* Forgets all but the first n_past cached tokens (0 clears the sequence). */
inf_status inf_session_truncate(inf_session *session, int n_past, inf_error *err);
/* Places the session's tokens at RoPE positions offset, offset + 1, ...
 * with nothing before them, as a llama.cpp batch whose positions start at
 * offset (a window far out in a long context without computing what
 * precedes it: only RoPE sees positions; attention sees the cached tokens).
 * Only on an empty session; 0 by default. */
inf_status inf_session_set_rope_offset(inf_session *session, int offset, inf_error *err);

typedef enum inf_logits_mode {
    INF_LOGITS_NONE = 0, /* logits not wanted */
    INF_LOGITS_LAST = 1, /* n_vocab floats for the last token */
    INF_LOGITS_ALL = 2,  /* n_tokens * n_vocab floats, row per token */
} inf_logits_mode;

/* Appends tokens to the sequence in one forward pass (prefill when n > 1,
 * decode when n == 1) and writes logits as the mode asks. Fails with
 * INF_ERR_CONTEXT_FULL (nothing changed) when the tokens do not fit, and
 * with INF_ERR_INVALID when an id is outside the vocabulary. */
inf_status inf_session_eval(inf_session *session, const int32_t *tokens, int n_tokens,
                            inf_logits_mode mode, float *logits, inf_error *err);

/* ------------------------------------------------------------------ tokenizer */

typedef struct inf_tokenizer inf_tokenizer;

/* Loads a tokenizer from a GGUF file (tokenizer.ggml.*), from a Hugging
 * Face tokenizer.json (tokenizer_config.json beside it is read when
 * present), or from a checkpoint directory (its tokenizer.json). */
inf_status inf_tokenizer_load(const char *path, inf_tokenizer **out, inf_error *err);
void inf_tokenizer_free(inf_tokenizer *tok);

int inf_tokenizer_n_vocab(const inf_tokenizer *tok);
int32_t inf_tokenizer_eos(const inf_tokenizer *tok); /* -1 when unknown */
/* True for tokens that end a turn: <|im_end|>, <|endoftext|>, and eos. */
bool inf_tokenizer_is_eog(const inf_tokenizer *tok, int32_t id);
/* The id of an added/special token by its exact text, or -1. */
int32_t inf_tokenizer_find_special(const inf_tokenizer *tok, const char *text);
/* The bytes token id decodes to (NUL-terminated; may be a partial UTF-8
 * sequence) and their count in *len; NULL when id is outside the vocabulary. */
const char *inf_tokenizer_token_bytes(const inf_tokenizer *tok, int32_t id, size_t *len);

enum {
    /* The text of every added token, special or not (<|im_start|>,
     * <think>, <tool_call>, ...), is tokenized as plain text, so that
     * untrusted content can never become control tokens. */
    INF_TOKENIZE_NO_SPECIAL = 1,
};

/* Encodes text exactly as Hugging Face tokenizers does. *ids is malloc'd
 * (free with free()). Thread-safe. Invalid UTF-8 is an error. */
inf_status inf_tokenize(const inf_tokenizer *tok, const char *text, size_t len, int flags,
                        int32_t **ids, size_t *n_ids, inf_error *err);

/* Decodes ids to bytes; *text is malloc'd and NUL-terminated. */
inf_status inf_detokenize(const inf_tokenizer *tok, const int32_t *ids, size_t n_ids,
                          char **text, size_t *len, inf_error *err);

/* Streaming decoder: never emits a partial UTF-8 sequence. */
typedef struct inf_detok_stream {
    unsigned char pending[64];
    size_t n_pending;
} inf_detok_stream;

void inf_detok_stream_init(inf_detok_stream *st);
/* Room that always suffices for one push: a token has at most 256 bytes, and
 * ill-formed bytes come out as U+FFFD (3 bytes each). */
#define INF_DETOK_STREAM_MAX_OUT 800

/* Writes the complete UTF-8 characters that token id makes available to out
 * and sets *n_out; ill-formed bytes become U+FFFD, so out is always valid
 * UTF-8. Fails with INF_ERR_INVALID, changing nothing, when the id is outside
 * the vocabulary or the output would exceed cap. */
inf_status inf_detok_stream_push(const inf_tokenizer *tok, inf_detok_stream *st, int32_t id,
                                 char *out, size_t cap, size_t *n_out, inf_error *err);
/* Emits what is left (an unfinished character becomes U+FFFD: 3 bytes of cap
 * suffice), resets the stream, and returns the bytes written. */
size_t inf_detok_stream_flush(inf_detok_stream *st, char *out, size_t cap);

/* ------------------------------------------------------------------ chat template */

typedef struct inf_chat_template inf_chat_template;

/* Loads the chat template from a GGUF (tokenizer.chat_template), a
 * tokenizer_config.json, a tokenizer.json (reads the config beside it), or
 * a checkpoint directory (its tokenizer_config.json; Qwen3's built-in
 * template when it has none). */
inf_status inf_chat_template_load(const char *path, inf_chat_template **out, inf_error *err);
/* Builds one from template source text (NULL: the built-in Qwen3 template). */
inf_status inf_chat_template_from_source(const char *source, inf_chat_template **out,
                                         inf_error *err);
void inf_chat_template_free(inf_chat_template *tmpl);

/* "qwen3" when the template is Qwen3's, otherwise a sentence naming the
 * template used instead. */
const char *inf_chat_template_describe(const inf_chat_template *tmpl);

/* Renders a request {"messages": [...], "tools": [...]?,
 * "add_generation_prompt": bool?, "enable_thinking": bool?} (JSON text)
 * byte-identically to Hugging Face's Jinja rendering. *out is malloc'd. */
inf_status inf_chat_template_render(const inf_chat_template *tmpl, const char *request_json,
                                    size_t len, char **out, size_t *out_len, inf_error *err);

/* Renders request_json as inf_chat_template_render does (*text: the same
 * bytes, malloc'd, NUL-terminated) and tokenizes it so that only the
 * template's own markup becomes control tokens. A special token (marked
 * special in tokenizer.json, CONTROL in a GGUF: <|im_start|>, <|im_end|>,
 * <|endoftext|>, ...) is matched only where all of its text was written by
 * the template; where any of it comes from the request (content,
 * reasoning_content, roles, names, tool arguments, anything printed from
 * tools) it is tokenized as plain text together with the text around it, as
 * Hugging Face does with encode_special_tokens. Non-special added tokens
 * (<think>, <tool_call>, ...) are matched everywhere, as Hugging Face always
 * matches them. Without special-token text in the request's strings the ids
 * are inf_tokenize(*text, 0). *ids is malloc'd (free with free()); on
 * failure *text and *ids are NULL. Thread-safe. */
inf_status inf_chat_template_render_ids(const inf_chat_template *tmpl, const inf_tokenizer *tok,
                                        const char *request_json, size_t len, char **text,
                                        size_t *text_len, int32_t **ids, size_t *n_ids, inf_error *err);

/* ------------------------------------------------------------------ sampler */

/*
 * Turns a row of logits into one token id. The filters run in this fixed
 * order (llama.cpp's default chain):
 *
 *   logit bias -> penalties -> top-k -> top-p -> min-p -> temperature -> draw
 *
 *   logit bias   adds bias[id] to the logit (-INFINITY bans the token)
 *   penalties    over the last penalty_last_n accepted tokens, for each token
 *                seen c > 0 times: logit /= repeat_penalty when positive,
 *                *= repeat_penalty when not; then
 *                logit -= c * frequency_penalty + presence_penalty
 *   top-k        keeps the k highest logits (ties: the lower id first)
 *   top-p        keeps the shortest run of the highest-probability tokens
 *                whose probabilities (softmax of the remaining logits) sum
 *                to at least top_p
 *   min-p        keeps tokens whose probability is at least min_p times the
 *                highest one
 *   temperature  divides the remaining logits by temperature; the draw is
 *                from their softmax with the sampler's own PRNG
 *
 * temperature 0 is greedy: the highest logit after bias and penalties, ties
 * to the lowest id; nothing is drawn. The truncation filters see the logits
 * before temperature (as in llama.cpp); at least one token always survives.
 * A sampler owns its random stream (xoshiro256** seeded from seed with
 * splitmix64), so a seed gives the same tokens for the same logits on any
 * machine and thread count. One sampler serves one sequence at a time.
 */
typedef struct inf_sampler inf_sampler;

typedef struct inf_logit_bias {
    int32_t id;
    float bias; /* finite, or -INFINITY to ban the token */
} inf_logit_bias;

typedef struct inf_sampler_params {
    float temperature;       /* >= 0; 0 = greedy */
    int top_k;               /* >= 0; 0 = off */
    float top_p;             /* 0..1; 1 = off */
    float min_p;             /* 0..1; 0 = off */
    float repeat_penalty;    /* > 0; 1 = off */
    float presence_penalty;  /* 0 = off */
    float frequency_penalty; /* 0 = off */
    int penalty_last_n;      /* >= 0 accepted tokens the penalties look at; 0 = off */
    uint64_t seed;
    const inf_logit_bias *logit_bias; /* copied by inf_sampler_new */
    size_t n_logit_bias;
} inf_sampler_params;

/* Neutral values: temperature 1, every filter and penalty off,
 * penalty_last_n 64, seed 0, no bias. */
void inf_sampler_params_default(inf_sampler_params *p);

/* The model's recommended sampling: Qwen3's published values for the mode
 * (thinking: temperature 0.6, top-p 0.95, top-k 20, min-p 0; non-thinking:
 * 0.7, 0.8, 20, 0), each replaced by the file's general.sampling.* key
 * (temp, top_k, top_p, min_p, penalty_repeat, penalty_last_n) when present;
 * a checkpoint directory's come from its generation_config.json, as
 * llama.cpp's converter writes them into those keys.
 * Fields that neither sets keep inf_sampler_params_default's values. */
void inf_model_sampling_defaults(const inf_model *model, bool thinking, inf_sampler_params *p);

/* Overlays the keys a Hugging Face generation_config.json sets
 * (temperature, top_k, top_p, min_p, repetition_penalty) onto *p; keys it
 * lacks leave *p as it was. */
inf_status inf_sampler_params_from_generation_config(const char *path, inf_sampler_params *p,
                                                     inf_error *err);

/* Checks the parameters (ranges above, bias ids below n_vocab); the sampler
 * then works on rows of n_vocab logits. */
inf_status inf_sampler_new(int n_vocab, const inf_sampler_params *p, inf_sampler **out,
                           inf_error *err);
void inf_sampler_free(inf_sampler *s);
/* Forgets the penalty history; the random stream goes on. */
void inf_sampler_reset(inf_sampler *s);
/* Adds a token to the penalty history (generated and prompt tokens alike);
 * ids outside the vocabulary are ignored. */
void inf_sampler_accept(inf_sampler *s, int32_t id);
/* Picks a token from n_vocab logits (NaN counts as -infinity). Does not
 * accept it. */
int32_t inf_sampler_sample(inf_sampler *s, const float *logits);
/* Writes the distribution sample would draw from: n_vocab probabilities,
 * zero for every filtered token (greedy: 1 for the chosen one). Draws
 * nothing. */
void inf_sampler_probs(inf_sampler *s, const float *logits, float *probs);

/* ------------------------------------------------------------------ stop strings */

/*
 * Finds stop strings in streamed text that may be split anywhere across
 * pushes. Text that could still be the start of a stop string is held back
 * until decided; a matched stop string and everything after it is never
 * released. Feed it whole UTF-8 characters (inf_detok_stream output) and it
 * releases whole characters.
 */
typedef struct inf_stop_matcher inf_stop_matcher;

/* n_stops may be 0 (the matcher then releases everything at once). Each
 * stop string must be non-empty; they are copied. */
inf_status inf_stop_matcher_new(const char *const *stops, size_t n_stops, inf_stop_matcher **out,
                                inf_error *err);
void inf_stop_matcher_free(inf_stop_matcher *m);
/* Forgets held text and a match. */
void inf_stop_matcher_reset(inf_stop_matcher *m);
/* Appends text; *out / *n_out are the bytes now safe to release (valid until
 * the next call). Sets *stopped once a stop string has matched: *out then
 * ends right before it, and later pushes release nothing. Fails only on
 * allocation (INF_ERR_NOMEM), changing nothing. */
inf_status inf_stop_matcher_push(inf_stop_matcher *m, const char *text, size_t len,
                                 const char **out, size_t *n_out, bool *stopped, inf_error *err);
/* Releases the held text (the stream ended without completing a stop). */
void inf_stop_matcher_flush(inf_stop_matcher *m, const char **out, size_t *n_out);
/* Index of the stop string that matched, or -1. */
int inf_stop_matcher_matched(const inf_stop_matcher *m);

/* ------------------------------------------------------------------ engine */

/*
 * The engine runs many sequences at once over one model, as a server
 * needs. Requests are submitted from any thread; one thread, the driver,
 * runs steps (inf_engine_step, or inf_engine_run until inf_engine_stop).
 * Each step is one forward pass holding the next token of every running
 * sequence (decode rows) and chunks of admitted prompts, oldest first, up
 * to prefill_chunk prompt tokens in all (chunked prefill), so a running
 * decode never waits more than a chunk.
 *
 * KV cache: one pool of fixed-size blocks; each sequence has a block table.
 * A request is admitted when the blocks its prompt and max_tokens can need
 * are free (it waits in the queue until then), and refused at submission
 * when it could never fit. Prefix cache: the blocks of finished sequences
 * stay in a radix tree over token ids, and a new request reuses the longest
 * cached prefix and prefills only the rest; unreferenced blocks are evicted
 * least recently used when the pool needs room. A request for n
 * completions prefills once and forks; the forks share the prompt's blocks
 * (copy on write).
 *
 * A sequence's logits are bit-identical however it is batched (alone or
 * with any other sequences), at any thread count, with the prefix cache on
 * or off, for every weight type and kernel path: a row's kernel depends on
 * its kind (decode or prompt) alone, never on how many rows share the
 * step or how the prompt is cut into chunks. (They may differ in the last
 * bits from inf_session_eval of the same tokens where that evaluates a
 * lone token as a decode row or wants every position's logits.)
 *
 * Threads: submit, cancel, stats, stop are thread-safe. step and run are
 * called by one thread at a time, which then owns the model's compute: no
 * inf_session may evaluate on the same model meanwhile. Event callbacks run
 * on the driving thread, inside step; they must not call step or run.
 */
typedef struct inf_engine inf_engine;

typedef struct inf_engine_options {
    int n_ctx;            /* longest sequence (prompt + generated); 0 = the load options' n_ctx */
    int kv_pool_tokens;   /* KV pool size in tokens; 0: kv_pool_mib, else room for max_seqs * n_ctx */
    size_t kv_pool_mib;   /* KV pool size in MiB (K and V together), when kv_pool_tokens is 0 */
    int block_size;       /* tokens per KV block; 0 = 64 */
    int max_seqs;         /* most sequences running at once; 0 = 16 */
    int prefill_chunk;    /* most prompt tokens one step takes; 0 = 512 */
    bool no_prefix_cache; /* do not keep or reuse finished sequences' blocks */
} inf_engine_options;

void inf_engine_options_default(inf_engine_options *opt);

/* Allocates the KV pool; the model must outlive the engine. */
inf_status inf_engine_new(inf_model *model, const inf_engine_options *opt, inf_engine **out, inf_error *err);
/* Cancels what is left (no events) and frees everything. Not while a thread
 * is inside step or run. */
void inf_engine_free(inf_engine *eng);

typedef enum inf_finish_reason {
    INF_FINISH_STOP = 0,  /* an end-of-turn token or a stop string */
    INF_FINISH_LENGTH,    /* max_tokens generated */
    INF_FINISH_CONTEXT,   /* the sequence filled n_ctx */
    INF_FINISH_CANCELLED, /* inf_engine_cancel */
} inf_finish_reason;

/* "stop", "length", "context", "cancelled" */
const char *inf_finish_reason_name(inf_finish_reason r);

typedef struct inf_token_logprob {
    int32_t id;
    float logprob; /* natural log of the model's probability (softmax of the raw logits) */
} inf_token_logprob;

typedef enum inf_event_kind {
    INF_EVENT_TOKEN = 0, /* a generated token */
    INF_EVENT_DONE,      /* a completion ended; the last event of its index */
    INF_EVENT_PROMPT,    /* prompt progress (report_progress): n_cached of n_prompt are in */
} inf_event_kind;

typedef struct inf_event {
    inf_event_kind kind;
    uint64_t request; /* the id inf_engine_submit gave */
    int index;        /* which of the request's n completions */
    /* TOKEN: the token and what it releases. text is the UTF-8 that the
     * detokenizer and the stop matcher let out with this token (often empty:
     * held back as a possible stop string or an unfinished character; at
     * an end-of-turn token, never its own text). A stop string never spans
     * Qwen3's <think> or </think>: at those tokens the held text is released
     * first, so text ends with the tag's own text. DONE: text is what was
     * still held when the completion ended (a matched stop string and what
     * follows it are never released). Valid during the callback. */
    int32_t token;
    const char *text;
    size_t text_len;
    float logprob;                  /* of token; 0 unless the request asked for logprobs */
    const inf_token_logprob *top;   /* the top_logprobs most likely tokens, most likely first */
    int n_top;
    const float *logits;            /* want_logits: the n_vocab logits token was sampled from */
    /* DONE (and PROMPT: n_prompt, n_cached) */
    inf_finish_reason finish;
    int stop_index;      /* STOP: the stop string that matched, or -1 (an end-of-turn token) */
    int n_prompt;        /* prompt tokens */
    int n_cached;        /* DONE: of them, reused from the prefix cache; PROMPT: in the cache so far */
    int n_generated;     /* tokens of this completion (an end-of-turn token included) */
    double queue_ms;     /* submission to admission */
    double prefill_ms;   /* admission to the first token */
    double decode_ms;    /* the first token to the end */
} inf_event;

typedef void (*inf_event_fn)(const inf_event *ev, void *user);

typedef struct inf_request {
    const int32_t *prompt; /* copied; at least one token */
    size_t n_prompt;
    inf_sampler_params sampling;    /* completion i draws with seed + i */
    const char *const *stops;       /* copied; NULL when n_stops is 0 */
    size_t n_stops;
    int max_tokens;                 /* generated tokens at most; 0 = until n_ctx */
    int n;                          /* completions from one prefill; 0 = 1 */
    bool logprobs;                  /* fill inf_event.logprob */
    int top_logprobs;               /* 0..20 alternatives per token */
    bool ignore_eog;                /* do not stop at end-of-turn tokens */
    bool want_logits;               /* fill inf_event.logits */
    bool report_progress;           /* PROMPT events after each prompt chunk */
    inf_event_fn on_event;          /* required */
    void *user;
} inf_request;

/* Zero everything; sampling as inf_sampler_params_default (temperature 1). */
void inf_request_default(inf_request *req);

/* Queues a request and writes its id (never 0). Refuses at once, with
 * nothing queued: bad token ids or parameters (INF_ERR_INVALID), a prompt
 * that leaves no room to generate in n_ctx, or one whose blocks could never
 * fit the pool (INF_ERR_CONTEXT_FULL). Thread-safe. */
inf_status inf_engine_submit(inf_engine *eng, const inf_request *req, uint64_t *id, inf_error *err);
/* Ends a request at the next step (a DONE event with INF_FINISH_CANCELLED
 * for each of its completions), queued or running, also in the middle of
 * its prefill. False when the id is unknown or already done. Thread-safe. */
bool inf_engine_cancel(inf_engine *eng, uint64_t id);

/* Runs one step: admits what fits, runs the batch, delivers events.
 * Returns INF_OK with *busy telling whether requests remain (queued or
 * running). Driving thread only. */
inf_status inf_engine_step(inf_engine *eng, bool *busy, inf_error *err);
/* Steps until inf_engine_stop, sleeping while there is no request. */
inf_status inf_engine_run(inf_engine *eng, inf_error *err);
/* Makes inf_engine_run return after its current step. Thread-safe. */
void inf_engine_stop(inf_engine *eng);

typedef struct inf_engine_stats {
    int n_ctx;
    int block_size;
    int blocks_total;
    int blocks_free;          /* held by nothing */
    int blocks_cached;        /* held by the prefix tree alone (evictable) */
    int running;              /* sequences */
    int queued;               /* requests */
    uint64_t steps;
    uint64_t prefix_queries;  /* admitted requests that looked up the prefix cache */
    uint64_t prefix_query_tokens;
    uint64_t prefix_hit_tokens;
    uint64_t prefix_evictions; /* blocks evicted */
    size_t kv_bytes;          /* of the pool */
} inf_engine_stats;

/* Thread-safe; the counts are those after the last step. */
void inf_engine_get_stats(inf_engine *eng, inf_engine_stats *out);

/* ------------------------------------------------------------------ synthetic models */

typedef struct inf_synth_options {
    int n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim;
    int n_ctx_train;
    float rope_freq_base, rms_norm_eps;
    /* RoPE scaling keys written as llama.cpp's converter writes a config's
     * rope_scaling: none (default) writes none; linear the type and
     * factor; yarn also original_context_length (rope_orig_ctx). */
    inf_rope_scaling rope_scaling;
    float rope_scale;
    int rope_orig_ctx;
    inf_dtype weight_type; /* matrices; norms stay f32 as llama.cpp's converter writes them */
    bool tied_output;
    uint64_t seed;
    const char *tokenizer_json; /* vocabulary source (required) */
    const char *tokenizer_config_json; /* chat template source; NULL: none */
    int n_vocab; /* 0 = the full vocabulary, else truncated to this many entries */
    const char *name; /* general.name */
} inf_synth_options;

/* Qwen3-0.6B geometry, Q8_0, tied, seed 1, full vocabulary. */
void inf_synth_options_default(inf_synth_options *opt);

/* Sets the shape of a released Qwen3 dense model, from its config.json:
 * layers, hidden, FFN, heads, KV heads, head_dim 128, context 40960, rope
 * base 1e6, eps 1e-6, tied output (0.6b, 1.7b, 4b) or not (8b, 14b, 32b);
 * the vocabulary stays as set (0: the full 151936 rows). name is "0.6b",
 * "1.7b", "4b", "8b", "14b" or "32b"; false (opt unchanged) otherwise. */
bool inf_synth_geometry(inf_synth_options *opt, const char *name);

/* Writes a Qwen3 GGUF with random weights, laid out as llama.cpp's converter
 * lays out Qwen3. Writes to a temporary file and renames it into place, so
 * a failure never leaves a partial file at path. */
inf_status inf_synth_write(const inf_synth_options *opt, const char *path, inf_error *err);

/* ------------------------------------------------------------------ quantization */

/* Writes out_path: in_path (a GGUF with F32, F16 or BF16 matrices) with its
 * matrices quantized as llama.cpp's llama_model_quantize() quantizes them
 * without an importance matrix, for the mixes "q8_0", "q4_0", "q6_k",
 * "q4_k_m" and "q5_k_m" (llama-quantize's names): the same per-tensor
 * types (the output head Q6_K, Q6_K in some layers' attn_v and ffn_down for
 * the _M mixes, fallbacks for rows that are not whole blocks) and the same
 * blocks, bit for bit; metadata copied, with general.file_type and
 * general.quantization_version set. n_threads quantize rows in parallel;
 * progress (may be NULL) gets the fraction done after each tensor. Written
 * through a temporary file renamed into place. */
inf_status inf_model_quantize(const char *in_path, const char *out_path, const char *mix, int n_threads,
                              void (*progress)(double fraction, void *user), void *progress_user, inf_error *err);

/* ------------------------------------------------------------------ converting checkpoints */

typedef struct inf_convert_options {
    bool keep_type;    /* matrices keep the checkpoint's type (default) */
    inf_dtype type;    /* else every matrix becomes this: f32, f16, bf16 or q8_0 */
    const char *name;  /* general.name; NULL: the directory's name */
} inf_convert_options;

/* keep_type, no name. */
void inf_convert_options_default(inf_convert_options *opt);

/* Writes the GGUF that llama.cpp's converter writes for a Hugging Face Qwen3
 * checkpoint directory (the directory inf_model_load reads, which must also
 * hold tokenizer.json): the same metadata keys in the same order (qwen3.*
 * from config.json, general.sampling.* from generation_config.json,
 * tokenizer.ggml.* from tokenizer.json padded to vocab_size, the chat
 * template and special ids from tokenizer_config.json), the same tensor
 * names, order and shapes, norms in f32. Every file is checked as
 * inf_model_load checks it. Written through a temporary file and a rename,
 * so a failure never leaves a partial file. NULL opt: the defaults. */
inf_status inf_convert_checkpoint(const char *dir, const char *out_path, const inf_convert_options *opt,
                                  inf_error *err);

/* ------------------------------------------------------------------ machine */

/* Measures the machine's sequential read bandwidth in GB/s (1e9 bytes/s),
 * the ceiling of memory-bound decode: n_threads threads sum a buffer of
 * `bytes` (advised to huge pages, as packed weights are; pages written
 * first), each its own share and then, with work stealing, what is left of
 * the others', as the decode's products are split, so that a slower core
 * does not set the figure; 16 passes, a plain C loop and (where the CPU
 * has AVX-512) a 64-byte-load loop taking turns, the best pass of either
 * counts. Use a buffer far beyond the caches
 * (1 GiB: about a second, and 1 GiB of resident memory while it runs).
 * bytes must be at least 1 MiB. */
inf_status inf_measure_read_bandwidth(int n_threads, size_t bytes, double *gb_s, inf_error *err);

/* Physical cores of this machine (the default thread count); at least 1. */
int inf_physical_cores(void);

#ifdef __cplusplus
}
#endif

#endif /* INFERNO_H */
