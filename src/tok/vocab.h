/*
 * vocab.h — the loaded tokenizer (struct inf_tokenizer) and the steps both
 * loaders share. A loader (tokenizer_json.c, tokenizer_gguf.c) fills a
 * vocab_builder with every token's bytes and kind and every merge as a pair of
 * byte strings; vocab_build() checks them and builds the lookup structures.
 */
#ifndef INF_TOK_VOCAB_H
#define INF_TOK_VOCAB_H

#include "inferno.h"
#include "tok/bpe.h"
#include "tok/unicode.h"

typedef enum tok_kind {
    TOK_NORMAL = 0,  /* a BPE vocabulary entry */
    TOK_ADDED = 1,   /* an added token matched in text (not special) */
    TOK_SPECIAL = 2, /* an added special / control token, matched in text */
    TOK_UNUSED = 3,  /* a placeholder id (GGUF padding, a hole): never produced, decodes to nothing */
} tok_kind;

/* Longest token text accepted (bytes); it bounds the streaming decoder's output. */
enum { TOK_MAX_TOKEN_BYTES = 256 };

struct inf_tokenizer {
    int32_t n_vocab;
    uint32_t *text_off; /* [n_vocab + 1]: token id's bytes are text[text_off[id] .. text_off[id + 1] - 1) */
    char *text;         /* every token's bytes (byte-level alphabet undone), each followed by a NUL */
    uint8_t *kind;      /* [n_vocab] tok_kind */
    bpe_model bpe;
    bool nfc;               /* normalize with NFC before splitting (Qwen2: yes) */
    const uint8_t *props;   /* uni_props() */
    int32_t *added;         /* [n_added] ids of TOK_ADDED and TOK_SPECIAL tokens, sorted by
                               first byte, then by length, longest first */
    size_t n_added;
    uint32_t added_by_byte[257]; /* added[added_by_byte[b] .. added_by_byte[b + 1]) start with byte b */
    int32_t eos, bos;            /* -1 when unknown */
    bool add_bos;                /* prepend bos (GGUF tokenizer.ggml.add_bos_token) */
    int32_t eog[3];              /* ids that end a turn (eos, <|im_end|>, <|endoftext|>), -1 = none */
};

static inline size_t tok_len(const inf_tokenizer *tok, int32_t id) {
    return tok->text_off[id + 1] - tok->text_off[id] - 1;
}
static inline const char *tok_text(const inf_tokenizer *tok, int32_t id) {
    return tok->text + tok->text_off[id];
}

typedef struct vocab_builder {
    const char *source; /* file name for messages */
    int32_t n_vocab;
    inf_buf text;       /* token bytes, NUL after each */
    uint32_t *text_off; /* [n_vocab + 1] */
    uint8_t *kind;      /* [n_vocab] */
    inf_buf merge_text; /* merge parts' bytes */
    uint32_t *merge_off; /* [2 * n_merges + 1]: part k is merge_text[merge_off[k] .. merge_off[k + 1]) */
    size_t n_merges, merge_cap;
    bool nfc;
    int32_t eos, bos;
    bool add_bos;
} vocab_builder;

/* Allocates room for n_vocab tokens (all TOK_UNUSED and empty until set). */
inf_status vocab_builder_init(vocab_builder *b, const char *source, int32_t n_vocab, inf_error *err);
void vocab_builder_free(vocab_builder *b);

/* Tokens must be set in increasing id order (ids skipped stay unused). */
inf_status vocab_builder_set(vocab_builder *b, int32_t id, const char *bytes, size_t len, tok_kind kind,
                             inf_error *err);
/* Merges are added in rank order. */
inf_status vocab_builder_add_merge(vocab_builder *b, const char *left, size_t left_len, const char *right,
                                   size_t right_len, inf_error *err);

/* Checks the vocabulary and builds the tokenizer; the builder is consumed
 * (freed) either way. */
inf_status vocab_build(vocab_builder *b, inf_tokenizer **out, inf_error *err);

/* Loads a Hugging Face tokenizer.json (tokenizer_json.c). */
inf_status tokenizer_load_json(const char *path, inf_tokenizer **out, inf_error *err);

/* Undoes the GPT-2 byte-level alphabet: appends the bytes that the UTF-8
 * string s[0..len) stands for to out. False when a character is outside the
 * alphabet or memory runs out (*bad_alphabet says which). */
bool bytelevel_decode(const char *s, size_t len, inf_buf *out, bool *bad_alphabet);

#endif /* INF_TOK_VOCAB_H */
