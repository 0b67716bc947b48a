/*
 * cmd_tokenize.c — `inferno tokenize` (text to a JSON array of ids, or one
 * array per line for a JSON-lines corpus) and `inferno detokenize` (ids to
 * the exact bytes they stand for).
 */
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void tokenize_usage(void) {
    printf("usage: inferno tokenize -m MODEL.gguf|tokenizer.json [--no-special] [--jsonl] [[--] TEXT]\n"
           "\n"
           "Encodes TEXT (or all of stdin, byte for byte, when TEXT is absent) exactly as\n"
           "Hugging Face tokenizers does and prints the ids as one JSON array and a newline.\n"
           "\n"
           "  -m PATH        GGUF model (its tokenizer.ggml.* metadata) or tokenizer.json\n"
           "                 (or ORG/NAME[:TAG], from the Hugging Face cache)\n"
           "                 (tokenizer_config.json beside it is read for eos)\n"
           "  --no-special   tokenize the text of special/added tokens (<|im_start|>, <think>,\n"
           "                 ...) as plain text instead of as those tokens\n"
           "  --jsonl        stdin holds one JSON string per line; print one JSON array per\n"
           "                 line (blank lines are skipped)\n"
           "  -h, --help     print this help\n"
           "\n"
           "Invalid UTF-8 is an error naming its byte offset (exit 1).\n");
}

static void detokenize_usage(void) {
    printf("usage: inferno detokenize -m MODEL.gguf|tokenizer.json ID,ID,...\n"
           "\n"
           "Prints the bytes the ids decode to, exactly: added tokens as their text,\n"
           "nothing appended (no newline), nothing replaced (ids that split a UTF-8\n"
           "character print its partial bytes).\n"
           "\n"
           "  -m PATH      GGUF model or tokenizer.json (or ORG/NAME[:TAG], from the Hugging Face cache)\n"
           "  -h, --help   print this help\n");
}

static bool print_ids(const int32_t *ids, size_t n) {
    putchar('[');
    for (size_t i = 0; i < n; i++) printf(i ? ",%ld" : "%ld", (long)ids[i]);
    putchar(']');
    return putchar('\n') != EOF;
}

/* hex4 and put_utf8 repeat inf_hex4 and inf_utf8_encode of the library's
 * core/common.h, which is internal: the CLI sees include/inferno.h only. */
static int hex4(const char *p) {
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= c - '0';
        else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
        else return -1;
    }
    return v;
}

static size_t put_utf8(unsigned cp, char *o) {
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | cp >> 6); o[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12); o[1] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18); o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Decodes the JSON string that is the whole of line[0..n) (surrounding blanks
 * allowed) into out (room for n bytes: decoding never grows a string).
 * Embedded U+0000 is kept. Returns false when it is not one JSON string. */
static bool decode_json_string(const char *line, size_t n, char *out, size_t *out_len) {
    size_t i = 0, o = 0;
    while (i < n && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) i++;
    if (i >= n || line[i++] != '"') return false;
    for (;;) {
        if (i >= n) return false;
        unsigned char c = (unsigned char)line[i];
        if (c == '"') break;
        if (c < 0x20) return false;
        if (c != '\\') {
            out[o++] = (char)c;
            i++;
            continue;
        }
        if (i + 1 >= n) return false;
        char e = line[i + 1];
        const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
        const char *hit = e ? strchr(from, e) : NULL;
        if (hit) {
            out[o++] = to[hit - from];
            i += 2;
            continue;
        }
        if (e != 'u' || i + 6 > n) return false;
        int cp = hex4(line + i + 2);
        i += 6;
        if (cp >= 0xD800 && cp <= 0xDBFF && i + 6 <= n && line[i] == '\\' && line[i + 1] == 'u') {
            int lo = hex4(line + i + 2);
            if (lo >= 0xDC00 && lo <= 0xDFFF) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                i += 6;
            }
        }
        if (cp < 0 || (cp >= 0xD800 && cp <= 0xDFFF)) return false; /* lone surrogates are not text */
        o += put_utf8((unsigned)cp, out + o);
    }
    i++;
    while (i < n && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) i++;
    *out_len = o;
    return i == n;
}

static int tokenize_jsonl(const inf_tokenizer *tok, int flags) {
    size_t len;
    char *in = cli_read_stream(stdin, &len);
    if (!in) return cli_fail(EXIT_RUNTIME, "tokenize", "cannot read stdin");
    char *text = malloc(len + 1);
    if (!text) {
        free(in);
        return cli_fail(EXIT_RUNTIME, "tokenize", "out of memory");
    }
    int rc = 0;
    size_t line_no = 0;
    for (size_t pos = 0; pos < len && !rc;) {
        const char *nl = memchr(in + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - in) : len;
        line_no++;
        size_t n = end - pos, text_len;
        bool blank = strspn(in + pos, " \t\r") >= n;
        if (!blank) {
            if (!decode_json_string(in + pos, n, text, &text_len)) {
                rc = cli_fail(EXIT_RUNTIME, "tokenize", "stdin line %zu is not one JSON string", line_no);
                break;
            }
            int32_t *ids;
            size_t n_ids;
            inf_error err = {0};
            if (inf_tokenize(tok, text, text_len, flags, &ids, &n_ids, &err) != INF_OK) {
                rc = cli_fail(EXIT_RUNTIME, "tokenize", "line %zu: %s", line_no, err.msg);
                break;
            }
            if (!print_ids(ids, n_ids)) rc = cli_fail(EXIT_RUNTIME, "tokenize", "cannot write to stdout");
            free(ids);
        }
        pos = end + 1;
    }
    free(text);
    free(in);
    if (!rc && fflush(stdout) != 0) rc = cli_fail(EXIT_RUNTIME, "tokenize", "cannot write to stdout");
    return rc;
}

int cmd_tokenize(int argc, char **argv) {
    const char *path = NULL, *text = NULL;
    int flags = 0;
    bool jsonl = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            tokenize_usage();
            return 0;
        } else if (!strcmp(argv[i], "-m")) {
            if (!(path = cli_flag_value("tokenize", argc, argv, &i))) return EXIT_USAGE;
        } else if (!strcmp(argv[i], "--no-special")) {
            flags |= INF_TOKENIZE_NO_SPECIAL;
        } else if (!strcmp(argv[i], "--jsonl")) {
            jsonl = true;
        } else if (!strcmp(argv[i], "--") && i + 1 < argc && !text) {
            text = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1] && !text) {
            return cli_fail(EXIT_USAGE, "tokenize", "unknown option '%s' (see inferno tokenize --help)", argv[i]);
        } else if (!text) {
            text = argv[i];
        } else {
            return cli_fail(EXIT_USAGE, "tokenize", "more than one TEXT argument (quote the text)");
        }
    }
    if (!path) return cli_fail(EXIT_USAGE, "tokenize", "-m PATH is required (see inferno tokenize --help)");
    if (jsonl && text) return cli_fail(EXIT_USAGE, "tokenize", "--jsonl reads stdin; give no TEXT");
    int resolve_rc = cli_resolve_model("tokenize", &path);
    if (resolve_rc) return resolve_rc;

    inf_error err = {0};
    inf_tokenizer *tok;
    if (inf_tokenizer_load(path, &tok, &err) != INF_OK) return cli_fail(EXIT_RUNTIME, "tokenize", "%s", err.msg);
    int rc = 0;
    if (jsonl) {
        rc = tokenize_jsonl(tok, flags);
    } else {
        size_t len = 0;
        char *input = text ? NULL : cli_read_stream(stdin, &len);
        if (text) len = strlen(text);
        int32_t *ids;
        size_t n_ids;
        if (!text && !input) rc = cli_fail(EXIT_RUNTIME, "tokenize", "cannot read stdin");
        else if (inf_tokenize(tok, text ? text : input, len, flags, &ids, &n_ids, &err) != INF_OK)
            rc = cli_fail(EXIT_RUNTIME, "tokenize", "%s", err.msg);
        else {
            if (!print_ids(ids, n_ids) || fflush(stdout) != 0)
                rc = cli_fail(EXIT_RUNTIME, "tokenize", "cannot write to stdout");
            free(ids);
        }
        free(input);
    }
    inf_tokenizer_free(tok);
    return rc;
}

int cmd_detokenize(int argc, char **argv) {
    const char *path = NULL, *list = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            detokenize_usage();
            return 0;
        } else if (!strcmp(argv[i], "-m")) {
            if (!(path = cli_flag_value("detokenize", argc, argv, &i))) return EXIT_USAGE;
        } else if (argv[i][0] == '-' && !list) {
            return cli_fail(EXIT_USAGE, "detokenize", "unknown option '%s' (see inferno detokenize --help)", argv[i]);
        } else if (!list) {
            list = argv[i];
        } else {
            return cli_fail(EXIT_USAGE, "detokenize", "more than one id list (write ID,ID,...)");
        }
    }
    if (!path || !list)
        return cli_fail(EXIT_USAGE, "detokenize", "-m PATH and ID,ID,... are required (see inferno detokenize --help)");
    int32_t *ids;
    size_t n_ids;
    if (!cli_parse_ids(list, &ids, &n_ids))
        return cli_fail(EXIT_USAGE, "detokenize", "malformed id list '%s' (write non-negative ids as ID,ID,...)", list);
    int resolve_rc = cli_resolve_model("detokenize", &path);
    if (resolve_rc) {
        free(ids);
        return resolve_rc;
    }

    inf_error err = {0};
    inf_tokenizer *tok;
    if (inf_tokenizer_load(path, &tok, &err) != INF_OK) {
        free(ids);
        return cli_fail(EXIT_RUNTIME, "detokenize", "%s", err.msg);
    }
    char *text;
    size_t len;
    int rc = 0;
    if (inf_detokenize(tok, ids, n_ids, &text, &len, &err) != INF_OK) {
        rc = cli_fail_error("detokenize", &err);
    } else {
        if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0)
            rc = cli_fail(EXIT_RUNTIME, "detokenize", "cannot write to stdout");
        free(text);
    }
    free(ids);
    inf_tokenizer_free(tok);
    return rc;
}
