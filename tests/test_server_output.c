/*
 * test_server_output.c — the Qwen3 output parser (src/server/qwen3_output.c):
 * reasoning_content / content / tool_calls from generated text, streamed.
 *
 *   cases       a table of Qwen3-style outputs with the expected reasoning,
 *               content and calls; where the same text is in llama.cpp's
 *               tests/test-chat.cpp (Hermes 2 Pro format, the one llama.cpp
 *               uses for Qwen3) or follows from vLLM's parsers
 *               (vllm/reasoning/qwen3_reasoning_parser.py, basic_parsers.py,
 *               vllm/tool_parsers/hermes_tool_parser.py) the case says so and
 *               where inferno differs, why;
 *   splits      every case pushed in one piece, in two pieces split at every
 *               byte, byte by byte, and in 40 random splittings: the deltas
 *               concatenated equal the expected result and the aggregate,
 *               the tool deltas have OpenAI's shape (BEGIN then ARGS, indexes
 *               in order). A partial tag released early would show up in the
 *               concatenation, which is compared with the one-piece result;
 *   prompt      text is released as soon as it is decided (not held to the
 *               end), a partial tag is held exactly until decided;
 *   soup        3000 random texts made of tags, partial tags, JSON, bad
 *               JSON, whitespace and words, under random options: one
 *               piece, byte by byte and random splits give the same deltas
 *               concatenated and the same aggregate; no think tag in content;
 *   ids         "call_" + 24 alphanumerics, deterministic per seed;
 *   limits      a 10000-deep arguments array and a 1 MB content stream;
 *   nomem       every allocation failed in turn: INF_ERR_NOMEM, sticky, no
 *               leak (under ASan), and the result unchanged when none fails;
 *   prompts     qwen3_prompt_opens_reasoning on the Qwen3 templates' endings;
 *   misuse      push or finish after finish.
 */
#include "harness.h"

#include "server/qwen3_output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CALLS 4

typedef struct call_want {
    const char *name, *args;
} call_want;

typedef struct out_case {
    const char *name;
    bool starts_in_reasoning, disable_reasoning, disable_tools;
    const char *text;
    const char *reasoning; /* NULL: none expected */
    const char *content;   /* NULL: none expected */
    int n_calls;
    call_want calls[MAX_CALLS];
} out_case;

/* clang-format off */
static const out_case cases[] = {
    /* llama.cpp test-chat.cpp, Hermes 2 Pro with reasoning_format deepseek:
     * message_assist_thoughts. */
    {"thoughts then answer (llama.cpp)", false, false, false,
     "<think>I'm\nthinking</think>Hello, world!\nWhat's up?",
     "I'm\nthinking", "Hello, world!\nWhat's up?", 0, {{0}}},
    /* Qwen3's own layout. vLLM's qwen3 parser would give reasoning "\n...\n"
     * and content "\n\nHello!..." (it trims nothing); llama.cpp strips both. */
    {"thoughts then answer, Qwen3 newlines", false, false, false,
     "<think>\nThe user says hello. I should greet them back.\n</think>\n\nHello! How can I help you today?",
     "The user says hello. I should greet them back.", "Hello! How can I help you today?", 0, {{0}}},
    {"thoughts then one call", false, false, false,
     "<think>\nThe user wants the weather in Paris. I'll call get_weather.\n</think>\n\n"
     "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris, France\", \"unit\": \"celsius\"}}\n</tool_call>",
     "The user wants the weather in Paris. I'll call get_weather.", NULL, 1,
     {{"get_weather", "{\"location\":\"Paris, France\",\"unit\":\"celsius\"}"}}},
    /* llama.cpp: message_assist_multiple_calls. */
    {"two parallel calls (llama.cpp)", false, false, false,
     "<tool_call>\n{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n</tool_call>\n"
     "<tool_call>\n{\"name\": \"python\", \"arguments\": {\"code\":\"print('hello')\"}}\n</tool_call>",
     NULL, NULL, 2, {{"special_function", "{\"arg1\":1}"}, {"python", "{\"code\":\"print('hello')\"}"}}},
    /* llama.cpp: message_assist_call_content. */
    {"content then call (llama.cpp)", false, false, false,
     "Hello, world!\nWhat's up?<tool_call>\n{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n</tool_call>",
     NULL, "Hello, world!\nWhat's up?", 1, {{"special_function", "{\"arg1\":1}"}}},
    /* The whitespace before the call is trimmed (vLLM and llama.cpp's legacy
     * Hermes parser keep it: "...for you.\n\n"). */
    {"content, blank line, call", false, false, false,
     "I'll look that up for you.\n\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"inferno C11\"}}\n</tool_call>",
     NULL, "I'll look that up for you.", 1, {{"search", "{\"query\":\"inferno C11\"}"}}},
    /* llama.cpp: message_assist_call_thoughts, thinking_forced_open. */
    {"forced-open thoughts then call (llama.cpp)", true, false, false,
     "I'm\nthinking</think>\n<tool_call>{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}</tool_call>",
     "I'm\nthinking", NULL, 1, {{"special_function", "{\"arg1\":1}"}}},
    /* Tokens are kept as written: the \u00e9 escape, the digits of 12.50 and
     * of a 20-digit integer, the spaces inside strings. vLLM re-dumps with
     * ensure_ascii=False (an e-acute, ", " separators), llama.cpp with
     * ensure_ascii=true (\u00e9 for every non-ASCII character); all three are
     * the same JSON value up to number precision, which only this keeps. */
    {"nested arguments, unicode, escapes", false, false, false,
     "<tool_call>\n{\"name\": \"book_table\", \"arguments\": {\"restaurant\": \"Caf\\u00e9 \\\"Le Zinc\\\"\", "
     "\"party\": {\"adults\": 2, \"children\": [3, 7]}, \"notes\": \"na\xc3\xafve \xe2\x80\x94 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x8d\xb7, a : b\", "
     "\"price\": 12.50, \"ref\": 12345678901234567890, \"flags\": [true, false, null], \"empty\": { }, \"none\": [ ]}}\n</tool_call>",
     NULL, NULL, 1,
     {{"book_table", "{\"restaurant\":\"Caf\\u00e9 \\\"Le Zinc\\\"\",\"party\":{\"adults\":2,\"children\":[3,7]},"
                     "\"notes\":\"na\xc3\xafve \xe2\x80\x94 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x8d\xb7, a : b\",\"price\":12.50,"
                     "\"ref\":12345678901234567890,\"flags\":[true,false,null],\"empty\":{},\"none\":[]}"}}},
    /* A string is already OpenAI's arguments: kept (decoded), not re-quoted
     * (vLLM's json.dumps and llama.cpp's dump would quote it again). */
    {"arguments given as a string", false, false, false,
     "<tool_call>\n{\"name\": \"run_shell\", \"arguments\": \"{\\\"cmd\\\": \\\"ls -la\\\"}\"}\n</tool_call>",
     NULL, NULL, 1, {{"run_shell", "{\"cmd\": \"ls -la\"}"}}},
    {"arguments missing", false, false, false,
     "<tool_call>\n{\"name\": \"get_time\"}\n</tool_call>", NULL, NULL, 1, {{"get_time", "{}"}}},
    {"escaped name, repeated key (last wins, as json.loads)", false, false, false,
     "<tool_call>\n{\"name\": \"first\", \"n\\u0061me\": \"f\\u00fcr\", \"arguments\": {\"k\": \"\\ud83c\\udf77\"}}\n</tool_call>",
     NULL, NULL, 1, {{"f\xc3\xbcr", "{\"k\":\"\\ud83c\\udf77\"}"}}},
    /* Malformed: the text is content. vLLM's extract_tool_calls and
     * llama.cpp's content-only fallback return the whole output as content
     * for these single-block outputs. */
    {"malformed JSON in the call", false, false, false,
     "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}\n</tool_call>",
     NULL, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}\n</tool_call>", 0, {{0}}},
    {"missing name", false, false, false,
     "<tool_call>\n{\"arguments\": {\"location\": \"Paris\"}}\n</tool_call>",
     NULL, "<tool_call>\n{\"arguments\": {\"location\": \"Paris\"}}\n</tool_call>", 0, {{0}}},
    {"name not a string", false, false, false,
     "<tool_call>{\"name\": 7, \"arguments\": {}}</tool_call>",
     NULL, "<tool_call>{\"name\": 7, \"arguments\": {}}</tool_call>", 0, {{0}}},
    {"text after the JSON inside the block", false, false, false,
     "<tool_call>\n{\"name\": \"f\", \"arguments\": {}} extra\n</tool_call>",
     NULL, "<tool_call>\n{\"name\": \"f\", \"arguments\": {}} extra\n</tool_call>", 0, {{0}}},
    {"unterminated call at the end", false, false, false,
     "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"loc",
     NULL, "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"loc", 0, {{0}}},
    /* vLLM's hermes parser (vllm/entrypoints/openai/tool_parsers/
     * hermes_tool_parser.py, regex <tool_call>(.*?)</tool_call>|<tool_call>(.*))
     * takes a whole call without its closing tag at the end as a call. */
    {"whole call without its closing tag at the end (vLLM)", false, false, false,
     "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}",
     NULL, "Let me check.", 1, {{"get_weather", "{\"city\":\"Paris\"}"}}},
    /* A rejected block is scanned again as content: think tags in it are
     * handled as anywhere else, and a good block inside it is a call. */
    {"think tag inside a malformed block", false, false, false,
     "<tool_call>\n{\"name\": \"f\", </think> \"arguments\": {}}\n</tool_call>",
     NULL, "<tool_call>\n{\"name\": \"f\",  \"arguments\": {}}\n</tool_call>", 0, {{0}}},
    {"good block inside an unclosed one", false, false, false,
     "<tool_call>\n{\"name\": \"broken\"\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}}\n</tool_call>",
     NULL, "<tool_call>\n{\"name\": \"broken\"", 1, {{"f", "{\"x\":1}"}}},
    /* Each block stands alone (vLLM and llama.cpp would return no calls and
     * all the text as content; a stream has already sent call 0). */
    {"a bad block after a good one", false, false, false,
     "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n"
     "<tool_call>\n{\"name\": \"b\", \"arguments\": {oops}}\n</tool_call>",
     NULL, "<tool_call>\n{\"name\": \"b\", \"arguments\": {oops}}\n</tool_call>", 1, {{"a", "{}"}}},
    /* llama.cpp: simple_assist_msg("", "<tool_call>nah uhg</tool_call>"). */
    {"call tags inside unterminated reasoning (llama.cpp)", false, false, false,
     "<think><tool_call>nah uhg</tool_call>", "<tool_call>nah uhg</tool_call>", NULL, 0, {{0}}},
    {"valid call inside closed reasoning", false, false, false,
     "<think>\nI could emit <tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call> but no.\n</think>\n\nNo tool needed.",
     "I could emit <tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call> but no.", "No tool needed.", 0, {{0}}},
    /* llama.cpp: message_assist. */
    {"no think tags (llama.cpp)", false, false, false,
     "Hello, world!\nWhat's up?", NULL, "Hello, world!\nWhat's up?", 0, {{0}}},
    /* llama.cpp: message_assist_thoughts with thinking_forced_open. */
    {"starts in reasoning (llama.cpp)", true, false, false,
     "I'm\nthinking</think>Hello, world!\nWhat's up?", "I'm\nthinking", "Hello, world!\nWhat's up?", 0, {{0}}},
    {"starts in reasoning, Qwen3-2507 newlines", true, false, false,
     "Okay, 2+2 is 4.\n</think>\n\n2 + 2 = 4.", "Okay, 2+2 is 4.", "2 + 2 = 4.", 0, {{0}}},
    /* Cut off inside the reasoning: it stays reasoning (vLLM's qwen3 parser
     * with thinking enabled, llama.cpp with thinking_forced_open). */
    {"starts in reasoning, cut off", true, false, false,
     "Let me think about this carefully.\n\nFirst, ", "Let me think about this carefully.\n\nFirst,", NULL, 0, {{0}}},
    /* llama.cpp with parse_tool_calls false: the rest is content. */
    {"tools disabled", false, false, true,
     "<think>\nx\n</think>\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>",
     "x", "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>", 0, {{0}}},
    {"reasoning disabled", false, true, false,
     "<think>\nhmm\n</think>\n\nHi there", NULL, "<think>\nhmm\n</think>\n\nHi there", 0, {{0}}},
    {"reasoning disabled, call still parsed", false, true, false,
     "<think>\n</think>\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>",
     NULL, "<think>\n</think>", 1, {{"f", "{\"a\":1}"}}},
    {"reasoning and tools disabled", false, true, true,
     "<think>a</think><tool_call>{\"name\": \"f\"}</tool_call>",
     NULL, "<think>a</think><tool_call>{\"name\": \"f\"}</tool_call>", 0, {{0}}},
    {"empty output", false, false, false, "", NULL, NULL, 0, {{0}}},
    {"empty output, starts in reasoning", true, false, false, "", NULL, NULL, 0, {{0}}},
    /* llama.cpp drops an empty (whitespace-only) reasoning. */
    {"empty think block", false, false, false,
     "<think>\n\n</think>\n\nThe capital of France is Paris.", NULL, "The capital of France is Paris.", 0, {{0}}},
    /* llama.cpp consumes the spaces after a call and keeps the rest as
     * content (vLLM drops text after the first call). */
    {"text after the calls", false, false, false,
     "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n\nDone.", NULL, "Done.", 1, {{"a", "{}"}}},
    {"text around calls keeps its separator", false, false, false,
     "Checking.\n\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n"
     "<tool_call>\n{\"name\": \"b\", \"arguments\": {\"x\": [1, {\"y\": \"z\"}]}}\n</tool_call>\nBoth sent.",
     NULL, "Checking.\n\nBoth sent.", 2, {{"a", "{}"}, {"b", "{\"x\":[1,{\"y\":\"z\"}]}"}}},
    {"less-than signs that are not tags", false, false, false,
     "if a<b and b<c then a < c; <br> <thinking> </toolbox> <tool_calls> <",
     NULL, "if a<b and b<c then a < c; <br> <thinking> </toolbox> <tool_calls> <", 0, {{0}}},
    {"a stray </think> is dropped from content", false, false, false,
     "Reasoning leaked</think>\n\nAnswer.", NULL, "Reasoning leaked\n\nAnswer.", 0, {{0}}},
    /* llama.cpp's try_parse_reasoning concatenates consecutive blocks. */
    {"two think blocks", false, false, false,
     "<think>a</think>\n\n<think>\nb\n</think>\n\nc", "ab", "c", 0, {{0}}},
    /* llama.cpp keeps whitespace before <think> as content; it is dropped
     * here, as the content after </think> is trimmed anyway. */
    {"whitespace before <think>", false, false, false,
     "\n<think>\nx\n</think>\n\ny", "x", "y", 0, {{0}}},
    {"partial <think> at the end", false, false, false, "<thi", NULL, "<thi", 0, {{0}}},
    {"partial </think> at the end of reasoning", true, false, false, "abc</thin", "abc</thin", NULL, 0, {{0}}},
    {"partial <tool_call> at the end", false, false, false, "See <tool_ca", NULL, "See <tool_ca", 0, {{0}}},
    {"plain text keeps trailing whitespace", false, false, false, "Done.\n", NULL, "Done.\n", 0, {{0}}},
};
/* clang-format on */
#define N_CASES (sizeof cases / sizeof cases[0])

/* ------------------------------------------------------------ collecting deltas */

typedef struct sbuf {
    char *s;
    size_t len, cap;
} sbuf;

static void sbuf_add(sbuf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->s = realloc(b->s, b->cap);
        if (!b->s) abort();
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

typedef struct streamed {
    sbuf reasoning, content;
    int n_calls;
    char ids[MAX_CALLS][32];
    sbuf names[MAX_CALLS], args[MAX_CALLS];
    bool expect_args; /* the last delta was a TOOL_BEGIN */
    bool shape_ok;    /* every delta had the expected shape */
    char why[160];
} streamed;

static void streamed_free(streamed *st) {
    free(st->reasoning.s);
    free(st->content.s);
    for (int i = 0; i < MAX_CALLS; i++) {
        free(st->names[i].s);
        free(st->args[i].s);
    }
    memset(st, 0, sizeof *st);
}

static void bad_shape(streamed *st, const char *why) {
    if (st->shape_ok) snprintf(st->why, sizeof st->why, "%s", why);
    st->shape_ok = false;
}

static bool valid_id(const char *id) {
    if (strncmp(id, "call_", 5) != 0 || strlen(id) != 29) return false;
    for (int i = 5; i < 29; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) return false;
    }
    return true;
}

static void collect(streamed *st, const qwen3_delta *d, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (st->expect_args && d[i].kind != QWEN3_DELTA_TOOL_ARGS) bad_shape(st, "TOOL_BEGIN not followed by TOOL_ARGS");
        switch (d[i].kind) {
        case QWEN3_DELTA_REASONING:
        case QWEN3_DELTA_CONTENT:
            if (d[i].len == 0 || !d[i].text) bad_shape(st, "empty text delta");
            else sbuf_add(d[i].kind == QWEN3_DELTA_REASONING ? &st->reasoning : &st->content, d[i].text, d[i].len);
            break;
        case QWEN3_DELTA_TOOL_BEGIN:
            if (d[i].tool_index != (size_t)st->n_calls || st->n_calls >= MAX_CALLS || d[i].text) {
                bad_shape(st, "TOOL_BEGIN index out of order");
                break;
            }
            if (!d[i].tool_id || !valid_id(d[i].tool_id)) bad_shape(st, "bad tool id");
            if (!d[i].tool_name || !d[i].tool_name[0]) bad_shape(st, "no tool name");
            snprintf(st->ids[st->n_calls], 32, "%s", d[i].tool_id ? d[i].tool_id : "");
            sbuf_add(&st->names[st->n_calls], d[i].tool_name ? d[i].tool_name : "", d[i].tool_name ? strlen(d[i].tool_name) : 0);
            st->n_calls++;
            st->expect_args = true;
            continue;
        case QWEN3_DELTA_TOOL_ARGS:
            if (!st->expect_args || d[i].tool_index + 1 != (size_t)st->n_calls || !d[i].text) {
                bad_shape(st, "TOOL_ARGS without its TOOL_BEGIN");
                break;
            }
            sbuf_add(&st->args[d[i].tool_index], d[i].text, d[i].len);
            break;
        default:
            bad_shape(st, "unknown delta kind");
        }
        st->expect_args = false;
    }
}

static bool same(const char *got, size_t got_len, const char *want) {
    size_t want_len = want ? strlen(want) : 0;
    return got_len == want_len && (want_len == 0 || memcmp(got, want, want_len) == 0);
}

/* The parser's aggregate equals what was streamed and what the case expects. */
static bool check_result(const out_case *c, qwen3_output *p, const streamed *st, const char *how) {
    bool ok = TEST_CHECK(st->shape_ok, "%s [%s]: delta shape: %s", c->name, how, st->why);
    size_t len;
    const char *r = qwen3_output_reasoning(p, &len);
    ok &= TEST_CHECK((r == NULL) == (c->reasoning == NULL) && same(r, len, c->reasoning),
                     "%s [%s]: reasoning \"%s\", expected \"%s\"", c->name, how, r ? r : "(none)",
                     c->reasoning ? c->reasoning : "(none)");
    ok &= TEST_CHECK(same(st->reasoning.s, st->reasoning.len, c->reasoning),
                     "%s [%s]: streamed reasoning \"%s\", expected \"%s\"", c->name, how,
                     st->reasoning.s ? st->reasoning.s : "", c->reasoning ? c->reasoning : "");
    const char *content = qwen3_output_content(p, &len);
    ok &= TEST_CHECK((content == NULL) == (c->content == NULL) && same(content, len, c->content),
                     "%s [%s]: content \"%s\", expected \"%s\"", c->name, how, content ? content : "(none)",
                     c->content ? c->content : "(none)");
    ok &= TEST_CHECK(same(st->content.s, st->content.len, c->content),
                     "%s [%s]: streamed content \"%s\", expected \"%s\"", c->name, how,
                     st->content.s ? st->content.s : "", c->content ? c->content : "");
    size_t n = qwen3_output_n_tool_calls(p);
    ok &= TEST_CHECK(n == (size_t)c->n_calls && st->n_calls == c->n_calls, "%s [%s]: %zu calls (%d streamed), expected %d",
                     c->name, how, n, st->n_calls, c->n_calls);
    for (int i = 0; ok && i < c->n_calls; i++) {
        const qwen3_tool_call *call = qwen3_output_tool_call(p, (size_t)i);
        ok &= TEST_CHECK(strcmp(call->name, c->calls[i].name) == 0 && same(st->names[i].s, st->names[i].len, c->calls[i].name),
                         "%s [%s]: call %d name \"%s\", expected \"%s\"", c->name, how, i, call->name, c->calls[i].name);
        ok &= TEST_CHECK(same(call->arguments, call->arguments_len, c->calls[i].args) &&
                             same(st->args[i].s, st->args[i].len, c->calls[i].args),
                         "%s [%s]: call %d arguments %s, expected %s", c->name, how, i, call->arguments, c->calls[i].args);
        ok &= TEST_CHECK(strcmp(call->id, st->ids[i]) == 0 && valid_id(call->id), "%s [%s]: call %d id %s, streamed %s",
                         c->name, how, i, call->id, st->ids[i]);
    }
    if (ok && !c->disable_reasoning && st->content.s)
        ok &= TEST_CHECK(!strstr(st->content.s, "<think>") && !strstr(st->content.s, "</think>"),
                         "%s [%s]: a think tag in content", c->name, how);
    return ok;
}

static qwen3_output_options case_options(const out_case *c) {
    return (qwen3_output_options){.starts_in_reasoning = c->starts_in_reasoning,
                                  .disable_reasoning = c->disable_reasoning,
                                  .disable_tools = c->disable_tools,
                                  .id_seed = 1234};
}

/* Streams c->text cut at cuts[0..n_cuts) (increasing offsets) and checks
 * the result. */
static bool run_split(const out_case *c, const size_t *cuts, size_t n_cuts, const char *how) {
    qwen3_output_options opt = case_options(c);
    qwen3_output *p = qwen3_output_new(&opt);
    if (!TEST_CHECK(p != NULL, "qwen3_output_new")) return false;
    streamed st = {.shape_ok = true};
    size_t len = strlen(c->text), at = 0;
    bool ok = true;
    for (size_t i = 0; i <= n_cuts && ok; i++) {
        size_t to = i < n_cuts ? cuts[i] : len;
        const qwen3_delta *d;
        size_t nd;
        ok &= TEST_CHECK(qwen3_output_push(p, c->text + at, to - at, &d, &nd) == INF_OK, "%s [%s]: push", c->name, how);
        if (ok) collect(&st, d, nd);
        at = to;
    }
    const qwen3_delta *d;
    size_t nd;
    if (ok) ok &= TEST_CHECK(qwen3_output_finish(p, &d, &nd) == INF_OK, "%s [%s]: finish", c->name, how);
    if (ok) {
        collect(&st, d, nd);
        if (st.expect_args) bad_shape(&st, "the last TOOL_BEGIN has no TOOL_ARGS");
        ok = check_result(c, p, &st, how);
    }
    streamed_free(&st);
    qwen3_output_free(p);
    return ok;
}

static void test_cases(void) {
    test_begin("cases: one piece, every split point, byte by byte, random splits");
    uint64_t rng = 20260101;
    for (size_t ci = 0; ci < N_CASES; ci++) {
        const out_case *c = &cases[ci];
        size_t len = strlen(c->text);
        size_t *cuts = malloc((len + 1) * sizeof *cuts);
        if (!cuts) abort();
        if (!run_split(c, NULL, 0, "one piece")) goto next;
        for (size_t i = 0; i <= len; i++) {
            char how[48];
            snprintf(how, sizeof how, "split at %zu", i);
            size_t cut = i;
            if (!run_split(c, &cut, 1, how)) goto next;
        }
        for (size_t i = 0; i < len; i++) cuts[i] = i + 1;
        if (!run_split(c, cuts, len ? len - 1 : 0, "byte by byte")) goto next;
        for (int r = 0; r < 40; r++) {
            size_t n_cuts = 0;
            for (size_t i = 1; i < len; i++)
                if (test_rng_next(&rng) % 5 == 0) cuts[n_cuts++] = i;
            char how[48];
            snprintf(how, sizeof how, "random split %d", r);
            if (!run_split(c, cuts, n_cuts, how)) break;
        }
    next:
        free(cuts);
    }
}

/* ------------------------------------------------------------ soup */

/* What one streamed run produced: the concatenated deltas, checked against
 * the aggregate. */
static bool run_soup(const char *text, const qwen3_output_options *opt, const size_t *cuts, size_t n_cuts,
                     streamed *st) {
    qwen3_output *p = qwen3_output_new(opt);
    if (!p) return false;
    *st = (streamed){.shape_ok = true};
    size_t len = strlen(text), at = 0;
    const qwen3_delta *d;
    size_t nd;
    bool ok = true;
    for (size_t i = 0; i <= n_cuts && ok; i++) {
        size_t to = i < n_cuts ? cuts[i] : len;
        ok = qwen3_output_push(p, text + at, to - at, &d, &nd) == INF_OK;
        if (ok) collect(st, d, nd);
        at = to;
    }
    ok = ok && qwen3_output_finish(p, &d, &nd) == INF_OK;
    if (ok) collect(st, d, nd);
    size_t rl, cl;
    const char *r = qwen3_output_reasoning(p, &rl), *c = qwen3_output_content(p, &cl);
    ok = ok && st->shape_ok && rl == st->reasoning.len && cl == st->content.len &&
         (rl == 0 || memcmp(r, st->reasoning.s, rl) == 0) && (cl == 0 || memcmp(c, st->content.s, cl) == 0) &&
         qwen3_output_n_tool_calls(p) == (size_t)st->n_calls;
    for (int i = 0; ok && i < st->n_calls; i++) {
        const qwen3_tool_call *call = qwen3_output_tool_call(p, (size_t)i);
        ok = strcmp(call->id, st->ids[i]) == 0 && same(st->args[i].s, st->args[i].len, call->arguments) &&
             call->arguments_len == st->args[i].len;
    }
    if (ok && !opt->disable_reasoning && st->content.s)
        ok = !strstr(st->content.s, "<think>") && !strstr(st->content.s, "</think>");
    qwen3_output_free(p);
    return ok;
}

static bool same_streamed(const streamed *a, const streamed *b) {
    if (a->reasoning.len != b->reasoning.len || a->content.len != b->content.len || a->n_calls != b->n_calls)
        return false;
    if (a->reasoning.len && memcmp(a->reasoning.s, b->reasoning.s, a->reasoning.len) != 0) return false;
    if (a->content.len && memcmp(a->content.s, b->content.s, a->content.len) != 0) return false;
    for (int i = 0; i < a->n_calls; i++)
        if (strcmp(a->ids[i], b->ids[i]) != 0 || a->names[i].len != b->names[i].len ||
            memcmp(a->names[i].s, b->names[i].s, a->names[i].len) != 0 || a->args[i].len != b->args[i].len ||
            memcmp(a->args[i].s, b->args[i].s, a->args[i].len) != 0)
            return false;
    return true;
}

static void test_soup(void) {
    test_begin("soup: random texts, every way of splitting them agrees");
    static const char *const pieces[] = {
        "<think>", "</think>", "<tool_call>", "</tool_call>", "<think>\n", "\n</think>\n\n", "<tool_call>\n",
        "\n</tool_call>", "\n", "\n\n", " ", "\t", "Hello", "world.", "<", "</", "<to", "<thi", "</tool", ">",
        "{\"name\": \"f\", \"arguments\": {\"a\": [1, \"x y\"]}}", "{\"name\": \"g\"}", "{\"arguments\": {}}",
        "{bad", "\"", "}", "caf\xc3\xa9", "\xf0\x9f\x8d\xb7", "{\"name\": \"h\", \"arguments\": \"{}\"}",
    };
    const size_t n_pieces = sizeof pieces / sizeof pieces[0];
    uint64_t rng = 77;
    int bad = 0;
    for (int t = 0; t < 3000 && bad < 5; t++) {
        sbuf text = {0};
        sbuf_add(&text, "", 0);
        int n = (int)(test_rng_next(&rng) % 14);
        for (int i = 0; i < n; i++) {
            const char *piece = pieces[test_rng_next(&rng) % n_pieces];
            sbuf_add(&text, piece, strlen(piece));
        }
        uint64_t flags = test_rng_next(&rng);
        qwen3_output_options opt = {.starts_in_reasoning = flags & 1, .disable_reasoning = (flags & 6) == 6,
                                    .disable_tools = (flags & 24) == 24, .id_seed = flags};
        size_t *cuts = malloc((text.len + 1) * sizeof *cuts);
        if (!cuts) abort();
        streamed one, other;
        bool ok = run_soup(text.s, &opt, NULL, 0, &one);
        for (int r = 0; r < 4 && ok; r++) {
            size_t n_cuts = 0;
            for (size_t i = 1; i < text.len; i++)
                if (r == 0 || test_rng_next(&rng) % (unsigned)(r + 1) == 0) cuts[n_cuts++] = i;
            ok = run_soup(text.s, &opt, cuts, n_cuts, &other) && same_streamed(&one, &other);
            streamed_free(&other);
        }
        if (!TEST_CHECK(ok, "soup %d (flags %u): splits disagree or the aggregate differs: \"%s\"", t,
                        (unsigned)(flags & 31), text.s))
            bad++;
        streamed_free(&one);
        free(cuts);
        free(text.s);
    }
}

/* ------------------------------------------------------------ promptness */

typedef struct step {
    const char *push;     /* NULL: finish */
    const char *reasoning, *content; /* what this step must release ("" none) */
    int tool_deltas;      /* TOOL_* deltas this step must release */
} step;

static void run_steps(const char *name, const qwen3_output_options *opt, const step *steps, size_t n_steps) {
    qwen3_output *p = qwen3_output_new(opt);
    if (!TEST_CHECK(p != NULL, "qwen3_output_new")) return;
    for (size_t i = 0; i < n_steps; i++) {
        const qwen3_delta *d;
        size_t nd;
        inf_status s = steps[i].push ? qwen3_output_push(p, steps[i].push, strlen(steps[i].push), &d, &nd)
                                     : qwen3_output_finish(p, &d, &nd);
        if (!TEST_CHECK(s == INF_OK, "%s step %zu: status %d", name, i, (int)s)) break;
        streamed st = {.shape_ok = true};
        collect(&st, d, nd);
        int tools = 0;
        for (size_t k = 0; k < nd; k++) tools += d[k].kind == QWEN3_DELTA_TOOL_BEGIN || d[k].kind == QWEN3_DELTA_TOOL_ARGS;
        TEST_CHECK(same(st.reasoning.s, st.reasoning.len, steps[i].reasoning), "%s step %zu: reasoning \"%s\", expected \"%s\"",
                   name, i, st.reasoning.s ? st.reasoning.s : "", steps[i].reasoning);
        TEST_CHECK(same(st.content.s, st.content.len, steps[i].content), "%s step %zu: content \"%s\", expected \"%s\"", name,
                   i, st.content.s ? st.content.s : "", steps[i].content);
        TEST_CHECK(tools == steps[i].tool_deltas, "%s step %zu: %d tool deltas, expected %d", name, i, tools,
                   steps[i].tool_deltas);
        streamed_free(&st);
    }
    qwen3_output_free(p);
}

static void test_prompt_release(void) {
    test_begin("prompt: decided text is released at once, partial tags held until decided");
    const qwen3_output_options def = {0};
    const step thinking[] = {
        {"<think>\nLet me", "Let me", "", 0},
        {" think</thi", " think", "", 0},          /* "</thi" held */
        {"nk>\n\nThe answer", "", "The answer", 0}, /* the tag closes; "\n\n" dropped */
        {" is 42 <to", "", " is 42", 0},            /* " <to" held: whitespace and a partial tag */
        {"ol_call>\n{\"name\": \"f\", ", "", "", 0}, /* inside the block: nothing yet */
        {"\"arguments\": {}}\n</tool", "", "", 0},
        {"_call>", "", "", 2},                      /* BEGIN + ARGS */
        {NULL, "", "", 0},                          /* " " before the call trimmed */
    };
    run_steps("thinking", &def, thinking, sizeof thinking / sizeof thinking[0]);

    const step not_tags[] = {
        {"a <b", "", "a <b", 0},         /* "<b" cannot start a tag */
        {" x<", "", " x", 0},            /* "<" held */
        {"/", "", "", 0},                /* "</" held */
        {"p>", "", "</p>", 0},
        {" <think", "", "", 0},          /* " <think" held */
        {"ing>", "", " <thinking>", 0},
        {NULL, "", "", 0},
    };
    run_steps("not tags", &def, not_tags, sizeof not_tags / sizeof not_tags[0]);

    const qwen3_output_options no_tools = {.disable_tools = true};
    const step plain[] = {
        {"word ", "", "word ", 0}, /* without tool parsing whitespace is not held */
        {"<tool_call>", "", "<tool_call>", 0},
        {NULL, "", "", 0},
    };
    run_steps("tools disabled", &no_tools, plain, sizeof plain / sizeof plain[0]);

    const qwen3_output_options in_reasoning = {.starts_in_reasoning = true};
    const step cut[] = {
        {"\nStep one.\n", "Step one.", "", 0}, /* trailing "\n" held */
        {"Step two.", "\nStep two.", "", 0},
        {"\n\n", "", "", 0},
        {NULL, "", "", 0},                     /* unterminated: stays reasoning, trimmed */
    };
    run_steps("starts in reasoning", &in_reasoning, cut, sizeof cut / sizeof cut[0]);
}

/* ------------------------------------------------------------ ids */

static void ids_of(uint64_t seed, char ids[3][32]) {
    qwen3_output_options opt = {.id_seed = seed};
    qwen3_output *p = qwen3_output_new(&opt);
    const char *text = "<tool_call>{\"name\": \"a\"}</tool_call><tool_call>{\"name\": \"b\"}</tool_call>"
                       "<tool_call>{\"name\": \"c\"}</tool_call>";
    const qwen3_delta *d;
    size_t n;
    TEST_CHECK(p && qwen3_output_push(p, text, strlen(text), &d, &n) == INF_OK && n == 6, "three calls");
    TEST_CHECK(p && qwen3_output_finish(p, &d, &n) == INF_OK && qwen3_output_n_tool_calls(p) == 3, "finish");
    for (size_t i = 0; i < 3; i++) {
        const qwen3_tool_call *c = p ? qwen3_output_tool_call(p, i) : NULL;
        snprintf(ids[i], 32, "%s", c ? c->id : "");
    }
    if (p) TEST_CHECK(qwen3_output_tool_call(p, 3) == NULL, "no call 3");
    qwen3_output_free(p);
}

static void test_ids(void) {
    test_begin("ids: call_ + 24 alphanumerics, deterministic per seed");
    char a[3][32], b[3][32], c[3][32];
    ids_of(7, a);
    ids_of(7, b);
    ids_of(8, c);
    for (int i = 0; i < 3; i++) {
        TEST_CHECK(valid_id(a[i]), "id %s", a[i]);
        TEST_CHECK(strcmp(a[i], b[i]) == 0, "same seed, same id: %s %s", a[i], b[i]);
        TEST_CHECK(strcmp(a[i], c[i]) != 0, "another seed, another id: %s %s", a[i], c[i]);
        TEST_CHECK(strcmp(a[i], a[(i + 1) % 3]) != 0, "ids of one completion differ: %s", a[i]);
    }
}

/* ------------------------------------------------------------ limits */

static void test_limits(void) {
    test_begin("limits: deep nesting and long streams are not bounded");
    /* arguments [[[...]]] 10000 deep, pushed in pieces of 1000 bytes */
    const int depth = 10000;
    sbuf text = {0}, want = {0};
    const char *head = "<tool_call>\n{\"name\": \"deep\", \"arguments\": ";
    sbuf_add(&text, head, strlen(head));
    for (int i = 0; i < depth; i++) sbuf_add(&text, "[ ", 2), sbuf_add(&want, "[", 1);
    for (int i = 0; i < depth; i++) sbuf_add(&text, "] ", 2), sbuf_add(&want, "]", 1);
    sbuf_add(&text, "}\n</tool_call>", 14);
    qwen3_output *p = qwen3_output_new(NULL);
    const qwen3_delta *d;
    size_t n, n_tool = 0;
    for (size_t at = 0; at < text.len; at += 1000) {
        size_t len = text.len - at < 1000 ? text.len - at : 1000;
        TEST_CHECK(qwen3_output_push(p, text.s + at, len, &d, &n) == INF_OK, "push");
        n_tool += n;
    }
    TEST_CHECK(qwen3_output_finish(p, &d, &n) == INF_OK, "finish");
    const qwen3_tool_call *c = qwen3_output_tool_call(p, 0);
    TEST_CHECK(n_tool == 2 && c && same(c->arguments, c->arguments_len, want.s), "10000-deep arguments parsed");
    qwen3_output_free(p);

    /* 1 MB of reasoning and of content in 7-byte pieces: all of it comes back */
    free(text.s);
    text = (sbuf){0};
    sbuf_add(&text, "<think>", 7);
    for (int i = 0; i < 40000; i++) sbuf_add(&text, "thinking <a> ", 13);
    sbuf_add(&text, "</think>", 8);
    for (int i = 0; i < 40000; i++) sbuf_add(&text, "answer <b>\n\n ", 13);
    p = qwen3_output_new(NULL);
    streamed st = {.shape_ok = true};
    for (size_t at = 0; at < text.len; at += 7) {
        size_t len = text.len - at < 7 ? text.len - at : 7;
        TEST_CHECK(qwen3_output_push(p, text.s + at, len, &d, &n) == INF_OK, "push");
        collect(&st, d, n);
    }
    TEST_CHECK(qwen3_output_finish(p, &d, &n) == INF_OK, "finish");
    collect(&st, d, n);
    TEST_CHECK(st.reasoning.len == 40000 * 13 - 1 && st.content.len == 40000 * 13, "1 MB streamed: %zu + %zu bytes",
               st.reasoning.len, st.content.len);
    size_t len;
    qwen3_output_content(p, &len);
    TEST_CHECK(len == st.content.len, "aggregate equals the stream");
    streamed_free(&st);
    qwen3_output_free(p);
    free(text.s);
    free(want.s);
}

/* ------------------------------------------------------------ out of memory */

typedef struct failing_alloc {
    long countdown; /* allocations left before one fails (then all succeed) */
    bool failed;
    long live;      /* blocks not freed */
} failing_alloc;

static void *failing_alloc_fn(void *user, void *ptr, size_t size) {
    failing_alloc *f = user;
    if (size == 0) {
        if (ptr) f->live--;
        free(ptr);
        return NULL;
    }
    if (f->countdown-- == 0) {
        f->failed = true;
        return NULL;
    }
    void *q = realloc(ptr, size);
    if (q && !ptr) f->live++;
    return q;
}

/* One run with allocation number fail_at failing; true when nothing failed. */
static bool run_failing(const out_case *c, long fail_at, size_t piece) {
    failing_alloc f = {.countdown = fail_at};
    qwen3_output_options opt = case_options(c);
    opt.alloc = failing_alloc_fn;
    opt.alloc_user = &f;
    qwen3_output *p = qwen3_output_new(&opt);
    if (!p) {
        TEST_CHECK(f.failed && f.live == 0, "%s: new failed without an allocation failing", c->name);
        return false;
    }
    streamed st = {.shape_ok = true};
    size_t len = strlen(c->text);
    bool nomem = false;
    const qwen3_delta *d;
    size_t nd;
    for (size_t at = 0; at < len && !nomem; at += piece) {
        size_t n = len - at < piece ? len - at : piece;
        inf_status s = qwen3_output_push(p, c->text + at, n, &d, &nd);
        if (s == INF_ERR_NOMEM) nomem = true;
        else if (!TEST_CHECK(s == INF_OK, "%s: push status %d", c->name, (int)s)) break;
        else collect(&st, d, nd);
    }
    if (!nomem) {
        inf_status s = qwen3_output_finish(p, &d, &nd);
        if (s == INF_ERR_NOMEM) nomem = true;
        else if (TEST_CHECK(s == INF_OK, "%s: finish status %d", c->name, (int)s)) collect(&st, d, nd);
    }
    if (nomem) {
        TEST_CHECK(f.failed, "%s: INF_ERR_NOMEM without an allocation failing", c->name);
        TEST_CHECK(qwen3_output_push(p, "x", 1, &d, &nd) == INF_ERR_NOMEM && d == NULL && nd == 0,
                   "%s: the error is sticky", c->name);
        TEST_CHECK(qwen3_output_finish(p, &d, &nd) == INF_ERR_NOMEM, "%s: finish after the error", c->name);
    } else {
        TEST_CHECK(!f.failed, "%s: allocation %ld failed unreported", c->name, fail_at);
        char how[48];
        snprintf(how, sizeof how, "no failure, pieces of %zu", piece);
        check_result(c, p, &st, how);
    }
    streamed_free(&st);
    qwen3_output_free(p);
    TEST_CHECK(f.live == 0, "%s: %ld blocks leaked (failing allocation %ld)", c->name, f.live, fail_at);
    return !f.failed;
}

static void test_nomem(void) {
    test_begin("nomem: every allocation failed in turn");
    for (size_t ci = 0; ci < N_CASES; ci++) {
        for (size_t piece = 1; piece <= 64; piece *= 8) {
            long fail_at = 0;
            while (!run_failing(&cases[ci], fail_at, piece) && fail_at < 100000) fail_at++;
        }
    }
}

/* ------------------------------------------------------------ prompts */

static void test_prompt_detection(void) {
    test_begin("prompts: which rendered prompts leave the model inside <think>");
    static const struct {
        const char *prompt;
        bool opens;
    } prompts[] = {
        /* Qwen3-2507 thinking models' template */
        {"<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n", true},
        {"<|im_start|>assistant\n<think>", true},
        /* Qwen3 hybrid models, enable_thinking false */
        {"<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n", false},
        /* Qwen3 hybrid models, thinking on: the model writes <think> itself */
        {"<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", false},
        {"think>\n", false},
        {"", false},
    };
    for (size_t i = 0; i < sizeof prompts / sizeof prompts[0]; i++)
        TEST_CHECK(qwen3_prompt_opens_reasoning(prompts[i].prompt, strlen(prompts[i].prompt)) == prompts[i].opens,
                   "prompt %zu", i);
}

/* ------------------------------------------------------------ misuse */

static void test_misuse(void) {
    test_begin("misuse: push and finish after finish");
    qwen3_output *p = qwen3_output_new(NULL);
    const qwen3_delta *d;
    size_t n;
    TEST_CHECK(qwen3_output_push(p, NULL, 0, &d, &n) == INF_OK && n == 0, "an empty push");
    TEST_CHECK(qwen3_output_push(p, "Hi", 2, &d, &n) == INF_OK, "push");
    TEST_CHECK(qwen3_output_finish(p, &d, &n) == INF_OK, "finish");
    TEST_CHECK(qwen3_output_push(p, "x", 1, &d, &n) == INF_ERR_INVALID && d == NULL && n == 0, "push after finish");
    TEST_CHECK(qwen3_output_finish(p, &d, &n) == INF_ERR_INVALID, "finish twice");
    size_t len;
    const char *content = qwen3_output_content(p, &len);
    TEST_CHECK(content && len == 2 && strcmp(content, "Hi") == 0, "the aggregate survives misuse");
    TEST_CHECK(qwen3_output_reasoning(p, NULL) == NULL && qwen3_output_n_tool_calls(p) == 0, "nothing else");
    qwen3_output_free(p);
    qwen3_output_free(NULL);
}

int main(void) {
    test_cases();
    test_soup();
    test_prompt_release();
    test_ids();
    test_limits();
    test_nomem();
    test_prompt_detection();
    test_misuse();
    return test_summary();
}
