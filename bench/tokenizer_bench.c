/*
 * tokenizer_bench.c — encode throughput of inferno's tokenizer on one thread,
 * over the tokenizer test corpus (tests/data/tokenizer/corpus.jsonl), in two
 * shapes: every text encoded on its own (many short calls), and the whole
 * corpus joined by newlines encoded as one text. Also times loading.
 * Built and run by bench/tokenizer_bench.sh, which runs Hugging Face
 * tokenizers on the same inputs (bench/tokenizer_bench.js) and prints ratios.
 *
 * usage: tokenizer_bench TOKENIZER CORPUS.jsonl [SECONDS]
 * prints one line per measurement: "inferno <what> <value> <unit>"
 */
#include "inferno.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int hex4(const char *p) {
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v = v * 16 + (c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c - 'A' + 10);
    }
    return v;
}

/* Decodes one JSON string line (as the corpus writes them) into out; returns its length. */
static size_t json_line(const char *s, size_t n, char *out) {
    size_t o = 0;
    for (size_t i = 1; i + 1 < n; i++) {
        if (s[i] != '\\') {
            out[o++] = s[i];
            continue;
        }
        char e = s[++i];
        if (e == 'u') {
            unsigned cp = (unsigned)hex4(s + i + 1);
            i += 4;
            if (cp >= 0xD800 && cp < 0xDC00) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + ((unsigned)hex4(s + i + 3) - 0xDC00);
                i += 6;
            }
            if (cp < 0x80) out[o++] = (char)cp;
            else if (cp < 0x800) { out[o++] = (char)(0xC0 | cp >> 6); out[o++] = (char)(0x80 | (cp & 63)); }
            else if (cp < 0x10000) {
                out[o++] = (char)(0xE0 | cp >> 12); out[o++] = (char)(0x80 | ((cp >> 6) & 63));
                out[o++] = (char)(0x80 | (cp & 63));
            } else {
                out[o++] = (char)(0xF0 | cp >> 18); out[o++] = (char)(0x80 | ((cp >> 12) & 63));
                out[o++] = (char)(0x80 | ((cp >> 6) & 63)); out[o++] = (char)(0x80 | (cp & 63));
            }
        } else {
            out[o++] = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e == 'b' ? '\b' : e == 'f' ? '\f' : e;
        }
    }
    return o;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: tokenizer_bench TOKENIZER CORPUS.jsonl [SECONDS]\n");
        return 2;
    }
    double seconds = argc > 3 ? atof(argv[3]) : 2.0;
    FILE *f = fopen(argv[2], "rb");
    if (!f) return perror(argv[2]), 1;
    fseek(f, 0, SEEK_END);
    size_t n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *raw = malloc(n + 1), *text = malloc(n + 1);
    if (fread(raw, 1, n, f) != n) return fprintf(stderr, "short read\n"), 1;
    fclose(f);
    /* texts one after another in text[], separated by '\n' so that the whole is the joined corpus */
    size_t *start = malloc(n * sizeof *start), *len = malloc(n * sizeof *len), count = 0, t = 0;
    for (size_t i = 0; i < n;) {
        char *nl = memchr(raw + i, '\n', n - i);
        size_t e = nl ? (size_t)(nl - raw) : n;
        if (e > i) {
            start[count] = t;
            len[count] = json_line(raw + i, e - i, text + t);
            t += len[count++];
            text[t++] = '\n';
        }
        i = e + 1;
    }
    size_t joined = t ? t - 1 : 0;

    inf_error err;
    inf_tokenizer *tok;
    double t0 = now_s();
    if (inf_tokenizer_load(argv[1], &tok, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
    printf("inferno load_ms %.1f ms\n", 1e3 * (now_s() - t0));

    size_t bytes = 0, passes = 0, tokens = 0;
    t0 = now_s();
    do {
        for (size_t k = 0; k < count; k++) {
            int32_t *ids;
            size_t n_ids;
            if (inf_tokenize(tok, text + start[k], len[k], 0, &ids, &n_ids, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
            tokens += n_ids;
            free(ids);
            bytes += len[k];
        }
        passes++;
    } while (now_s() - t0 < seconds);
    double dt = now_s() - t0;
    printf("inferno per_text_MB_s %.2f MB/s (%zu texts x %zu passes, %.1f Mtok/s)\n", bytes / dt / 1e6, count, passes,
           tokens / dt / 1e6);

    bytes = passes = 0;
    t0 = now_s();
    do {
        int32_t *ids;
        size_t n_ids;
        if (inf_tokenize(tok, text, joined, 0, &ids, &n_ids, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
        free(ids);
        bytes += joined;
        passes++;
    } while (now_s() - t0 < seconds);
    dt = now_s() - t0;
    printf("inferno joined_MB_s %.2f MB/s (%zu bytes x %zu passes)\n", bytes / dt / 1e6, joined, passes);
    inf_tokenizer_free(tok);
    free(raw);
    free(text);
    free(start);
    free(len);
    return 0;
}
