/*
 * cmd_chat.c — `inferno chat`: an interactive conversation.
 *
 * Each turn renders the whole conversation with the chat template,
 * tokenizes it, and hands it to the engine, whose prefix cache holds the
 * earlier turns: only the tokens after the longest cached prefix are
 * evaluated. So a new turn costs its own tokens, plus the previous answer
 * again when the template rewrites it (Qwen3 drops the thinking of earlier
 * answers). When the conversation no longer fits the context, the oldest
 * turns are dropped, with a notice.
 *
 * With a terminal on stdin, lines are read with libedit (editing,
 * history); otherwise plain lines, so the REPL is scriptable. Ctrl-C stops
 * an answer and keeps the conversation; Ctrl-D (end of input) exits.
 */
#include "cli/cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <histedit.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *usage_text =
    "usage: inferno chat [-m MODEL] [options]\n"
    "\n"
    "An interactive chat with the model's chat template. Type a message and press\n"
    "Enter (end a line with \\ to continue it on the next). Commands:\n"
    "  /reset            start a new conversation (the system message stays)\n"
    "  /system TEXT      set the system message (/system alone removes it)\n"
    "  /think on|off     let Qwen3 think before answering, or not\n"
    "  /save FILE        write the conversation as OpenAI-style JSON\n"
    "  /help             list the commands;  /quit (or Ctrl-D) exits\n"
    "Ctrl-C stops an answer and keeps the conversation. Thinking is shown dimmed.\n"
    "With stdin not a terminal, lines are read plainly (one message or command each).\n"
    "\n"
    "  -m, --model PATH      GGUF file, Hugging Face checkpoint directory, or ORG/NAME[:TAG]\n"
    "                        from the Hugging Face cache (see inferno pull)\n"
    "                        (default: $INFERNO_MODEL, else a synthetic model)\n"
    "  --system TEXT         system message\n"
    "  --no-think            start with thinking off (enable_thinking = false)\n"
    "  --hide-think          do not show the thinking, only the answer\n"
    "  --stats               after each answer, print the tokens evaluated, reused from\n"
    "                        the cache and generated, and the speed, on stderr\n"
    "  -n, --n-predict N     at most N tokens per answer (default -1: until the context is full)\n"
    "  -t, --threads N       threads (default: physical cores)\n"
    "  -c, --ctx-size N      context length (default: min(model's, 4096))\n"
    "  --no-mmap             read the weights into memory instead of mapping the file\n"
    "  --no-repack           keep the weights in the file's layout (no repacking at load)\n"
    "  --quantize q8_0       convert F32/F16/BF16 matrices to Q8_0 while loading\n"
    "  --kv-type T           KV cache element type: f32, f16 (default, as llama.cpp) or q8_0\n"
    CLI_ROPE_HELP
    "\n"
    "Sampling defaults: the model's recommended values for the current thinking mode\n"
    "(general.sampling.* metadata, else Qwen3's: thinking temp 0.6, top-p 0.95,\n"
    "top-k 20, min-p 0; no thinking 0.7, 0.8, 20, 0); flags below override them.\n"
    "\n";

static const char *help_text =
    "/reset  /system TEXT  /think on|off  /save FILE  /help  /quit   (Ctrl-C stops an answer, Ctrl-D exits)\n";

#define DIM "\033[2m"
#define UNDIM "\033[0m"

typedef struct chat {
    const char *model_path;
    inf_model *model;
    const inf_tokenizer *tok;
    inf_chat_template *tmpl;
    inf_engine *engine;    /* one sequence at a time, with the prefix cache */
    int n_ctx;
    cli_sampling_args *sampling;
    inf_sampler_params params; /* for the current thinking mode */
    long n_predict;
    bool think, hide_think, color, stats;
    uint64_t seed;         /* turn i samples with seed + i; /reset starts again */
    uint64_t turns;
    char *system;          /* NULL: none */
    cli_message *msgs;     /* user / assistant turns, oldest first */
    size_t n_msgs, cap_msgs;
    /* the answer being streamed */
    char *answer;
    size_t answer_len, answer_cap;
    bool answer_failed, shown_dim, skip_space;
} chat;

/* ------------------------------------------------------------------ output */

static void answer_append(chat *c, const char *text, size_t len) {
    if (c->answer_len + len + 1 > c->answer_cap) {
        size_t cap = 2 * (c->answer_len + len + 1);
        char *a = realloc(c->answer, cap);
        if (!a) {
            c->answer_failed = true;
            return;
        }
        c->answer = a;
        c->answer_cap = cap;
    }
    memcpy(c->answer + c->answer_len, text, len);
    c->answer_len += len;
    c->answer[c->answer_len] = 0;
}

static void set_dim(chat *c, bool dim) {
    if (!c->color || dim == c->shown_dim) return;
    fputs(dim ? DIM : UNDIM, stdout);
    c->shown_dim = dim;
}

static void emit(void *user, const char *text, size_t len, bool thinking) {
    chat *c = user;
    answer_append(c, text, len);
    if (thinking) {
        if (c->hide_think) {
            c->skip_space = true; /* the blank line after </think> goes too */
            return;
        }
        set_dim(c, true);
    } else {
        if (c->skip_space) {
            while (len && (*text == '\n' || *text == ' ')) text++, len--;
            if (!len) return;
            c->skip_space = false;
        }
        set_dim(c, false);
    }
    fwrite(text, 1, len, stdout);
    fflush(stdout);
}

/* "[what happened]" on stderr, dimmed on a terminal. */
static void notice(const chat *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void notice(const chat *c, const char *fmt, ...) {
    fputs(c->color ? DIM "[" : "[", stderr);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs(c->color ? "]" UNDIM "\n" : "]\n", stderr);
}

/* ------------------------------------------------------------------ state */

static bool push_msg(chat *c, const char *role, const char *content, size_t len) {
    if (c->n_msgs == c->cap_msgs) {
        size_t cap = c->cap_msgs ? 2 * c->cap_msgs : 16;
        cli_message *m = realloc(c->msgs, cap * sizeof *m);
        if (!m) return false;
        c->msgs = m;
        c->cap_msgs = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy) return false;
    memcpy(copy, content, len);
    copy[len] = 0;
    c->msgs[c->n_msgs++] = (cli_message){role, copy};
    return true;
}

static void drop_msgs(chat *c, size_t n) {
    for (size_t i = 0; i < n; i++) free(c->msgs[i].content);
    if (n < c->n_msgs) memmove(c->msgs, c->msgs + n, (c->n_msgs - n) * sizeof *c->msgs);
    c->n_msgs -= n;
}

static void pop_msg(chat *c) { free(c->msgs[--c->n_msgs].content); }

/* The sampling parameters of the thinking mode, checked. */
static int make_sampler(chat *c) {
    inf_sampler_params base;
    inf_model_sampling_defaults(c->model, c->think, &base);
    cli_sampling_params(c->sampling, &base, c->n_ctx, &c->params);
    c->params.seed = c->seed;
    inf_model_info info;
    inf_model_get_info(c->model, &info);
    inf_sampler *probe = NULL;
    inf_error err = {0};
    if (inf_sampler_new(info.n_vocab, &c->params, &probe, &err)) return cli_fail_error("chat", &err);
    inf_sampler_free(probe);
    return 0;
}

/* The conversation (system message first) rendered and tokenized. */
static inf_status conversation_ids(chat *c, int32_t **ids, size_t *n, inf_error *err) {
    size_t n_all = c->n_msgs + (c->system ? 1 : 0);
    cli_message *all = malloc((n_all ? n_all : 1) * sizeof *all);
    if (!all) {
        snprintf(err->msg, sizeof err->msg, "out of memory");
        return err->status = INF_ERR_NOMEM;
    }
    size_t k = 0;
    if (c->system) all[k++] = (cli_message){"system", c->system};
    if (c->n_msgs) memcpy(all + k, c->msgs, c->n_msgs * sizeof *all);
    inf_status st = cli_render_chat(c->tmpl, c->tok, all, n_all, c->think, ids, n, err);
    free(all);
    return st;
}

/* ------------------------------------------------------------------ a turn */

/* Answers the user message just pushed. Returns 0, or 1 on a runtime error
 * (the REPL goes on). */
static int turn(chat *c) {
    inf_error err = {0};
    const int n_ctx = c->n_ctx;
    long reserve = c->n_predict >= 0 && c->n_predict < n_ctx / 2 ? c->n_predict : n_ctx / 4;
    if (reserve < 1) reserve = 1;
    int32_t *ids = NULL;
    size_t n = 0;
    for (;;) {
        free(ids);
        ids = NULL;
        if (conversation_ids(c, &ids, &n, &err)) {
            pop_msg(c);
            return cli_fail_error("chat", &err);
        }
        if ((long)n + reserve <= n_ctx) break;
        if (c->n_msgs <= 1) {
            free(ids);
            pop_msg(c);
            fprintf(stderr, "inferno chat: the message is too long: %zu tokens with the system message, "
                    "the context holds %d (raise it with -c)\n", n, n_ctx);
            return 1;
        }
        /* drop the oldest exchange: a user message and the answer after it */
        size_t k = c->n_msgs > 2 && !strcmp(c->msgs[1].role, "assistant") ? 2 : 1;
        drop_msgs(c, k);
        notice(c, "context full: dropped the oldest %s", k == 2 ? "exchange" : "message");
    }

    if (n == 0) { /* a template renders at least the assistant's header */
        free(ids);
        pop_msg(c);
        return cli_fail(EXIT_RUNTIME, "chat", "the chat template rendered nothing");
    }
    cli_interrupted = 0;
    c->answer_len = 0;
    c->answer_failed = false;
    c->shown_dim = false;
    c->skip_space = false;
    cli_generation g = {
        .engine = c->engine,
        .tok = c->tok,
        .prompt = ids,
        .n_prompt = n,
        .sampling = c->params,
        .stops = c->sampling->stops,
        .n_stops = c->sampling->n_stops,
        .n_predict = c->n_predict,
        .emit = emit,
        .user = c,
    };
    g.sampling.seed = c->seed + c->turns++;
    cli_generate(&g);
    free(ids);
    set_dim(c, false);
    fputc('\n', stdout);
    fflush(stdout);
    int rc = 0;
    if (g.stop == CLI_STOP_INTERRUPT) notice(c, "interrupted");
    if (g.stop == CLI_STOP_CONTEXT) notice(c, "context full: the answer was cut");
    if (g.stop == CLI_STOP_ERROR) rc = cli_fail_error("chat", &g.err);
    if (c->stats) {
        double decode_s = g.t_end_s - g.t_first_s;
        fprintf(stderr, "[prompt %zu tokens: %d reused from the cache, %zu evaluated | %zu generated, %.1f tok/s | %s]\n",
                n, g.n_cached, n - (size_t)g.n_cached, g.n_ids,
                g.n_decoded > 0 && decode_s > 0 ? (double)g.n_decoded / decode_s : 0.0, cli_stop_reason_name(g.stop));
    }
    if ((g.stop == CLI_STOP_INTERRUPT || g.stop == CLI_STOP_ERROR) && g.n_ids == 0) {
        pop_msg(c); /* no answer: the question goes too */
    } else if (c->answer_failed || !push_msg(c, "assistant", c->answer ? c->answer : "", c->answer_len)) {
        rc = cli_fail(EXIT_RUNTIME, "chat", "out of memory keeping the answer");
    }
    cli_interrupted = 0;
    free(g.ids);
    return rc;
}

/* ------------------------------------------------------------------ commands */

/* The answer split into OpenAI's content and reasoning_content. */
static void add_message_json(cJSON *list, const cli_message *m) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToArray(list, o);
    cJSON_AddStringToObject(o, "role", m->role);
    const char *open = strstr(m->content, "<think>"), *close = strstr(m->content, "</think>");
    if (!strcmp(m->role, "assistant") && open && close && close > open) {
        const char *r = open + strlen("<think>"), *answer = close + strlen("</think>");
        while (*r == '\n') r++;
        size_t r_len = (size_t)(close - r);
        while (r_len && r[r_len - 1] == '\n') r_len--;
        while (*answer == '\n') answer++;
        char *reasoning = strndup(r, r_len);
        cJSON_AddStringToObject(o, "content", answer);
        if (reasoning) cJSON_AddStringToObject(o, "reasoning_content", reasoning);
        free(reasoning);
    } else {
        cJSON_AddStringToObject(o, "content", m->content);
    }
}

static void save(chat *c, const char *path) {
    cJSON *root = cJSON_CreateObject();
    inf_model_info info;
    inf_model_get_info(c->model, &info);
    cJSON_AddStringToObject(root, "model", *info.name ? info.name : c->model_path);
    cJSON *list = cJSON_AddArrayToObject(root, "messages");
    if (c->system) add_message_json(list, &(cli_message){"system", c->system});
    for (size_t i = 0; i < c->n_msgs; i++) add_message_json(list, &c->msgs[i]);
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    FILE *f = text ? fopen(path, "w") : NULL;
    bool ok = f && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    if (f && fclose(f) != 0) ok = false;
    free(text);
    if (ok) {
        char what[64];
        snprintf(what, sizeof what, "%zu", c->n_msgs + (c->system ? 1 : 0));
        fprintf(stderr, "[saved %s messages to %s]\n", what, path);
    } else {
        fprintf(stderr, "inferno chat: %s: cannot write: %s\n", path, strerror(errno));
    }
}

static void set_system(chat *c, const char *text) {
    free(c->system);
    c->system = *text ? strdup(text) : NULL;
    notice(c, "%s", c->system ? "system message set" : "system message removed");
}

/* Returns true when the REPL should exit. */
static bool command(chat *c, const char *line) {
    const char *arg = strchr(line, ' ');
    size_t name_len = arg ? (size_t)(arg - line) : strlen(line);
    while (arg && *arg == ' ') arg++;
    if (!arg) arg = "";
#define IS(name) (name_len == strlen(name) && !strncmp(line, name, name_len))
    if (IS("/quit") || IS("/exit")) return true;
    if (IS("/help")) {
        fputs(help_text, stdout);
    } else if (IS("/reset")) {
        while (c->n_msgs) pop_msg(c);
        c->turns = 0;
        notice(c, "new conversation");
    } else if (IS("/system")) {
        set_system(c, arg);
    } else if (IS("/think")) {
        if (strcmp(arg, "on") && strcmp(arg, "off")) {
            fprintf(stderr, "inferno chat: /think wants on or off\n");
        } else {
            c->think = !strcmp(arg, "on");
            if (make_sampler(c)) return true;
            notice(c, "%s", c->think ? "thinking on" : "thinking off");
        }
    } else if (IS("/save")) {
        if (!*arg) fprintf(stderr, "inferno chat: /save wants a file name\n");
        else save(c, arg);
    } else {
        fprintf(stderr, "inferno chat: unknown command '%.*s' (try /help)\n", (int)name_len, line);
    }
#undef IS
    return false;
}

/* ------------------------------------------------------------------ input */

typedef struct line_reader {
    EditLine *el; /* NULL: plain reads */
    History *hist;
    char *buf;    /* plain reads */
    size_t cap;
} line_reader;

static char *prompt_fn(EditLine *el) {
    (void)el;
    return (char *)"> ";
}

static void reader_open(line_reader *r) {
    memset(r, 0, sizeof *r);
    if (!isatty(STDIN_FILENO)) return;
    r->el = el_init("inferno", stdin, stdout, stderr);
    r->hist = history_init();
    if (!r->el || !r->hist) {
        if (r->el) el_end(r->el);
        if (r->hist) history_end(r->hist);
        r->el = NULL;
        r->hist = NULL;
        return;
    }
    HistEvent ev;
    history(r->hist, &ev, H_SETSIZE, 1000);
    el_set(r->el, EL_EDITOR, "emacs");
    el_set(r->el, EL_PROMPT, prompt_fn);
    el_set(r->el, EL_HIST, history, r->hist);
    el_source(r->el, NULL);
}

static void reader_close(line_reader *r) {
    if (r->el) el_end(r->el);
    if (r->hist) history_end(r->hist);
    free(r->buf);
}

/* The next line without its newline (valid until the next call); NULL at
 * end of input. Ctrl-C at the prompt abandons the line. */
static const char *reader_next(line_reader *r) {
    if (!r->el) {
        ssize_t n = getline(&r->buf, &r->cap, stdin);
        if (n < 0) return NULL;
        while (n && (r->buf[n - 1] == '\n' || r->buf[n - 1] == '\r')) r->buf[--n] = 0;
        return r->buf;
    }
    for (;;) {
        int count = 0;
        cli_interrupted = 0;
        const char *line = el_gets(r->el, &count);
        if (!line || count <= 0) {
            if (cli_interrupted) { /* Ctrl-C: a fresh prompt */
                fputc('\n', stdout);
                el_reset(r->el);
                continue;
            }
            return NULL;
        }
        size_t len = strlen(line);
        char *copy = realloc(r->buf, len + 1);
        if (!copy) return NULL;
        r->buf = copy;
        memcpy(r->buf, line, len + 1);
        while (len && (r->buf[len - 1] == '\n' || r->buf[len - 1] == '\r')) r->buf[--len] = 0;
        if (len) {
            HistEvent ev;
            history(r->hist, &ev, H_ENTER, r->buf);
        }
        return r->buf;
    }
}

/* A message: lines ending in a backslash continue on the next. malloc'd; NULL at end of input. */
static char *read_message(line_reader *r) {
    char *msg = NULL;
    size_t len = 0;
    for (;;) {
        const char *line = reader_next(r);
        if (!line) return msg;
        size_t n = strlen(line);
        bool more = n && line[n - 1] == '\\';
        if (more) n--;
        char *m = realloc(msg, len + n + 2);
        if (!m) {
            free(msg);
            return NULL;
        }
        msg = m;
        memcpy(msg + len, line, n);
        len += n;
        msg[len] = 0;
        if (!more) return msg;
        msg[len++] = '\n';
        msg[len] = 0;
    }
}

/* ------------------------------------------------------------------ main */

static void chat_free(chat *c) {
    while (c->n_msgs) pop_msg(c);
    free(c->msgs);
    free(c->answer);
    free(c->system);
    inf_engine_free(c->engine);
    inf_chat_template_free(c->tmpl);
    inf_model_free(c->model);
}

int cmd_chat(int argc, char **argv) {
    cli_model_args ma = {.kv_type = INF_KV_F16};
    cli_sampling_args sa = {0};
    chat c = {.n_predict = -1, .think = true, .sampling = &sa};
    const char *system = NULL;
    int rc = 0;
    for (int i = 1; i < argc && !rc; i++) {
        int r = cli_model_flag("chat", &ma, argc, argv, &i);
        if (r == 0) r = cli_sampling_flag("chat", &sa, argc, argv, &i);
        if (r < 0) rc = EXIT_USAGE;
        if (r) continue;
        const char *f = argv[i];
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            fputs(usage_text, stdout);
            fputs(cli_sampling_help, stdout);
            cli_sampling_args_free(&sa);
            return 0;
        } else if (!strcmp(f, "-n") || !strcmp(f, "--n-predict")) {
            const char *v = cli_flag_value("chat", argc, argv, &i);
            if (!v) rc = EXIT_USAGE;
            else if (!cli_parse_int(v, -1, 1 << 24, &c.n_predict))
                rc = cli_fail(EXIT_USAGE, "chat", "-n wants a token count from 1 (or -1 for no limit), got '%s'", v);
        } else if (!strcmp(f, "--system")) {
            if (!(system = cli_flag_value("chat", argc, argv, &i))) rc = EXIT_USAGE;
        } else if (!strcmp(f, "--no-think")) {
            c.think = false;
        } else if (!strcmp(f, "--hide-think")) {
            c.hide_think = true;
        } else if (!strcmp(f, "--stats")) {
            c.stats = true;
        } else {
            rc = cli_fail(EXIT_USAGE, "chat", "unknown option '%s' (see --help)", f);
        }
    }
    if (!rc && (ma.prompt || ma.token_list))
        rc = cli_fail(EXIT_USAGE, "chat", "chat reads its messages from the terminal; for one prompt use inferno run");
    if (!rc) rc = cli_resolve_model("chat", &ma.model_path);
    if (rc) {
        cli_sampling_args_free(&sa);
        return rc;
    }
    char *model_path = ma.model_path ? strdup(ma.model_path) : cli_default_model_path("chat");
    if (!model_path) {
        cli_sampling_args_free(&sa);
        return EXIT_RUNTIME;
    }
    ma.model_path = c.model_path = model_path;
    c.color = isatty(STDOUT_FILENO);
    inf_error err = {0};
    if (!(c.model = cli_load_model("chat", &ma))) rc = EXIT_RUNTIME;
    if (!rc && !(c.tok = inf_model_tokenizer(c.model)))
        rc = cli_fail(EXIT_RUNTIME, "chat", "%s has no tokenizer", model_path);
    if (!rc && inf_chat_template_load(model_path, &c.tmpl, &err)) rc = cli_fail_error("chat", &err);
    inf_model_info info;
    if (!rc) {
        inf_model_get_info(c.model, &info);
        c.n_ctx = ma.n_ctx ? ma.n_ctx : info.n_ctx_train < 4096 ? info.n_ctx_train : 4096;
        if (!(c.engine = cli_engine_new("chat", c.model, c.n_ctx, true))) rc = EXIT_RUNTIME;
    }
    if (!rc) {
        inf_sampler_params base, p;
        inf_sampler_params_default(&base);
        cli_sampling_params(&sa, &base, 1, &p);
        c.seed = p.seed;
        rc = make_sampler(&c);
    }
    if (!rc && system && *system && !(c.system = strdup(system))) rc = cli_fail(EXIT_RUNTIME, "chat", "out of memory");
    if (rc) {
        chat_free(&c);
        free(model_path);
        cli_sampling_args_free(&sa);
        return rc;
    }
    if (isatty(STDIN_FILENO))
        fprintf(stderr, "inferno chat: %s, context %d, thinking %s. /help for commands, Ctrl-D to quit.\n",
                *info.name ? info.name : model_path, c.n_ctx, c.think ? "on" : "off");
    cli_catch_interrupt();
    line_reader reader;
    reader_open(&reader);
    for (;;) {
        char *msg = read_message(&reader);
        if (!msg) break;
        bool quit = false;
        if (msg[0] == '/') {
            quit = command(&c, msg);
        } else if (msg[strspn(msg, " \t\n")]) {
            if (!push_msg(&c, "user", msg, strlen(msg))) {
                cli_fail(EXIT_RUNTIME, "chat", "out of memory");
                quit = true;
            } else {
                turn(&c);
            }
        }
        free(msg);
        if (quit) break;
    }
    if (reader.el) fputc('\n', stdout);
    reader_close(&reader);
    chat_free(&c);
    free(model_path);
    cli_sampling_args_free(&sa);
    return 0;
}
