/*
 * inferno.h — the one public API of inferno, an inference engine for the
 * Qwen3 family of dense models.
 *
 * The CLI and the server are clients of this header and nothing else. The
 * data model is four opaque objects:
 *   inf_model          loaded weights, hyperparameters, op table (read-only
 *                      once loaded; may be shared by many sessions)
 *   inf_session        one sequence: its KV cache and scratch buffers
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
    INF_DTYPE_Q8_0 = 8, /* blocks of 32 int8 with one f16 scale */
    INF_DTYPE_BF16 = 30,
} inf_dtype;

/* "f32", "f16", "q8_0", "bf16", or "?" */
const char *inf_dtype_name(inf_dtype type);
/* Parses a name as above (case-insensitive); false when unknown. */
bool inf_dtype_from_name(const char *name, inf_dtype *out);

/* ------------------------------------------------------------------ model */

typedef struct inf_model inf_model;

typedef enum inf_kv_type {
    INF_KV_F32 = 0,
    INF_KV_F16 = 1,
} inf_kv_type;

typedef struct inf_load_options {
    int n_threads;       /* 0 = number of physical cores */
    bool use_mmap;       /* true: map the file; false: read into anonymous memory */
    int n_ctx;           /* default context length of new sessions; 0 = min(model's, 4096) */
    inf_kv_type kv_type; /* element type of the KV cache */
    bool trace;          /* record calls and time per op (inf_model_print_trace) */
} inf_load_options;

void inf_load_options_default(inf_load_options *opt);

/* Loads a GGUF file. Every tensor is checked for presence, shape and type. */
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
    float rope_freq_base;
    float rms_norm_eps;
    bool tied_output;     /* output head shares token_embd */
    inf_dtype weight_type; /* type of most matrix weights */
    uint64_t n_params;
    uint64_t weight_bytes; /* bytes of tensor data */
    const char *isa;       /* kernel path in use: "ref", "avx2", "avx512", "neon" */
    int n_threads;
} inf_model_info;

void inf_model_get_info(const inf_model *model, inf_model_info *out);

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

/* Loads a tokenizer from a GGUF file (tokenizer.ggml.*) or from a Hugging
 * Face tokenizer.json (tokenizer_config.json beside it is read when present). */
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
    /* Special-token text is tokenized as plain text, so that untrusted
     * content can never become control tokens. */
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
 * tokenizer_config.json, or a tokenizer.json (reads the config beside it). */
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

/* ------------------------------------------------------------------ synthetic models */

typedef struct inf_synth_options {
    int n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim;
    int n_ctx_train;
    float rope_freq_base, rms_norm_eps;
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

/* Writes a Qwen3 GGUF with random weights, laid out as llama.cpp's converter
 * lays out Qwen3. Writes to a temporary file and renames it into place, so
 * a failure never leaves a partial file at path. */
inf_status inf_synth_write(const inf_synth_options *opt, const char *path, inf_error *err);

/* ------------------------------------------------------------------ machine */

/* Measures the machine's sequential read bandwidth in GB/s (1e9 bytes/s),
 * the ceiling of memory-bound decode: n_threads threads each sum their own
 * slice of an anonymous buffer of `bytes` with plain 64-bit loads, pages
 * written first; the best of 8 passes. Use a buffer far beyond the caches
 * (1 GiB: about a second, and 1 GiB of resident memory while it runs).
 * bytes must be at least 1 MiB. */
inf_status inf_measure_read_bandwidth(int n_threads, size_t bytes, double *gb_s, inf_error *err);

#ifdef __cplusplus
}
#endif

#endif /* INFERNO_H */
