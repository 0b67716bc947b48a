/*
 * pretokenize.h — the Qwen2 split regex, hand-compiled:
 *
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}
 *   | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *
 * with the leftmost-first, backtracking semantics of the regex engine Hugging
 * Face tokenizers runs it on. Every position starts a match (each character
 * is a letter, number, whitespace or other), so the pieces tile the text.
 */
#ifndef INF_TOK_PRETOKENIZE_H
#define INF_TOK_PRETOKENIZE_H

#include <stddef.h>
#include <stdint.h>

/* The end (exclusive byte offset) of the piece that starts at pos < len.
 * s is valid UTF-8; props is uni_props(). */
size_t pretok_piece_end(const uint8_t *props, const unsigned char *s, size_t len, size_t pos);

#endif /* INF_TOK_PRETOKENIZE_H */
